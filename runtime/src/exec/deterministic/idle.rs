//! Idleness and destroy: a program thread waiting until no task is ready
//! or running (looking again each time the turn comes back to it), and
//! destroy's close of the executor (see the module's header, "Idleness
//! and destroy").

use super::*;

impl Deterministic {
    /// The destroy hook's part: waits for idleness and closes the executor
    /// in the same step, then joins its threads.
    ///
    /// Bounded against a program thread that queues tasks without end: if
    /// no idle moment comes within the bounds of [`DRAIN_WHILE_CURRENT`](crate::exec::config::DRAIN_WHILE_CURRENT)
    /// (100 ms, or 100,000 tasks in flight) while some task is ready or
    /// running (not only blocked in an await) and a program thread called
    /// in since the drain began, program threads
    /// get no new turn from then on (their calls go to the next instance),
    /// and the tasks already accepted run to the end.
    /// Every task accepted runs; if one did not (a bug), destroy says how
    /// many on one line.
    pub(crate) fn close(&self) {
        // The agent this thread waits as, the same across the drain's
        // slices: a thread whose locals are gone (the exit handler) is not
        // known by them, and a new agent at each slice would leave the one
        // of the slice that timed out in the ready set; given the turn, it
        // would keep it forever (a hang at exit, found by the exhaustive
        // tests).
        let mut me = None;
        // Only program threads' calls can outpace the drain: while none
        // came since it began, a task that runs long (or a worker slow to
        // start: 100 ms and more under ThreadSanitizer) keeps the instance
        // current, and a guest's late completion still joins the drain.
        let calls_before = self.program_calls();
        if !drain_while_current(
            |limit| self.wait_idle_as(&mut me, Some(limit), true),
            || self.tasks_in_flight(),
            || self.has_runnable_tasks() && self.program_calls() > calls_before,
        ) {
            lock(&self.state).closing = true;
            if !self.wait_idle_as(&mut me, Some(DRAIN_REPORT_AFTER), true) {
                warn(&format!("destroy: waiting for {} task(s) still in flight", self.tasks_in_flight()));
                self.wait_idle_as(&mut me, None, true);
            }
        }
        let threads = {
            let mut st = lock(&self.state);
            st.shutdown = true;
            for agent in &st.agents {
                agent.wake.notify_all();
            }
            self.watcher.notify_all();
            LAST_STEPS.store(st.strategy.steps(), Ordering::Relaxed);
            std::mem::take(&mut st.threads)
        };
        for thread in threads {
            if thread.join().is_err() {
                abort_misuse("__mlir_execution_engine_destroy", "a worker thread panicked");
            }
        }
        let (queued, run) = {
            let st = lock(&self.state);
            (st.queued, st.run)
        };
        LAST_QUEUED.store(queued, Ordering::Relaxed);
        LAST_RUN.store(run, Ordering::Relaxed);
        if queued != run {
            warn(&format!(
                "destroy: {} task(s) abandoned under the deterministic schedule {}: {queued} queued, {run} run \
                 (a task queued while the executor closed; a runtime bug)",
                queued.saturating_sub(run),
                self.spec
            ));
        }
        clock::logical_end();
        ACTIVE.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn wait_idle_then(&self, timeout: Option<Duration>, close: bool) -> bool {
        self.wait_idle_as(&mut None, timeout, close)
    }

    /// [`Deterministic::wait_idle_then`] as agent `agent`, registered now
    /// (and stored there) if `None`: a caller that comes back after a
    /// timeout passes the same, so a thread without locals goes on as the
    /// agent that waited.
    fn wait_idle_as(&self, agent: &mut Option<AgentId>, timeout: Option<Duration>, close: bool) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = lock(&self.state);
        if st.closed {
            return true;
        }
        let me = *agent.get_or_insert_with(|| self.register(&mut st));
        if st.agents[me].status == Status::Away {
            st = self.acquire(st, me);
        }
        if std::mem::take(&mut st.agents[me].idle_pending) {
            // Back after a timeout: its first call's depth still counts
            // (it may have been chosen meanwhile, and holds the baton).
        } else if st.agents[me].status == Status::Running {
            st.agents[me].depth += 1;
        }
        let wake = Arc::clone(&st.agents[me].wake);
        let mut woken = false;
        loop {
            if st.running == Some(me) {
                // The turn came back at idleness, but the strategy may have
                // run another program thread first, whose `Execute` queued
                // a task: idle only if nothing is in flight now, else wait
                // again (without this re-check, closing would abandon that
                // task; issue 27).
                if st.in_flight() == 0 || woken && mutation::DETERMINISTIC_IDLE_NO_RECHECK {
                    break;
                }
                if woken {
                    st.idle_rechecks_waited += 1;
                }
                st.agents[me].status = Status::IdleWait;
                st.idle_waiters.push(me);
                self.decide(&mut st, Some(me), After::Waits);
                continue;
            }
            match deadline {
                None => st = wake.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => {
                        st = wake.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
                    }
                    // Still waiting: the thread stays an idle waiter.
                    _ => {
                        st.agents[me].idle_pending = true;
                        return false;
                    }
                },
            }
            woken = true;
        }
        if close {
            st.closed = true;
            st.in_flight_at_close = st.in_flight();
            // Program threads waiting for a turn now find the executor
            // closed and go to the next instance.
            st.agents[me].depth = 0;
            st.agents[me].status = Status::Away;
            self.decide(&mut st, None, After::Away);
            return true;
        }
        self.leave(st, me);
        true
    }
}
