//! An alternate signal stack, and a record of where the stack ends, on every
//! thread of the process, so that a stack overflow on any thread can still
//! run the crash handler and be named as one.
//!
//! A stack overflow faults on the thread's guard page with no stack left:
//! the kernel can run a handler for it only on an alternate signal stack
//! (`sigaltstack`), which is per thread. Rust's std installs one on the
//! threads it spawns only in a process whose `main` it started: it does so in
//! the harness, but the runtime library is a cdylib with its own copy of std,
//! which never ran that set-up, so the runtime's worker threads (Rust std
//! threads) have none; nor do the C++ runtime's std::threads. Both are
//! created with `pthread_create`, and the harness executable defines and
//! exports `pthread_create` (src/main.rs), which the dynamic loader binds
//! every library's calls to before libc's: [`create`] starts each new thread
//! in [`trampoline`], which installs a 64 KiB alternate stack (unless the
//! thread has one) and records the thread's stack bounds, then runs the
//! thread's own start routine. The stack is freed when the thread exits.
//!
//! Limits: a thread created without `pthread_create` (a raw `clone`) gets no
//! alternate stack, and its stack overflow still ends the process with no
//! line; a library that switches to stacks of its own (coroutines on
//! separate stacks) is only recognised by the fault being near the stack
//! pointer.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::sync::OnceLock;

/// A thread's start routine, as `pthread_create` takes it. "C-unwind": a
/// thread may end with `pthread_exit`, a forced unwind through
/// [`trampoline`] (which holds nothing that needs dropping when it calls
/// the routine).
pub type StartRoutine = unsafe extern "C-unwind" fn(*mut c_void) -> *mut c_void;

type PthreadCreate =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartRoutine, *mut c_void) -> libc::c_int;

/// Size of the alternate signal stack: ample for the crash handler, which
/// formats one line in a fixed buffer.
const ALT_STACK_SIZE: usize = 64 * 1024;

struct Start {
    routine: StartRoutine,
    arg: *mut c_void,
}

/// libc's `pthread_create`, the next definition after the executable's.
fn real_pthread_create() -> PthreadCreate {
    static REAL: OnceLock<usize> = OnceLock::new();
    let address = *REAL.get_or_init(|| {
        // SAFETY: looks a symbol up; the name is NUL-terminated.
        let a = unsafe { libc::dlsym(libc::RTLD_NEXT, c"pthread_create".as_ptr()) } as usize;
        if a == 0 {
            // No libc below us: nothing can create threads at all.
            let msg = b"jit-harness: internal error: no pthread_create in libc\n";
            // SAFETY: write from a valid buffer, then leave.
            unsafe {
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(1)
            }
        }
        a
    });
    // SAFETY: the address is libc's pthread_create, which has this type.
    unsafe { std::mem::transmute::<usize, PthreadCreate>(address) }
}

