//! Per-thread recycling of the runtime's own small allocations: tokens,
//! values with small payloads, groups and waiter nodes.
//!
//! Every task creates and frees a few of these, often on different threads
//! (main creates a token, a worker completes and frees it), and the
//! general-purpose allocator paid for that on every task (a quarter of
//! fib-spawn's samples were in malloc and free). Blocks here come in 16
//! size classes of 16 to 256 bytes, 16-byte aligned:
//!
//! - each thread keeps a free list per class (no lock, no atomic);
//! - a free list that grows past `2 * BATCH` blocks hands `BATCH` of them to
//!   the process-wide depot of that class (one short lock per batch), and an
//!   empty one takes a batch back from there, so memory freed on one thread
//!   returns to threads that allocate;
//! - new blocks are carved `BATCH` at a time from one allocation (a slab),
//!   and are never returned to the system: the memory held is bounded by
//!   the most blocks alive at once;
//! - an exiting thread gives its lists to the depot.
//!
//! A freed block keeps the object header's dead tag (offset 16; the free
//! list link is at offset 0), so a pointer used after its object was freed
//! is still reported as such until the block is reused.
//!
//! Under loom, and under AddressSanitizer (`--cfg mlir_async_asan`, set by
//! `make sanitize`), blocks come from the global allocator one by one, so
//! that a use after free is caught there.

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr;

use crate::sync::process::ForkSafeLock;
use crate::sync::tls;

/// The block size of class `c` is `(c + 1) * GRANULE`.
const GRANULE: usize = 16;
const CLASSES: usize = 16;
/// The largest size recycled.
pub(super) const MAX_SIZE: usize = GRANULE * CLASSES;
/// Blocks moved between a thread and the depot at once, and per slab.
const BATCH: usize = 32;

/// True when blocks are recycled (not under loom or AddressSanitizer).
const RECYCLING: bool = !cfg!(any(loom, mlir_async_asan));

/// A free block: its first word links to the next.
struct FreeBlock {
    next: *mut FreeBlock,
}

/// A singly linked list of free blocks of one class.
#[derive(Clone, Copy)]
struct FreeList {
    head: *mut FreeBlock,
    len: usize,
}

// SAFETY: a list owns the free blocks it links (nothing else points to
// them), so it can move to another thread with them.
unsafe impl Send for FreeList {}

impl FreeList {
    const EMPTY: FreeList = FreeList { head: ptr::null_mut(), len: 0 };

    /// # Safety
    /// `block` is a free block of this list's class, owned by the caller.
    unsafe fn push(&mut self, block: *mut FreeBlock) {
        // SAFETY: per the contract, the block is ours to write.
        unsafe { (*block).next = self.head };
        self.head = block;
        self.len += 1;
    }

    fn pop(&mut self) -> Option<*mut FreeBlock> {
        let block = self.head;
        if block.is_null() {
            return None;
        }
        // SAFETY: blocks on a list are free and linked through `next`.
        self.head = unsafe { (*block).next };
        self.len -= 1;
        Some(block)
    }

    /// Takes the first `n` blocks (`n <= len`) off into a list of their own.
    fn split_off(&mut self, n: usize) -> FreeList {
        let head = self.head;
        let mut last = head;
        for _ in 1..n {
            // SAFETY: the list has at least `n` linked blocks.
            last = unsafe { (*last).next };
        }
        // SAFETY: as above; `last` is the n-th block.
        self.head = unsafe { (*last).next };
        // SAFETY: as above.
        unsafe { (*last).next = ptr::null_mut() };
        self.len -= n;
        FreeList { head, len: n }
    }
}

/// The process-wide store of batches of one class, behind a lock that the
/// `fork` handlers hold across a fork. The lock's acquire/release pair
/// also hands over the blocks' contents.
struct Depot(ForkSafeLock<Vec<FreeList>>);

impl Depot {
    const fn new() -> Depot {
        Depot(ForkSafeLock::new(Vec::new()))
    }

    fn with<R>(&self, f: impl FnOnce(&mut Vec<FreeList>) -> R) -> R {
        f(&mut self.0.lock())
    }
}

