//! Exhaustive tests of the turn's hand-off between the destroy hook's wait
//! for idleness and a program thread's `Execute`, and at exit (issue 27).
//!
//! A stateless depth-first model checker over the executor's own choice
//! points: each execution runs a small program on a fresh executor whose
//! strategy follows a given prefix of choices
//! ([`Script`](super::strategy::Script)) and takes the first candidate past
//! it, logging how many candidates every decision had. The next prefix
//! takes the next candidate at the last decision that has one untried, and
//! drops the rest; the enumeration ends when no decision has one, so every
//! sequence of the strategy's choices ran once. Each program is written so
//! that the threads' arrivals are not timing: a program thread calls in
//! while another holds the turn, and the holder goes on only once the
//! newcomer waits in the ready set; a replay that sees other candidates
//! than its prefix promised is reported (and retried) as a timing leak.
//!
//! Every execution must: return from destroy (no hang), close the executor
//! with no task in flight, and run every task the executor accepted,
//! exactly once. Mutation 5 (`mutation-deterministic-idle-no-recheck`,
//! scripts/check/mutations.sh) removes the re-check in `wait_idle_then`, and
//! each program below then fails in the executions where another program
//! thread's `Execute` comes between idleness and the destroyer's turn.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};
use std::sync::mpsc;

use super::*;
use crate::base::task::{Origin, ResumeFn};
use crate::exec::deterministic::strategy::Strategy;

/// More executions than this means the enumeration did not end: the
/// programs below need far fewer, and the tests assert the bound is not
/// reached (so they prove they were exhaustive).
const MAX_EXECUTIONS: usize = 20_000;
/// One execution takes well under a millisecond of work; this is a hang.
const EXECUTION_TIMEOUT: Duration = Duration::from_secs(20);
/// A replay whose candidates differ from its prefix's is run again this
/// many times before the test fails (a thread arrived by timing).
const REPLAY_ATTEMPTS: usize = 3;

/// One worker can start at most besides the program threads: every
/// decision still has a task, a worker and program threads among its
/// candidates, and the state space stays small.
fn config() -> Config {
    Config {
        workers: 1,
        max_threads: 2,
        task_stacks: false,
        waiters_run: crate::exec::config::WaiterRuns::Nothing,
        task_stack_size: crate::exec::config::UNLIMITED_STACK_SIZE,
    }
}

/// Tasks accepted (`make_ready` returned `Ok`) and run, of one execution.
#[derive(Default)]
struct Counts {
    accepted: StdAtomicUsize,
    ran: StdAtomicUsize,
}

/// A task's body: counts its run.
///
/// # Safety
/// `handle` is a `&'static Counts`.
unsafe extern "C" fn count_run(handle: *mut c_void) {
    // SAFETY: the tasks below are made with a leaked `Counts`.
    let counts = unsafe { &*handle.cast::<Counts>() };
    counts.ran.fetch_add(1, StdOrdering::SeqCst);
}

/// Longer than one slice of destroy's drain (`drain_while_current`: 10 ms).
const SLOW_TASK: Duration = Duration::from_millis(25);

/// A task's body that outlasts a slice of destroy's drain, then counts.
///
/// # Safety
/// As [`count_run`].
unsafe extern "C" fn sleep_then_count_run(handle: *mut c_void) {
    std::thread::sleep(SLOW_TASK);
    // SAFETY: as `count_run`'s.
    unsafe { count_run(handle) }
}

/// `mlirAsyncRuntimeExecute` of a counting task; true when accepted.
fn execute(exec: &Deterministic, counts: &'static Counts) -> bool {
    execute_body(exec, counts, count_run)
}

fn execute_body(exec: &Deterministic, counts: &'static Counts, body: ResumeFn) -> bool {
    let handle = counts as *const Counts as *mut c_void;
    let accepted = exec.make_ready(Task::new(handle, Some(body), Origin::Execute, "test")).is_ok();
    if accepted {
        counts.accepted.fetch_add(1, StdOrdering::SeqCst);
    }
    accepted
}

