//! The library's tests: trials written by our hook, then damaged the way real trials are.

mod doctor;
mod health;
mod seal;
mod support;
