//! smdebug-rules: the rule engine (being built).
//!
//! ```
//! // (being built)
//! ```
#![deny(missing_docs, unsafe_code)]
