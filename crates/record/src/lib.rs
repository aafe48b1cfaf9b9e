//! smdebug-record (being built; see README.md for what this crate owns).
#![deny(missing_docs, unsafe_code)]
