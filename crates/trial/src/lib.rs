//! smdebug-trial: The smdebug trial reader: the Trial and Tensor API over local and object-store trials, live while the job writes.
//!
//! ```
//! // (being built)
//! ```
#![deny(missing_docs, unsafe_code)]
