//! The fuzz targets of smdebug-rs, one module per parser of untrusted bytes. Each `run`
//! takes one input and must return normally: an error is a normal outcome, a panic (a
//! failed assertion included) is a bug.
//!
//! Two drivers call them: libFuzzer through the binaries of `fuzz_targets/` (`cargo xtask
//! fuzz <target>`, feature `libfuzzer`), and this crate's test `replay`, which runs every
//! committed seed, every input of a local corpus and proptest's mutations of the seeds
//! through each target as part of `cargo test --workspace`.
#![deny(missing_docs)]

pub mod config_collections_json;
pub mod config_hook_json;
pub mod index_json;
pub mod record_event;
pub mod record_framing;
pub mod storage_location;
pub mod trial_open;

/// A target's entry point: one input.
pub type Run = fn(&[u8]);

/// Every target: its name (the folder of its seeds and corpus) and its `run`.
pub const TARGETS: [(&str, Run); 7] = [
    ("config_collections_json", config_collections_json::run),
    ("config_hook_json", config_hook_json::run),
    ("index_json", index_json::run),
    ("record_event", record_event::run),
    ("record_framing", record_framing::run),
    ("storage_location", storage_location::run),
    ("trial_open", trial_open::run),
];
