//! What every layer above names: a task to resume and what made it ready
//! ([`task`]), and the kind of a reference-counted object ([`kind`]). The
//! probes record both, the objects and the executors make and run them.

pub(crate) mod kind;
pub(crate) mod task;
