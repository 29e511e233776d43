#!/usr/bin/env bash
# Mutation tests (docs/reliability.md): bring back each historic bug of the
# C++ runtime with its test-only cargo feature and check that the suite
# catches it, for the reason we expect; and check that the same tests pass
# with every switch off.
#
#   scripts/check/mutations.sh            loom + teardown detectors (make mutations, make test)
#   scripts/check/mutations.sh --asan     also AddressSanitizer on the use after free (nightly)
#
# Exit status: 0 when every mutation is caught and the baseline passes.
set -u
cd "$(dirname "$0")/../.."

CARGO=${CARGO:-cargo}
ASAN=0
[ "${1:-}" = "--asan" ] && ASAN=1
LOG_DIR=target/mutations/logs
mkdir -p "$LOG_DIR"
export LOOM_MAX_PREEMPTIONS=${LOOM_MAX_PREEMPTIONS:-2}

failures=0
rows=()

# run NAME FEATURE EXPECT(caught|pass) SIGNATURE -- COMMAND...
# (FEATURE is for the table; the command passes it to cargo itself.)
# With EXPECT=caught, the command must fail and its output contain SIGNATURE
# (so a build error or an unrelated failure does not count as caught).
run() {
    local name=$1 feature=$2 expect=$3 signature=$4
    shift 5
    local log="$LOG_DIR/$name.log" start=$SECONDS status verdict
    "$@" >"$log" 2>&1
    status=$?
    if [ "$expect" = pass ]; then
        if [ $status -eq 0 ]; then verdict="passes"; else verdict="FAILS (see $log)"; failures=$((failures + 1)); fi
    elif [ $status -ne 0 ] && grep -q -- "$signature" "$log"; then
        verdict="caught: $signature"
    elif grep -q "^error\(\[E[0-9]*\]\)\?: " "$log" && ! grep -q "test result" "$log"; then
        verdict="BUILD ERROR (see $log)"; failures=$((failures + 1))
    else
        verdict="NOT CAUGHT (exit $status, see $log)"; failures=$((failures + 1))
    fi
    rows+=("$(printf '%-34s %-40s %5ss  %s' "$name" "${feature:-none}" $((SECONDS - start)) "$verdict")")
    echo "mutations: $name: $verdict" >&2
}

normal=(env CARGO_TARGET_DIR=target/mutations "$CARGO" test --release -p mlir_async_runtime)
loom=(env RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom "$CARGO" test --release -p mlir_async_runtime)

# Baseline: the detectors pass with every switch off.
run baseline-teardown "" pass "" -- "${normal[@]}" --test teardown
run baseline-loom "" pass "" -- "${loom[@]}" --lib --test loom_objects

# (1) destroy does not wait for tasks in flight: the teardown test sees a
# task finish after destroy returned.
run 1-destroy-no-drain mutation-destroy-no-drain caught \
    "destroy returned before its tasks finished" -- "${normal[@]}" --features mutation-destroy-no-drain --test teardown

# (2) group completion without the CAS that decides between the adder and the
# completion: loom finds the interleaving where the token's completion is
# lost and the group's awaiter never wakes.
run 2-group-race-loom mutation-group-race caught "deadlock" -- \
    "${loom[@]}" --features mutation-group-race --test loom_objects -- --exact add_token_against_completion_against_group_await

# (3) completion writes to the object after dropping its last reference:
# under loom the freed object is poisoned and the write panics.
run 3-touch-after-free-loom mutation-touch-after-free caught "index out of bounds" -- \
    "${loom[@]}" --features mutation-touch-after-free --test loom_objects -- --exact last_drop_ref_against_completion_in_flight

# (4) a thread waiting for idleness sleeps without its re-check under the
# signal's lock: loom finds the last drainer's notification lost before the
# sleep (the wait path's idle-drainer change rests on that re-check).
run 4-idle-no-recheck-loom mutation-idle-no-recheck caught "deadlock" -- \
    "${loom[@]}" --features mutation-idle-no-recheck --lib -- --exact \
    exec::threads::loom_idle::the_last_drainer_leaving_wakes_the_thread_waiting_for_idleness

# (5) the deterministic executor's destroy closes when the turn comes back
# at idleness without looking again: a task that another program thread
# queued in between is abandoned (issue 27). The exhaustive hand-off tests
# enumerate every choice of the executor's strategy and find the closing
# with a task in flight, every run. (The exit-path lifecycle test that
# counts tasks lost is a sampled check: with this mutation it passed in a
# clean-clone CI run, so it is not a row here; a row must catch every time.)
run 5-deterministic-idle-no-recheck mutation-deterministic-idle-no-recheck caught "broke the hand-off" -- \
    "${normal[@]}" --features mutation-deterministic-idle-no-recheck --lib -- exec::deterministic::exhaustive::

