//! The writer hook's tests, one binary (`sagemaker.rs` is a second one: it sets process-wide
//! environment variables that would change the other tests' hooks).

mod due;
mod forced;
mod hook;
mod proptests;
mod recorder;
