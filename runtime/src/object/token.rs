//! `!async.token`: a completion with no payload.

use std::ptr::NonNull;

use crate::base::kind::Kind;
use crate::object::completion::Completion;
use crate::object::header::Header;
use crate::object::live;
use crate::object::recycle;

#[repr(C)]
pub struct Token {
    header: Header,
    completion: Completion,
}

free_boxed!(Token);
object_basics!(Token, Kind::Token, produced);

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
}
