//! A task that overflows its stack dies with one line on stderr naming the
//! knob that sets the size (`MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE`), not with
//! a bare SIGSEGV.
//!
//! A task stack has a guard page below it (`stacks.rs`). A fault there, or
//! just below it (a frame larger than a page may skip the guard), on a
//! thread running a fiber, is an overflow: the handler writes the line and
//! aborts. Any other fault goes to the handler installed before ours (std's
//! stack-overflow handler in a Rust program, or the default action). The
//! handler runs on an alternate signal stack, set up on each runtime thread
//! before it first runs a fiber: the faulting stack has no room left.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::Once;

use crate::instance::config::TASK_STACK_SIZE_ENV;
use crate::instance::threads::fibers;
use crate::instance::threads::stacks::page_size;
use crate::sync::misuse::write_stderr;

/// How far below a stack's guard page a fault still counts as that
/// stack's overflow (a frame skipping the guard page).
const BELOW_GUARD: usize = 256 << 10;

/// The alternate signal stack's size.
const ALT_STACK_SIZE: usize = 64 << 10;

static INSTALL: Once = Once::new();
/// The handlers of SIGSEGV and SIGBUS before ours, to chain to. Written
/// once, under `INSTALL`, before our handler is installed.
static mut PREVIOUS: [MaybeUninit<libc::sigaction>; 2] = [MaybeUninit::uninit(), MaybeUninit::uninit()];
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// This thread's alternate signal stack, if this module mapped one.
struct AltStack(Cell<*mut libc::c_void>);

impl Drop for AltStack {
    fn drop(&mut self) {
        let stack = self.0.get();
        if stack.is_null() {
            return;
        }
        // SAFETY: disables this thread's alternate stack (ours), then
        // unmaps it; no handler runs on it now (we are in a destructor).
        unsafe {
            let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
            libc::sigaltstack(&disable, std::ptr::null_mut());
            libc::munmap(stack, ALT_STACK_SIZE);
        }
    }
}

thread_local! {
    static ALT_STACK: AltStack = const { AltStack(Cell::new(std::ptr::null_mut())) };
    static READY: Cell<bool> = const { Cell::new(false) };
}

/// Installs the handler (once per process) and gives this thread an
/// alternate signal stack if it has none. Called on a thread's own stack
/// before it runs a fiber; cheap after the first call.
#[inline(never)]
pub(super) fn prepare_thread() {
    if READY.try_with(|ready| ready.replace(true)).unwrap_or(true) {
        return;
    }
    INSTALL.call_once(install);
    // SAFETY: queries this thread's alternate stack; maps and sets one if
    // none is set (a Rust program's std may have set one already).
    unsafe {
        let mut old = MaybeUninit::<libc::stack_t>::zeroed();
        if libc::sigaltstack(std::ptr::null(), old.as_mut_ptr()) != 0 {
            return;
        }
        if old.assume_init().ss_flags & libc::SS_DISABLE == 0 {
            return;
        }
        let stack = libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK_SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return;
        }
        let new = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: ALT_STACK_SIZE };
        if libc::sigaltstack(&new, std::ptr::null_mut()) != 0 {
            libc::munmap(stack, ALT_STACK_SIZE);
            return;
        }
        let _ = ALT_STACK.try_with(|alt| alt.0.set(stack));
    }
}

fn install() {
    for (i, &signal) in SIGNALS.iter().enumerate() {
        // SAFETY: installs a handler for a synchronous fault signal, saving
        // the previous one first (`PREVIOUS` is written only here, under
        // `INSTALL`, before the handler that reads it exists).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let previous = &raw mut PREVIOUS[i];
            libc::sigaction(signal, &action, (*previous).as_mut_ptr());
        }
    }
}

extern "C" fn handler(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for a fault signal.
    let address = unsafe { (*info).si_addr() } as usize;
    if let Some((limit, size)) = fibers::current_stack_bounds() {
        let guard_end = limit + page_size();
        if address < guard_end && address >= limit.saturating_sub(BELOW_GUARD) {
            overflowed(size);
        }
    }
    chain(signal, info, context);
}


/// Writes the line (no allocation: a fixed buffer) and aborts.
fn overflowed(size: usize) -> ! {
    let mut line = [0u8; 256];
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        let n = bytes.len().min(line.len() - len);
        line[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    put(b"mlir_async_runtime: a task overflowed its stack of ");
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = size;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    put(&digits[i..]);
    put(b" bytes; raise ");
    put(TASK_STACK_SIZE_ENV.as_bytes());
    put(b" (bytes)\n");
    // `write_stderr` is one write(2) per line: async-signal-safe.
    write_stderr(std::str::from_utf8(&line[..len]).unwrap_or("mlir_async_runtime: a task overflowed its stack\n"));
    // SAFETY: abort is async-signal-safe.
    unsafe { libc::abort() }
}

/// Hands a fault that is not a task stack's overflow to the handler before
/// ours; with none (or the default action), restores the default and
/// returns, so the fault repeats and takes its default action.
fn chain(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let i = SIGNALS.iter().position(|&s| s == signal).unwrap_or(0);
    // SAFETY: `PREVIOUS` was written before this handler was installed.
    let previous = unsafe { (*(&raw const PREVIOUS[i])).assume_init_ref() };
    let target = previous.sa_sigaction;
    if target == libc::SIG_DFL || target == libc::SIG_IGN {
        // SAFETY: restores the default action; the faulting instruction
        // runs again and faults into it.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
        return;
    }
    // SAFETY: calls the previous handler as the kernel would have, with
    // the same arguments (a three-argument one if it asked for siginfo).
    unsafe {
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(target);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(target);
            f(signal);
        }
    }
}
