//! Configuration types of smdebug: [`Mode`], and (to come) `SaveConfig`, `ReductionConfig`,
//! collections and the SageMaker hook JSON configuration.
//!
//! ```
//! use smdebug_config::Mode;
//! assert_eq!(Mode::Train.as_int(), 1);
//! assert_eq!("eval".parse::<Mode>().unwrap(), Mode::Eval);
//! ```
#![deny(missing_docs, unsafe_code)]

mod mode;

pub use mode::{Mode, ParseModeError};
