//! A task: a coroutine to resume exactly once, and what made it ready.

use std::ffi::c_void;

use crate::sync::misuse::abort_misuse;

/// The ABI's resume function: `resume(handle)`.
pub(crate) type ResumeFn = unsafe extern "C" fn(*mut c_void);

/// A coroutine to resume: `resume(handle)`. Not `Clone`: a task is resumed
/// exactly once, and [`Task::run`] consumes it.
#[derive(Debug)]
pub(crate) struct Task {
    handle: *mut c_void,
    resume: ResumeFn,
    /// What made the task ready (the trace and the counters show it).
    origin: Origin,
}

// SAFETY: a coroutine handle may be resumed on any thread; that is the
// contract of `mlirAsyncRuntimeExecute`.
unsafe impl Send for Task {}

impl Task {
    /// A task from the ABI's `(handle, resume)` pair, made ready by
    /// `origin`; aborts on a null resume function.
    pub(crate) fn new(handle: *mut c_void, resume: Option<ResumeFn>, origin: Origin, call: &str) -> Task {
        match resume {
            Some(resume) => Task { handle, resume, origin },
            None => abort_misuse(call, "null resume function"),
        }
    }

    pub(crate) fn origin(&self) -> Origin {
        self.origin
    }

    /// Resumes the coroutine.
    pub(crate) fn run(self) {
        // SAFETY: the compiled code handed us a valid coroutine handle and
        // its resume function; `self` is consumed, so it runs once.
        unsafe { (self.resume)(self.handle) }
    }
}

/// What made a task ready to run: the trace's `origin` argument.
///
/// A word wide, though five values fit a byte: a [`Task`] is then three
/// words with no padding, and a `Result<(), Task>` (a push that may be
/// refused, its tag in this field's niche) is copied as three words. As a
/// byte, the copy wrote the tag and the padding in pieces and read them
/// back as one word: a failed store forwarding twice per
/// `mlirAsyncRuntimeExecute` from outside the pool (`perf annotate` of
/// `with_entered_instance`: 40% of its samples on those two loads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u64)]
pub enum Origin {
    /// `mlirAsyncRuntimeExecute`.
    Execute,
    /// A continuation after a token completed.
    AfterToken,
    /// A continuation after a value completed.
    AfterValue,
    /// A continuation after a group completed.
    AfterGroup,
    /// A task that switched out of its thread in a blocking `Await*`,
    /// resumed once the object completed (its stack went with it).
    Resume,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Execute => "execute",
            Origin::AfterToken => "after-token",
            Origin::AfterValue => "after-value",
            Origin::AfterGroup => "after-group",
            Origin::Resume => "resume",
        }
    }

    pub(crate) fn from_u8(bits: u8) -> Origin {
        match bits {
            1 => Origin::AfterToken,
            2 => Origin::AfterValue,
            3 => Origin::AfterGroup,
            4 => Origin::Resume,
            _ => Origin::Execute,
        }
    }
}

/// How a task reached the thread that ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Route {
    /// Taken from the runtime's queue.
    Queued,
    /// From the thread's next-task slot, right after the task before it.
    Slot,
    /// Taken from the runtime's queue by a thread outside the pool while
    /// it waited in an `Await*` (threads/README.md, "A waiting thread runs
    /// tasks").
    Waiter,
}

impl Route {
    pub fn name(self) -> &'static str {
        match self {
            Route::Queued => "queued",
            Route::Slot => "slot",
            Route::Waiter => "waiter",
        }
    }

    pub(crate) fn from_u8(bits: u8) -> Route {
        match bits {
            1 => Route::Slot,
            2 => Route::Waiter,
            _ => Route::Queued,
        }
    }
}
