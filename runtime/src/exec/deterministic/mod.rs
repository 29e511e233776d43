//! The deterministic executor: a runtime instance in which a run's whole
//! interleaving is a function of its seed (`MLIR_ASYNC_RUNTIME_SCHEDULE`,
//! [`crate::exec::deterministic::spec`]; docs/exploration.md).
//!
//! **Agents.** Every thread that runs the program's code on behalf of this
//! instance is an agent: the program threads that call into the runtime
//! (registered at their first call that needs a turn), and the worker
//! threads that run tasks (started on demand, up to the thread cap, and
//! reused). Exactly one agent holds *the baton* and runs; every other one
//! sleeps on its own condition variable until it is handed the baton. All
//! of the executor's state is behind one mutex, taken only for the length
//! of a decision.
//!
//! **Scheduling points.** At `mlirAsyncRuntimeExecute`, a continuation made
//! ready, a blocking await (also of an object already complete), the
//! completion of a token or value, and a task's return, the agent holding
//! the baton asks the [`Strategy`] what runs next: itself (if it can go
//! on), a ready agent (a program thread, or a task parked at a scheduling
//! point or woken from an await), or a ready task not started yet, which
//! goes to a worker thread: the one whose task just returned, else the
//! lowest-numbered idle worker, else a new one.
//!
//! **Program threads.** The first program thread to call in (the runner's
//! or the harness's main thread) is the *primary*: it keeps the baton while
//! it runs the program's code between runtime calls, so its code is
//! ordered against the tasks too. Any other program thread (a *guest*, one
//! the program started itself) takes the baton for the length of each
//! runtime call and gives it back on return: its own code runs outside the
//! schedule, and when it calls in depends on timing.
//!
//! **Idleness and destroy.** A program thread that waits for idleness
//! (`rust_mlir_async_runtime_wait_idle`, the destroy hook) blocks until no
//! task is ready or running, and looks again each time the turn comes back
//! to it (another program thread may have run first and queued a task).
//! Destroy then closes the executor in the same step: from then on it
//! accepts no new program thread and no guest coming back (they go to a
//! fresh instance), and joins the workers. If no idle moment comes within
//! the bounds of [`DRAIN_WHILE_CURRENT`](crate::exec::config::DRAIN_WHILE_CURRENT) (a thread that queues without
//! end) while some task is ready or running and a program thread called
//! in since it began, it refuses
//! program threads' new calls first and drains what it accepted. While
//! every task in flight is blocked in an await, it goes on waiting, and
//! accepts what a guest completes, fires or queues meanwhile. It counts
//! the tasks accepted and run, and says on one line if they differ.
//!
//! **Exit.** A call from a thread whose thread-locals are gone (the
//! runtime's exit handler, a thread-local destructor) is served as a new
//! guest each time; it is never registered (a registration that cannot be
//! stored would be dropped under the executor's lock, and its drop takes
//! that lock). Destroy keeps the agent it waits as across the slices of
//! its drain: a new one per slice would leave the old one among the idle
//! waiters, and given the turn it would keep it forever.
//!
//! **Deadlock.** When nothing can run (every agent blocked, no task that
//! can start) and no guest is away running its own code, the run cannot
//! go on unless a thread outside the runtime acts. After
//! [`DEADLOCK_GRACE`] without a change, a watcher thread prints one line
//! naming the schedule and aborts the process.
//!
//! **What keeps it deterministic.** Only the baton holder changes the
//! state that decisions depend on (the ready set, strands, workers); the
//! strategy's only input besides that state is its seeded stream; no
//! decision iterates a hash map. What can break it: guests (their arrival
//! is timing), a program that waits outside the runtime for another thread
//! (that thread may need the baton the waiting one holds: a hang), and
//! anything else nondeterministic in the program itself (time, addresses).

mod baton;
mod idle;
pub(crate) mod spec;
pub(super) mod strategy;
mod workers;
#[cfg(test)]
mod exhaustive;

