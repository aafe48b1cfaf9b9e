//! `smdebug synth RECIPE.json OUT`: writes the trial a fixture recipe describes with the Rust
//! hook, so that the trial the Python writer makes from the same recipe
//! (`tests/peer/fixture.py`) can be compared with it, file by file and through smdebug's
//! reader. The recipe model and the writer are `smdebug-synth`'s.

use anyhow::Result;
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::path::PathBuf;

/// Options of `smdebug synth`.
#[derive(clap::Args)]
pub struct Args {
    /// The recipe (JSON, the format of tests/peer/fixture.py).
    recipe: PathBuf,
    /// Where to write the trial: a local directory or an `s3://` URL.
    out: String,
    /// Write only the worker with this index (one process per worker, e.g. for concurrent
    /// writers); default: every worker, one after the other.
    #[arg(long)]
    only_worker: Option<usize>,
    /// Print nothing.
    #[arg(short, long)]
    quiet: bool,
    /// When `training_job_end.ts` is written (if the recipe ends training): `recipe` — by
    /// the last worker, at its close; `never`; `only` — write nothing but the marker. Worker
    /// processes of one trial use `never`, and `only` once all of them have finished: a hook
    /// refuses a finished trial, so a worker that starts late must not find the marker.
    #[arg(long, value_enum, default_value_t = EndMarker::Recipe)]
    end_marker: EndMarker,
}

/// See [`Args::end_marker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EndMarker {
    /// Written by the recipe's last worker when it closes.
    Recipe,
    /// Not written.
    Never,
    /// Only the marker is written, no worker data.
    Only,
}

impl From<EndMarker> for smdebug_synth::EndMarker {
    fn from(m: EndMarker) -> Self {
        match m {
            EndMarker::Recipe => smdebug_synth::EndMarker::Recipe,
            EndMarker::Never => smdebug_synth::EndMarker::Never,
            EndMarker::Only => smdebug_synth::EndMarker::Only,
        }
    }
}

pub fn run(args: &Args, out: &mut impl std::io::Write) -> Result<()> {
    let recipe = Recipe::load(&args.recipe)?;
    let options = WriteOptions {
        only_worker: args.only_worker,
        end_marker: args.end_marker.into(),
    };
    let records = write_trial(&recipe, &args.out, options)?;
    if !args.quiet {
        if args.end_marker == EndMarker::Only {
            writeln!(out, "ended {}", args.out)?;
        } else {
            writeln!(out, "wrote {}: {records} tensor records", args.out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_small_trial_and_refuses_to_overwrite_it() {
        let dir = tempfile::tempdir().unwrap();
        let recipe = dir.path().join("r.json");
        std::fs::write(
            &recipe,
            r#"{"seed": 3, "schedule": [{"mode": "TRAIN", "steps": 2}],
                "collections": [{"name": "all", "include_regex": [".*"]}],
                "tensors": [{"name": "a", "shape": [2]}, {"name": "e", "shape": [0], "write_empty_raw": true}]}"#,
        )
        .unwrap();
        let out = dir.path().join("t");
        let args = Args {
            recipe: recipe.clone(),
            out: out.to_str().unwrap().into(),
            only_worker: None,
            quiet: false,
            end_marker: EndMarker::Recipe,
        };
        let mut text = Vec::new();
        run(&args, &mut text).unwrap();
        assert!(String::from_utf8(text)
            .unwrap()
            .contains("4 tensor records"));
        assert!(out
            .join("events/000000000001/000000000001_worker_0.tfevents")
            .exists());
        assert!(out
            .join("collections/000000000/worker_0_collections.json")
            .exists());
        assert!(run(&args, &mut Vec::new()).is_err());
        assert!(out.join("training_job_end.ts").exists());

        // Worker processes of one trial: no marker until `only` ends it.
        let other = dir.path().join("u");
        let with = |end_marker| Args {
            recipe: recipe.clone(),
            out: other.to_str().unwrap().into(),
            only_worker: Some(0),
            quiet: true,
            end_marker,
        };
        run(&with(EndMarker::Never), &mut Vec::new()).unwrap();
        assert!(!other.join("training_job_end.ts").exists());
        run(&with(EndMarker::Only), &mut Vec::new()).unwrap();
        assert!(other.join("training_job_end.ts").exists());
    }
}
