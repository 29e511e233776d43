//! The header every runtime object starts with, and reference counting.
//!
//! `mlirAsyncRuntimeAddRef`/`DropRef` receive an untyped pointer, so every
//! token, value and group is `#[repr(C)]` with a [`Header`] first. The
//! header carries a kind tag (checked by every call, so a wrong, foreign or
//! freed pointer is reported instead of misread), the reference count, and
//! the function that frees the object when the count reaches zero: this
//! module does not know the three kinds' types.
//!
//! Layout: the tag sits at offset 16. A freed block's first 16 bytes are
//! overwritten by glibc's allocator (its free-list links), so the dead tag
//! written at free time survives there until the block is reused, and a
//! pointer passed back after its object was freed is reported as such.

use crate::base::kind::Kind;
use crate::sync::misuse::abort_misuse;
use crate::sync::mutation;
use crate::sync::{fence, AtomicI64, AtomicU32, Ordering};

/// Written over the tag when an object is freed.
const DEAD_TAG: u32 = 0xdead_0bec;

/// Frees an object whose last reference was dropped: the kind's own
/// destructor, given the call that dropped it (for misuse messages).
pub(super) type FreeFn = unsafe fn(*mut Header, &str);

#[repr(C)]
pub struct Header {
    refs: AtomicI64,
    free: FreeFn,
    tag: AtomicU32,
}

impl Header {
    pub(crate) fn new(kind: Kind, refs: i64, free: FreeFn) -> Header {
        Header {
            refs: AtomicI64::new(refs),
            free,
            tag: AtomicU32::new(kind.tag()),
        }
    }

    /// The tag of the object at `ptr`.
    ///
    /// # Safety
    /// `ptr` is non-null and points to readable memory of at least a header.
    #[inline(always)]
    unsafe fn tag_of(ptr: *const Header) -> u32 {
        // SAFETY: per the contract.
        // Relaxed: the tag is written once before the object is published
        // (publication itself synchronises) and only changes at free time.
        unsafe { (*ptr).tag.load(Ordering::Relaxed) }
    }

    /// Checks that `ptr` is a live object of any kind, aborting on a null,
    /// freed or unrecognised pointer.
    ///
    /// # Safety
    /// `ptr` is null or points to readable memory of at least a header.
    #[inline(always)]
    pub(crate) unsafe fn check_live(ptr: *const Header, call: &str) {
        // SAFETY: non-null, and the caller promises readable memory.
        if ptr.is_null() || Kind::from_tag(unsafe { Header::tag_of(ptr) }).is_none() {
            // SAFETY: forwarded contract.
            unsafe { Header::reject(ptr, None, call) }
        }
    }

    /// Reports what is wrong with `ptr`, which is not a live object of the
    /// kind `expected` (or of any kind, with `None`), and aborts.
    ///
    /// # Safety
    /// As [`Header::check_live`].
    #[cold]
    #[inline(never)]
    unsafe fn reject(ptr: *const Header, expected: Option<Kind>, call: &str) -> ! {
        if ptr.is_null() {
            abort_misuse(call, "null object");
        }
        // SAFETY: non-null, and the caller promises readable memory.
        let tag = unsafe { Header::tag_of(ptr) };
        match (Kind::from_tag(tag), expected) {
            (Some(found), Some(expected)) => abort_misuse(
                call,
                &format!("expected a {}, got a {}", expected.name(), found.name()),
            ),
            (Some(_), None) => unreachable!("a live object of any kind is not rejected"),
            (None, _) if tag == DEAD_TAG => abort_misuse(call, "object used after it was freed"),
            (None, _) => abort_misuse(call, "not a runtime object (bad pointer)"),
        }
    }

    pub(super) fn ref_count(&self) -> i64 {
        // Relaxed: a diagnostic snapshot only.
        self.refs.load(Ordering::Relaxed)
    }

    /// Adds `count` references.
    pub(crate) fn add_ref(&self, count: i64, call: &str) {
        if count < 0 {
            abort_misuse(call, "negative reference count increment");
        }
        // Relaxed, as in `Arc::clone`: a new reference is made from one the
        // caller already holds, so no other memory needs ordering here.
        let prev = self.refs.fetch_add(count, Ordering::Relaxed);
        if prev <= 0 {
            abort_misuse(call, "reference added to an object whose count is zero");
        }
        if prev.checked_add(count).is_none() {
            abort_misuse(call, "reference count overflow");
        }
    }

