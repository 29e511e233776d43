//! `!async.token`: a completion with no payload.

use std::ptr::{self, NonNull};

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
        let token = recycle::alloc_for::<Token>();
        // Every field is written below: this pattern stops compiling when
        // one is added.
        let _ = |t: &Token| {
            let Token { header: _, completion: _ } = t;
        };
        // SAFETY: a fresh block for a token, made in place field by field
        // (`Completion::write_pending`).
        unsafe {
            ptr::addr_of_mut!((*token).header).write(Header::new(Kind::Token, 2, Token::free));
            Completion::write_pending(ptr::addr_of_mut!((*token).completion));
        }
        // SAFETY: `alloc_for` never returns null.
        unsafe { NonNull::new_unchecked(token) }
    }
}
