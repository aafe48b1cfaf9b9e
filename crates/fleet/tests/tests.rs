//! Integration tests of smdebug-fleet: discovery over real trials, the runner with a
//! corrupt trial, and the watcher over live writers, restarts included.

mod common;
mod discovery;
mod watching;
mod webhook;
