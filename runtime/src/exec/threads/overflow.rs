//! A task that overflows its stack dies with one line on stderr naming the
//! knob that sets the size (`MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE`), not with
//! a bare SIGSEGV.
//!
//! A task stack has a guard below it (`stacks.rs`, `GUARD_SIZE`: 1 MiB,
//! which no frame under 1 MiB can skip). A fault in the guard, or just
//! below it (a larger frame that skipped it into unmapped memory), on a
//! thread running a fiber, is an overflow: the handler writes the line and
//! aborts.
//!
//! - **Chaining.** Any other fault goes to the handler that was installed
//!   before ours (saved when ours is installed, once per process): called
//!   as the kernel would call it (three arguments if it asked for
//!   `SA_SIGINFO`, one otherwise, with its `sa_mask` blocked meanwhile,
//!   the default restored first if it was `SA_RESETHAND`);
//!   with none (`SIG_DFL`), or an ignored fault signal (`SIG_IGN`, which
//!   the kernel does not honour for a fault either), the default action is
//!   restored and the handler returns, so the faulting instruction faults
//!   again and kills the process as if we had never been there (a core
//!   dump included). In a Rust program the handler before ours is std's,
//!   which reports a thread's own stack overflow.
//! - **A handler installed after ours** replaces it for the whole process
//!   (`sigaction` has no chain of its own): a task's overflow is then that
//!   handler's to report, or, if it calls the one it replaced (as
//!   sanitizers and std do), ours still names the stack. The runtime does
//!   not install ours again.
//! - **The alternate signal stack.** The handler runs on an alternate
//!   signal stack (the faulting stack has no room left): each thread that
//!   runs a fiber (runtime threads, and a thread waiting outside the pool
//!   that runs tasks) gets one before its first fiber, unless it has one
//!   already (std gives its threads one; ours never replaces it). Ours has
//!   [`alt_stack_size`] bytes, at least 256 KiB, with a guard page below:
//!   what runs on it is our handler and whatever handler it chains to, and
//!   any `SA_ONSTACK` handler of the program on that thread, which may
//!   need more than `SIGSTKSZ` (8 KiB; a signal frame alone takes up to
//!   `AT_MINSIGSTKSZ`, about 3.5 KiB with AVX-512).

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::sync::Once;

use crate::exec::config::TASK_STACK_SIZE_ENV;
use crate::exec::threads::fibers;
use crate::exec::threads::stacks::{guard_size, page_size};
use crate::sync::misuse::write_stderr;

/// How far below a stack's guard a fault still counts as that stack's
/// overflow (a frame that skipped the guard into unmapped memory).
const BELOW_GUARD: usize = 256 << 10;

/// The smallest alternate signal stack this module maps.
const MIN_ALT_STACK_SIZE: usize = 256 << 10;

/// The usable size of the alternate signal stack this module gives a
/// thread: [`MIN_ALT_STACK_SIZE`], or more where the system asks for more
/// (`SIGSTKSZ`, or four times the kernel's minimal signal frame,
/// `AT_MINSIGSTKSZ`), in whole pages.
pub(super) fn alt_stack_size() -> usize {
    // SAFETY: getauxval has no preconditions (0 when the entry is absent).
    let min_frame = unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } as usize;
    MIN_ALT_STACK_SIZE.max(libc::SIGSTKSZ).max(min_frame.saturating_mul(4)).next_multiple_of(page_size())
}

static INSTALL: Once = Once::new();
/// The handlers of SIGSEGV and SIGBUS before ours, to chain to. Written
/// once, under `INSTALL`, before our handler is installed.
static mut PREVIOUS: [MaybeUninit<libc::sigaction>; 2] = [MaybeUninit::uninit(), MaybeUninit::uninit()];
const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

/// This thread's alternate signal stack, if this module mapped one: the
/// mapping (a guard page, then the stack) and its length.
struct AltStack(Cell<(*mut libc::c_void, usize)>);

impl Drop for AltStack {
    fn drop(&mut self) {
        let (mapping, len) = self.0.get();
        if mapping.is_null() {
            return;
        }
        // SAFETY: disables this thread's alternate stack if it is still
        // ours (the program may have set its own since), then unmaps ours;
        // no handler runs on it now (we are in a destructor).
        unsafe {
            let mut current = MaybeUninit::<libc::stack_t>::zeroed();
            let ours = mapping.cast::<u8>().add(page_size()).cast::<libc::c_void>();
            if libc::sigaltstack(std::ptr::null(), current.as_mut_ptr()) == 0 && current.assume_init().ss_sp == ours {
                let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
                libc::sigaltstack(&disable, std::ptr::null_mut());
            }
            libc::munmap(mapping, len);
        }
    }
}

