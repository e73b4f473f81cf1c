//! Stage 1: tokens to syntax trees, with `syn`.
//!
//! Parsing accepts every shape the grammar allows and records what was
//! written (with spans); it fails only on syntax it cannot read, at the
//! first such token. Limits and combinations are checked by `validate`,
//! which sees the whole input and reports every problem at once.

pub(crate) mod args;
pub(crate) mod attr;
pub(crate) mod invocation;
