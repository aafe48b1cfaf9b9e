//! `smdebug roundtrip`: a trial written through the hook and read back record by record
//! through the low-level crates (index files, framing, CRCs, tensor codec, reductions).
use anyhow::{bail, ensure, Context, Result};
use ndarray::{ArrayD, IxDyn};
use smdebug_config::{Framework, Mode, SaveConfig, SaveConfigMode};
use smdebug_hook::{HookBuilder, WallTime};
use smdebug_index::{classify_key, IndexFile, TrialFile, END_OF_JOB_FILE};
use smdebug_record::{decode_record_at, decode_tensor_event, TensorValue};
use smdebug_reduce::{Flavor, ReductionRequest, TensorView};
use smdebug_storage::{BlockingStore, Location};
use smdebug_trial::ErrorKind;
use std::io::Write;
use std::sync::Arc;

/// Options of `smdebug roundtrip`.
#[derive(clap::Args)]
pub struct Args {
    /// Where to write the trial: a local directory or `s3://bucket/prefix`. Default: a new
    /// folder under the system's temporary directory.
    #[arg(long)]
    out: Option<String>,
    /// Number of TRAIN steps to write.
    #[arg(long, default_value_t = 5)]
    steps: i64,
    /// The worker name in file names.
    #[arg(long, default_value = "worker_0")]
    worker: String,
}

/// The tensors of one step: a small two-layer model's weights, biases, gradients and loss,
/// with values that change with the step so the read-back is checkable.
fn tensors_for_step(step: i64) -> Vec<(&'static str, TensorValue)> {
    let s = step as f32;
    let grid = |rows: usize, cols: usize, scale: f32| {
        ArrayD::from_shape_fn(IxDyn(&[rows, cols]), |ix| {
            scale * ((ix[0] * cols + ix[1]) as f32 - 2.0) / (1.0 + s)
        })
    };
    vec![
        ("fc1.weight", TensorValue::from(grid(4, 3, 0.5))),
        (
            "fc1.bias",
            TensorValue::from(ArrayD::from_elem(IxDyn(&[4]), 0.1 * s)),
        ),
        ("gradient/fc1.weight", TensorValue::from(grid(4, 3, 0.01))),
        (
            "loss_output_0",
            TensorValue::from(ndarray::arr0(1.0f32 / (1.0 + s)).into_dyn()),
        ),
    ]
}

pub fn run(args: &Args, out: &mut impl Write) -> Result<()> {
    let target = match &args.out {
        Some(o) => o.clone(),
        None => std::env::temp_dir()
            .join(format!("smdebug-roundtrip-{}", std::process::id()))
            .to_string_lossy()
            .into_owned(),
    };
    let location =
        Location::parse(&target).with_context(|| format!("trial location {target:?}"))?;
    let store = BlockingStore::open(&location)?;
    if store.exists(END_OF_JOB_FILE)? {
        bail!("{target} already holds a finished trial ({END_OF_JOB_FILE} exists); choose another --out");
    }
    ensure!(args.steps >= 0, "--steps must not be negative");

    write_trial(&target, args)?;
    writeln!(out, "wrote {} steps to {target}", args.steps)?;
    read_trial(&store, out)
}

/// Writes the trial through the hook, the writer a training job uses: PyTorch's default
/// collections with weights, biases, gradients and losses included, every step saved.
fn write_trial(target: &str, args: &Args) -> Result<()> {
    let mut hook = HookBuilder::new(target)
        .framework(Framework::PyTorch)
        .worker(args.worker.clone(), 1)
        .include_collections(["weights", "biases", "gradients", "losses"])
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .wall_time(WallTime::PerStep(Arc::new(|step| 1.7e9 + step as f64)))
        .build()?;
    hook.set_mode(Mode::Train);
    for step in 0..args.steps {
        hook.step()?;
        for (name, tensor) in tensors_for_step(step) {
            // Only tensors in a saved collection are written.
            if hook.should_save(name)? {
                hook.save(name, tensor)?;
            }
        }
    }
    hook.close()?;
    Ok(())
}

