//! The instance this thread (outside the pools) last queued on: saves the
//! lock and a reference count per call. A closed gate refreshes it.
//!
//! Every `Execute` and `Await*` from outside the pools starts here, so the
//! thread-local is reached through a slot of `sync/tls.rs` (one load),
//! as the recycling caches are: through `thread_local!` alone, the access
//! called `__tls_get_addr` (about 20 instructions) at every such call.

use std::cell::{OnceCell, RefCell};
use std::sync::Arc;

use crate::instance::gate::Presence;
use crate::instance::{current_instance, Instance};
use crate::sync::tls;

/// The cache itself, and this thread's presence in gates (`gate.rs`),
/// registered at its first enter; its drop clears the slot before the
/// instance goes, and removes the presence.
struct Cached {
    instance: RefCell<Option<Arc<Instance>>>,
    presence: OnceCell<Arc<Presence>>,
}

impl Cached {
    const fn new() -> Cached {
        Cached { instance: RefCell::new(None), presence: OnceCell::new() }
    }

    fn presence(&self) -> &Presence {
        self.presence.get_or_init(Presence::register)
    }
}

impl Drop for Cached {
    fn drop(&mut self) {
        tls::with(|slots| slots.cached_instance.set(std::ptr::null()));
        if let Some(presence) = self.presence.get() {
            Presence::forget(presence);
        }
    }
}

thread_local! {
    /// Owns this thread's cache; the `cached_instance` slot of `tls`
    /// points to it while it lives.
    static CACHED: Cached = const { Cached::new() };
}

/// Calls `f` with this thread's cache, or returns `None` once it is gone
/// (thread exit).
#[inline(always)]
fn with_cache<R>(f: impl FnOnce(&Cached) -> R) -> Option<R> {
    let ptr = tls::with(|slots| slots.cached_instance.get()).cast::<Cached>();
    if ptr.is_null() {
        return with_cache_slow(f);
    }
    // SAFETY: the slot points to `CACHED` of this thread, from its first
    // use until the start of its drop, which clears the slot first (or, in
    // a child forked from a waiting thread's task, to a leaked cache that
    // never goes: `forget_in_child`); the borrow stays on this thread,
    // within this call.
    Some(f(unsafe { &*ptr }))
}

#[cold]
#[inline(never)]
fn with_cache_slow<R>(f: impl FnOnce(&Cached) -> R) -> Option<R> {
    CACHED
        .try_with(|cached| {
            tls::with(|slots| slots.cached_instance.set((cached as *const Cached).cast()));
            f(cached)
        })
        .ok()
}

/// This thread's cached instance's address, for `threads/migration.rs`
/// (never inlined: `sync/mutation.rs`, 7).
#[cfg_attr(feature = "mutation-tls-inline", inline(always))]
#[cfg_attr(not(feature = "mutation-tls-inline"), inline(never))]
pub(crate) fn cached_instance_address() -> usize {
    tls::fresh(CACHED.try_with(|cached| cached as *const _ as usize).unwrap_or(0))
}

/// Calls `f` with an instance whose gate this thread is inside: the one it
/// used last, or else the current one.
#[inline(always)]
pub(super) fn with_entered_instance<R>(f: impl FnOnce(&Instance) -> R) -> R {
    let mut f = Some(f);
    let cached = with_cache(|cache| {
        let mut cached = cache.instance.borrow_mut();
        loop {
            let instance = cached.get_or_insert_with(current_instance);
            // (Never nested: the borrow above would fail first.)
            if let Some(_inside) = instance.gate.enter_as(cache.presence()) {
                return (f.take().expect("called once"))(instance);
            }
            // Destroyed since: the next instance.
            *cached = None;
        }
    });
    match cached {
        Some(result) => result,
        // This thread's locals are gone (a call from a thread-local
        // destructor, or from an exit handler after `exit` destroyed the
        // caller's): the current instance, without the cache.
        None => without_cache(f.take().expect("not called")),
    }
}

#[cold]
#[inline(never)]
fn without_cache<R>(f: impl FnOnce(&Instance) -> R) -> R {
    loop {
        let instance = current_instance();
        let inside = instance.gate.enter();
        if inside.is_some() {
            let result = f(&instance);
            drop(inside);
            return result;
        }
    }
}

/// Forgets the instance this thread used last (it was closed, or is being
/// destroyed).
pub(super) fn forget_cached() {
    let old = with_cache(|cached| cached.instance.borrow_mut().take());
    // Dropped outside the borrow.
    drop(old);
}

/// In a forked child: forgets the cached instance without touching it (its
/// memory is the parent's copy).
///
/// A fork from a task that this thread runs while it waits outside the
/// pool finds the cache borrowed: [`with_entered_instance`] holds the
/// borrow across the wait's run of tasks, in a frame of the parent's wait
/// that the child does not return to. The child's thread then goes on with
/// a fresh cache, leaked (one small allocation per such fork): the
/// borrowed one still holds the parent's instance, dropped (a count only:
/// the forgotten current slot keeps it) when the thread exits.
pub(super) fn forget_in_child() {
    let borrowed = with_cache(|cached| match cached.instance.try_borrow_mut() {
        Ok(mut cached) => {
            std::mem::forget(cached.take());
            false
        }
        Err(_) => true,
    });
    if borrowed == Some(true) {
        // (Without the parent's presence, which names the parent's gate.)
        let fresh: &'static Cached = Box::leak(Box::new(Cached::new()));
        tls::with(|slots| slots.cached_instance.set((fresh as *const Cached).cast()));
    }
}
