//! The trial reader's tests, one binary.

mod cache;
mod collections;
mod common;
mod corruption;
mod listing;
mod live;
mod ranges;
mod read_ahead;
mod readahead;
mod scenarios;
mod small_files;
mod value_once;