thread_local! {
    static ALT_STACK: AltStack = const { AltStack(Cell::new((std::ptr::null_mut(), 0))) };
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
    // none is set (a Rust program's std may have set one already, and a
    // program's own is never replaced): a guard page, then the stack.
    unsafe {
        let mut old = MaybeUninit::<libc::stack_t>::zeroed();
        if libc::sigaltstack(std::ptr::null(), old.as_mut_ptr()) != 0 {
            return;
        }
        if old.assume_init().ss_flags & libc::SS_DISABLE == 0 {
            return;
        }
        let (page, size) = (page_size(), alt_stack_size());
        let len = page + size;
        let mapping = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        );
        if mapping == libc::MAP_FAILED {
            return;
        }
        let stack = mapping.cast::<u8>().add(page).cast::<libc::c_void>();
        let new = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: size };
        if libc::mprotect(mapping, page, libc::PROT_NONE) != 0 || libc::sigaltstack(&new, std::ptr::null_mut()) != 0 {
            libc::munmap(mapping, len);
            return;
        }
        let _ = ALT_STACK.try_with(|alt| alt.0.set((mapping, len)));
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
        if is_overflow(address, limit, guard_size()) {
            overflowed(size);
        }
    }
    chain(signal, info, context);
}

/// True when a fault at `address` is an overflow of the stack whose
/// mapping starts at `limit` with a guard of `guard` bytes: in the guard,
/// or up to [`BELOW_GUARD`] below it.
fn is_overflow(address: usize, limit: usize, guard: usize) -> bool {
    address < limit + guard && address >= limit.saturating_sub(BELOW_GUARD)
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
    if !INSTALL.is_completed() {
        // Cannot be (ours is installed last under `INSTALL`); a fault
        // here must still not read `PREVIOUS` unwritten.
        restore_default(signal);
        return;
    }
    let i = SIGNALS.iter().position(|&s| s == signal).unwrap_or(0);
    // SAFETY: `PREVIOUS` was written before this handler was installed.
    let previous = unsafe { (*(&raw const PREVIOUS[i])).assume_init_ref() };
    let target = previous.sa_sigaction;
    if target == libc::SIG_DFL || target == libc::SIG_IGN {
        restore_default(signal);
        return;
    }
    if previous.sa_flags & libc::SA_RESETHAND != 0 {
        // A one-shot handler: the kernel would have restored the default
        // as it delivered the signal.
        restore_default(signal);
    }
    // SAFETY: calls the previous handler as the kernel would have, with
    // the same arguments (a three-argument one if it asked for siginfo)
    // and its mask added to the blocked signals meanwhile; all
    // async-signal-safe.
    unsafe {
        let mut blocked = MaybeUninit::<libc::sigset_t>::uninit();
        let masked = libc::pthread_sigmask(libc::SIG_BLOCK, &previous.sa_mask, blocked.as_mut_ptr()) == 0;
        if previous.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) = std::mem::transmute(target);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(target);
            f(signal);
        }
        if masked {
            libc::pthread_sigmask(libc::SIG_SETMASK, blocked.as_ptr(), std::ptr::null_mut());
        }
    }
}

/// Restores the default action of `signal`: a fault handler that returns
/// then has the faulting instruction run again and fault into it.
fn restore_default(signal: libc::c_int) {
    // SAFETY: installs the default action; async-signal-safe.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &default, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_guard_and_just_below_it_count_as_an_overflow() {
        let (limit, guard) = (0x7000_0000_0000, 1 << 20);
        assert!(is_overflow(limit, limit, guard));
        assert!(is_overflow(limit + guard - 1, limit, guard), "the guard's top byte");
        assert!(is_overflow(limit - 1, limit, guard), "just below the mapping");
        assert!(!is_overflow(limit + guard, limit, guard), "the stack's lowest usable byte");
        assert!(!is_overflow(limit - BELOW_GUARD - 1, limit, guard));
        assert!(!is_overflow(16, limit, guard), "a null pointer's fault is chained");
    }

    #[test]
    fn the_alternate_stack_holds_more_than_the_system_asks_for() {
        let size = alt_stack_size();
        assert!(size >= (64 << 10).max(libc::SIGSTKSZ), "{size}");
        assert!(size >= MIN_ALT_STACK_SIZE && size.is_multiple_of(page_size()), "{size}");
    }
}
