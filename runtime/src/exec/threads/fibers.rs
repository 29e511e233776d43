//! Fibers: the run loop ([`run_batch`]) of a drainer, or of a thread that
//! waits outside the pool, runs on a task stack ([`super::stacks`]), and a
//! task that blocks in an `Await*` switches out with that stack, so its
//! thread goes on with its loop on a fresh one (README.md beside this file,
//! "Tasks on stacks of their own").
//!
//! - A drainer, or a waiter, resumes its fiber ([`RunFiber`]) with what
//!   picks its next task ([`Picker`]: the drainer's, `drain_loop.rs`; the
//!   waiter's [`Batch`]). The fiber runs the tasks it picks until it picks
//!   none, then yields and waits to be resumed with the next. A task that
//!   never blocks costs no switch at all.
//! - A task that blocks suspends its fiber, yielding a [`SwitchedOut`]
//!   node. The drainer, back on its own stack, stores the fiber in the node
//!   and only then links the node as a waiter of the awaited object
//!   ([`SwitchedOut::park`], the hand-off), then starts a fresh fiber; if
//!   the object completed meanwhile, the link is refused and the drainer
//!   resumes the fiber at once instead.
//! - The completion fires the node: a task that resumes the parked fiber
//!   ([`resume_switched_out`]) is made ready like a continuation.
//! - The resumed task may finish on another thread. When it returns, its
//!   fiber ends and the stack goes back to the pool of the thread that
//!   resumed it.
//!
//! Thread-locals: a frame on a fiber's stack may run on another thread
//! after a switch, and LLVM may keep a thread-local's address across a call
//! within one activation (llvm-project#98479). So the runtime's code reads
//! thread-locals after a switch only in fresh activations: this module's
//! accessors and every function called after [`suspend`] returns are
//! `#[inline(never)]` (README.md, "Thread-locals"; the migration test in
//! `runtime/tests/migration.rs` fails when they are inlined).

use std::cell::Cell;
use std::marker::PhantomData;
use std::ffi::c_void;
use std::ptr::NonNull;

use corosensei::stack::Stack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::base::task::{Origin, Route, Task};
use crate::exec::threads::handoff::Handoff;
use crate::exec::threads::stacks::TaskStack;
use crate::exec::threads::{migration, stacks, Scheduler, SchedulerRef};
use crate::object::completion::{Completion, Outcome, Waiter, WaiterNode};
use crate::probe::fuzz;
use crate::probe::observe;
use crate::sync::tls;

/// The run loop on a task stack: resumed with a batch to run (or `None`: it
/// ends), yields the node of a task that switched out, or null when the
/// batch gave no more tasks; returns when given `None`, or when a task that
/// switched out has returned (possibly on another thread: the fiber ends,
/// its thread went on long ago).
pub(super) struct Fiber {
    coroutine: Coroutine<Given, *const SwitchedOut, (), TaskStack>,
    /// ThreadSanitizer's record of the fiber (nothing in other builds).
    tsan: tsan::Fiber,
}

/// ThreadSanitizer's fibers (`make sanitize-tsan`): TSan keeps a shadow
/// stack and a clock per context, and must be told of every switch, or it
/// mixes the frames of the thread and of its fibers. A fiber may be
/// switched to on any thread.
#[cfg(mlir_async_tsan)]
mod tsan {
    use std::ffi::c_void;
use std::ptr::NonNull;

    extern "C" {
        fn __tsan_get_current_fiber() -> *mut c_void;
        fn __tsan_create_fiber(flags: u32) -> *mut c_void;
        fn __tsan_destroy_fiber(fiber: *mut c_void);
        fn __tsan_switch_to_fiber(fiber: *mut c_void, flags: u32);
    }

    pub(super) struct Fiber(*mut c_void);

    impl Fiber {
        pub(super) fn new() -> Fiber {
            // SAFETY: TSan's runtime is linked in a TSan build.
            Fiber(unsafe { __tsan_create_fiber(0) })
        }

        /// Runs `f` (a resume of this fiber) as this fiber, then switches
        /// back to the context that called.
        pub(super) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
            // SAFETY: switches between live TSan contexts (flags 0: the
            // switch synchronises, as the real one does).
            unsafe {
                let outer = __tsan_get_current_fiber();
                __tsan_switch_to_fiber(self.0, 0);
                let result = f();
                __tsan_switch_to_fiber(outer, 0);
                result
            }
        }
    }

    impl Drop for Fiber {
        fn drop(&mut self) {
            // SAFETY: the fiber ended; TSan's record of it goes.
            unsafe { __tsan_destroy_fiber(self.0) }
        }
    }
}

