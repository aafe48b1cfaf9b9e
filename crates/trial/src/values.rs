//! Reading values: the value cache ([`cache`]), events files kept open ([`open_files`],
//! [`file_cache`]), decoding records ([`decode`]), fetching them ([`fetch`]), the
//! read-ahead thread ([`ahead`]), one-pass reads ([`once`]) and reductions computed from
//! values ([`reductions`]).

pub(crate) mod ahead;
pub(crate) mod cache;
pub(crate) mod decode;
pub(crate) mod fetch;
pub(crate) mod file_cache;
pub(crate) mod once;
pub(crate) mod open_files;
pub(crate) mod reductions;