use workers::WakeAgent;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::base::task::{Route, Task};
use crate::exec::config::{drain_while_current, platform_stack_size, Config};
use crate::exec::deterministic::spec::{Spec, SCHEDULE_ENV};
use crate::exec::deterministic::strategy::{Choice, Strand, Strategy, Waiting};
use crate::object::completion::{Completion, Outcome, Waiter};
use crate::probe::clock;
use crate::probe::observe;
use crate::sync::misuse::{abort_misuse, warn};
use crate::sync::mutation;
use crate::sync::spawn::spawn;
use crate::sync::process::{lock, AtomicU64, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering};

/// How long nothing may change while every agent is blocked before the
/// run is reported as deadlocked: a thread the program started itself may
/// still complete what they wait for (see the module doc).
pub(super) const DEADLOCK_GRACE: Duration = Duration::from_secs(2);

/// How long the destroy hook waits for tasks in flight before it says so.
const DRAIN_REPORT_AFTER: Duration = Duration::from_secs(5);

/// Deterministic instances alive (the mode byte of the paths outside the
/// ordinary scheduler's hot ones).
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Deterministic ids (0 means none).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Steps of the last deterministic instance destroyed.
static LAST_STEPS: AtomicU64 = AtomicU64::new(0);
/// Tasks queued and tasks run by the last deterministic instance
/// destroyed (a tool compares them: [`last_task_counts`]).
static LAST_QUEUED: AtomicU64 = AtomicU64::new(0);
static LAST_RUN: AtomicU64 = AtomicU64::new(0);

/// True while a deterministic instance exists in this process.
#[inline(always)]
pub(crate) fn enabled() -> bool {
    // Relaxed: a switch; the instance itself is reached through the
    // current-instance lock, which orders everything it guards.
    ACTIVE.load(Ordering::Relaxed) != 0
}

/// Steps (decisions between two or more candidates) of the last
/// deterministic instance destroyed.
pub(crate) fn last_steps() -> u64 {
    LAST_STEPS.load(Ordering::Relaxed)
}

/// Tasks queued (accepted by `mlirAsyncRuntimeExecute` or a continuation)
/// and tasks run by the last deterministic instance destroyed; equal
/// unless the instance lost tasks (which its destroy also reported).
pub(crate) fn last_task_counts() -> (u64, u64) {
    // Relaxed: written by the destroying thread before the destroy hook
    // returns; a reader on another thread that did not wait for the hook
    // reads a count of some earlier or later instance, which the ABI
    // allows (docs/introspection-abi.md).
    (LAST_QUEUED.load(Ordering::Relaxed), LAST_RUN.load(Ordering::Relaxed))
}

type AgentId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The first program thread: keeps the baton between runtime calls.
    Primary,
    /// Another program thread: holds the baton only inside runtime calls.
    Guest,
    /// A worker thread running tasks.
    Worker,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Holds the baton.
    Running,
    /// In the ready set, waiting for the baton.
    Ready,
    /// Blocked in an await.
    Blocked,
    /// A program thread waiting until no task is in flight.
    IdleWait,
    /// A worker without a task.
    Idle,
    /// A guest outside the runtime (or any program thread after close).
    Away,
    /// The thread exited.
    Gone,
}

struct Agent {
    role: Role,
    status: Status,
    /// The strand it runs: its own (program threads) or its task's.
    strand: Option<Strand>,
    /// Runtime calls of this agent in progress (a completion's waiters may
    /// call in again): a guest goes away when the outermost returns.
    depth: u32,
    /// A worker's next task, handed over with the baton.
    mailbox: Option<Task>,
    /// A program thread whose wait for idleness timed out: it still waits
    /// (its call's depth still counts), and its next call goes on with it.
    idle_pending: bool,
    wake: Arc<Condvar>,
}

/// What a ready strand is.
enum Ready {
    /// A task to start on a worker.
    Task(Task),
    /// An agent to hand the baton to.
    Agent(AgentId),
}

