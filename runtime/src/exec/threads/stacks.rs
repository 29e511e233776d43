//! Task stacks: one mmap each, with a guard below ([`GUARD_SIZE`]),
//! committed by the kernel only where touched ([`TaskStack`]), kept in a
//! pool per thread.
//!
//! A stack is taken when a drainer starts on a thread and each time the
//! task running on it switches out (its stack goes with it); it comes back
//! to the pool of the thread on which its fiber ended. The pool keeps
//! [`HOT`] stacks as they are, then up to [`KEPT`] with their pages given
//! back to the kernel (`MADV_DONTNEED`: the mapping stays, the memory
//! goes), and unmaps the rest: after 10,000 tasks blocked at once, a thread
//! holds a few dozen stacks, not 10,000.
//!
//! A stack the kernel refuses (`vm.max_map_count`, memory) is said once on
//! stderr, counted, and the drainer then runs its tasks on its thread's own
//! stack, where a task that blocks blocks the thread (README.md beside
//! this file, "When no stack can be had").

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use corosensei::stack::valgrind::ValgrindStackRegistration;
use corosensei::stack::{Stack, StackPointer};

use crate::probe::observe;
use crate::sync::misuse::warn;
use crate::sync::process::{AtomicBool, AtomicUsize, Ordering};

/// Stacks a thread's pool keeps as they are (their touched pages too).
const HOT: usize = 4;
/// Stacks a thread's pool keeps at most; those beyond [`HOT`] without
/// their pages.
const KEPT: usize = 32;

/// The guard below every task stack: 1 MiB of no access, mapped with the
/// stack (address space only: no memory, no commit, one mapping either
/// way). A function whose frame (or `alloca`) is smaller than the guard
/// cannot skip it: its first write below the stack lands in the guard,
/// and the overflow handler names the stack (`overflow.rs`). That covers
/// any code with frames under 1 MiB, probed or not: the size the kernel
/// keeps free below a main thread's stack since the 2017 Stack Clash fixes
/// (`stack_guard_gap`, 256 pages). A larger frame is safe only with stack
/// probes, which touch each page as the frame grows: Rust code has them
/// (`probe-stack=inline-asm` on every function), clang and GCC emit them
/// with `-fstack-clash-protection`, LLVM for any function with the
/// `"probe-stack"` attribute; MLIR's lowering sets none, so a compiled
/// task with a frame over 1 MiB (a large `memref.alloca`) may write past
/// the guard unseen.
pub(crate) const GUARD_SIZE: usize = 1 << 20;

/// One task stack: a mapping of `len` bytes whose lowest [`GUARD_SIZE`]
/// bytes are the guard (no access), the rest read-write.
///
/// As corosensei's `TaskStack`, but mapped with `MAP_NORESERVE`: the
/// kernel does not count its 8 MiB against the commit limit, only the
/// pages a task touches. Otherwise 10,000 switched-out tasks would count
/// as 80 GB, and a `fork` (which accounts every counted mapping of the
/// parent at once) failed with ENOMEM (seen under AddressSanitizer with
/// tasks switched out); a thread's own stack is counted, which is what a
/// runtime with a thread per blocked task paid.
pub(crate) struct TaskStack {
    /// The mapping's lowest address (the guard's).
    start: usize,
    len: usize,
    /// Lets Valgrind (callgrind: `make bench-instr`) follow the switches.
    valgrind: ManuallyDrop<ValgrindStackRegistration>,
}

// SAFETY: the stack is plain memory owned by this value; a fiber running
// on it may move between threads (README.md, "Tasks on stacks of their
// own").
unsafe impl Send for TaskStack {}

