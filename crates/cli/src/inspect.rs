//! `smdebug inspect`: a human summary of a trial — steps, modes, workers, collections and
//! tensors with their dtypes, shapes and sizes. Several trials, or a prefix holding several,
//! give one section per trial after a `== trial NAME ==` header (`crate::fleet`).
use crate::fleet::Target;
use anyhow::{Context, Result};
use smdebug_diagnose::step_runs;
use smdebug_trial::{Mode, Trial, TrialOptions};
use std::io::Write;
use std::time::Duration;

/// Options of `smdebug inspect`.
#[derive(clap::Args)]
pub struct Args {
    /// The trial: a local directory, `s3://bucket/prefix` or `memory://name/prefix`.
    /// Several, or a prefix holding several trials, make a fleet.
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
    /// Give up waiting for the collections files after this many seconds (0: no limit).
    #[arg(long, default_value_t = 60)]
    timeout: u64,
    #[command(flatten)]
    steps: crate::steps::StepArgs,
    #[command(flatten)]
    fleet: crate::fleet::FleetArgs,
}

fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

/// Runs the command, writing the summary of each trial to `out`.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    match crate::fleet::target(&args.paths)? {
        Target::One(path) => one(args, &path, out),
        Target::Fleet(trials) => {
            crate::fleet::sections(&trials, &args.fleet, false, out, |t, section| {
                one(args, &t.location, section).map(|()| false)
            })?;
            Ok(())
        }
    }
}