fn read_trial(store: &BlockingStore, out: &mut impl Write) -> Result<()> {
    let requests: Vec<ReductionRequest> = ["min", "max", "mean", "l2"]
        .iter()
        .map(|r| r.parse())
        .collect::<Result<_, _>>()?;
    writeln!(
        out,
        "{:>4}  {:<6} {:<22} {:<8} {:<8} {:>10} {:>10} {:>10} {:>10}",
        "step", "mode", "tensor", "dtype", "shape", "min", "max", "mean", "l2"
    )?;
    let mut seen = 0usize;
    for obj in store.list("index/", None)? {
        let TrialFile::Index(_) = classify_key(&obj.key)? else {
            continue;
        };
        let index = IndexFile::parse(&obj.key, &store.get(&obj.key)?)?;
        let Some(event_key) = index.meta.event_file_key()? else {
            continue;
        };
        let ranges: Vec<_> = index
            .tensors
            .iter()
            .map(|t| t.start_idx..t.start_idx + t.length)
            .collect();
        let records = store.get_ranges(event_key, &ranges)?;
        for (entry, bytes) in index.tensors.iter().zip(records) {
            let record =
                decode_record_at(&bytes, 0, entry.length).map_err(|e| e.with_file(event_key))?;
            if let Some(crc) = entry.payload_crc32c {
                record
                    .verify_payload_crc32c(crc)
                    .map_err(|e| e.with_file(event_key))?;
            }
            let event = decode_tensor_event(record.payload)?;
            ensure!(
                event.tag == entry.name,
                "{event_key}: index names {} but the record holds {}",
                entry.name,
                event.tag
            );
            let view = tensor_view(&event.tensor)?;
            let stats: Vec<String> = view
                .reduce(&requests, Flavor::PyTorch)
                .into_iter()
                .map(|r| {
                    r.map(|s| format!("{:.4}", s.to_f64()))
                        .unwrap_or_else(|e| ErrorKind::from(&e).as_str().to_owned())
                })
                .collect();
            writeln!(
                out,
                "{:>4}  {:<6} {:<22} {:<8} {:<8} {:>10} {:>10} {:>10} {:>10}",
                event.step,
                index.meta.mode.name(),
                event.tag,
                event.tensor.dtype().name(),
                format!("{:?}", event.tensor.shape()),
                stats[0],
                stats[1],
                stats[2],
                stats[3]
            )?;
            seen += 1;
        }
    }
    writeln!(
        out,
        "read back {seen} tensors; every record's length and payload CRC verified"
    )?;
    Ok(())
}

fn tensor_view(t: &TensorValue) -> Result<TensorView<'_>> {
    Ok(match t {
        TensorValue::Float32(a) => a.view().into(),
        TensorValue::Float64(a) => a.view().into(),
        other => bail!(
            "roundtrip writes only float tensors, read {}",
            other.dtype().name()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_back_every_saved_tensor() {
        let dir = tempfile::tempdir().unwrap();
        let trial = dir.path().join("t");
        let args = Args {
            out: Some(trial.to_string_lossy().into_owned()),
            steps: 3,
            worker: "worker_0".into(),
        };
        let mut text = Vec::new();
        run(&args, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        // PyTorch defaults save weights, biases, gradients and losses: 4 tensors × 3 steps.
        assert!(text.contains("read back 12 tensors"), "{text}");
        assert!(trial
            .join("index/000000000/000000000002_worker_0.json")
            .exists());
        assert!(trial.join("training_job_end.ts").exists());
        // A second run into the finished trial is refused, as smdebug's hook refuses.
        let err = run(&args, &mut Vec::new()).unwrap_err();
        assert!(
            err.to_string().contains("already holds a finished trial"),
            "{err}"
        );
    }
}
