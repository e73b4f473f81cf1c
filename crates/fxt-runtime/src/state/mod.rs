//! State: what the writers, the collector and the public API
//! share — the process-global control state ([`control`]) and one
//! session's shared state ([`shared`]).

pub(crate) mod control;
pub(crate) mod shared;

pub(crate) use control::{control, current, forked, Control};
pub(crate) use shared::{Shared, ThreadCounters};