struct State {
    strategy: Strategy,
    /// The agent holding the baton; `None` when nothing runs.
    running: Option<AgentId>,
    agents: Vec<Agent>,
    primary: Option<AgentId>,
    ready: HashMap<Strand, Ready>,
    /// Idle workers, lowest first.
    idle_workers: BTreeSet<AgentId>,
    workers: usize,
    /// Tasks started and not returned.
    busy: usize,
    /// Agents blocked in an await.
    blocked: usize,
    /// Program threads waiting for idleness, in arrival order.
    idle_waiters: Vec<AgentId>,
    /// Since when nothing can run while something waits (the epoch tells
    /// one such stretch from the next).
    stall: Option<(u64, Instant)>,
    stall_epoch: u64,
    /// No new program thread, no guest coming back (the destroy hook).
    closed: bool,
    /// The destroy hook found no idle moment within the bounds of
    /// [`DRAIN_WHILE_CURRENT`](crate::exec::config::DRAIN_WHILE_CURRENT):
    /// program threads get no new turn (their calls go to the next
    /// instance) while the tasks already accepted run.
    closing: bool,
    /// Tasks accepted (made ready), and tasks run to their return: equal
    /// once the executor is closed, or tasks were lost.
    queued: u64,
    run: u64,
    /// Runtime calls of program threads, counted once accepted (given
    /// their turn): the destroy hook's drain is bounded only if one came
    /// while it drained.
    program_calls: u64,
    /// Tasks in flight when the destroy hook closed the executor: zero,
    /// or the close abandoned them (the exhaustive tests check it).
    in_flight_at_close: usize,
    /// Times a thread waiting for idleness got its turn back and found a
    /// task in flight again (another program thread ran first): the
    /// re-check's work (the exhaustive tests check they reach it).
    idle_rechecks_waited: u64,
    /// Workers and the watcher end.
    shutdown: bool,
    threads: Vec<JoinHandle<()>>,
}

impl State {
    fn add_agent(&mut self, role: Role, status: Status) -> AgentId {
        self.agents.push(Agent {
            role,
            status,
            strand: None,
            depth: 0,
            mailbox: None,
            idle_pending: false,
            wake: Arc::new(Condvar::new()),
        });
        self.agents.len() - 1
    }

    /// Tasks ready or running (also parked or blocked inside).
    fn in_flight(&self) -> usize {
        self.strategy.ready_for_thread() + self.busy
    }

    /// Some task is ready or running, not only blocked in an await: the
    /// destroy hook's bounds on staying current apply only then
    /// (`config::drain_while_current`).
    fn runnable(&self) -> bool {
        let blocked = self.agents.iter().filter(|a| a.role == Role::Worker && a.status == Status::Blocked).count();
        self.strategy.ready_for_thread() > 0 || self.busy > blocked
    }

    fn can_start_task(&self, max_threads: usize) -> bool {
        !self.idle_workers.is_empty() || self.workers < max_threads
    }

    /// Puts agent `a` (which has a strand) in the ready set.
    fn push_ready_agent(&mut self, a: AgentId) {
        let strand = self.agents[a].strand.expect("a ready agent has a strand");
        self.agents[a].status = Status::Ready;
        self.strategy.push(strand, Waiting::OnThread);
        self.ready.insert(strand, Ready::Agent(a));
    }

    /// When no task is in flight, the threads waiting for that are ready.
    fn wake_idle_waiters_if_idle(&mut self) {
        if self.in_flight() == 0 && !self.idle_waiters.is_empty() {
            for a in std::mem::take(&mut self.idle_waiters) {
                self.push_ready_agent(a);
            }
        }
    }
}

/// The executor's handle in a thread's local storage: which agent the
/// thread is, and in which executor. Its drop (the thread's exit) marks
/// the agent gone.
struct Registration {
    executor: Weak<Deterministic>,
    id: u64,
    agent: AgentId,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(executor) = self.executor.upgrade() {
            executor.agent_exited(self.agent);
        }
    }
}