#[cfg(not(mlir_async_tsan))]
mod tsan {
    pub(super) struct Fiber;

    impl Fiber {
        pub(super) fn new() -> Fiber {
            Fiber
        }

        #[inline(always)]
        pub(super) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
            f()
        }
    }
}

/// What the code on a fiber reaches through this thread's fiber slot. Lives
/// on the fiber's own stack, so a pointer to it stays right on any thread.
pub(super) struct FiberContext {
    yielder: *const Yielder<Given, *const SwitchedOut>,
    /// The scheduler whose tasks run on this fiber.
    scheduler: SchedulerRef,
    /// The lowest address of the fiber's stack (its guard's), and the
    /// stack's usable size: what the overflow handler reads.
    limit: usize,
    size: usize,
    /// The task running on this fiber switched out: the fiber's run loop
    /// ends when that task returns.
    switched_out: Cell<bool>,
}

impl FiberContext {
    #[inline(always)]
    pub(super) fn switched_out(&self) -> bool {
        self.switched_out.get()
    }

    /// The scheduler whose task runs on this fiber.
    pub(super) fn scheduler(&self) -> &Scheduler {
        // SAFETY: the scheduler outlives the fibers that run its tasks (see
        // `new_fiber`).
        unsafe { self.scheduler.get() }
    }
}

/// The fiber this thread runs on now, if any.
#[inline(never)]
pub(super) fn current() -> Option<&'static FiberContext> {
    let ptr = tls::with(|slots| slots.fiber.get()).cast::<FiberContext>();
    // SAFETY: the slot points to the context of the fiber running on this
    // thread (set on every entry into a fiber, restored on every exit), on
    // that fiber's stack, which lives while the fiber runs here.
    (!ptr.is_null()).then(|| unsafe { &*ptr })
}

/// The stack of the fiber this thread runs on now: its lowest address (its
/// guard's, `stacks::GUARD_SIZE` bytes below the usable part) and its
/// usable size. Async-signal-safe (one load of an
/// initial-exec thread-local, and of the context on the fiber's stack).
pub(super) fn current_stack_bounds() -> Option<(usize, usize)> {
    let ptr = tls::with(|slots| slots.fiber.get()).cast::<FiberContext>();
    // SAFETY: as in `current`.
    (!ptr.is_null()).then(|| unsafe { ((*ptr).limit, (*ptr).size) })
}

/// In a forked child: this thread runs on no fiber of a scheduler here
/// (the fiber it ran on, if any, belongs to the parent's scheduler, whose
/// threads do not exist in the child).
pub(super) fn forget_in_child() {
    set_current(std::ptr::null());
}

#[inline(never)]
fn set_current(context: *const FiberContext) {
    tls::with(|slots| slots.fiber.set(context.cast()));
}

/// Resumes `fiber`, whose task switched out and whose object completed, on
/// this thread until the task returns (the fiber ends) or switches out
/// again (the fiber is parked); a node fired while the fiber was switching
/// out resumes it here at once.
fn drive(mut fiber: Fiber) {
    loop {
        let outer = current_raw();
        let result = fiber.tsan.run(|| fiber.coroutine.resume(None));
        set_current(outer);
        match result {
            CoroutineResult::Return(()) => return stacks::give_back(fiber.coroutine.into_stack()),
            // A fiber yields null only between two batches, on the thread
            // that runs them; one driven here runs a task that switched
            // out, and ends when it returns.
            CoroutineResult::Yield(node) if node.is_null() => {
                unreachable!("a driven fiber yielded without a task switched out")
            }
            // SAFETY: a fiber yields only the node of its task that
            // switched out, which lives on the fiber's stack until the
            // fiber is resumed.
            CoroutineResult::Yield(node) => match unsafe { SwitchedOut::park(node, fiber) } {
                Ok(()) => return,
                Err(fired) => fiber = fired,
            },
        }
    }
}

#[inline(never)]
fn current_raw() -> *const FiberContext {
    tls::with(|slots| slots.fiber.get()).cast()
}

/// A task switched out of its fiber until an object completes: a waiter
/// node on the fiber's own stack (in [`switch_out_until`]'s frame), linked
/// to the object once the fiber is parked in it.
#[repr(C)]
pub(super) struct SwitchedOut {
    waiter: Waiter,
    /// The fiber, from its parking until the task resuming it takes it.
    handoff: Handoff<Fiber>,
    scheduler: SchedulerRef,
    /// The awaited object, alive while the task awaits it (its caller
    /// holds a reference).
    completion: *const Completion,
}

