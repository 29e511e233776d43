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
    /// This thread's scheduler state (`scheduler.rs`).
    pub(crate) scheduler: Cell<*const ()>,
    _spare: Cell<*const ()>,
}

extern "C" {
    fn mlir_async_runtime_tls() -> *const Slots;
}

/// Calls `f` with this thread's slots.
#[inline(always)]
pub(crate) fn with<R>(f: impl FnOnce(&Slots) -> R) -> R {
    // SAFETY: the C function returns this thread's block, which lives as
    // long as the thread; the borrow does not leave `f`, so it never
    // outlives the thread or crosses to another one.
    f(unsafe { &*mlir_async_runtime_tls() })
}
