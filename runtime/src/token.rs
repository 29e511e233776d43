//! `!async.token`: a completion with no payload.

use std::ptr::NonNull;

use crate::completion::{Completion, Outcome};
use crate::misuse::abort_misuse;
use crate::object::{Header, Kind};
use crate::stats;

#[repr(C)]
pub struct Token {
    header: Header,
    completion: Completion,
}

impl Token {
    /// A pending token with two references: the caller's, and the one the
    /// producing task releases when it completes the token.
    pub fn create() -> NonNull<Token> {
        stats::object_created(Kind::Token);
        let token = Box::new(Token {
            header: Header::new(Kind::Token, 2),
            completion: Completion::pending(),
        });
        NonNull::from(Box::leak(token))
    }

    /// Checks and borrows the token behind an ABI pointer.
    ///
    /// # Safety
    /// `ptr` is null or points to readable memory of at least a header; if
    /// it is a token, the caller holds a reference for the borrow's length.
    pub unsafe fn from_abi<'a>(ptr: *mut Token, call: &str) -> &'a Token {
        // SAFETY: forwarded contract.
        unsafe { Header::expect_kind(ptr.cast(), Kind::Token, call) };
        // SAFETY: checked to be a live token.
        unsafe { &*ptr }
    }

    pub fn completion(&self) -> &Completion {
        &self.completion
    }

    pub fn ref_count(&self) -> i64 {
        self.header.ref_count()
    }

    /// Emplaces (`Available`) or sets the error (`Error`), runs the waiters,
    /// then drops the producer's reference.
    ///
    /// # Safety
    /// `this` is a live token on which the caller holds the producer's
    /// reference; the token must not be touched after this call.
    pub unsafe fn complete(this: *const Token, outcome: Outcome, call: &str) {
        // SAFETY: live while we hold the producer's reference.
        let token = unsafe { &*this };
        if token.completion.complete(outcome).is_err() {
            abort_misuse(call, "token completed twice");
        }
        // SAFETY: our last touch of the token.
        unsafe { Header::drop_ref(this.cast(), 1, call) };
    }

    /// # Safety
    /// Called by `object::destroy` once, with no reference left.
    pub(crate) unsafe fn free(this: *mut Token, call: &str) {
        // SAFETY: we own the token, allocated by `create`.
        let token = unsafe { Box::from_raw(this) };
        token.completion.check_no_waiters(call, "token");
        drop(token);
        stats::object_freed(Kind::Token);
    }
}
