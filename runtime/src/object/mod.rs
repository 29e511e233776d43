//! The reference-counted objects compiled code holds.
//! - [`recycle`]: per-thread recycling of the runtime's small allocations.
//! - [`header`]: the header (kind tag, reference count, free function).
//! - [`live`]: live-object counts.
//! - [`completion`]: the state word and waiter list of every object; a
//!   waiter carries its own fire function.
//! - [`token`], [`value`], [`group`]: the three object kinds.

/// What every object kind has the same: the checked borrow of an ABI
/// pointer, its completion, its reference count, and the kind tag. Each
/// kind's file calls it once, with its type and kind; `produced` adds, for a token
/// and a value (completed once by their producer), `Completable`.
macro_rules! object_basics {
    ($ty:ident, $kind:expr, produced) => {
        object_basics!($ty, $kind);

        impl $crate::object::completion::Completable for $ty {
            fn completion(&self) -> &$crate::object::completion::Completion {
                &self.completion
            }
        }
    };
    ($ty:ident, $kind:expr) => {
        impl $ty {
            /// Checks and borrows the object behind an ABI pointer.
            ///
            /// # Safety
            /// `ptr` is null or points to readable memory of at least a
            /// header; if it is an object of this kind, the caller holds a
            /// reference for the borrow's length.
            pub unsafe fn from_abi<'a>(ptr: *mut $ty, call: &str) -> &'a $ty {
                // SAFETY: forwarded contract.
                unsafe { $crate::object::header::checked(ptr, call) }
            }

            pub fn completion(&self) -> &$crate::object::completion::Completion {
                &self.completion
            }

            pub fn ref_count(&self) -> i64 {
                self.header.ref_count()
            }
        }

        impl $crate::object::header::RuntimeObject for $ty {
            const KIND: $crate::base::kind::Kind = $kind;
        }
    };
}

/// The header's free function of a kind that `recycle::boxed` allocated
/// (a token, a group): checks that no waiter is left, frees the block, and
/// counts the object gone.
macro_rules! free_boxed {
    ($ty:ident) => {
        impl $ty {
            /// The header's free function.
            ///
            /// # Safety
            /// `this` is an object of this kind with no reference left,
            /// freed once.
            unsafe fn free(this: *mut $crate::object::header::Header, call: &str) {
                let kind = <$ty as $crate::object::header::RuntimeObject>::KIND;
                let this = this.cast::<$ty>();
                // SAFETY: we own the object, allocated by `create` (`boxed`).
                unsafe {
                    (*this).completion.check_no_waiters(call, kind.name());
                    $crate::object::recycle::drop_boxed(this);
                }
                $crate::object::live::object_freed(kind);
            }
        }
    };
}

pub(crate) mod completion;
pub(crate) mod group;
pub(crate) mod header;
pub(crate) mod live;
pub(crate) mod recycle;
pub(crate) mod token;
pub(crate) mod value;
