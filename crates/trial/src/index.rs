//! What the reader knows of a trial's index: the steps, workers and records registered
//! ([`state`]), step ranges ([`range`]), refreshing from the index files ([`refresh`]), the
//! collections files ([`collections`]) and tensor-name filters ([`names`]).

pub(crate) mod collections;
pub(crate) mod names;
pub(crate) mod range;
pub(crate) mod refresh;
pub(crate) mod state;