thread_local! {
    static REGISTERED: RefCell<Option<Registration>> = const { RefCell::new(None) };
    /// Set on the worker threads. Apart from `REGISTERED`: a type without a
    /// destructor stays readable while the thread exits (glibc's `exit`
    /// destroys the caller's thread-locals before the exit handler asks).
    static WORKER: Cell<bool> = const { Cell::new(false) };
}

/// True on a worker thread of a deterministic instance.
pub(crate) fn on_worker_thread() -> bool {
    WORKER.with(Cell::get)
}

/// Forgets this thread's registration without touching its executor (a
/// forked child, where that executor's lock may be held by a thread that
/// does not exist).
pub(crate) fn forget_thread_registration() {
    // The child is no worker of an executor (`in_task`).
    let _ = WORKER.try_with(|worker| worker.set(false));
    let _ = REGISTERED.try_with(|r| {
        if let Ok(mut r) = r.try_borrow_mut() {
            std::mem::forget(r.take());
        }
    });
}

/// The destroy hook closed the executor: go to the current instance.
#[derive(Debug)]
pub(crate) struct Closed;

/// What the agent making a decision does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    /// It can go on: it is a candidate.
    GoesOn,
    /// It waits (blocked, or for idleness): not a candidate.
    Waits,
    /// A worker whose task returned: it may take the next task itself.
    Idle,
    /// A guest going back to its own code.
    Away,
}

/// One deterministic runtime instance.
pub(crate) struct Deterministic {
    id: u64,
    spec: Spec,
    config: Config,
    state: Mutex<State>,
    /// The deadlock watcher sleeps here.
    watcher: Condvar,
    this: Weak<Deterministic>,
}

/// An agent's turn across a runtime call (a completion and the waiters it
/// fires): a guest gives the baton back when it ends.
pub(crate) struct Turn {
    executor: Arc<Deterministic>,
    me: AgentId,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let st = lock(&self.executor.state);
        self.executor.leave(st, self.me);
    }
}

impl Deterministic {
    /// A deterministic instance with its deadlock watcher started.
    pub(crate) fn start(spec: Spec, config: Config) -> Arc<Deterministic> {
        Deterministic::start_with(spec, config, Strategy::new(spec))
    }

    /// A deterministic instance choosing with `strategy` (`spec` names it).
    fn start_with(spec: Spec, config: Config, strategy: Strategy) -> Arc<Deterministic> {
        ACTIVE.fetch_add(1, Ordering::Relaxed);
        clock::logical_begin();
        let executor = Arc::new_cyclic(|this| Deterministic {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            spec,
            config,
            state: Mutex::new(State {
                strategy,
                running: None,
                agents: Vec::new(),
                primary: None,
                ready: HashMap::new(),
                idle_workers: BTreeSet::new(),
                workers: 0,
                busy: 0,
                blocked: 0,
                idle_waiters: Vec::new(),
                stall: None,
                stall_epoch: 0,
                closed: false,
                closing: false,
                queued: 0,
                run: 0,
                program_calls: 0,
                in_flight_at_close: 0,
                idle_rechecks_waited: 0,
                shutdown: false,
                threads: Vec::new(),
            }),
            watcher: Condvar::new(),
            this: this.clone(),
        });
        let watched = Arc::clone(&executor);
        let watcher = spawn(std::thread::Builder::new().name("mlir-det-watch".into()).stack_size(platform_stack_size()), move || watched.watch_for_deadlock())
            .unwrap_or_else(|e| abort_misuse("runtime start", &format!("cannot start a thread: {e}")));
        lock(&executor.state).threads.push(watcher);
        executor
    }

    pub(crate) fn config(&self) -> Config {
        self.config
    }

    /// Decisions so far between two or more candidates.
    pub(crate) fn steps(&self) -> u64 {
        lock(&self.state).strategy.steps()
    }

    /// Tasks ready or running.
    pub(crate) fn tasks_in_flight(&self) -> usize {
        lock(&self.state).in_flight()
    }

