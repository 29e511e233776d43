//! `!async.token`: a completion with no payload.

use std::ptr::NonNull;

use crate::completion::{self, Completable, Completion, Outcome};
use crate::object::{self, Header, Kind, RuntimeObject};
use crate::recycle;
use crate::live;

#[repr(C)]
pub struct Token {
    header: Header,
    completion: Completion,
}

impl Token {
    /// A pending token with two references: the caller's, and the one the
    /// producing task releases when it completes the token.
    pub(crate) fn create() -> NonNull<Token> {
        live::object_created(Kind::Token);
        let token = recycle::boxed(Token {
            header: Header::new(Kind::Token, 2, Token::free),
            completion: Completion::pending(),
        });
        // SAFETY: `boxed` never returns null.
        unsafe { NonNull::new_unchecked(token) }
    }

    /// Checks and borrows the token behind an ABI pointer.
    ///
    /// # Safety
    /// `ptr` is null or points to readable memory of at least a header; if
    /// it is a token, the caller holds a reference for the borrow's length.
    pub unsafe fn from_abi<'a>(ptr: *mut Token, call: &str) -> &'a Token {
        // SAFETY: forwarded contract.
        unsafe { object::checked(ptr, call) }
    }

    pub fn completion(&self) -> &Completion {
        &self.completion
    }

    pub fn ref_count(&self) -> i64 {
        self.header.ref_count()
    }

    /// Emplaces (`Available`) or sets the error (`Error`), fires the
    /// waiters, then drops the producer's reference.
    ///
    /// # Safety
    /// `this` is a live token on which the caller holds the producer's
    /// reference; the token must not be touched after this call.
    pub(crate) unsafe fn complete(this: *const Token, outcome: Outcome, call: &str) {
        // SAFETY: forwarded contract.
        unsafe { completion::complete_and_release(this, outcome, call) };
    }

    /// The header's free function.
    ///
    /// # Safety
    /// `this` is a token with no reference left, freed once.
    unsafe fn free(this: *mut Header, call: &str) {
        let this = this.cast::<Token>();
        // SAFETY: we own the token, allocated by `create` (`boxed`).
        unsafe {
            (*this).completion.check_no_waiters(call, "token");
            drop(recycle::unbox(this));
        }
        live::object_freed(Kind::Token);
    }
}

impl RuntimeObject for Token {
    const KIND: Kind = Kind::Token;
}

impl Completable for Token {
    fn completion(&self) -> &Completion {
        &self.completion
    }
}
