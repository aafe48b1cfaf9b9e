//! The manifest of a fixture: every tensor record `tests/peer/fixture.py --manifest` wrote,
//! in write order. The values themselves are recomputed with the one recipe model,
//! `smdebug_synth::Recipe`.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// One tensor record a fixture wrote, as listed by `fixture.py --manifest` (write order).
#[derive(Debug, Clone, Deserialize)]
pub struct ManifestRecord {
    /// Event file, relative to the trial directory.
    pub file: String,
    /// Worker name.
    pub worker: String,
    /// Worker index in the recipe.
    pub worker_index: usize,
    /// Global step.
    pub step: i64,
    /// Mode name (`TRAIN`, `EVAL`, `PREDICT`, `GLOBAL`).
    pub mode: String,
    /// Mode step.
    pub mode_step: i64,
    /// The record's tag (tensor name, or the reduction's name).
    pub tag: String,
    /// `raw`, `duplicate` or `reduction`.
    pub kind: String,
    /// Index of the recipe tensor this record comes from.
    pub tensor_index: usize,
    /// For reductions: `[name, abs]`.
    #[serde(default)]
    pub reduction: Option<(String, bool)>,
    /// numpy dtype name or `str`.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// sha256 of the canonical element bytes.
    pub sha256: String,
    /// Flat values when at most 64 elements.
    #[serde(default)]
    pub data: Option<Vec<Value>>,
}

/// Writes the trial of a preset with `tests/peer/fixture.py --manifest` into `out` and
/// returns the manifest (every tensor record written, in write order).
pub fn write_fixture_with_manifest(preset: &str, out: &Path) -> Vec<ManifestRecord> {
    let manifest = out.with_extension("manifest.json");
    let out_s = out.to_str().expect("utf-8 temp path");
    let manifest_s = manifest.to_str().expect("utf-8 temp path");
    crate::run_peer(
        "fixture.py",
        &[
            out_s,
            "--preset",
            preset,
            "--force",
            "-q",
            "--manifest",
            manifest_s,
        ],
    );
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("cannot read manifest {}: {e}", manifest.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("bad manifest {}: {e}", manifest.display()))
}
