//! The C interface of shim/filecheck_shim.h (LLVM 19's FileCheck library);
//! declarations only. `super` wraps them in a safe type.

use std::ffi::c_char;
use std::marker::PhantomData;

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct FcsStr {
    pub ptr: *const c_char,
    pub len: usize,
}

impl FcsStr {
    pub(super) fn new(s: &[u8]) -> FcsStr {
        FcsStr { ptr: s.as_ptr().cast(), len: s.len() }
    }

    /// The bytes it points to.
    ///
    /// # Safety
    /// `self` must come from the shim and the checker it came from must not
    /// have been called or freed since (the shim's lifetime rule).
    pub(super) unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: per the caller's promise, ptr..ptr+len is live shim memory.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len) }
    }
}

#[repr(C)]
pub(super) struct FcsOptions {
    pub check_prefixes: *const FcsStr,
    pub check_prefix_count: usize,
    pub comment_prefixes: *const FcsStr,
    pub comment_prefix_count: usize,
    pub implicit_check_not: *const FcsStr,
    pub implicit_check_not_count: usize,
    pub strict_whitespace: i32,
    pub match_full_lines: i32,
    pub ignore_case: i32,
    pub allow_unused_prefixes: i32,
    pub enable_var_scope: i32,
    pub allow_empty: i32,
}

/// `llvm::FileCheckDiag::MatchType`, as numbered in the header.
pub(super) mod match_type {
    pub const FOUND_AND_EXPECTED: i32 = 0;
    pub const FOUND_BUT_EXCLUDED: i32 = 1;
    pub const FOUND_BUT_WRONG_LINE: i32 = 2;
    pub const FOUND_BUT_DISCARDED: i32 = 3;
    pub const FOUND_ERROR_NOTE: i32 = 4;
    pub const NONE_AND_EXCLUDED: i32 = 5;
    pub const NONE_BUT_EXPECTED: i32 = 6;
    pub const NONE_FOR_INVALID_PATTERN: i32 = 7;
    pub const FUZZY: i32 = 8;
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct FcsDiag {
    pub check_id: usize,
    pub check_abbrev: FcsStr,
    pub check_line: u32,
    pub implicit_index: u32,
    pub match_type: i32,
    pub input_start_line: u32,
    pub input_start_col: u32,
    pub input_end_line: u32,
    pub input_end_col: u32,
    pub note: FcsStr,
}

/// The shim's opaque checker (not Send, not Sync: one thread at a time).
#[repr(C)]
pub(super) struct FcsChecker {
    _opaque: [u8; 0],
    _not_send_sync: PhantomData<*mut u8>,
}

extern "C" {
    pub(super) fn fcs_parse(options: *const FcsOptions, check_name: FcsStr, check_text: FcsStr) -> *mut FcsChecker;
    pub(super) fn fcs_is_valid(checker: *const FcsChecker) -> i32;
    pub(super) fn fcs_check(checker: *mut FcsChecker, input_name: FcsStr, input: FcsStr) -> i32;
    pub(super) fn fcs_messages(checker: *const FcsChecker) -> FcsStr;
    pub(super) fn fcs_diag_count(checker: *const FcsChecker) -> usize;
    pub(super) fn fcs_get_diag(checker: *const FcsChecker, i: usize) -> FcsDiag;
    pub(super) fn fcs_canonical_input(checker: *const FcsChecker) -> FcsStr;
    pub(super) fn fcs_free(checker: *mut FcsChecker);
}
