//! State: what the writers, the collector and the public API
//! share — the process-global control state ([`control`]), one
//! session's shared state ([`shared`]), the handlers a forked child
//! runs ([`fork`]), and the sessions stopped whose last references an
//! allocation hook gave up ([`retired`]).

pub(crate) mod control;
pub(crate) mod fork;
pub(crate) mod retired;
pub(crate) mod shared;

#[cfg(feature = "tokio-wakes")]
pub(crate) use control::on_change;
pub(crate) use control::{changed, control, current, forked, try_current, Control};
pub(crate) use shared::{Shared, ThreadCounters};
