//! Names the run that crashed: a fatal signal inside JIT-compiled code (or a
//! runtime it calls) kills the whole process, so before it dies it writes
//! one line on stderr, `jit-harness: run N crashed: SIGSEGV (stack overflow
//! in thread mlir-async-1, tid 4242)`, then re-raises the signal so the exit
//! status still says what happened. A stack overflow is told from other
//! faults by the address (see [`threads`], which also gives every thread
//! the alternate stack the handler needs to run after one).
//!
//! While schedules are explored, a note prepared before each run follows
//! the line on the real standard output: the summary naming the schedule
//! that crashed and the command that replays it ([`set_note`]).
//!
//! The handler uses only async-signal-safe calls (`write`, `prctl`,
//! `gettid`, `signal`, `raise`) and no allocation.

pub mod threads;

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// The run in progress (1-based); 0 outside the run loop.
static CURRENT_RUN: AtomicU64 = AtomicU64::new(0);

/// What the handler writes after its line while schedules are explored:
/// the summary naming the schedule in progress, on `fd` (the real standard
/// output), with the signal's name inserted at byte `at` if given.
struct Note {
    fd: libc::c_int,
    text: Box<[u8]>,
    at: Option<usize>,
}

static NOTE: AtomicPtr<Note> = AtomicPtr::new(std::ptr::null_mut());

/// Sets (or, with `None`, clears) the note written after a crash line:
/// `(fd, text, at)`. Call between runs only (the previous note is freed).
pub fn set_note(note: Option<(libc::c_int, Vec<u8>, Option<usize>)>) {
    let new = note.map_or(std::ptr::null_mut(), |(fd, text, at)| {
        let at = at.filter(|&at| at <= text.len());
        Box::into_raw(Box::new(Note { fd, text: text.into(), at }))
    });
    // AcqRel: the handler's Acquire load sees the note's contents.
    let old = NOTE.swap(new, Ordering::AcqRel);
    if !old.is_null() {
        // SAFETY: ours, from `Box::into_raw`; between runs no handler reads it.
        drop(unsafe { Box::from_raw(old) });
    }
}

const FATAL_SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGABRT, "SIGABRT"),
];

/// Records that run `run` is starting.
pub fn set_current_run(run: u64) {
    // Relaxed: read by a signal handler on whichever thread faults; a stale
    // value at a run boundary is harmless for a diagnostic.
    CURRENT_RUN.store(run, Ordering::Relaxed);
}

/// Installs the handler for the fatal signals. Call on the main thread
/// (it records the main thread's stack like [`threads`] does for the others).
pub fn install() {
    threads::prepare_thread_with(true);
    for (signal, _) in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction with a valid handler and flags; the
        // handler only calls async-signal-safe functions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
            // SA_ONSTACK: run on the thread's alternate stack, the only
            // stack left after a stack overflow. SA_SIGINFO: the address.
            action.sa_flags = libc::SA_ONSTACK | libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// A line in a fixed buffer (no allocation in a signal handler).
struct Line {
    bytes: [u8; 160],
    len: usize,
}

impl Line {
    fn push(&mut self, b: &[u8]) {
        let n = b.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
    }
    fn number(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}

/// The interrupted stack pointer, from the signal's context.
fn interrupted_sp(context: *mut libc::c_void) -> usize {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    if !context.is_null() {
        // SAFETY: for an SA_SIGINFO handler the third argument is the
        // interrupted thread's ucontext_t.
        return unsafe { (*context.cast::<libc::ucontext_t>()).uc_mcontext.gregs[libc::REG_RSP as usize] as usize };
    }
    let _ = context;
    0
}

extern "C" fn on_fatal_signal(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let name = FATAL_SIGNALS
        .iter()
        .find(|(s, _)| *s == signal)
        .map_or("fatal signal", |(_, n)| n);
    let mut line = Line { bytes: [0; 160], len: 0 };
    let run = CURRENT_RUN.load(Ordering::Relaxed);
    if run == 0 {
        line.push(b"jit-harness: crashed outside a run: ");
    } else {
        line.push(b"jit-harness: run ");
        line.number(run);
        line.push(b" crashed: ");
    }
    line.push(name.as_bytes());
    // Which thread, and for a fault whether it is a stack overflow.
    let mut thread = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes, NUL included; gettid
    // has no preconditions.
    let (named, tid) = unsafe {
        (libc::prctl(libc::PR_GET_NAME, thread.as_mut_ptr() as libc::c_ulong, 0, 0, 0) == 0, libc::gettid())
    };
    let thread_name = &thread[..thread.iter().position(|&b| b == 0).unwrap_or(thread.len())];
    let fault = signal == libc::SIGSEGV || signal == libc::SIGBUS;
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let address = if fault && !info.is_null() { unsafe { (*info).si_addr() as usize } } else { 0 };
    line.push(b" (");
    if fault && threads::is_stack_overflow(address, interrupted_sp(context)) {
        line.push(b"stack overflow in thread ");
    } else {
        line.push(b"in thread ");
    }
    if named && !thread_name.is_empty() {
        line.push(thread_name);
        line.push(b", ");
    }
    line.push(b"tid ");
    line.number(tid as u64);
    line.push(b")\n");
    let (line, len) = (line.bytes, line.len);
    // SAFETY: async-signal-safe calls; restoring the default action and
    // re-raising ends the process with the original signal once the
    // handler returns (the signal is blocked until then).
    unsafe {
        libc::write(2, line.as_ptr().cast(), len);
        let note = NOTE.load(Ordering::Acquire);
        if !note.is_null() {
            let note = &*note;
            let at = note.at.unwrap_or(note.text.len());
            libc::write(note.fd, note.text.as_ptr().cast(), at);
            if note.at.is_some() {
                libc::write(note.fd, name.as_ptr().cast(), name.len());
            }
            libc::write(note.fd, note.text[at..].as_ptr().cast(), note.text.len() - at);
        }
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