// SAFETY: `#[repr(C)]`, the `Waiter` first.
unsafe impl WaiterNode for SwitchedOut {}

impl SwitchedOut {
    /// The drainer's half of the hand-off: parks `fiber` in `node` and
    /// links the node to the awaited object, or, if the object completed
    /// since its task looked, gives the fiber back to be resumed at once.
    ///
    /// # Safety
    /// `node` is the node `fiber` yielded, and `fiber` is suspended.
    unsafe fn park(node: *const SwitchedOut, fiber: Fiber) -> Result<(), Fiber> {
        // SAFETY: the node lives on the suspended fiber's stack until the
        // fiber is resumed, which needs the node fired (linked), or this
        // function's `Err`; this is the one parking side, and the node is
        // not linked yet. The object lives while its task awaits it.
        let parked = unsafe {
            (*node).handoff.park(fiber, || (*(*node).completion).add_waiter(node.cast_mut().cast()).is_ok())
        };
        if parked.is_err() {
            // Completed while switching out: this drainer takes the task
            // up again at once (the count `switching_out` raised ends
            // here, as it does in `resume_switched_out` for a parked one).
            // SAFETY: the scheduler lives while its drainer runs.
            unsafe { (*node).scheduler.get() }.switched_in();
        }
        parked
    }

    /// The completion's half: makes the parked fiber's task ready.
    ///
    /// # Safety
    /// `node` is a `SwitchedOut` linked to the completing object (so its
    /// fiber is parked).
    unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
        let node = node.cast::<SwitchedOut>();
        // SAFETY: the node lives until its fiber is resumed, which needs
        // the task made ready below; read before it, not touched after.
        let scheduler = unsafe { (*node).scheduler };
        let task = Task::new(node.cast(), Some(resume_switched_out), Origin::Resume, "resume");
        // SAFETY: the scheduler lives while a task is switched out.
        unsafe { scheduler.get() }.make_ready(task);
    }
}

/// The task that resumes a parked fiber: its task goes on on this thread.
///
/// # Safety
/// `node` is a parked, fired `SwitchedOut`; called once.
unsafe extern "C" fn resume_switched_out(node: *mut c_void) {
    let node = node.cast::<SwitchedOut>().cast_const();
    // SAFETY: parked and fired: the fiber is in the node (the completion's
    // swap acquired the link that followed its write, the queue carried
    // that here), and the node lives on the fiber's stack until the fiber
    // runs again, below.
    let (fiber, scheduler) = unsafe { ((*node).handoff.take(), (*node).scheduler) };
    // SAFETY: the scheduler lives while a task is switched out; this
    // drainer keeps it from being idle from here on.
    unsafe { scheduler.get() }.switched_in();
    drive(fiber);
}

/// A blocking wait on a fiber, for an object found pending: switches out,
/// and the thread switched to links the task as `completion`'s waiter
/// ([`SwitchedOut::park`]); returns on whichever thread resumed the task.
pub(super) fn switch_out_until(context: &FiberContext, scheduler: &Scheduler, completion: &Completion) -> Outcome {
    // The node outlives its time in the list: this function does not return
    // before the node fired (the fiber is resumed only then), or was not
    // linked.
    let node = SwitchedOut {
        waiter: Waiter::new(SwitchedOut::fire),
        handoff: Handoff::new(),
        scheduler: scheduler.as_ref(),
        completion,
    };
    let observed = observe::wait_started();
    let left = observe::switch_thread();
    scheduler.switching_out();
    context.switched_out.set(true);
    observe::task_switched_out();
    if migration::enabled() {
        // The same switch, with the thread-locals read in this activation
        // before and after it (one branch, so that a compiler may keep the
        // first reading's addresses for the second if the accessors were
        // inlined: what the check must catch).
        let before = migration::read();
        suspend(context, &node);
        after_switch_in(context, observed, left);
        migration::check(before, migration::read());
    } else {
        suspend(context, &node);
        after_switch_in(context, observed, left);
    }
    completion.state().expect("resumed before completion")
}

/// Switches out to the fiber's resumer, yielding `node`.
#[inline(never)]
fn suspend(context: &FiberContext, node: &SwitchedOut) {
    // SAFETY: the yielder lives on this fiber's stack for as long as the
    // fiber runs, and this code runs on it.
    let yielder = unsafe { &*context.yielder };
    let given = yielder.suspend(node);
    debug_assert!(given.is_none(), "a task that switched out is resumed without a batch to run");
}