# (6) a blocked thread's periodic look at the queue starts nothing: loom
# finds the task whose spare the system refused, and which would end the
# wait, stranded (issue 25).
run 6-blocked-no-look-loom mutation-blocked-no-look caught "a task was stranded" -- \
    "${loom[@]}" --features mutation-blocked-no-look --lib -- --exact \
    exec::threads::loom_spares::a_spare_start_refused_by_the_system_is_retried_by_a_blocked_thread
# (7) a drainer that stops looking for work does not look at the other
# threads' next-task slots again after its decrement: loom finds the task
# that the slot's owner put there while it saw that drainer looking stranded
# (issue 25: a task spinning on the child it started never finished).
run 7-slot-no-recheck-loom mutation-slot-no-recheck caught "the task put in the slot was stranded" -- \
    "${loom[@]}" --features mutation-slot-no-recheck --lib -- --exact \
    exec::threads::loom_slot::a_task_put_in_a_slot_as_the_last_looking_drainer_leaves_is_taken
# (8) the accessors of the thread-locals read after a task switched back
# in are inlined: the frame that switched keeps the addresses it computed
# on the thread it left (llvm-project#98479), and the migration check finds
# every migrated task's thread-locals stale.
run baseline-migration "" pass "" -- "${normal[@]}" --test migration
run 8-tls-inline mutation-tls-inline caught "thread-locals read stale after a switch" -- \
    "${normal[@]}" --features mutation-tls-inline --test migration
# (9) the drainer takes a refused link of a switched-out task's node (the
# object completed meanwhile) for a link: loom finds the task never resumed.
# (10) the drainer links the node before it stores the fiber in it: loom
# finds the completion's read of the slot unordered with its write.
run 9-handoff-no-check-loom mutation-handoff-no-check caught "resumed exactly once" -- \
    "${loom[@]}" --features mutation-handoff-no-check --lib -- exec::threads::loom_handoff::
run 10-handoff-link-first-loom mutation-handoff-link-first caught "Causality violation" -- \
    "${loom[@]}" --features mutation-handoff-link-first --lib -- exec::threads::loom_handoff::
# (11) the sole holder's check (`Header::is_sole_holder`) reads the count
# Relaxed: the producer's completion, finding itself the sole holder after
# a consumer's drop but not the continuation that consumer linked before,
# frees the token without firing it (the last drop's check is the same
# function): loom finds the continuation never run.
run 11-drop-sole-relaxed-loom mutation-drop-sole-relaxed caught "the continuation must run exactly once" -- \
    "${loom[@]}" --features mutation-drop-sole-relaxed --test loom_objects -- --exact continuation_by_a_holder_that_drops_against_the_sole_holders_completion
# (12) the last drainer to leave declares the scheduler idle without
# looking at the outside threads' entries; (13) a leaving drainer looks at
# the queue and the entries without the fence after its leave; (14) a
# producer looks at the lookers and permits without the fence after its
# put: loom finds the task an outside thread queued stranded (issue 26).
entries=exec::threads::loom_entries::a_task_queued_on_an_entry_as_the_last_drainer_leaves_is_taken
run 12-entry-no-recheck-loom mutation-entry-no-recheck caught "the task queued on the outside entry was stranded" -- \
    "${loom[@]}" --features mutation-entry-no-recheck --lib -- --exact "$entries"
run 13-leave-no-fence-loom mutation-leave-no-fence caught "the task queued on the outside entry was stranded" -- \
    "${loom[@]}" --features mutation-leave-no-fence --lib -- --exact "$entries"
run 14-push-no-fence-loom mutation-push-no-fence caught "the task queued on the outside entry was stranded" -- \
    "${loom[@]}" --features mutation-push-no-fence --lib -- --exact "$entries"
# (15) a waiter's look at a pool binding without the re-check of the
# entry's version: loom finds a read torn between two pushes into one
# entry, which joins one task's handle to another's token.
run 15-binding-no-recheck-loom mutation-binding-no-recheck caught "a torn read of their entry" -- \
    "${loom[@]}" --features mutation-binding-no-recheck --lib -- --exact \
    exec::threads::loom_bindings::a_look_that_overlaps_a_push_into_the_same_entry_never_joins_two_bindings
# (16) a thread entering an instance's gate through its presence looks at
# the closed bit without the fence after its store: loom finds a task
# queued behind the destroy's back.
run 16-gate-no-fence-loom mutation-gate-no-fence caught "queued behind the closer's back" -- \
    "${loom[@]}" --features mutation-gate-no-fence --lib -- --exact instance::loom_gate::close_against_enter_as
# (17) the watcher lets go of the watch without looking at the entries:
# loom finds a task queued as it lets go with no drainer.
run 17-watch-no-recheck-loom mutation-watch-no-recheck caught "was stranded" -- \
    "${loom[@]}" --features mutation-watch-no-recheck --lib -- --exact exec::threads::loom_watch::a_task_queued_as_the_watcher_lets_go_gets_a_drainer
