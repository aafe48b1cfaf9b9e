//! smdebug-hook: The smdebug writer hook: decides what to save when and writes trials byte-compatible with smdebug, off the training thread.
//!
//! ```
//! // (being built)
//! ```
#![deny(missing_docs, unsafe_code)]