    /// Drops `count` references and frees the object when none is left.
    ///
    /// # Safety
    /// `this` is a live object. The caller must not touch the object after
    /// this call: it may have been freed (by this call or, once our
    /// references are gone, by any other thread).
    pub(crate) unsafe fn drop_ref(this: *const Header, count: i64, call: &str) {
        if count < 0 {
            abort_misuse(call, "negative reference count decrement");
        }
        // SAFETY: the caller holds `count` references, so the object is live.
        let header = unsafe { &*this };
        // The sole holder (the usual last drop, by the awaiting caller after
        // the task released its reference) frees without a read-modify-write:
        // saves a locked instruction a drop, 7 of the 49 of a blocking-awaits
        // round (see `is_sole_holder`).
        if !header.is_sole_holder(count) {
            // Release: everything this thread did with the object happens
            // before whoever frees it (the `Acquire` fence below), as in
            // `Arc::drop`.
            let prev = header.refs.fetch_sub(count, Ordering::Release);
            if prev < count {
                abort_misuse(call, "reference count dropped below zero");
            }
            if prev != count {
                return;
            }
            // ThreadSanitizer does not model fences; its build (`make
            // sanitize` sets `--cfg mlir_async_tsan`) uses the equivalent
            // acquire load, as `Arc::drop` does under TSan.
            #[cfg(not(mlir_async_tsan))]
            fence(Ordering::Acquire);
            #[cfg(mlir_async_tsan)]
            header.refs.load(Ordering::Acquire);
        }
        // SAFETY: the count reached zero, or was ours alone: no other
        // reference exists.
        unsafe { Header::free(this, call) };
    }

    /// True when the caller's `count` references are all there are: no
    /// other thread holds one, so none can add or drop one, link a waiter
    /// or read the object any more. Acquire: the load reads the last
    /// decrement of every earlier holder (each a `Release` head of a
    /// release sequence), so whatever they did with the object (a waiter
    /// linked, a read) happens before the caller's next step, as the fence
    /// after a decrement to zero gives `drop_ref` (a `Relaxed` load frees a
    /// token whose waiter, linked by the group's adder before its drop, it
    /// does not see: loom, `sync/mutation.rs` 11).
    pub(crate) fn is_sole_holder(&self, count: i64) -> bool {
        self.refs.load(if mutation::DROP_SOLE_RELAXED { Ordering::Relaxed } else { Ordering::Acquire }) == count
    }

    /// Frees the object.
    ///
    /// # Safety
    /// `this` is a live object of which the caller holds every reference
    /// (or whose count the caller took to zero).
    pub(crate) unsafe fn free(this: *const Header, call: &str) {
        // SAFETY: live (the caller's contract).
        let header = unsafe { &*this };
        let free = header.free;
        // Relaxed: this thread owns the object now; the tag only serves
        // later misuse checks.
        header.tag.store(DEAD_TAG, Ordering::Relaxed);
        // SAFETY: no other reference exists, and this thread owns the
        // object; `free` is the kind's destructor.
        unsafe { free(this.cast_mut(), call) };
    }
}

/// A token, value or group: `#[repr(C)]`, with its [`Header`] first.
pub(crate) trait RuntimeObject {
    const KIND: Kind;
}

/// Checks that `ptr` is a live object of kind `T` and borrows it.
///
/// # Safety
/// `ptr` is null or points to readable memory of at least a header; if it
/// is an object of kind `T`, the caller holds a reference for the borrow's
/// length.
#[inline(always)]
pub(crate) unsafe fn checked<'a, T: RuntimeObject>(ptr: *mut T, call: &str) -> &'a T {
    let header = ptr.cast::<Header>();
    // SAFETY: non-null, and the caller promises readable memory.
    if header.is_null() || unsafe { Header::tag_of(header) } != T::KIND.tag() {
        // SAFETY: forwarded contract.
        unsafe { Header::reject(header, Some(T::KIND), call) }
    }
    // SAFETY: checked to be a live `T`, which starts with its header.
    unsafe { &*ptr }
}
