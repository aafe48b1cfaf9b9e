//! smdebug-burn (being built).
//!
//! ```
//! // (being built)
//! ```
#![deny(missing_docs, unsafe_code)]
