//! smdebug-rs: a Rust implementation of Amazon SageMaker Debugger.
//!
//! This crate only re-exports the layered `smdebug-*` crates under short names, so a user
//! who wants everything depends on one crate, and a user who wants one piece depends on that
//! piece alone.
//!
//! ```
//! use smdebug::config::Mode;
//! use smdebug::exceptions::AnalysisError;
//!
//! let e = AnalysisError::StepUnavailable { step: 3, mode: Mode::Train };
//! assert_eq!(e.python_name(), "StepUnavailable");
//! ```
#![deny(missing_docs, unsafe_code)]

pub use smdebug_config as config;
pub use smdebug_exceptions as exceptions;
pub use smdebug_index as index;
pub use smdebug_record as record;
pub use smdebug_reduce as reduce;
pub use smdebug_storage as storage;