/// Back on a thread after a switch: the fiber slot is this thread's again,
/// and the wait is recorded where the task now runs.
#[inline(never)]
fn after_switch_in(context: &FiberContext, observed: Option<u64>, left: u64) {
    set_current(context);
    observe::task_switched_in(left);
    if let Some(start) = observed {
        observe::wait_ended(start, true);
    }
}

impl Scheduler {
    /// Queues a task made ready on any thread: in this thread's slot when
    /// it drains this scheduler, else in the queue.
    pub(super) fn make_ready(&self, task: Task) {
        if self.is_current() {
            self.push_local(task)
        } else {
            self.push(task)
        }
    }

    /// A task of this scheduler is about to switch out (called by the
    /// drainer running it, so the scheduler is not idle meanwhile).
    pub(super) fn switching_out(&self) {
        // (SeqCst, as `is_idle`'s read: a thread waiting for idleness must
        // not see the drainer gone before it sees the task switched out.)
        self.idle.hold();
    }

    /// A switched-out task was taken up again, by a drainer (which keeps
    /// the scheduler from being idle from here on).
    pub(super) fn switched_in(&self) {
        // (Its drainer holds it now: no notification, whatever the count.)
        let _ = self.idle.release();
    }
}

/// What a run loop ([`run_batch`]) takes its tasks from: a drainer's picker
/// (`drain_loop.rs`), or a waiter's [`Batch`]. `'static`: a fiber is
/// resumed with a type-erased pointer to it, which its body casts back.
pub(super) trait Picker: 'static {
    /// The next task, and through `route` by which route it came (for the
    /// trace and the counters: a task alone is two words, which an
    /// `Option<Task>` returns in two registers, `base/task.rs`); `None`:
    /// none, the run loop returns.
    fn next(&self, route: &mut Route) -> Option<Task>;
}

/// A fiber's input: the picker to run, type-erased, or `None`: the fiber
/// ends.
type Given = Option<NonNull<()>>;

/// The tasks a waiter's fiber runs in one resume (`waiter.rs`): those
/// `next` gives, until it gives none. Lives on the waiter's stack while its
/// fiber runs it; a fiber whose task switched out never touches it again.
pub(super) struct Batch<'a> {
    next: &'a dyn Fn(&mut Route) -> Option<Task>,
    ran: Cell<usize>,
}

impl<'a> Batch<'a> {
    pub(super) fn new(next: &'a dyn Fn(&mut Route) -> Option<Task>) -> Batch<'a> {
        Batch { next, ran: Cell::new(0) }
    }

    /// How many tasks the batch gave (each ran, or runs switched out).
    pub(super) fn ran(&self) -> usize {
        self.ran.get()
    }
}

impl Picker for Batch<'static> {
    fn next(&self, route: &mut Route) -> Option<Task> {
        let task = (self.next)(route)?;
        self.ran.set(self.ran.get() + 1);
        Some(task)
    }
}

/// A waiter's fiber, kept from one wait to the next in its entry
/// (`outside.rs`).
pub(super) type WaiterFiber = RunFiber<Batch<'static>>;

/// The run loop: runs the tasks `picker` picks until it picks none (true),
/// or until the task it ran on the fiber of `context` switched out and
/// returned (false; this frame may be on another thread then, and touches
/// nothing of the thread's, nor the picker). Without a fiber (task stacks
/// off, or none to be had), on this thread's stack.
#[inline(always)]
pub(super) fn run_batch<P: Picker>(context: Option<&FiberContext>, picker: &P) -> bool {
    let mut route = Route::Queued;
    while let Some(task) = picker.next(&mut route) {
        fuzz::before_task();
        observe::run_task(task, route);
        if context.is_some_and(FiberContext::switched_out) {
            return false;
        }
    }
    true
}

/// The fiber a thread runs its picker on (a waiter's, kept from one wait
/// to the next; a drainer's, for one drain): one resume runs what the
/// picker picks, each task on the fiber's stack, with no switch between
/// two of them.
pub(super) struct RunFiber<P: Picker> {
    fiber: Option<Fiber>,
    picker: PhantomData<fn(&P)>,
}

impl<P: Picker> RunFiber<P> {
    pub(super) fn new() -> RunFiber<P> {
        RunFiber { fiber: None, picker: PhantomData }
    }

    /// True when the next run needs a new fiber (the thread's first, or
    /// one after a task took the last with it).
    pub(super) fn needs_fiber(&self) -> bool {
        self.fiber.is_none()
    }

