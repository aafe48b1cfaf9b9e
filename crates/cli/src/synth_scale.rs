//! `smdebug synth-scale OUT --workers W --steps S --tensors T`: a large many-worker trial,
//! written fast, for the scaling benchmarks (`cargo xtask bench --scale`,
//! docs/src/scale.md): W workers each save S TRAIN steps of T small tensors (4 floats), as
//! smdebug lays them out — one events file and one index file per (step, worker) — so the
//! trial has W × S × T index entries in W × S index files.
use anyhow::{Context, Result};
use smdebug_synth::steps::{write_collections, write_end_marker, write_step, StepWrite};
use smdebug_trial::storage::{BlockingStore, LocalSync, Location, StorageOptions};
use smdebug_trial::{Mode, TensorValue};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Options of `smdebug synth-scale`.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write the trial: a local directory or an object-store URL.
    out: String,
    /// Workers (`worker_0` …).
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// TRAIN steps each worker saves (0 … S−1).
    #[arg(long, default_value_t = 100)]
    steps: i64,
    /// Tensors saved at every step (`layer_K/weight:0`, 4 floats each).
    #[arg(long, default_value_t = 10)]
    tensors: usize,
    /// Writer threads (0: two per core; object stores gain from more).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Print nothing.
    #[arg(short, long)]
    quiet: bool,
}

/// The value of tensor `k` at `step` for `worker`: distinct per (tensor, step, worker).
pub fn value(step: i64, worker: usize, k: usize) -> TensorValue {
    let base = (step as f32) + (worker as f32) * 0.25 + (k as f32) * 0.0625;
    TensorValue::from(ndarray::arr1(&[base, -base, base * 2.0, 1.0]).into_dyn())
}

/// Writes the trial and prints what was written.
pub fn run(args: &Args, out: &mut dyn Write) -> Result<()> {
    let started = Instant::now();
    let location = Location::parse(&args.out)?;
    // The writer of a benchmark fixture needs no fsync: the trial is rewritten if lost.
    let options = StorageOptions {
        local_sync: LocalSync::RenameOnly,
        ..StorageOptions::default()
    };
    let store = BlockingStore::open_with(&location, &options)
        .with_context(|| format!("opening {}", args.out))?;
    let names: Vec<String> = (0..args.tensors)
        .map(|k| format!("layer_{k}/weight:0"))
        .collect();
    let workers: Vec<String> = (0..args.workers).map(|w| format!("worker_{w}")).collect();
    for w in &workers {
        write_collections(&store, w, args.workers as i64)?;
    }
    let threads = match args.threads {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
        n => n,
    };
    let next = AtomicUsize::new(0);
    let total = usize::try_from(args.steps.max(0))? * args.workers;
    std::thread::scope(|scope| -> Result<()> {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    loop {
                        // Step-major order: steps complete one after the other, as in a job.
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return Ok(());
                        }
                        let (step, w) = ((i / args.workers) as i64, i % args.workers);
                        let tensors: Vec<(&str, TensorValue)> = names
                            .iter()
                            .enumerate()
                            .map(|(k, n)| (n.as_str(), value(step, w, k)))
                            .collect();
                        write_step(
                            &store,
                            &StepWrite::new(step, &workers[w], Mode::Train, &tensors),
                        )?;
                    }
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| anyhow::anyhow!("a writer thread panicked"))??;
        }
        Ok(())
    })?;
    write_end_marker(&store)?;
    if !args.quiet {
        writeln!(
            out,
            "wrote {} index entries ({} workers x {} steps x {} tensors) to {} in {:.1?}",
            total * args.tensors,
            args.workers,
            args.steps,
            args.tensors,
            args.out,
            started.elapsed()
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_worker_step_and_tensor() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let args = Args {
            out: path.to_str().unwrap().into(),
            workers: 3,
            steps: 4,
            tensors: 2,
            threads: 3,
            quiet: true,
        };
        run(&args, &mut Vec::new()).unwrap();
        let trial = smdebug_trial::create_trial(path.to_str().unwrap()).unwrap();
        assert_eq!(trial.workers().unwrap().len(), 3);
        assert_eq!(trial.steps(Mode::Global, false).unwrap(), [0, 1, 2, 3]);
        let t = trial.tensor("layer_1/weight:0").unwrap();
        assert_eq!(t.value_count(), 12);
        assert_eq!(
            *t.value(2, Mode::Global, Some("worker_2")).unwrap(),
            value(2, 2, 1)
        );
    }
}