/// Guests (program threads other than the primary) waiting in the ready
/// set for their turn.
fn guests_ready(st: &State) -> usize {
    st.agents.iter().filter(|a| a.role == Role::Guest && a.status == Status::Ready).count()
}

/// Polls the executor's state until `cond` holds (a thread that called
/// in waits in the ready set): what makes the programs' arrivals choices
/// of nobody but the strategy.
fn wait_until(exec: &Deterministic, what: &str, cond: impl Fn(&State) -> bool) -> Result<(), String> {
    let start = Instant::now();
    loop {
        if cond(&lock(&exec.state)) {
            return Ok(());
        }
        if start.elapsed() > EXECUTION_TIMEOUT / 2 {
            return Err(format!("timed out waiting until {what}"));
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

/// Right after destroy returned: the executor closed at idleness, and
/// every task it accepted ran.
fn check_closed(exec: &Deterministic) -> Result<(), String> {
    let st = lock(&exec.state);
    if !st.closed {
        return Err("destroy returned with the executor still open".into());
    }
    if st.in_flight_at_close != 0 {
        return Err(format!(
            "destroy closed the executor with {} task(s) in flight: they are abandoned ({} queued, {} run)",
            st.in_flight_at_close, st.queued, st.run
        ));
    }
    if st.queued != st.run {
        return Err(format!("destroy returned with {} task(s) queued and {} run", st.queued, st.run));
    }
    Ok(())
}

/// After every program thread ended: each accepted task ran exactly once.
fn check_counts(exec: &Deterministic, counts: &Counts) -> Result<(), String> {
    let (accepted, ran) = (counts.accepted.load(StdOrdering::SeqCst), counts.ran.load(StdOrdering::SeqCst));
    let queued = lock(&exec.state).queued;
    if accepted != ran || queued != accepted as u64 {
        return Err(format!("{accepted} task(s) accepted, {queued} queued by the executor, {ran} run"));
    }
    Ok(())
}

fn join(thread: std::thread::JoinHandle<()>, who: &str) -> Result<(), String> {
    thread.join().map_err(|_| format!("the {who} thread panicked"))
}

/// A program: runs on its own thread against a fresh executor, and
/// reports `Ok` at its end or the first invariant it saw broken (any of
/// its threads may report first).
type Program = fn(Arc<Deterministic>, &'static Counts, mpsc::Sender<Result<(), String>>);

/// The primary (the program's main thread, which keeps the turn between
/// its calls) queues two tasks and runs destroy, while a guest's `Execute`
/// waits for its turn.
fn guest_executes_while_the_primary_destroys(exec: Arc<Deterministic>, counts: &'static Counts, report: mpsc::Sender<Result<(), String>>) {
    let result = (|| {
        exec.logical_thread_id().map_err(|_| "the primary's first call was refused")?;
        if !(execute(&exec, counts) && execute(&exec, counts)) {
            return Err("the primary's Execute was refused before destroy".into());
        }
        let guest = {
            let exec = Arc::clone(&exec);
            std::thread::spawn(move || {
                execute(&exec, counts);
            })
        };
        wait_until(&exec, "the guest's Execute waits for its turn", |st| guests_ready(st) == 1)?;
        exec.close();
        check_closed(&exec)?;
        join(guest, "guest")?;
        check_counts(&exec, counts)
    })();
    let _ = report.send(result);
}

/// A guest runs destroy while the primary queues two tasks, then gives the
/// turn up (as it does before it waits for another thread's destroy).
fn primary_executes_twice_while_a_guest_destroys(exec: Arc<Deterministic>, counts: &'static Counts, report: mpsc::Sender<Result<(), String>>) {
    let result = (|| {
        exec.logical_thread_id().map_err(|_| "the primary's first call was refused")?;
        let destroyer = {
            let (exec, report) = (Arc::clone(&exec), report.clone());
            std::thread::spawn(move || {
                exec.close();
                if let Err(e) = check_closed(&exec) {
                    let _ = report.send(Err(e));
                }
            })
        };
        wait_until(&exec, "the destroyer waits for its turn", |st| guests_ready(st) == 1)?;
        // Refused once the destroyer closed the executor: not lost, it
        // would go to the next instance.
        execute(&exec, counts);
        execute(&exec, counts);
        exec.step_away();
        join(destroyer, "destroyer")?;
        check_closed(&exec)?;
        check_counts(&exec, counts)
    })();
    let _ = report.send(result);
}

/// Runs its closure when its thread's locals are destroyed.
struct AtThreadExit(Option<Box<dyn FnOnce()>>);

impl Drop for AtThreadExit {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

thread_local! {
    static AT_EXIT: RefCell<AtThreadExit> = const { RefCell::new(AtThreadExit(None)) };
}

/// Exit: destroy runs from a thread-local destructor, after the thread's
/// registration slot is gone (as the runtime's exit handler does after
/// glibc destroyed the main thread's locals: it is a new guest at each
/// call), while a guest's `Execute` waits for its turn, and the primary
/// exits holding the turn (its registration's drop hands it on).
fn destroy_at_thread_exit(exec: Arc<Deterministic>, counts: &'static Counts, report: mpsc::Sender<Result<(), String>>) {
    destroy_at_thread_exit_after(exec, counts, report, &[count_run, count_run]);
}

/// As [`destroy_at_thread_exit`], with a primary's task that outlasts a
/// slice of destroy's drain: the destroying thread, which has no locals
/// to be known by, comes back for its next slice.
fn destroy_at_thread_exit_outlasting_a_drain_slice(exec: Arc<Deterministic>, counts: &'static Counts, report: mpsc::Sender<Result<(), String>>) {
    destroy_at_thread_exit_after(exec, counts, report, &[sleep_then_count_run]);
}

/// The primary queues a task per body of `primary_tasks`.
fn destroy_at_thread_exit_after(
    exec: Arc<Deterministic>,
    counts: &'static Counts,
    report: mpsc::Sender<Result<(), String>>,
    primary_tasks: &'static [ResumeFn],
) {
    let result = (|| {
        let (go, exit) = mpsc::channel::<()>();
        let (started, primary_started) = mpsc::channel::<Result<(), String>>();
        let primary = {
            let exec = Arc::clone(&exec);
            std::thread::spawn(move || {
                let first = exec.logical_thread_id().is_ok()
                    && primary_tasks.iter().all(|&body| execute_body(&exec, counts, body));
                let _ = started.send(if first { Ok(()) } else { Err("the primary was refused before destroy".into()) });
                // Holds the turn until told to exit.
                let _ = exit.recv();
            })
        };
        primary_started.recv().map_err(|_| "the primary thread ended early")??;
        let guest = {
            let exec = Arc::clone(&exec);
            std::thread::spawn(move || {
                execute(&exec, counts);
            })
        };
        wait_until(&exec, "the guest's Execute waits for its turn", |st| guests_ready(st) == 1)?;
        let exiting = {
            let (exec, report) = (Arc::clone(&exec), report.clone());
            std::thread::spawn(move || {
                // Its destructor is registered before the registration
                // slot's, so it runs after that one (glibc runs them last
                // registered, first): the slot is gone when it runs.
                AT_EXIT.with(|a| {
                    a.borrow_mut().0 = Some(Box::new(move || {
                        if REGISTERED.try_with(|_| ()).is_ok() {
                            let _ = report.send(Err("precondition: the registration slot outlived the exit destructor".into()));
                            return;
                        }
                        exec.close();
                        if let Err(e) = check_closed(&exec) {
                            let _ = report.send(Err(e));
                        }
                    }))
                });
                REGISTERED.with(|_| ());
            })
        };
        wait_until(&exec, "the exiting thread's destroy waits for its turn", |st| guests_ready(st) == 2)?;
        let _ = go.send(());
        join(primary, "primary")?;
        join(exiting, "exiting")?;
        join(guest, "guest")?;
        check_closed(&exec)?;
        check_counts(&exec, counts)
    })();
    let _ = report.send(result);
}

/// What one execution did: its decisions `(chosen, candidates)`, whether
/// the destroyer's re-check sent it back to wait, and the first broken
/// invariant.
struct Execution {
    log: Vec<(usize, usize)>,
    rechecks: u64,
    failure: Option<String>,
}

/// Every execution's counts, leaked (see `run_once`).
static KEPT_COUNTS: std::sync::Mutex<Vec<&'static Counts>> = std::sync::Mutex::new(Vec::new());

fn run_once(program: Program, prefix: &[usize]) -> Execution {
    let exec = Deterministic::start_with(
        Spec { seed: 0, policy: crate::exec::deterministic::spec::Policy::Random },
        config(),
        Strategy::scripted(prefix.to_vec()),
    );
    // Leaked: a failed execution may leave a task that runs later. Kept
    // reachable from a static, so that LeakSanitizer (`make
    // sanitize-asan`) does not count it as lost.
    let counts: &'static Counts = Box::leak(Box::default());
    KEPT_COUNTS.lock().unwrap_or_else(|e| e.into_inner()).push(counts);
    let (report, results) = mpsc::channel();
    {
        let exec = Arc::clone(&exec);
        std::thread::spawn(move || program(exec, counts, report));
    }
    let failure = match results.recv_timeout(EXECUTION_TIMEOUT) {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(_) => Some(match exec.state.try_lock() {
            Ok(st) => format!(
                "hung: no result within {EXECUTION_TIMEOUT:?}; the turn is with {:?}, agents (role, status): {:?}, \
                 closed {}, {} task(s) in flight, {} queued, {} run",
                st.running,
                st.agents.iter().map(|a| (a.role, a.status)).collect::<Vec<_>>(),
                st.closed,
                st.in_flight(),
                st.queued,
                st.run
            ),
            Err(_) => format!("hung: no result within {EXECUTION_TIMEOUT:?}"),
        }),
    };
    // `try_lock`: a hung execution's threads do not hold the lock while
    // they wait, but nothing here may hang.
    let (log, rechecks) = match exec.state.try_lock() {
        Ok(st) => (st.strategy.script.as_ref().map(|s| s.log.clone()).unwrap_or_default(), st.idle_rechecks_waited),
        Err(_) => (Vec::new(), 0),
    };
    Execution { log, rechecks, failure }
}

/// What an enumeration found.
#[derive(Debug)]
struct Explored {
    executions: usize,
    /// Executions in which the destroyer's turn came back at idleness and
    /// it found a task in flight again (the re-check mattered).
    rechecked: usize,
    longest: usize,
    replays_retried: usize,
}

/// Runs `program` under every sequence of the strategy's choices (see the
/// module doc); panics at the first execution that breaks an invariant,
/// naming its choices.
fn explore(name: &str, program: Program) -> Explored {
    let mut prefix: Vec<usize> = Vec::new();
    // The candidates each decision of the prefix had when it was found.
    let mut expected: Vec<usize> = Vec::new();
    let mut found = Explored { executions: 0, rechecked: 0, longest: 0, replays_retried: 0 };
    loop {
        found.executions += 1;
        assert!(
            found.executions <= MAX_EXECUTIONS,
            "{name}: more than {MAX_EXECUTIONS} executions: the enumeration is not exhaustive within its bound"
        );
        let mut attempt = 0;
        let execution = loop {
            attempt += 1;
            let execution = run_once(program, &prefix);
            let followed = execution.log.len() >= prefix.len()
                && execution.log.iter().zip(&prefix).all(|(&(chosen, _), &p)| chosen == p)
                && execution.log.iter().zip(&expected).all(|(&(_, total), &e)| total == e);
            // A broken invariant is a bug whichever schedule showed it.
            if followed || execution.failure.is_some() {
                break execution;
            }
            assert!(
                attempt < REPLAY_ATTEMPTS,
                "{name}: execution {} did not follow its prefix {prefix:?} (candidates {expected:?}) in {REPLAY_ATTEMPTS} \
                 attempts: {:?}; a thread's arrival leaked timing into the schedule",
                found.executions,
                execution.log
            );
            found.replays_retried += 1;
        };
        if let Some(failure) = &execution.failure {
            panic!(
                "{name}: execution {} (choices {:?}) broke the hand-off: {failure}",
                found.executions,
                execution.log.iter().map(|&(chosen, _)| chosen).collect::<Vec<_>>()
            );
        }
        found.rechecked += usize::from(execution.rechecks > 0);
        found.longest = found.longest.max(execution.log.len());
        let Some(last) = execution.log.iter().rposition(|&(chosen, total)| chosen + 1 < total) else {
            return found;
        };
        prefix = execution.log[..last].iter().map(|&(chosen, _)| chosen).collect();
        prefix.push(execution.log[last].0 + 1);
        expected = execution.log[..=last].iter().map(|&(_, total)| total).collect();
    }
}

/// Runs an enumeration and checks that it reached the re-check.
fn explore_and_report(name: &str, program: Program) {
    let start = Instant::now();
    let found = explore(name, program);
    eprintln!(
        "{name}: {} executions (every sequence of choices), {} with the destroyer's re-check sending it back to wait, \
         up to {} decisions each, {} replay(s) retried, {:.2} s",
        found.executions,
        found.rechecked,
        found.longest,
        found.replays_retried,
        start.elapsed().as_secs_f64()
    );
    assert!(found.executions > 1, "{name}: a single execution: the program has no choice to enumerate");
    assert!(found.rechecked > 0, "{name}: no execution reached the re-check: the program does not test it");
}

#[test]
fn every_hand_off_between_destroy_and_a_guests_execute_loses_no_task() {
    explore_and_report("guest executes, primary destroys", guest_executes_while_the_primary_destroys);
}

#[test]
fn every_hand_off_between_a_guests_destroy_and_the_primarys_executes_loses_no_task() {
    explore_and_report("primary executes twice, guest destroys", primary_executes_twice_while_a_guest_destroys);
}

#[test]
fn every_hand_off_between_destroy_at_thread_exit_and_an_execute_loses_no_task() {
    explore_and_report("destroy at thread exit, guest executes", destroy_at_thread_exit);
}

/// The exit handler's destroy whose wait outlasts a slice of the drain
/// (the bounded drain waits in slices of 10 ms): before the fix, each
/// slice registered the thread again, as a new agent, and the turn could
/// go to the agent of the slice that had timed out, whose thread no
/// longer waited for it: destroy hung.
#[test]
fn every_hand_off_when_destroy_at_thread_exit_outlasts_a_drain_slice_loses_no_task() {
    explore_and_report(
        "destroy at thread exit outlasting a drain slice",
        destroy_at_thread_exit_outlasting_a_drain_slice,
    );
}

/// The driver itself: a script follows its prefix, then takes the first
/// candidate, and logs only real decisions.
#[test]
fn a_script_follows_its_prefix_then_takes_the_first_candidate() {
    use crate::exec::deterministic::strategy::{Choice, Waiting};
    let mut s = Strategy::scripted(vec![2]);
    let strands: Vec<_> = (0..4).map(|_| s.new_strand()).collect();
    for &t in &strands[1..] {
        s.push(t, Waiting::ForThread);
    }
    // Candidates: current (0), then the three tasks (1..=3): index 2 is strands[2].
    assert_eq!(s.choose(Some(strands[0]), Some(strands[0]), true), Choice::Ready(strands[2], Waiting::ForThread));
    // Past the prefix: the first candidate, the current strand.
    assert_eq!(s.choose(Some(strands[0]), Some(strands[0]), true), Choice::Current);
    // A lone candidate is no decision: not logged.
    let mut lone = Strategy::scripted(Vec::new());
    let a = lone.new_strand();
    assert_eq!(lone.choose(Some(a), Some(a), true), Choice::Current);
    assert!(lone.script.as_ref().unwrap().log.is_empty());
    assert_eq!(s.script.as_ref().unwrap().log, vec![(2, 4), (0, 3)]);
}