    /// Makes sure a fiber is ready for the next run; false when no stack
    /// can be had.
    pub(super) fn ready(&mut self, scheduler: &Scheduler) -> bool {
        if self.fiber.is_none() {
            self.fiber = new_fiber::<P>(scheduler);
        }
        self.fiber.is_some()
    }

    /// Runs `picker` on the fiber made [`RunFiber::ready`]: true when it
    /// picked no more tasks (the fiber waits for the next run), false when
    /// a task took the fiber with it (it switched out, and its fiber is
    /// parked in the awaited object) and the run goes on on a fresh fiber.
    pub(super) fn run(&mut self, picker: &P) -> bool {
        self.resume_with(NonNull::from(picker).cast())
    }

    fn resume_with(&mut self, picker: NonNull<()>) -> bool {
        let mut fiber = self.fiber.take().expect("a fiber is made ready before it runs");
        // The fiber reaches the picker only during this resume (see
        // `run_batch`).
        let mut input = Some(picker);
        loop {
            let outer = current_raw();
            let result = fiber.tsan.run(|| fiber.coroutine.resume(input.take()));
            set_current(outer);
            match result {
                // The picker ran out: the fiber waits for the next run.
                CoroutineResult::Yield(node) if node.is_null() => {
                    self.fiber = Some(fiber);
                    return true;
                }
                // SAFETY: a non-null yield is the node of the task that
                // switched out, which lives on the fiber's stack until the
                // fiber is resumed.
                CoroutineResult::Yield(node) => match unsafe { SwitchedOut::park(node, fiber) } {
                    Ok(()) => return false,
                    // Fired while switching out: the task goes on here.
                    Err(fired) => fiber = fired,
                },
                // A task that switched out and was taken up again here
                // returned: its fiber ended.
                CoroutineResult::Return(()) => {
                    stacks::give_back(fiber.coroutine.into_stack());
                    return false;
                }
            }
        }
    }
}

impl WaiterFiber {
    /// [`RunFiber::run`] with a waiter's batch, which borrows from the
    /// waiter's stack for no longer than the run.
    pub(super) fn run_batch(&mut self, batch: &Batch<'_>) -> bool {
        self.resume_with(NonNull::from(batch).cast())
    }
}

impl<P: Picker> Drop for RunFiber<P> {
    /// Ends the fiber's loop (it waits for a batch, at its yield) and gives
    /// its stack back to this thread's pool.
    fn drop(&mut self) {
        if let Some(mut fiber) = self.fiber.take() {
            let outer = current_raw();
            let result = fiber.tsan.run(|| fiber.coroutine.resume(None));
            set_current(outer);
            match result {
                CoroutineResult::Return(()) => stacks::give_back(fiber.coroutine.into_stack()),
                CoroutineResult::Yield(_) => {
                    unreachable!("an idle fiber ends when given no batch")
                }
            }
        }
    }
}

/// A fiber on a stack of the pool that runs a picker of type `P` each time
/// its thread resumes it with one, and yields null after each; given
/// `None`, it ends. A task that switches out takes the fiber with it: once
/// that task returns, on whichever thread resumed it, the fiber ends.
/// `None` when no stack can be had.
fn new_fiber<P: Picker>(scheduler: &Scheduler) -> Option<Fiber> {
    let size = scheduler.config().task_stack_size;
    let stack = stacks::take(size)?;
    let limit = stack.limit().get();
    let scheduler = scheduler.as_ref();
    let coroutine = Coroutine::with_stack(stack, move |yielder: &Yielder<Given, *const SwitchedOut>, first| {
        // The scheduler outlives the fibers that run its tasks: a fiber
        // lives while its thread runs the scheduler's tasks on it, or while
        // its task is switched out, which keeps the scheduler from being
        // idle (`Scheduler::is_idle`).
        let context = FiberContext { yielder, scheduler, limit, size, switched_out: Cell::new(false) };
        let mut given = first;
        while let Some(picker) = given {
            // Each resume came from a thread that set its own context back
            // after the last (`RunFiber::run`).
            set_current(&context);
            // SAFETY: the picker, of type `P` (`RunFiber<P>` made this
            // fiber), lives on its thread's stack during this resume
            // (`RunFiber::run`); after a task switched out, the run loop
            // returns without another look at it.
            if !run_batch(Some(&context), unsafe { picker.cast::<P>().as_ref() }) {
                return;
            }
            given = yielder.suspend(std::ptr::null());
        }
    });
    Some(Fiber { coroutine, tsan: tsan::Fiber::new() })
}
