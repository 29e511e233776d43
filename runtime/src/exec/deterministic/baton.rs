//! The baton: a thread's agent registered, the turn acquired, given up
//! and handed over, and the decision of what runs next (the strategy's
//! choice, [`super::strategy`]), all under the executor's one lock.

use super::*;

impl Deterministic {
    // ---- agents and the baton -----------------------------------------------

    /// This thread's agent here, registered now if it is new: a program
    /// thread, the primary if it is the first.
    pub(super) fn register(&self, st: &mut State) -> AgentId {
        let known = REGISTERED
            .try_with(|r| r.borrow().as_ref().filter(|r| r.id == self.id).map(|r| r.agent))
            .ok()
            .flatten();
        if let Some(me) = known {
            return me;
        }
        let role = if st.primary.is_none() { Role::Primary } else { Role::Guest };
        let me = st.add_agent(role, Status::Away);
        if role == Role::Primary {
            st.primary = Some(me);
        }
        let mut old = None;
        // A thread whose local storage is gone (exiting: a late `atexit`
        // handler, a thread-local destructor) stays unregistered: it is a
        // new guest at each call. The registration is made only where it
        // is stored: one that could not be stored would drop here, and its
        // drop locks this executor, whose lock the caller holds (the hang
        // at exit of issue 27).
        let _ = REGISTERED.try_with(|r| {
            if let Ok(mut r) = r.try_borrow_mut() {
                // The old registration (of an instance destroyed since)
                // drops at the end of this function: it locks its own
                // executor, never this one.
                old = r.replace(Registration { executor: self.this.clone(), id: self.id, agent: me });
            }
        });
        me
    }

    /// Gives an away program thread the baton: at once if nothing runs,
    /// else through the ready set.
    pub(super) fn acquire<'a>(&'a self, mut st: MutexGuard<'a, State>, me: AgentId) -> MutexGuard<'a, State> {
        if st.agents[me].strand.is_none() {
            let strand = st.strategy.new_strand();
            st.agents[me].strand = Some(strand);
        }
        if st.running.is_none() {
            st.running = Some(me);
            st.agents[me].status = Status::Running;
            st.stall = None;
            st
        } else {
            st.push_ready_agent(me);
            self.wait_turn(st, me)
        }
    }

    /// Makes this thread hold the baton for a runtime call (see
    /// [`Deterministic::leave`]).
    pub(super) fn enter(&self) -> Result<(MutexGuard<'_, State>, AgentId), Closed> {
        let mut st = lock(&self.state);
        let me = self.register(&mut st);
        match st.agents[me].status {
            Status::Running => {}
            Status::Away | Status::Gone => {
                if st.closed || st.closing {
                    return Err(Closed);
                }
                st = self.acquire(st, me);
            }
            // Back from a wait for idleness that timed out: still waiting
            // (ready once idle).
            Status::IdleWait | Status::Ready => st = self.wait_turn(st, me),
            other => unreachable!("a thread calling in is running, away or waiting for idleness, not {other:?}"),
        }
        // A wait for idleness that timed out still counted its call: this
        // call takes its place.
        if !std::mem::take(&mut st.agents[me].idle_pending) {
            st.agents[me].depth += 1;
        }
        if (st.closed || st.closing) && st.agents[me].role != Role::Worker && st.agents[me].depth == 1 {
            // Closed while it waited for its turn.
            self.leave(st, me);
            return Err(Closed);
        }
        // Counted once accepted, as the threads executor's gate counts a
        // thread once inside: a call still waiting for its turn when the
        // drain looks has not outpaced it. (Counted on arrival, a program
        // thread's completion that a task of the drain waits for, arriving
        // while another task still ran, gave the instance up before its own
        // turn, was refused, and destroy waited for that task for ever:
        // `late-continuation-after-work` under `random:2` and
        // ThreadSanitizer's timing, 6 runs of 12.)
        if st.agents[me].role != Role::Worker {
            st.program_calls += 1;
        }
        Ok((st, me))
    }

    /// The end of a runtime call: a guest gives the baton back when its
    /// outermost call returns.
    pub(super) fn leave(&self, mut st: MutexGuard<'_, State>, me: AgentId) {
        let closed = st.closed || st.closing;
        let agent = &mut st.agents[me];
        agent.depth = agent.depth.saturating_sub(1);
        let program_thread = agent.role != Role::Worker;
        let away = agent.depth == 0
            && agent.status == Status::Running
            && (agent.role == Role::Guest || closed && program_thread);
        if away {
            st.agents[me].status = Status::Away;
            self.decide(&mut st, Some(me), After::Away);
        }
    }

    /// Sleeps until this agent holds the baton.
    pub(super) fn wait_turn<'a>(&'a self, mut st: MutexGuard<'a, State>, me: AgentId) -> MutexGuard<'a, State> {
        let wake = Arc::clone(&st.agents[me].wake);
        while st.running != Some(me) {
            st = wake.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st
    }

    /// A decision by `me` (see [`Deterministic::decide`]), then, unless it goes
    /// on or is done, its sleep until its next turn.
    pub(super) fn decide_and_wait<'a>(&'a self, mut st: MutexGuard<'a, State>, me: AgentId, after: After) -> MutexGuard<'a, State> {
        self.decide(&mut st, Some(me), after);
        match after {
            After::GoesOn | After::Waits => self.wait_turn(st, me),
            After::Idle | After::Away => st,
        }
    }

    /// Chooses what runs next and hands it the baton. `me` is the agent
    /// that held it (`None`: a wake from outside while nothing ran).
    pub(super) fn decide(&self, st: &mut State, me: Option<AgentId>, after: After) {
        st.wake_idle_waiters_if_idle();
        let strand = me.and_then(|m| st.agents[m].strand);
        let current = if after == After::GoesOn { strand } else { None };
        let can_start = st.can_start_task(self.config.max_threads);
        match st.strategy.choose(current, strand, can_start) {
            Choice::Current => {}
            Choice::Ready(next, _) => {
                if after == After::GoesOn {
                    st.push_ready_agent(me.expect("a current agent"));
                }
                let finishing = if after == After::Idle { me } else { None };
                self.hand_over(st, next, finishing);
            }
            Choice::Nothing => {
                st.running = None;
                if st.blocked > 0 || st.strategy.ready_for_thread() > 0 {
                    st.stall_epoch += 1;
                    st.stall = Some((st.stall_epoch, Instant::now()));
                    self.watcher.notify_all();
                }
            }
        }
    }

    /// Hands the baton to the ready strand `next`: its agent, or a worker
    /// for its task (`finishing`, the worker whose task just returned, if
    /// any; else the lowest idle one; else a new one).
    pub(super) fn hand_over(&self, st: &mut State, next: Strand, finishing: Option<AgentId>) {
        st.stall = None;
        let agent = match st.ready.remove(&next).expect("a ready strand has its entry") {
            Ready::Agent(a) => a,
            Ready::Task(task) => {
                let w = match finishing.or_else(|| st.idle_workers.first().copied()) {
                    Some(w) => {
                        st.idle_workers.remove(&w);
                        w
                    }
                    None => self.start_worker(st),
                };
                let worker = &mut st.agents[w];
                worker.strand = Some(next);
                worker.mailbox = Some(task);
                st.busy += 1;
                w
            }
        };
        st.running = Some(agent);
        st.agents[agent].status = Status::Running;
        st.agents[agent].wake.notify_one();
    }
}
