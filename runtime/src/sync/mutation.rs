//! Test-only switches that bring back the C++ runtime's historic bugs, one
//! cargo feature each (docs/reliability.md, scripts/mutations.sh). The rest
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
