//! Test-only switches that bring back the C++ runtime's historic bugs, and
//! take out a re-check that the wait paths rest on, one cargo feature each
//! (docs/reliability.md, scripts/check/mutations.sh). The rest
//! of the runtime reads these constants and nothing else, so every switch
//! is visible from this one file. Never enable them in a build anyone uses.

/// (1) The destroy hook returns without draining the tasks in flight or
/// joining the workers (upstream's unowned pool).
pub(crate) const DESTROY_NO_DRAIN: bool = cfg!(feature = "mutation-destroy-no-drain");

/// (2) Adding a waiter checks the state, then links the node with a plain
/// store instead of a compare-and-swap, so a completion in between is lost
/// (upstream's group race).
pub(crate) const GROUP_RACE: bool = cfg!(feature = "mutation-group-race");

/// (3) Completing a token or value writes to it after dropping the
/// producer's reference (upstream's use after free: a mutex unlocked inside
/// an object that may already be freed).
pub(crate) const TOUCH_AFTER_FREE: bool = cfg!(feature = "mutation-touch-after-free");

/// (4) A thread waiting for idleness (`wait_idle`, the destroy hook) goes
/// to sleep after its spin without looking again under the signal's lock,
/// so the last drainer's notification in between is lost (in production
/// the wait's 100 ms safety net hides it; a loom model has no timeout).
pub(crate) const IDLE_NO_RECHECK: bool = cfg!(feature = "mutation-idle-no-recheck");

/// (5) The deterministic executor's destroy closes as soon as the turn
/// comes back to it at idleness, without looking again whether another
/// program thread queued a task meanwhile (that task is abandoned:
/// issue 27's lost tasks).
pub(crate) const DETERMINISTIC_IDLE_NO_RECHECK: bool = cfg!(feature = "mutation-deterministic-idle-no-recheck");

/// (6) A thread blocked in a task (task stacks off) does not look at the
/// queue when it wakes once a second (`Drainers::look_while_blocked`): a
/// spare start that the system refused is never tried again, and the
/// queued task that would end the wait is stranded (issue 25's refused
/// `pthread_create`).
pub(crate) const BLOCKED_NO_LOOK: bool = cfg!(feature = "mutation-blocked-no-look");

/// (7) A drainer that stops looking for work (it found a task, or leaves)
/// does not look at the other threads' next-task slots and deques again,
/// so a task put in a slot while the producer saw it looking waits there
/// until its owner's current task returns: forever, when that task spins
/// on it (issue 25; `exec/threads/lookout.rs`).
pub(crate) const SLOT_NO_RECHECK: bool = cfg!(feature = "mutation-slot-no-recheck");

/// (8) The accessors of the thread-locals that the runtime reads after a
/// task switched back in (possibly on another thread) are inlined, so LLVM
/// may keep the address it computed before the switch (llvm-project#98479):
/// the migration check (`exec/threads/migration.rs`) finds them
/// stale. The feature acts through `cfg_attr` on those accessors.
#[allow(dead_code)]
pub(crate) const TLS_INLINE: bool = cfg!(feature = "mutation-tls-inline");

/// (9) The thread a task switched out to takes a refused link of the
/// task's node (the object completed since the task looked) for a link
/// (`exec/threads/handoff.rs`): nobody resumes the task.
pub(crate) const HANDOFF_NO_CHECK: bool = cfg!(feature = "mutation-handoff-no-check");

/// (10) That thread links the task's node before it stores the fiber in
/// it: the completion may fire and read the slot before the write (loom
/// reports the slot's accesses as unordered, or finds it empty).
pub(crate) const HANDOFF_LINK_FIRST: bool = cfg!(feature = "mutation-handoff-link-first");

/// (11) The sole holder's check (`object/header.rs`, `is_sole_holder`:
/// the last drop's, and the producer's completion's, which then frees
/// without a decrement or a swap) reads the count `Relaxed` instead of
/// `Acquire`: it may not see what the other holders did with the object
/// before their last decrement (loom, `loom_objects.rs`: a continuation
/// that a consumer linked before its drop, unseen by the producer's
/// completion, never runs; a group counter likewise never fires).
pub(crate) const DROP_SOLE_RELAXED: bool = cfg!(feature = "mutation-drop-sole-relaxed");

/// (12) The last drainer to leave declares the scheduler idle without
/// looking at the outside threads' entries, so a task an outside thread
/// queued while it saw that drainer's permit taken waits until its owner
/// takes it: forever, when the owner does not wait for it
/// (`exec/threads/lookout.rs`, `after_last_leave`).
pub(crate) const ENTRY_NO_RECHECK: bool = cfg!(feature = "mutation-entry-no-recheck");

/// (13) A drainer that left (or blocked) looks at the
/// shared queue and the outside threads' entries without the `SeqCst`
/// fence after its update of the drainers word
/// (`exec/threads/drainers.rs`, `Drainers::after_leave`): its look may
/// miss a task whose producer saw the permit still taken.
pub(crate) const LEAVE_NO_FENCE: bool = cfg!(feature = "mutation-leave-no-fence");

