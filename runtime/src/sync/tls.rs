//! Thread-local slots that cost one load: a block of pointers defined in C
//! in the initial-exec TLS model (`csrc/tls.c`), since Rust's
//! `thread_local!` goes through `__tls_get_addr` in a shared library.
//!
//! Each slot caches a pointer to per-thread state owned elsewhere (by a
//! `thread_local!` that frees it at thread exit, and clears the slot
//! first): the hot paths read the slot, the cold path fills it.

use std::cell::Cell;

/// The per-thread block (`struct mlir_async_runtime_tls` in csrc/tls.c).
#[repr(C)]
pub(crate) struct Slots {
    /// This thread's live-object counters (`live.rs`).
    pub(crate) live: Cell<*const ()>,
    /// This thread's recycling free lists (`recycle.rs`).
    pub(crate) recycle: Cell<*const ()>,
    /// This thread's scheduler state (`exec/threads/mod.rs`).
    pub(crate) thread_state: Cell<*const ()>,
    /// The scheduler whose drain loop runs on this thread, null elsewhere
    /// (`exec/threads/mod.rs`). A plain value, not owned by a thread-local, so it
    /// stays right while the thread's thread-locals are destroyed: glibc's
    /// `exit` destroys the calling thread's before it runs the `atexit`
    /// handlers, which must still tell a runtime thread from another.
    pub(crate) draining: Cell<*const ()>,
    /// The task stack (a fiber) this thread runs on now, null on its own
    /// stack (`exec/threads/fibers.rs`). Read and written only through
    /// that module's `#[inline(never)]` accessors: a fiber may switch out on
    /// one thread and in on another.
    pub(crate) fiber: Cell<*const ()>,
    /// This thread's entry as a thread outside the pool that queues tasks
    /// (`exec/threads/outside.rs`), null when it holds none.
    pub(crate) outside: Cell<*const ()>,
    /// This thread's cached instance (`instance/cached.rs`).
    pub(crate) cached_instance: Cell<*const ()>,
    /// Which of the tasks this thread queued produce which objects
    /// (`exec/threads/binding.rs`).
    pub(crate) binder: Cell<*const ()>,
}

#[cfg(not(target_arch = "x86_64"))]
extern "C" {
    fn mlir_async_runtime_tls() -> *const Slots;
}

/// This thread's block.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn block() -> *const Slots {
    // SAFETY: the C function has no preconditions.
    unsafe { mlir_async_runtime_tls() }
}

/// This thread's block: the thread pointer (`fs:[0]`, the TCB's pointer to
/// itself) plus the variable's offset in the static TLS area, which the
/// loader writes into a GOT entry (the initial-exec sequence a C compiler
/// emits for it), instead of a call.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn block() -> *const Slots {
    let block: *const Slots;
    // SAFETY: reads the GOT entry of `mlir_async_runtime_tls_block` (an
    // initial-exec TLS variable of this library, csrc/tls.c) and the
    // thread pointer; writes only the output register and the flags.
    unsafe {
        std::arch::asm!(
            "mov {block}, qword ptr [rip + mlir_async_runtime_tls_block@GOTTPOFF]",
            "add {block}, qword ptr fs:[0]",
            block = out(reg) block,
            options(pure, readonly, nostack),
        );
    }
    block
}

/// Calls `f` with this thread's slots.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Slots) -> R) -> R {
    // SAFETY: `block` is this thread's block, which lives as long as the
    // thread; the borrow does not leave `f`, so it never outlives the
    // thread or crosses to another one.
    f(unsafe { &*block() })
}

/// `address` (a thread-local's, read by an accessor after a task's
/// switch), through an optimisation barrier. An accessor that only
/// computes a thread-local's address is a pure function to LLVM
/// (`memory(none)`): even `#[inline(never)]`, two calls of it within one
/// activation may be merged across the call that switches the task to
/// another thread (seen under ThreadSanitizer's build: the fuzzer's stream
/// read stale after 1814 of 1814 migrations). The barrier gives the
/// accessor a side effect, so every call computes the address anew.
#[inline(always)]
pub(crate) fn fresh(address: usize) -> usize {
    std::hint::black_box(address)
}