impl TaskStack {
    /// A stack with at least `size` usable bytes.
    fn new(size: usize) -> std::io::Result<TaskStack> {
        let page = page_size();
        let usable = size.div_ceil(page) * page;
        let guard = guard_size();
        let len = usable + guard;
        // SAFETY: a fresh anonymous private mapping; nothing else uses it.
        unsafe {
            let start = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
                -1,
                0,
            );
            if start == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            if libc::mprotect(start.cast::<u8>().add(guard).cast(), usable, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                let error = std::io::Error::last_os_error();
                libc::munmap(start, len);
                return Err(error);
            }
            let valgrind = ManuallyDrop::new(ValgrindStackRegistration::new(start.cast(), len));
            Ok(TaskStack { start: start as usize, len, valgrind })
        }
    }
}

impl Drop for TaskStack {
    fn drop(&mut self) {
        // SAFETY: deregistered first, then unmapped; nothing runs on a
        // stack being dropped (its fiber ended).
        unsafe {
            ManuallyDrop::drop(&mut self.valgrind);
            libc::munmap(self.start as *mut libc::c_void, self.len);
        }
    }
}

// SAFETY: the guard is the lowest part of the mapping, below the usable
// part; base and limit are page-aligned (so 16-byte aligned).
unsafe impl Stack for TaskStack {
    fn base(&self) -> StackPointer {
        StackPointer::new(self.start + self.len).expect("a mapping is not at address 0")
    }

    fn limit(&self) -> StackPointer {
        StackPointer::new(self.start).expect("a mapping is not at address 0")
    }
}

thread_local! {
    /// This thread's pool, newest last.
    static POOL: RefCell<Vec<TaskStack>> = const { RefCell::new(Vec::new()) };
}

/// Stacks taken and not given back, process-wide (the counters' peak of
/// task stacks in use, and the refusal's line). Relaxed: statistics only.
static IN_USE: AtomicUsize = AtomicUsize::new(0);
/// The refusal was said once.
static REFUSAL_SAID: AtomicBool = AtomicBool::new(false);

/// A stack of `size` bytes: from this thread's pool, else a new mapping;
/// `None` when the kernel refuses one.
///
/// `#[inline(never)]`, as every thread-local access of this module: it
/// runs after a switch, in a frame that must read this thread's pool, not
/// the one it started on (threads/README.md, "Thread-locals").
#[inline(never)]
pub(super) fn take(size: usize) -> Option<TaskStack> {
    let pooled = POOL.try_with(|pool| {
        let mut pool = pool.borrow_mut();
        // A pool holds stacks of one size: the instance's (a later
        // instance with another size finds them too small or larger,
        // which is harmless either way but would mix; drop them).
        match pool.last() {
            Some(stack) if fits(stack, size) => pool.pop(),
            Some(_) => {
                pool.clear();
                None
            }
            None => None,
        }
    });
    let stack = match pooled {
        Ok(Some(stack)) => stack,
        _ => match TaskStack::new(size) {
            Ok(stack) => stack,
            Err(error) => {
                refused(size, &error);
                return None;
            }
        },
    };
    // Relaxed: statistics only.
    let in_use = IN_USE.fetch_add(1, Ordering::Relaxed) + 1;
    observe::task_stack_taken(|| in_use);
    Some(stack)
}

/// Gives `stack` back to this thread's pool (see the module's comment).
#[inline(never)]
pub(super) fn give_back(stack: TaskStack) {
    // Relaxed: statistics only.
    IN_USE.fetch_sub(1, Ordering::Relaxed);
    let _ = POOL.try_with(move |pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() >= KEPT {
            return;
        }
        if pool.len() >= HOT {
            release_pages(&stack);
        }
        pool.push(stack);
    });
}

/// True when `stack` is what [`TaskStack::new`] gives for `size`.
fn fits(stack: &TaskStack, size: usize) -> bool {
    usable_size(stack).checked_sub(size).is_some_and(|extra| extra < page_size())
}

/// The bytes a task can use of `stack` (its mapping less the guard).
fn usable_size(stack: &TaskStack) -> usize {
    stack.base().get() - stack.limit().get() - guard_size()
}

