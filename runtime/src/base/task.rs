//! A task: a coroutine to resume exactly once, and what made it ready.

use std::ffi::c_void;
use std::num::NonZeroUsize;

use crate::sync::misuse::abort_misuse;

/// The ABI's resume function: `resume(handle)`.
pub(crate) type ResumeFn = unsafe extern "C" fn(*mut c_void);

/// A coroutine to resume: `resume(handle)`. Not `Clone`: a task is resumed
/// exactly once, and [`Task::run`] consumes it.
///
/// Two words: the handle, and the resume function's address with the
/// [`Origin`] in its top bits ([`ORIGIN_SHIFT`]). A task is then a scalar
/// pair, which an `Option<Task>` is too (its `None` in the second word's
/// niche): both move in two registers, returned as well as passed. As
/// three words (the origin in a word of its own), every `Option<Task>`
/// returned went through the stack, written as words by the callee and
/// read back by the caller as a 16-byte and an 8-byte load, a store
/// forwarding that fails: `perf annotate` put 75% of `Batch::next`'s
/// samples, and 30-40% of `push_from_waiter`'s and `take_for_waiter`'s, on
/// the instructions after those loads (fine-grained loop, waiters on).
pub(crate) struct Task {
    handle: *mut c_void,
    /// `resume as usize | origin << ORIGIN_SHIFT`: never zero, as `resume`
    /// is not null.
    resume_and_origin: NonZeroUsize,
}

/// Where the origin sits in a task's second word: above any address of
/// code in a user process (47 bits on x86-64, 48 or 52 on AArch64, 56 with
/// five-level paging). [`Task::new`] refuses an address that reaches it.
const ORIGIN_SHIFT: u32 = usize::BITS - 3;
const ADDRESS_MASK: usize = (1 << ORIGIN_SHIFT) - 1;

// The five origins fit in the bits above the shift.
const _: () = assert!((Origin::Resume as usize) < (1 << (usize::BITS - ORIGIN_SHIFT)));

// SAFETY: a coroutine handle may be resumed on any thread; that is the
// contract of `mlirAsyncRuntimeExecute`.
unsafe impl Send for Task {}

impl Task {
    /// A task from the ABI's `(handle, resume)` pair, made ready by
    /// `origin`; aborts on a null resume function, or one at an address no
    /// user process has.
    pub(crate) fn new(handle: *mut c_void, resume: Option<ResumeFn>, origin: Origin, call: &str) -> Task {
        let Some(resume) = resume else {
            abort_misuse(call, "null resume function");
        };
        let address = resume as usize;
        if address & !ADDRESS_MASK != 0 {
            abort_misuse(call, "resume function at an address above any user process's code");
        }
        let word = address | (origin as usize) << ORIGIN_SHIFT;
        // SAFETY: `address` is not zero (a function pointer is not null).
        Task { handle, resume_and_origin: unsafe { NonZeroUsize::new_unchecked(word) } }
    }

    /// The coroutine's handle: the same at every resumption of one
    /// coroutine (`exec/threads/binding.rs` binds objects to it).
    pub(crate) fn handle(&self) -> *mut c_void {
        self.handle
    }

    pub(crate) fn origin(&self) -> Origin {
        Origin::from_bits(self.resume_and_origin.get() >> ORIGIN_SHIFT)
    }

    /// Resumes the coroutine.
    pub(crate) fn run(self) {
        let address = self.resume_and_origin.get() & ADDRESS_MASK;
        // SAFETY: `address` is the resume function's, as `new` received it
        // (the origin's bits were zero in it, and are masked off here).
        let resume = unsafe { std::mem::transmute::<usize, ResumeFn>(address) };
        // SAFETY: the compiled code handed us a valid coroutine handle and
        // its resume function; `self` is consumed, so it runs once.
        unsafe { resume(self.handle) }
    }
}

impl std::fmt::Debug for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("handle", &self.handle)
            .field("resume", &((self.resume_and_origin.get() & ADDRESS_MASK) as *const c_void))
            .field("origin", &self.origin())
            .finish()
    }
}

/// What made a task ready to run: the trace's `origin` argument, kept in
/// a [`Task`]'s second word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
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
        Origin::from_bits(usize::from(bits))
    }

    fn from_bits(bits: usize) -> Origin {
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
    /// its producers").
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

#[cfg(test)]
mod tests {
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{Origin, Task};

    static RESUMED_WITH: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn record(handle: *mut c_void) {
        RESUMED_WITH.store(handle as usize, Ordering::SeqCst);
    }

    #[test]
    fn a_task_is_two_words_and_so_is_an_optional_one() {
        assert_eq!(std::mem::size_of::<Task>(), 2 * std::mem::size_of::<usize>());
        assert_eq!(std::mem::size_of::<Option<Task>>(), 2 * std::mem::size_of::<usize>());
    }

    #[test]
    fn every_origin_and_the_resume_call_survive_the_packing() {
        let origins = [Origin::Execute, Origin::AfterToken, Origin::AfterValue, Origin::AfterGroup, Origin::Resume];
        for (i, origin) in origins.into_iter().enumerate() {
            // Handles are opaque: any bits, the top ones included.
            let handle = (usize::MAX - i) as *mut c_void;
            let task = Task::new(handle, Some(record), origin, "test");
            assert_eq!(task.origin(), origin);
            task.run();
            assert_eq!(RESUMED_WITH.load(Ordering::SeqCst), handle as usize);
        }
    }
}
