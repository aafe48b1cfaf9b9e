//! The crate's integration tests (one binary).
mod builtin;
mod invoker;
mod live;
mod registry;
mod stalled;
mod support;