static DEPOTS: [Depot; CLASSES] = [const { Depot::new() }; CLASSES];

/// One thread's free lists; given to the depots when the thread exits.
struct Cache {
    lists: [Cell<FreeList>; CLASSES],
}

impl Drop for Cache {
    fn drop(&mut self) {
        tls::with(|slots| slots.recycle.set(ptr::null()));
        for (class, list) in self.lists.iter().enumerate() {
            let list = list.replace(FreeList::EMPTY);
            if list.len > 0 {
                DEPOTS[class].with(|batches| batches.push(list));
            }
        }
    }
}

thread_local! {
    /// This thread's free lists; the fast paths read them through the
    /// `recycle` slot of `tls` (one load), null until first use and again
    /// once the cache is gone.
    static CACHE: Cache = const { Cache { lists: [const { Cell::new(FreeList::EMPTY) }; CLASSES] } };
}

/// This thread's cache if it is made and not gone: one load.
#[inline(always)]
fn cache_if_made<'a>() -> Option<&'a Cache> {
    let cache = tls::with(|slots| slots.recycle.get()).cast::<Cache>();
    // SAFETY: as in `cache`.
    (!cache.is_null()).then(|| unsafe { &*cache })
}

/// This thread's cache, made now if need be, or `None` once it is gone
/// (thread exit).
#[inline(always)]
fn cache<'a>() -> Option<&'a Cache> {
    let mut cache = tls::with(|slots| slots.recycle.get()).cast::<Cache>();
    if cache.is_null() {
        cache = CACHE.try_with(|c| c as *const Cache).ok()?;
        tls::with(|slots| slots.recycle.set(cache.cast()));
    }
    // SAFETY: the cache lives until this thread's exit, and its drop clears
    // the slot first; the borrow stays on this thread.
    Some(unsafe { &*cache })
}

/// The address of this thread's free lists (the migration check,
/// `exec/threads/migration.rs`). Never inlined, as every read of a
/// thread-local after a task's switch (`sync/mutation.rs`, 8).
#[cfg_attr(feature = "mutation-tls-inline", inline(always))]
#[cfg_attr(not(feature = "mutation-tls-inline"), inline(never))]
pub(crate) fn cache_address() -> usize {
    tls::fresh(cache().map_or(0, |cache| cache as *const Cache as usize))
}

#[inline(always)]
fn class_of(layout: Layout) -> Option<usize> {
    (RECYCLING && layout.size() <= MAX_SIZE && layout.align() <= GRANULE && layout.size() > 0)
        .then(|| layout.size().div_ceil(GRANULE) - 1)
}

fn block_size(class: usize) -> usize {
    (class + 1) * GRANULE
}

/// A new batch of blocks of `class`, carved from one allocation.
fn new_slab(class: usize) -> FreeList {
    let size = block_size(class);
    let layout = Layout::from_size_align(size * BATCH, GRANULE).expect("a small slab");
    // SAFETY: a non-zero size.
    let slab = unsafe { std::alloc::alloc(layout) };
    if slab.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    let mut list = FreeList::EMPTY;
    for i in (0..BATCH).rev() {
        // SAFETY: block `i` lies inside the slab and is 16-byte aligned.
        unsafe { list.push(slab.add(i * size).cast()) };
    }
    list
}

/// Allocates a block for `layout`: from this thread's list, a batch of the
/// depot, or a new slab; from the global allocator if it is too big or
/// recycling is off. Null only if the global allocator fails.
///
/// Inlined: for an object's layout, known at compile time, the class is a
/// constant and the usual case is a pop off this thread's list; the rest
/// is out of line ([`alloc_slow`]). (One function for both took 37
/// instructions a token, 16 of them to find the class and 9 to save and
/// restore the registers the slow path needs.)
#[inline(always)]
pub(super) fn alloc(layout: Layout) -> *mut u8 {
    let Some(class) = class_of(layout) else {
        // SAFETY: callers never ask for zero bytes (objects have headers).
        return unsafe { std::alloc::alloc(layout) };
    };
    if let Some(cache) = cache_if_made() {
        let cell = &cache.lists[class];
        let mut list = cell.get();
        if let Some(block) = list.pop() {
            cell.set(list);
            return block.cast();
        }
    }
    alloc_slow(class)
}