/// `pthread_create` for the whole process: libc's, with the new thread
/// started through [`trampoline`].
///
/// # Safety
/// The contract of `pthread_create(3)`.
pub unsafe fn create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    arg: *mut c_void,
) -> libc::c_int {
    let start = Box::into_raw(Box::new(Start { routine, arg }));
    // SAFETY: the caller's arguments, with our routine and its argument.
    let rc = unsafe { real_pthread_create()(thread, attr, trampoline, start.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created: the box is still ours.
        drop(unsafe { Box::from_raw(start) });
    }
    rc
}

/// Every thread's first function: set up, then the thread's own routine.
unsafe extern "C-unwind" fn trampoline(start: *mut c_void) -> *mut c_void {
    // SAFETY: `start` is the box `create` made for this thread, taken once.
    let Start { routine, arg } = *unsafe { Box::from_raw(start.cast::<Start>()) };
    prepare_thread();
    // SAFETY: the routine and argument the thread was created with.
    unsafe { routine(arg) }
}

/// An alternate signal stack that this thread installed; freed when the
/// thread's thread-local storage is destroyed.
struct AltStack {
    mapping: *mut c_void,
    len: usize,
    stack: *mut c_void,
}

impl Drop for AltStack {
    fn drop(&mut self) {
        // SAFETY: queries and, if it is still ours, disables this thread's
        // alternate stack before unmapping the memory it lives in.
        unsafe {
            let mut current: libc::stack_t = std::mem::zeroed();
            if libc::sigaltstack(std::ptr::null(), &mut current) == 0 && current.ss_sp == self.stack {
                let disable = libc::stack_t { ss_sp: std::ptr::null_mut(), ss_flags: libc::SS_DISABLE, ss_size: 0 };
                libc::sigaltstack(&disable, std::ptr::null_mut());
            }
            libc::munmap(self.mapping, self.len);
        }
    }
}

thread_local! {
    static ALT_STACK: RefCell<Option<AltStack>> = const { RefCell::new(None) };
    /// [low, high) addresses whose fault means a stack overflow on this
    /// thread: its guard area below the lowest stack address. Read by the
    /// signal handler: a const-initialised Cell without a destructor is a
    /// plain thread-local load there.
    static GUARD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Records this thread's guard area and gives it an alternate signal stack
/// if it has none. For the main thread, `main_thread` widens the guard area
/// to the kernel's gap below a growing stack.
pub fn prepare_thread_with(main_thread: bool) {
    record_guard(main_thread);
    install_alt_stack();
}

fn prepare_thread() {
    prepare_thread_with(false);
}

fn record_guard(main_thread: bool) {
    let page = page_size();
    // SAFETY: pthread_getattr_np fills `attr`, which is destroyed after use.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return;
        }
        let (mut addr, mut size, mut guard) = (std::ptr::null_mut(), 0usize, 0usize);
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0
            && libc::pthread_attr_getguardsize(&attr, &mut guard) == 0;
        libc::pthread_attr_destroy(&mut attr);
        if !ok || addr.is_null() {
            return;
        }
        let low = addr as usize;
        // glibc before 2.27 counted the guard inside the stack: cover a
        // guard's width on both sides of the lowest address. Below a main
        // thread's stack the kernel keeps a gap of 256 pages.
        let below = if main_thread { guard.max(256 * page) } else { guard.max(page) };
        let _ = GUARD.try_with(|g| g.set((low.saturating_sub(below), low + guard.max(page))));
    }
}

fn install_alt_stack() {
    // SAFETY: queries this thread's alternate stack; maps, protects and
    // installs a new one only if there is none.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut current) == 0 && current.ss_flags & libc::SS_DISABLE == 0 {
            return; // it has one (Rust std's, or an earlier one)
        }
        let page = page_size();
        let len = ALT_STACK_SIZE + page;
        let mapping = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if mapping == libc::MAP_FAILED {
            return;
        }
        // A guard page below the alternate stack, as for any stack.
        libc::mprotect(mapping, page, libc::PROT_NONE);
        let stack = mapping.cast::<u8>().add(page).cast::<c_void>();
        let new = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: ALT_STACK_SIZE };
        if libc::sigaltstack(&new, std::ptr::null_mut()) != 0 {
            libc::munmap(mapping, len);
            return;
        }
        let alt = AltStack { mapping, len, stack };
        if ALT_STACK.try_with(|s| *s.borrow_mut() = Some(alt)).is_err() {
            // The thread is being torn down; keep the stack (tiny leak).
        }
    }
}

/// Whether a fault at `address` on this thread, interrupted with stack
/// pointer `sp` (0 if unknown), is a stack overflow: the address is in the
/// thread's guard area, or just below or at the stack pointer (for stacks
/// the harness did not see created). Async-signal-safe.
pub fn is_stack_overflow(address: usize, sp: usize) -> bool {
    let (low, high) = GUARD.try_with(|g| g.get()).unwrap_or((0, 0));
    if low < high && (low..high).contains(&address) {
        return true;
    }
    const NEAR: usize = 64 * 1024;
    sp != 0 && address <= sp.saturating_add(256) && sp - address.min(sp) <= NEAR
}
