//! The command line's tests, one binary: each module runs the built `smdebug` binary on trials
//! written for it and checks its output and exit status.

mod demo;
mod demo_nan;
mod doctor;
mod fleet;
mod fleet_commands;
mod health;
mod serve;
mod webhook;