    /// Runtime calls of program threads (not workers) so far.
    pub(super) fn program_calls(&self) -> u64 {
        lock(&self.state).program_calls
    }

    /// See `State::runnable`.
    pub(super) fn has_runnable_tasks(&self) -> bool {
        lock(&self.state).runnable()
    }

    // ---- the operations -----------------------------------------------------

    /// A task made ready (`mlirAsyncRuntimeExecute`, a continuation): a
    /// scheduling point. Refused (the task comes back) once closed.
    pub(crate) fn make_ready(&self, task: Task) -> Result<(), Task> {
        let Ok((mut st, me)) = self.enter() else { return Err(task) };
        let strand = st.strategy.new_strand();
        st.strategy.push(strand, Waiting::ForThread);
        st.ready.insert(strand, Ready::Task(task));
        st.queued += 1;
        st = self.decide_and_wait(st, me, After::GoesOn);
        self.leave(st, me);
        Ok(())
    }

    /// A scheduling point before a completion: the turn lasts until the
    /// returned guard drops (after the completion fired its waiters).
    pub(crate) fn scheduling_point(self: Arc<Self>) -> Result<Turn, Closed> {
        let (st, me) = self.enter()?;
        drop(self.decide_and_wait(st, me, After::GoesOn));
        Ok(Turn { executor: self, me })
    }

    /// A blocking await: the agent blocks until `completion` completes and
    /// it is chosen again; an await of a complete object is a scheduling
    /// point too.
    pub(crate) fn wait(&self, completion: &Completion) -> Result<Outcome, Closed> {
        let (mut st, me) = self.enter()?;
        let observed = observe::wait_started();
        let node = WakeAgent { waiter: Waiter::new(WakeAgent::fire), executor: self, agent: me };
        // SAFETY: `node` outlives its time in the list: the wake comes
        // before this agent is chosen again, and we return only after that.
        // The state lock is held, so the wake cannot run before we block.
        let pending = completion.state().is_none()
            && unsafe { completion.add_waiter(&node as *const WakeAgent as *mut Waiter) }.is_ok();
        if pending {
            st.agents[me].status = Status::Blocked;
            st.blocked += 1;
            st = self.decide_and_wait(st, me, After::Waits);
        } else {
            st = self.decide_and_wait(st, me, After::GoesOn);
        }
        let role = st.agents[me].role;
        self.leave(st, me);
        if let Some(start) = observed {
            observe::wait_ended(start, role == Role::Worker);
        }
        Ok(completion.state().expect("woken before completion"))
    }

    /// This thread's logical id: its agent's number, in registration order.
    pub(crate) fn logical_thread_id(&self) -> Result<u64, Closed> {
        let (st, me) = self.enter()?;
        self.leave(st, me);
        Ok(me as u64)
    }

    /// Blocks until no task is ready or running, or `timeout` passed; true
    /// when idle. A call that timed out leaves the thread waiting: the next
    /// call goes on waiting, and the thread is chosen at idleness as if it
    /// had never left.
    pub(crate) fn wait_idle(&self, timeout: Option<Duration>) -> bool {
        self.wait_idle_then(timeout, false)
    }

    /// Gives the turn up if this thread holds it between its runtime calls
    /// (the primary, or any program thread after a call): before it waits
    /// for another thread's destroy, which needs the turn. Its next call
    /// takes a turn as a guest's would.
    pub(crate) fn step_away(&self) {
        let mut st = lock(&self.state);
        let me = REGISTERED
            .try_with(|r| r.borrow().as_ref().filter(|r| r.id == self.id).map(|r| r.agent))
            .ok()
            .flatten();
        let Some(me) = me else { return };
        let agent = &st.agents[me];
        if st.running == Some(me) && agent.depth == 0 && agent.role != Role::Worker {
            st.agents[me].status = Status::Away;
            self.decide(&mut st, Some(me), After::Away);
        }
    }

}
