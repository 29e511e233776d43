//! The worker threads that run the tasks (started on demand, up to the
//! thread cap, reused), an agent's wake-up, and the watcher that reports a
//! deadlock.

use super::*;

impl Deterministic {
    /// Starts worker thread number `workers` (its agent is returned).
    pub(super) fn start_worker(&self, st: &mut State) -> AgentId {
        let me = st.add_agent(Role::Worker, Status::Idle);
        let number = st.workers;
        st.workers += 1;
        let executor = self.this.upgrade().expect("a deterministic executor that decides is alive");
        let builder = std::thread::Builder::new().name(format!("mlir-det-{number}")).stack_size(platform_stack_size());
        let thread = spawn(builder, move || executor.run_worker(me))
            .unwrap_or_else(|e| abort_misuse("deterministic schedule", &format!("cannot start a worker thread: {e}")));
        st.threads.push(thread);
        me
    }

    /// A worker thread: runs the tasks it is handed, one per turn.
    pub(super) fn run_worker(self: Arc<Deterministic>, me: AgentId) {
        let registration = Registration { executor: self.this.clone(), id: self.id, agent: me };
        REGISTERED.with(|r| *r.borrow_mut() = Some(registration));
        WORKER.with(|w| w.set(true));
        let mut st = lock(&self.state);
        let wake = Arc::clone(&st.agents[me].wake);
        loop {
            while !(st.running == Some(me) && st.agents[me].mailbox.is_some()) {
                if st.shutdown {
                    return;
                }
                st = wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            let task = st.agents[me].mailbox.take().expect("checked");
            drop(st);
            observe::run_task(task, Route::Queued);
            st = lock(&self.state);
            // The task returned: a scheduling point.
            let strand = st.agents[me].strand.take().expect("a task's strand");
            st.strategy.retire(strand);
            st.busy -= 1;
            st.run += 1;
            st.agents[me].status = Status::Idle;
            st.idle_workers.insert(me);
            self.decide(&mut st, Some(me), After::Idle);
        }
    }

    /// The thread of `agent` exited (or moved to another instance). One
    /// that still held the baton (a program thread that called in first,
    /// then ended) hands it on.
    pub(super) fn agent_exited(&self, agent: AgentId) {
        let mut st = lock(&self.state);
        let held = st.running == Some(agent);
        st.agents[agent].status = Status::Gone;
        if held {
            st.running = None;
            self.decide(&mut st, None, After::Away);
        }
    }

    /// Wakes agent `agent`, blocked in an await: the completion's waiter.
    pub(super) fn wake(&self, agent: AgentId) {
        let mut st = lock(&self.state);
        debug_assert_eq!(st.agents[agent].status, Status::Blocked);
        st.blocked -= 1;
        st.push_ready_agent(agent);
        if st.running.is_none() {
            // Completed from outside while nothing ran.
            self.decide(&mut st, None, After::Away);
        }
    }

    // ---- deadlocks -------------------------------------------------------------

    /// The watcher thread: reports a stall that lasts [`DEADLOCK_GRACE`]
    /// while no guest is away (which could still end it).
    pub(super) fn watch_for_deadlock(&self) {
        let mut st = lock(&self.state);
        loop {
            if st.shutdown {
                return;
            }
            let Some((epoch, since)) = st.stall else {
                st = self.watcher.wait(st).unwrap_or_else(|e| e.into_inner());
                continue;
            };
            let waited = since.elapsed();
            let guest_away = st.agents.iter().any(|a| a.role == Role::Guest && a.status == Status::Away);
            if waited < DEADLOCK_GRACE || guest_away {
                let pause = DEADLOCK_GRACE.saturating_sub(waited).max(Duration::from_millis(100));
                st = self.watcher.wait_timeout(st, pause).unwrap_or_else(|e| e.into_inner()).0;
                continue;
            }
            if st.stall.is_some_and(|(e, _)| e == epoch) {
                self.report_deadlock(&st, waited);
            }
        }
    }

    pub(super) fn report_deadlock(&self, st: &State, waited: Duration) -> ! {
        let blocked = |worker: bool| {
            st.agents.iter().filter(|a| a.status == Status::Blocked && (a.role == Role::Worker) == worker).count()
        };
        let spec = self.spec;
        abort_misuse(
            "deadlock",
            &format!(
                "every thread is blocked and no task can run under the deterministic schedule {spec} \
                 ({} program thread(s) and {} task(s) blocked in an await, {} task(s) waiting for a \
                 thread at the cap of {}; nothing changed for {:.1} s); replay it with {SCHEDULE_ENV}={spec}",
                blocked(false),
                blocked(true),
                st.strategy.ready_for_thread(),
                self.config.max_threads,
                waited.as_secs_f64()
            ),
        )
    }
}

/// A blocking await's waiter: makes its agent ready. It lives on the
/// blocked agent's stack, which stays put until the agent is chosen again.
#[repr(C)]
pub(super) struct WakeAgent<'a> {
    pub(super) waiter: Waiter,
    pub(super) executor: &'a Deterministic,
    pub(super) agent: AgentId,
}

impl WakeAgent<'_> {
    /// The waiter's fire function.
    ///
    /// # Safety
    /// `node` is a `WakeAgent` whose agent is blocked on it.
    pub(super) unsafe fn fire(node: *mut Waiter, _outcome: Outcome) {
        // SAFETY: valid until its agent runs again, which needs the wake
        // below; nothing reads the node after it.
        let (executor, agent) = unsafe {
            let node = &*node.cast::<WakeAgent>();
            (node.executor, node.agent)
        };
        executor.wake(agent);
    }
}