/// [`alloc`] when this thread's list of `class` is empty, or its cache is
/// not made yet or gone.
#[cold]
#[inline(never)]
fn alloc_slow(class: usize) -> *mut u8 {
    let from_cache = cache().map(|cache| {
        let cell = &cache.lists[class];
        let mut list = cell.get();
        let block = match list.pop() {
            Some(block) => block,
            None => {
                list = DEPOTS[class].with(Vec::pop).unwrap_or_else(|| new_slab(class));
                list.pop().expect("a batch is never empty")
            }
        };
        cell.set(list);
        block
    });
    match from_cache {
        Some(block) => block.cast(),
        // This thread's cache is gone (thread exit): take a batch for this
        // one block and give the rest back.
        None => {
            let mut list = DEPOTS[class].with(Vec::pop).unwrap_or_else(|| new_slab(class));
            let block = list.pop().expect("a batch is never empty");
            if list.len > 0 {
                DEPOTS[class].with(|batches| batches.push(list));
            }
            block.cast()
        }
    }
}

/// Frees a block from [`alloc`] with the same `layout`. Inlined, as
/// [`alloc`]: the usual case is a push onto this thread's list.
///
/// # Safety
/// `ptr` came from `alloc(layout)` and is not used afterwards.
#[inline(always)]
pub(crate) unsafe fn free(ptr: *mut u8, layout: Layout) {
    let Some(class) = class_of(layout) else {
        // SAFETY: forwarded contract: it came from the global allocator.
        unsafe { release_to_system(ptr, layout) };
        return;
    };
    let block = ptr.cast::<FreeBlock>();
    if let Some(cache) = cache_if_made() {
        let cell = &cache.lists[class];
        let mut list = cell.get();
        if list.len + 1 < 2 * BATCH {
            // SAFETY: the caller gives the block up.
            unsafe { list.push(block) };
            cell.set(list);
            return;
        }
    }
    // SAFETY: forwarded contract.
    unsafe { free_slow(block, class) }
}

/// [`free`] when this thread's list of `class` is full, or its cache is
/// not made yet or gone.
///
/// # Safety
/// As [`free`].
#[cold]
#[inline(never)]
unsafe fn free_slow(block: *mut FreeBlock, class: usize) {
    let cached = cache().map(|cache| {
        let cell = &cache.lists[class];
        let mut list = cell.get();
        // SAFETY: the caller gives the block up.
        unsafe { list.push(block) };
        if list.len >= 2 * BATCH {
            let batch = list.split_off(BATCH);
            DEPOTS[class].with(|batches| batches.push(batch));
        }
        cell.set(list);
    });
    if cached.is_none() {
        let mut list = FreeList::EMPTY;
        // SAFETY: as above.
        unsafe { list.push(block) };
        DEPOTS[class].with(|batches| batches.push(list));
    }
}

/// Returns a block to the global allocator.
///
/// Under `cfg(loom)` the memory is poisoned (every byte `0xff`) and kept
/// instead: loom's atomics refer to loom's object store by an index, which
/// now reads as garbage, so any later touch of the object (a use after
/// free) panics inside loom and fails the model. Normal builds rely on
/// AddressSanitizer for the same check (`make sanitize`).
///
/// # Safety
/// `ptr` was allocated by the global allocator with `layout`, and nothing
/// uses it afterwards.
unsafe fn release_to_system(ptr: *mut u8, layout: Layout) {
    #[cfg(not(loom))]
    // SAFETY: forwarded contract.
    unsafe {
        std::alloc::dealloc(ptr, layout)
    };
    #[cfg(loom)]
    // SAFETY: the block is ours and `layout.size()` bytes long; it is
    // leaked on purpose (a model allocates a handful per iteration).
    unsafe {
        std::ptr::write_bytes(ptr, 0xff, layout.size())
    };
}