/// The summary of the trial at `path`.
fn one(args: &Args, path: &str, out: &mut dyn Write) -> Result<()> {
    let options = args.steps.apply(TrialOptions {
        collections_timeout: (args.timeout > 0).then(|| Duration::from_secs(args.timeout)),
        ..TrialOptions::default()
    });
    let trial = Trial::open(path, options).with_context(|| format!("cannot open trial {path}"))?;
    let names = trial.tensor_names()?;
    let all = trial.steps(Mode::Global, true)?;
    let complete = trial.steps(Mode::Global, false)?;
    writeln!(out, "trial      {} ({})", trial.name(), trial.path())?;
    writeln!(
        out,
        "ended      {}",
        // A trial that loaded every step saw the end marker (no second request for it).
        if trial.loaded_all_steps() || trial.has_training_ended()? {
            "yes"
        } else {
            "no (still being written?)"
        }
    )?;
    writeln!(
        out,
        "workers    {} of {}: {}",
        trial.workers()?.len(),
        trial.num_workers(),
        trial.workers()?.join(", ")
    )?;
    writeln!(
        out,
        "steps      {} ({} complete): {}",
        all.len(),
        complete.len(),
        step_runs(&all, usize::MAX)
    )?;
    for m in trial.modes() {
        let s = trial.steps(m, true)?;
        writeln!(
            out,
            "  {:<8} {} mode steps: {}",
            m.name(),
            s.len(),
            step_runs(&s, usize::MAX)
        )?;
    }
    writeln!(out, "last complete step {}", trial.last_complete_step())?;
    let colls = trial.collections();
    writeln!(out, "collections {}:", colls.len())?;
    for (name, c) in &colls {
        let n = trial
            .tensor_names_filtered(&smdebug_trial::TensorFilter {
                collection: Some(name.clone()),
                ..Default::default()
            })
            .map(|v| v.len())
            .unwrap_or(0);
        writeln!(
            out,
            "  {name:<24} {n} tensors saved, regex {:?}",
            c.include_regex()
        )?;
    }
    writeln!(out, "tensors {}:", names.len())?;
    writeln!(
        out,
        "  {:<40} {:>6} {:>10} {:<16} {:>10}",
        "name", "steps", "dtype", "shape (last)", "size"
    )?;
    let mut total: u64 = 0;
    for name in &names {
        let t = trial.tensor(name)?;
        let steps = t.steps(Mode::Global, true)?;
        let (dtype, shape, bytes) = match steps.last() {
            Some(&s) => match t.value(s, Mode::Global, None) {
                Ok(v) => (
                    v.dtype().name().to_owned(),
                    format!("{:?}", v.shape()),
                    (v.len() * v.dtype().item_size().unwrap_or(0)) as u64,
                ),
                Err(_) => match t.shape(s, Mode::Global, None) {
                    Ok(sh) => ("(shape)".into(), format!("{sh:?}"), 0),
                    Err(_) => ("(reductions)".into(), "-".into(), 0),
                },
            },
            None => ("-".into(), "-".into(), 0),
        };
        // Every worker's values count, not one worker's: the size of the last value
        // times the number of (step, worker) values saved.
        total += bytes * t.value_count() as u64;
        writeln!(
            out,
            "  {:<40} {:>6} {:>10} {:<16} {:>10}",
            name,
            steps.len(),
            dtype,
            shape,
            human(bytes)
        )?;
    }
    writeln!(out, "raw values: about {}", human(total))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
    use smdebug_trial::storage::{BlockingStore, Location};
    use smdebug_trial::TensorValue;

    #[test]
    fn step_ranges_and_sizes() {
        assert_eq!(human(512), "512 B");
        assert_eq!(human(3 << 20), "3.0 MiB");
    }

    #[test]
    fn summarises_a_trial() {
        let url = "memory://cli-inspect-test/run";
        let store = BlockingStore::open(&Location::parse(url).unwrap()).unwrap();
        write_collections(&store, "worker_0", 1).unwrap();
        for step in 0..3 {
            let v = TensorValue::Float32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[4, 4])));
            write_step(
                &store,
                &StepWrite::new(step, "worker_0", Mode::Train, &[("fc.weight", v)]),
            )
            .unwrap();
        }
        write_end_marker(&store).unwrap();
        let mut out = Vec::new();
        let args = Args {
            paths: vec![url.into()],
            timeout: 1,
            steps: Default::default(),
            fleet: Default::default(),
        };
        run(&args, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("steps      3 (3 complete): 0-2"), "{text}");
        assert!(text.contains("fc.weight"), "{text}");
        assert!(text.contains("[4, 4]"), "{text}");
        // 3 values of 16 floats.
        assert!(text.contains("raw values: about 192 B"), "{text}");
    }

    #[test]
    fn raw_values_count_every_workers_values_and_steps_select_what_is_loaded() {
        let url = "memory://cli-inspect-test/workers";
        let store = BlockingStore::open(&Location::parse(url).unwrap()).unwrap();
        let workers = ["worker_0", "worker_1", "worker_2", "worker_3"];
        for w in workers {
            write_collections(&store, w, 4).unwrap();
        }
        for step in 0..5 {
            for w in workers {
                let v = TensorValue::Float32(ndarray::ArrayD::zeros(ndarray::IxDyn(&[8])));
                write_step(&store, &StepWrite::new(step, w, Mode::Train, &[("x", v)])).unwrap();
            }
        }
        write_end_marker(&store).unwrap();
        let run_with = |steps: crate::steps::StepArgs| {
            let mut out = Vec::new();
            let args = Args {
                paths: vec![url.into()],
                timeout: 1,
                steps,
                fleet: Default::default(),
            };
            run(&args, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let text = run_with(Default::default());
        // 5 steps × 4 workers × 8 floats × 4 bytes.
        assert!(text.contains("raw values: about 640 B"), "{text}");
        let text = run_with(crate::steps::StepArgs {
            steps: Some("1:3".parse().unwrap()),
            last: None,
        });
        assert!(text.contains("steps      2 (2 complete): 1-2"), "{text}");
        assert!(text.contains("raw values: about 256 B"), "{text}");
        let text = run_with(crate::steps::StepArgs {
            steps: None,
            last: Some(1),
        });
        assert!(text.contains("steps      1 (1 complete): 4"), "{text}");
    }
}