/// (14) A thread that put a task in its next-task slot or its outside
/// entry looks at the lookers and the permits without the `SeqCst` fence
/// after the put (`exec/threads/lookout.rs`, `Drainers::should_start`):
/// it may see a drainer still looking, or a permit still taken, that is
/// gone, while that drainer's look missed the put.
pub(crate) const PUSH_NO_FENCE: bool = cfg!(feature = "mutation-push-no-fence");

/// (15) A waiter's look at a pool binding (`exec/threads/pool_bindings.rs`)
/// does not read the entry's version again after its fields, so a read
/// that overlaps a push of another handle into the same entry can join
/// the old handle to the new token: a task the waiter does not wait for
/// would run on its thread (the loom model `loom_bindings.rs` finds it).
pub(crate) const BINDING_NO_RECHECK: bool = cfg!(feature = "mutation-binding-no-recheck");

/// (16) A thread that enters an instance's gate through its presence looks
/// at the closed bit without the `SeqCst` fence after its store
/// (`instance/gate.rs`, `Gate::enter_as`), so a destroy may close and find
/// it absent while it queues a task behind the destroy's back.
pub(crate) const GATE_NO_FENCE: bool = cfg!(feature = "mutation-gate-no-fence");

/// (17) The watcher lets go of the watch without looking at the outside
/// threads' entries (`exec/threads/watch.rs`, `Scheduler::let_go_watch`):
/// a task whose owner saw the watch still held, and started no drainer,
/// waits in its entry until its owner takes it: forever, when the owner
/// does not wait for it.
pub(crate) const WATCH_NO_RECHECK: bool = cfg!(feature = "mutation-watch-no-recheck");

/// (18) The release of the last task held out of the queue and the
/// entries (a task switched out, a waiter's batch without an entry) does
/// not tell the threads waiting for idleness (`exec/threads/idle.rs`,
/// `IdleSignal::release`): one that went to sleep before it sleeps on
/// (the 100 ms safety net in production; a loom model has no timeout).
pub(crate) const HELD_NO_NOTIFY: bool = cfg!(feature = "mutation-held-no-notify");

/// (19) A push onto the shared queue loads the drainers word without the
/// `SeqCst` fence after the push (`Drainers::after_push`, row 1 of the
/// spec's fence table): the push and a leaving drainer's look may miss
/// each other, and the task waits with no drainer.
pub(crate) const QUEUE_PUSH_NO_FENCE: bool = cfg!(feature = "mutation-queue-push-no-fence");

/// (20) A drainer start looks at the word, then adds its permit and job in
/// a second step (`Drainers::try_start`, row 6): two starts, or a start
/// and a reacquire, take the same last permit.
pub(crate) const START_UNCHECKED: bool = cfg!(feature = "mutation-start-unchecked");

/// (21) An entrant looks at the gate's closed bit, then counts itself in
/// a second step (`instance/gate.rs`, `Gate::enter`, row 12): the closer
/// may see nobody inside between the two, and a task is queued behind its
/// back.
pub(crate) const GATE_ENTER_UNCHECKED: bool = cfg!(feature = "mutation-gate-enter-unchecked");

/// (22) The closer of a gate looks at the presences without its heavy
/// fence after the closed bit (`Gate::close_and_wait_among`, row 14): the
/// closer and an entrant through a presence may both miss each other.
pub(crate) const GATE_CLOSE_NO_FENCE: bool = cfg!(feature = "mutation-gate-close-no-fence");

/// (23) A task held out of the queue and the entries is not counted
/// (`IdleSignal::hold` does nothing; row 11): a task that switches out is
/// in no count once its drainer leaves, so the scheduler looks idle and
/// the destroy hook would join the threads under it.
pub(crate) const HOLD_UNCOUNTED: bool = cfg!(feature = "mutation-hold-uncounted");

/// (24) A waiter raises its entry's running flag without the Release fence
/// after it (`deques.rs`, `Fills::begin_running`, row 10): a look for
/// idleness that reads the batch's take of a task may read the flag still
/// down, and the scheduler looks idle while the waiter runs the task.
pub(crate) const RUNNING_NO_FENCE: bool = cfg!(feature = "mutation-running-no-fence");

/// (25) The count of a task held by a waiter without the Release fence
/// after it (`idle.rs`, `IdleSignal::hold`, row 10): a look for idleness
/// that reads the waiter's `Relaxed` take of the task may read the count
/// still at zero.
pub(crate) const HOLD_NO_FENCE: bool = cfg!(feature = "mutation-hold-no-fence");

/// (26) A drainer start decides between waking a thread and spawning one
/// on a load, and its compare-and-swap checks only the free permit
/// (`drainers.rs`, `Drainers::try_start`, row 17): a thread that left its
/// job in between is not seen, and a spare is started beside it.
pub(crate) const START_KIND_STALE: bool = cfg!(feature = "mutation-start-kind-stale");

/// (27) The owner of a next-task slot takes its task back with a load and
/// a store instead of the compare-and-swap (`slot.rs`, `Slot::take_from`):
/// a thief that moved the task out between the two has it too, and the
/// task runs twice.
pub(crate) const SLOT_TAKE_UNCHECKED: bool = cfg!(feature = "mutation-slot-take-unchecked");
