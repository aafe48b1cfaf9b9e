//! The crate's integration tests (one binary).
mod builtin;
mod inputs;
mod invoker;
mod live;
mod registry;
mod stalled;
mod support;
mod transformers;