/// Moves `value` into a recycled block. (An object with a completion is
/// made in its block instead, field by field: `Token::create`.)
pub(super) fn boxed<T>(value: T) -> *mut T {
    let ptr = alloc_for::<T>();
    // SAFETY: a fresh block, large and aligned enough for `T`.
    unsafe { ptr.write(value) };
    ptr
}

/// A recycled block for a `T`, unwritten.
#[inline(always)]
pub(super) fn alloc_for<T>() -> *mut T {
    let layout = Layout::new::<T>();
    let ptr = alloc(layout).cast::<T>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    ptr
}

/// Moves the value out of a block from [`boxed`] and frees the block.
///
/// # Safety
/// `ptr` came from `boxed::<T>` and is not used afterwards.
pub(super) unsafe fn unbox<T>(ptr: *mut T) -> T {
    // SAFETY: per the contract, the block holds a `T` we now own.
    let value = unsafe { ptr.read() };
    // SAFETY: the same block and layout.
    unsafe { free(ptr.cast(), Layout::new::<T>()) };
    value
}

/// Drops the value in a block from [`boxed`] where it lies (not moved out
/// first, as [`unbox`] does) and frees the block.
///
/// # Safety
/// `ptr` came from `boxed::<T>` and is not used afterwards.
pub(super) unsafe fn drop_boxed<T>(ptr: *mut T) {
    // SAFETY: per the contract, the block holds a `T` we now own.
    unsafe { ptr::drop_in_place(ptr) };
    // SAFETY: the same block and layout.
    unsafe { free(ptr.cast(), Layout::new::<T>()) };
}

/// Before `fork`: no other thread may hold a depot's lock.
pub(crate) fn lock_for_fork() {
    for depot in &DEPOTS {
        depot.0.hold_for_fork();
    }
}

/// After `fork`, in the parent and in the child.
pub(crate) fn unlock_after_fork() {
    for depot in &DEPOTS {
        depot.0.release_after_fork();
    }
}

/// These test the recycling itself, which is off under AddressSanitizer
/// (`make sanitize`): blocks then come from the global allocator.
#[cfg(all(test, not(loom), not(mlir_async_asan)))]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_sizes_up_to_256_bytes_in_16_byte_steps() {
        assert_eq!(class_of(Layout::from_size_align(1, 1).unwrap()), Some(0));
        assert_eq!(class_of(Layout::from_size_align(16, 8).unwrap()), Some(0));
        assert_eq!(class_of(Layout::from_size_align(17, 8).unwrap()), Some(1));
        assert_eq!(class_of(Layout::from_size_align(256, 16).unwrap()), Some(15));
        assert_eq!(class_of(Layout::from_size_align(257, 16).unwrap()), None);
        assert_eq!(class_of(Layout::from_size_align(64, 32).unwrap()), None, "over-aligned");
    }

    #[test]
    fn a_freed_block_is_reused_by_the_same_thread() {
        let layout = Layout::from_size_align(40, 8).unwrap();
        let a = alloc(layout);
        // SAFETY: from `alloc`, not used afterwards.
        unsafe { free(a, layout) };
        assert_eq!(alloc(layout), a);
    }

    #[test]
    fn blocks_freed_on_another_thread_come_back_through_the_depot() {
        let layout = Layout::from_size_align(200, 16).unwrap();
        let blocks: Vec<usize> = (0..4 * BATCH).map(|_| alloc(layout) as usize).collect();
        let mut distinct = blocks.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), blocks.len(), "live blocks are distinct");
        assert!(blocks.iter().all(|b| b % GRANULE == 0), "16-byte aligned");
        std::thread::spawn(move || {
            for b in blocks {
                // SAFETY: from `alloc` on the other thread, not used again.
                unsafe { free(b as *mut u8, layout) };
            }
        })
        .join()
        .unwrap();
        let depot_batches = DEPOTS[class_of(layout).unwrap()].with(|b| b.len());
        assert!(depot_batches >= 3, "the freeing thread handed batches over ({depot_batches})");
    }
}
