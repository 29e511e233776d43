//! Names the run that crashed: a fatal signal inside JIT-compiled code (or a
//! runtime it calls) kills the whole process, so before it dies it writes
//! `jit-harness: run N crashed: SIGSEGV` on stderr, then re-raises the
//! signal so the exit status still says what happened.
//!
//! The handler uses only async-signal-safe calls (`write`, `signal`,
//! `raise`) and no allocation.

use std::sync::atomic::{AtomicU64, Ordering};

/// The run in progress (1-based); 0 outside the run loop.
static CURRENT_RUN: AtomicU64 = AtomicU64::new(0);

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

/// Installs the handler for the fatal signals.
pub fn install() {
    for (signal, _) in FATAL_SIGNALS {
        // SAFETY: a zeroed sigaction with a valid handler and flags; the
        // handler only calls async-signal-safe functions.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fatal_signal as extern "C" fn(libc::c_int) as usize;
            // SA_ONSTACK: threads with an alternate stack (Rust's) can still
            // report a stack overflow.
            action.sa_flags = libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_fatal_signal(signal: libc::c_int) {
    let name = FATAL_SIGNALS
        .iter()
        .find(|(s, _)| *s == signal)
        .map_or("fatal signal", |(_, n)| n);
    let mut line = [0u8; 96];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        let n = bytes.len().min(line.len() - len);
        line[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    let run = CURRENT_RUN.load(Ordering::Relaxed);
    if run == 0 {
        push(b"jit-harness: crashed outside a run: ");
    } else {
        push(b"jit-harness: run ");
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        let mut n = run;
        while n > 0 {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        push(&digits[i..]);
        push(b" crashed: ");
    }
    push(name.as_bytes());
    push(b"\n");
    // SAFETY: async-signal-safe calls; restoring the default action and
    // re-raising ends the process with the original signal once the
    // handler returns (the signal is blocked until then).
    unsafe {
        libc::write(2, line.as_ptr().cast(), len);
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}
