//! Which executor a runtime instance uses: the ordinary multithreaded
//! scheduler, or the deterministic one ([`crate::exec::deterministic`]) with a seeded
//! strategy, so that a run's whole interleaving is a function of its seed.
//!
//! Chosen when an instance starts, from, in this order:
//! - the selection a tool made through the introspection ABI
//!   (`rust_mlir_async_runtime_select_schedule`, docs/introspection-abi.md),
//!   which applies to every instance started after the call;
//! - `MLIR_ASYNC_RUNTIME_SCHEDULE` (read once per process):
//!   `random:SEED`, `pct:SEED[:DEPTH[:STEPS]]`, or `off`/empty for the
//!   ordinary scheduler. A malformed value is ignored with one warning.

use std::fmt;

use crate::sync::misuse::warn;
use crate::sync::process::{ForkSafeLock, OnceLock};

/// Environment variable that selects a deterministic schedule.
pub(super) const SCHEDULE_ENV: &str = "MLIR_ASYNC_RUNTIME_SCHEDULE";

/// PCT's bug depth when the spec does not give one.
pub(super) const DEFAULT_DEPTH: u32 = 3;
/// PCT's expected number of scheduling steps when the spec does not give
/// one: the change points are drawn from `1..=steps`.
pub(super) const DEFAULT_STEPS: u64 = 1000;
/// The largest depth accepted (a change point per level).
pub(super) const MAX_DEPTH: u32 = 1000;

/// How the deterministic executor chooses what runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Uniformly among the candidates, at every scheduling point.
    Random,
    /// Probabilistic concurrency testing: random priorities, `depth - 1`
    /// priority change points among the first `steps` steps.
    Pct { depth: u32, steps: u64 },
}

/// A deterministic schedule: a policy and its seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub(crate) seed: u64,
    pub(crate) policy: Policy,
}

impl fmt::Display for Spec {
    /// The canonical text, every parameter explicit: parsing it gives the
    /// same spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.policy {
            Policy::Random => write!(f, "random:{}", self.seed),
            Policy::Pct { depth, steps } => write!(f, "pct:{}:{depth}:{steps}", self.seed),
        }
    }
}

/// The executor an instance uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Schedule {
    /// The ordinary multithreaded scheduler.
    Threads,
    Deterministic(Spec),
}

impl Schedule {
    /// Parses a schedule: `off` or empty, `random:SEED`,
    /// `pct:SEED[:DEPTH[:STEPS]]`; the error says what is expected.
    pub(crate) fn parse(text: &str) -> Result<Schedule, String> {
        let text = text.trim();
        if text.is_empty() || text == "off" {
            return Ok(Schedule::Threads);
        }
        let expected = "expected `random:SEED`, `pct:SEED[:DEPTH[:STEPS]]` or `off` \
                        (SEED a decimal u64, DEPTH 1..=1000, STEPS >= 1)";
        let bad = || format!("{text:?}: {expected}");
        let mut parts = text.split(':');
        let name = parts.next().unwrap_or_default();
        let numbers: Vec<&str> = parts.collect();
        let number = |i: usize| -> Result<Option<u64>, String> {
            numbers.get(i).map(|s| s.trim().parse::<u64>().map_err(|_| bad())).transpose()
        };
        let seed = number(0)?.ok_or_else(bad)?;
        let policy = match (name, numbers.len()) {
            ("random", 1) => Policy::Random,
            ("pct", 1..=3) => {
                let depth = number(1)?.unwrap_or(u64::from(DEFAULT_DEPTH));
                let steps = number(2)?.unwrap_or(DEFAULT_STEPS);
                if !(1..=u64::from(MAX_DEPTH)).contains(&depth) || steps == 0 {
                    return Err(bad());
                }
                Policy::Pct { depth: depth as u32, steps }
            }
            _ => return Err(bad()),
        };
        Ok(Schedule::Deterministic(Spec { seed, policy }))
    }
}

/// A tool's selection, overriding the environment (`None`: no selection).
static SELECTED: ForkSafeLock<Option<Schedule>> = ForkSafeLock::new(None);
/// What the environment asks for, read once.
static FROM_ENV: OnceLock<Schedule> = OnceLock::new();

/// Selects the schedule of the instances started from now on; `None`
/// goes back to the environment's.
pub(crate) fn select(schedule: Option<Schedule>) {
    *SELECTED.lock() = schedule;
}

/// The schedule for an instance starting now.
pub(crate) fn for_new_instance() -> Schedule {
    if let Some(selected) = *SELECTED.lock() {
        return selected;
    }
    from_env()
}

/// What the environment asks for, read once.
fn from_env() -> Schedule {
    *FROM_ENV.get_or_init(|| {
        let text = std::env::var(SCHEDULE_ENV).unwrap_or_default();
        Schedule::parse(&text).unwrap_or_else(|e| {
            warn(&format!("ignoring {SCHEDULE_ENV}={e}; using the multithreaded scheduler"));
            Schedule::Threads
        })
    })
}

/// Before `fork`: the selection's lock is held, and the environment's
/// schedule is read (a child must not find its one-time read in progress
/// on a thread that does not exist there).
pub(crate) fn hold_for_fork() {
    let _ = from_env();
    SELECTED.hold_for_fork();
}

/// After `fork`, in the parent and in the child.
pub(crate) fn release_after_fork() {
    SELECTED.release_after_fork();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn det(seed: u64, policy: Policy) -> Schedule {
        Schedule::Deterministic(Spec { seed, policy })
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(Schedule::parse(""), Ok(Schedule::Threads));
        assert_eq!(Schedule::parse(" off "), Ok(Schedule::Threads));
        assert_eq!(Schedule::parse("random:42"), Ok(det(42, Policy::Random)));
        assert_eq!(
            Schedule::parse("pct:7"),
            Ok(det(7, Policy::Pct { depth: DEFAULT_DEPTH, steps: DEFAULT_STEPS }))
        );
        assert_eq!(Schedule::parse("pct:7:2"), Ok(det(7, Policy::Pct { depth: 2, steps: DEFAULT_STEPS })));
        assert_eq!(Schedule::parse("pct:7:2:55"), Ok(det(7, Policy::Pct { depth: 2, steps: 55 })));
        assert_eq!(
            Schedule::parse(&format!("random:{}", u64::MAX)),
            Ok(det(u64::MAX, Policy::Random))
        );
    }

    #[test]
    fn rejects_malformed_specs_saying_what_is_expected() {
        for text in ["random", "random:", "random:-1", "random:1:2", "pct:x", "pct:1:0", "pct:1:1001", "pct:1:2:0", "pct:1:2:3:4", "fifo:1", "1"] {
            let err = Schedule::parse(text).expect_err(text);
            assert!(err.contains("expected `random:SEED`"), "{text}: {err}");
        }
    }

    #[test]
    fn the_canonical_text_parses_back() {
        for spec in [Spec { seed: 3, policy: Policy::Random }, Spec { seed: 9, policy: Policy::Pct { depth: 4, steps: 77 } }] {
            assert_eq!(Schedule::parse(&spec.to_string()), Ok(Schedule::Deterministic(spec)));
        }
    }
}