# (18) The last held task's release does not tell the threads waiting for
# idleness: loom finds the waiter asleep for good.
run 18-held-no-notify-loom mutation-held-no-notify caught "deadlock" -- \
    "${loom[@]}" --features mutation-held-no-notify --lib -- --exact exec::threads::loom_idle::the_last_held_task_let_go_wakes_the_thread_waiting_for_idleness
# (19) a push onto the shared queue loads the drainers word without the
# fence after the push: loom finds the push and a leaving drainer missing
# each other, and the task never runs.
run 19-queue-push-no-fence-loom mutation-queue-push-no-fence caught "the task ran exactly once" -- \
    "${loom[@]}" --features mutation-queue-push-no-fence --lib -- --exact exec::threads::loom_drainers::push_against_a_leaving_drainer
# (20) a drainer start checks the free permit on a load, then adds in a
# second step: loom finds a start and a reacquire both taking the last
# permit.
run 20-start-unchecked-loom mutation-start-unchecked caught "permits() <= 1" -- \
    "${loom[@]}" --features mutation-start-unchecked --lib -- --exact exec::threads::loom_drainers::reacquire_against_a_push
# (21) an entrant looks at the gate's closed bit before it counts itself:
# loom finds a task queued behind the closer's back.
run 21-gate-enter-unchecked-loom mutation-gate-enter-unchecked caught "queued behind the closer's back" -- \
    "${loom[@]}" --features mutation-gate-enter-unchecked --lib -- --exact instance::loom_gate::close_against_enter
# (22) the closer looks at the presences without its heavy fence: loom
# finds a task queued behind its back through a presence.
run 22-gate-close-no-fence-loom mutation-gate-close-no-fence caught "queued behind the closer's back" -- \
    "${loom[@]}" --features mutation-gate-close-no-fence --lib -- --exact instance::loom_gate::close_against_enter_as
# (23) a task held out of the queue and the entries is not counted: loom
# finds the scheduler looking idle with a task switched out.
run 23-hold-uncounted-loom mutation-hold-uncounted caught "looked idle with a task switched out" -- \
    "${loom[@]}" --features mutation-hold-uncounted --lib -- --exact exec::threads::loom_idle::a_task_switched_out_as_its_drainer_leaves_keeps_the_scheduler_busy
# (24) a waiter raises its entry's running flag without the Release fence
# after it: loom finds a look that reads the batch's take and the flag down.
run 24-running-no-fence-loom mutation-running-no-fence caught "looked idle while a waiter ran a task" -- \
    "${loom[@]}" --features mutation-running-no-fence --lib -- --exact exec::threads::loom_idle::a_task_a_waiter_takes_for_its_batch_keeps_the_scheduler_busy
# (25) a waiter's count of the task it holds has no Release fence after it:
# loom finds a look that reads the take and the count still at zero.
run 25-hold-no-fence-loom mutation-hold-no-fence caught "looked idle while a waiter held a task" -- \
    "${loom[@]}" --features mutation-hold-no-fence --lib -- --exact exec::threads::loom_idle::a_task_a_waiter_holds_before_it_takes_keeps_the_scheduler_busy
# (26) a drainer start decides wake or spawn on a load before its
# compare-and-swap: loom finds a spare started beside an idle thread.
run 26-start-kind-stale-loom mutation-start-kind-stale caught "a spare started beside a thread in no job" -- \
    "${loom[@]}" --features mutation-start-kind-stale --lib -- --exact exec::threads::loom_spares::a_push_as_a_worker_leaves_wakes_its_thread_rather_than_a_spare
# (27) the slot's owner takes its task back with a load and a store: loom
# finds the owner and a thief reading the same task.
run 27-slot-take-unchecked-loom mutation-slot-take-unchecked caught "Causality violation" -- \
    "${loom[@]}" --features mutation-slot-take-unchecked --lib -- --exact exec::threads::loom_slot::the_owner_and_a_thief_take_a_slot_task_once
if [ $ASAN -eq 1 ]; then
    asan=(env RUSTFLAGS="-Zsanitizer=address --cfg mlir_async_asan" CARGO_TARGET_DIR=target/asan
          "$CARGO" +nightly test --release -p mlir_async_runtime --target x86_64-unknown-linux-gnu)
    run 3-touch-after-free-asan mutation-touch-after-free caught "heap-use-after-free" -- \
        "${asan[@]}" --features mutation-touch-after-free --test races -- --exact completion_drops_the_last_reference
fi

echo
printf '%-34s %-40s %6s  %s\n' check feature time verdict
for row in "${rows[@]}"; do echo "$row"; done
if [ $failures -ne 0 ]; then
    echo "mutations: $failures check(s) failed; logs in $LOG_DIR" >&2
    exit 1
fi