/// The guard's size: [`GUARD_SIZE`], whole pages (a page larger than the
/// guard, which no Linux port has, would make it one page). Also called in
/// `overflow.rs`'s signal handler (see [`page_size`]).
pub(super) fn guard_size() -> usize {
    GUARD_SIZE.next_multiple_of(page_size())
}

/// The page size. Also called in `overflow.rs`'s signal handler: glibc
/// answers `_SC_PAGESIZE` from a value cached at start, with no lock.
pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// Gives the pages of a stack no fiber runs on back to the kernel; the
/// mapping stays, and reads as zeros when touched again.
fn release_pages(stack: &TaskStack) {
    let limit = stack.limit().get() + guard_size();
    let len = stack.base().get() - limit;
    // SAFETY: the range is the stack's own writable part, and nothing runs
    // on it (it is being pooled): discarding its contents is harmless.
    unsafe { libc::madvise(limit as *mut libc::c_void, len, libc::MADV_DONTNEED) };
}

/// The kernel refused a stack: said once, counted each time.
#[cold]
fn refused(size: usize, error: &std::io::Error) {
    observe::task_stack_refused();
    if !REFUSAL_SAID.swap(true, Ordering::Relaxed) {
        let max_map_count = std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".to_string());
        warn(&format!(
            "cannot map a task stack of {size} bytes ({error}) with {} in use: the binding limit is \
             vm.max_map_count ({max_map_count} mappings, two per stack) or memory; tasks that block \
             from now on block their thread (raise vm.max_map_count, or lower \
             MLIR_ASYNC_RUNTIME_TASK_STACK_SIZE if memory is the limit)",
            IN_USE.load(Ordering::Relaxed)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_given_back_is_taken_again_from_the_pool() {
        let size = 256 << 10;
        let stack = take(size).expect("a stack");
        assert!(usable_size(&stack) >= size);
        let base = stack.base();
        give_back(stack);
        let again = take(size).expect("a stack");
        assert_eq!(again.base(), base, "the pooled stack is reused");
        give_back(again);
    }

    /// The whole guard is no-access, and the usable part starts right above
    /// it: the mapping as `/proc/self/maps` shows it.
    #[test]
    fn the_guard_below_a_stack_is_one_no_access_mapping_of_guard_size() {
        let size = 256 << 10;
        let stack = TaskStack::new(size).expect("a stack");
        let limit = stack.limit().get();
        let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
        let range = |line: &str| {
            let (range, rest) = line.split_once(' ').expect("a range");
            let (lo, hi) = range.split_once('-').expect("lo-hi");
            (usize::from_str_radix(lo, 16).unwrap(), usize::from_str_radix(hi, 16).unwrap(), rest.to_string())
        };
        let regions: Vec<_> = maps.lines().map(range).collect();
        let guard = regions.iter().find(|(lo, hi, _)| *lo <= limit && limit < *hi).expect("the guard is mapped");
        assert!(guard.2.starts_with("---p"), "the guard is not no-access: {guard:?}");
        // The guard may be merged with a neighbouring no-access mapping,
        // never cut short.
        assert!(guard.1 >= limit + GUARD_SIZE, "the guard ends before {GUARD_SIZE} bytes: {guard:?}");
        let above = limit + guard_size();
        let usable = regions.iter().find(|(lo, hi, _)| *lo <= above && above < *hi).expect("the stack is mapped");
        assert!(usable.2.starts_with("rw"), "{usable:?}");
        assert_eq!(usable_size(&stack), size);
        assert_eq!(stack.base().get() - above, size);
    }

    #[test]
    fn the_pool_keeps_at_most_kept_stacks() {
        let size = 128 << 10;
        let stacks: Vec<_> = (0..KEPT + 8).map(|_| take(size).expect("a stack")).collect();
        for stack in stacks {
            give_back(stack);
        }
        assert_eq!(POOL.with(|p| p.borrow().len()), KEPT);
        POOL.with(|p| p.borrow_mut().clear());
    }
}
