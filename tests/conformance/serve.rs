//! `smdebug serve` in a real browser: headless Chromium (Debian's, `SMDEBUG_CHROMIUM`),
//! driven by Playwright from the tools venv (`SMDEBUG_TOOLS_PYTHON`,
//! `tests/peer/serve_browser.py`), over a fleet of a finished run and a job the test writes
//! step by step while the pages are open. The runs page must list both; the run page's
//! loss chart and gradient norms must gain points without a reload; the job's
//! VanishingGradient firing must appear on the step axis; the compare view must overlay
//! both runs; no request may leave the server. Screenshots go to
//! `target/browser/serve-*.png` (docs/src/serve.md shows them).

use ndarray::arr1;
use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_conformance::{peer_dir, smdebug_bin};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
use smdebug_trial::TensorValue;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn env_path(name: &str) -> PathBuf {
    std::env::var_os(name)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{name} is not set: run the suite with `cargo xtask test`"))
}

/// A job's trial: a loss and a gradient that vanishes from step 5.
fn start_job(out: &Path) -> BlockingStore {
    std::fs::create_dir_all(out).unwrap();
    let store = BlockingStore::open(&Location::Local(out.to_owned())).unwrap();
    let mut cm = CollectionManager::new();
    let mut grads = Collection::new("gradients");
    grads.include("^gradient/").unwrap();
    cm.add(grads);
    let mut losses = Collection::new("losses");
    losses.include("loss").unwrap();
    cm.add(losses);
    cm.set_num_workers(1);
    store
        .put(
            &smdebug_index::collections_file_key("worker_0").unwrap(),
            smdebug_storage::Bytes::from(cm.to_json().into_bytes()),
        )
        .unwrap();
    store
}

fn job_step(store: &BlockingStore, step: i64, scale: f32) {
    let m: f32 = if step >= 5 { 1e-9 } else { 1e-2 };
    let loss = scale / (step as f32 + 1.0) + 0.05 * ((step as f32) * 0.7).sin().abs();
    let tensors = [
        ("loss", TensorValue::from(arr1(&[loss]).into_dyn())),
        (
            "gradient/w",
            TensorValue::from(arr1(&[m, -m, m, -m]).into_dyn()),
        ),
    ];
    write_step(
        store,
        &StepWrite::new(step, "worker_0", Mode::Train, &tensors),
    )
    .unwrap();
}

struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_pages_in_chromium_follow_a_live_job() {
    let chromium = env_path("SMDEBUG_CHROMIUM");
    let python = env_path("SMDEBUG_TOOLS_PYTHON");
    let dir = tempfile::tempdir().unwrap();
    let done = start_job(&dir.path().join("team/finished"));
    for step in 0..30 {
        job_step(&done, step, 2.0);
    }
    write_end_marker(&done).unwrap();
    let live = start_job(&dir.path().join("team/live"));
    for step in 0..3 {
        job_step(&live, step, 1.0);
    }

    let mut child = Command::new(smdebug_bin())
        .args(["serve", dir.path().to_str().unwrap()])
        .args(["--port", "0", "--poll", "0.1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let served = Served(child);
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));

    // The job goes on writing while the pages are open.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut step = 3;
            while !stop.load(Ordering::Relaxed) && step < 200 {
                std::thread::sleep(Duration::from_millis(300));
                job_step(&live, step, 1.0);
                step += 1;
            }
        })
    };
    let shots = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&shots).unwrap();
    let o = Command::new(python)
        .arg(peer_dir().join("serve_browser.py"))
        .arg(&chromium)
        .arg(url.trim())
        .args(["team/live", "team/finished"])
        .arg(&shots)
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    drop(served);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "serve_browser.py failed\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let seen: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    println!("serve in chromium: {seen}");
    let points = seen["loss_points"].as_array().unwrap();
    assert!(points[1].as_i64() > points[0].as_i64(), "{seen}");
    for name in ["serve-runs", "serve-run", "serve-compare"] {
        let png = shots.join(format!("{name}.png"));
        let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 10_000,
            "{} is missing or blank ({size} bytes)",
            png.display()
        );
    }
}
