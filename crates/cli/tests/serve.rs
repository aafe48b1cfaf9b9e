//! `smdebug serve`: the built binary started on a free port over fleets written for the
//! test, its API read with an HTTP client: it lists a fleet, a run's curve gains points
//! while a writer appends steps (over the event stream, within a second of the step's
//! index file), a token is required off loopback, paths and foreign hosts are refused, and
//! a hostile trial shows its error while the server keeps serving.

use ndarray::arr1;
use serde_json::Value;
use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_storage::{BlockingStore, Location};
use smdebug_synth::steps::{write_end_marker, write_step, StepWrite};
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use smdebug_trial::TensorValue;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A `smdebug serve` process, killed when dropped.
struct Served {
    child: Child,
    url: String,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `smdebug serve ARGS --port 0` and reads the URL it prints.
fn serve(args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_smdebug"))
        .arg("serve")
        .args(args)
        .args(["--port", "0", "--poll", "0.1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(url.starts_with("http://"), "first line: {url:?}");
    // Keep reading (and dropping) what it prints, so it never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let port = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    Served {
        child,
        base: format!("http://127.0.0.1:{port}"),
        url,
    }
}

fn client() -> reqwest::blocking::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

fn get(url: &str) -> (u16, String) {
    let r = client().get(url).send().unwrap();
    let status = r.status().as_u16();
    (status, r.text().unwrap())
}

fn get_json(url: &str) -> Value {
    let (status, body) = get(url);
    assert_eq!(status, 200, "{url}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// Polls `f` until it gives `Some`, at most `limit`.
fn eventually<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn runs(base: &str) -> Vec<Value> {
    get_json(&format!("{base}/api/runs"))["runs"]
        .as_array()
        .unwrap()
        .clone()
}

fn run_named(base: &str, name: &str) -> Option<Value> {
    runs(base).into_iter().find(|r| r["name"] == name)
}

/// Peer presets under `root/team/NAME`.
fn fleet(root: &Path, names: &[&str]) {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    for name in names {
        let recipe = Recipe::load(&presets.join(format!("{name}.json"))).unwrap();
        let out = root.join("team").join(name);
        write_trial(&recipe, out.to_str().unwrap(), WriteOptions::default()).unwrap();
    }
}

/// A job's trial with a loss and a gradient that vanishes from step 5: its collections
/// file now, its steps with [`job_step`].
pub(crate) fn start_job(out: &Path) -> BlockingStore {
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

pub(crate) fn job_step(store: &BlockingStore, step: i64) {
    let m: f32 = if step >= 5 { 1e-9 } else { 1e-2 };
    let tensors = [
        (
            "loss",
            TensorValue::from(arr1(&[1.0f32 / (step as f32 + 1.0)]).into_dyn()),
        ),
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

/// The events of an SSE stream, `(event, data)`, on a channel.
fn events(url: &str) -> mpsc::Receiver<(String, Value)> {
    let (tx, rx) = mpsc::channel();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::blocking::Client::builder()
        .timeout(None)
        .build()
        .unwrap()
        .get(url)
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{content_type}"
    );
    std::thread::spawn(move || {
        let mut event = String::new();
        for line in BufReader::new(response).lines() {
            let Ok(line) = line else { return };
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_owned();
            } else if let Some(d) = line.strip_prefix("data: ") {
                let v = serde_json::from_str(d).unwrap_or(Value::Null);
                if tx.send((event.clone(), v)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

#[test]
fn serve_lists_a_fleet_with_status_modes_workers_and_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), &["small", "modes", "workers"]);
    let s = serve(&[dir.path().to_str().unwrap()]);
    assert!(s.url.starts_with("http://127.0.0.1:"), "{}", s.url);
    assert!(!s.url.contains("token"), "no token on loopback: {}", s.url);
    let listed = eventually(Duration::from_secs(30), "three ended runs", || {
        let r = runs(&s.base);
        (r.len() == 3 && r.iter().all(|r| r["status"] == "ended")).then_some(r)
    });
    let names: Vec<&str> = listed.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["team/modes", "team/small", "team/workers"]);
    let modes = &listed[0];
    assert_eq!(modes["folder"], "team");
    let m: Vec<&str> = modes["modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(m.contains(&"TRAIN") && m.contains(&"EVAL"), "{m:?}");
    assert!(listed[2]["workers"].as_u64().unwrap() > 1, "{}", listed[2]);
    for r in &listed {
        let id = r["id"].as_str().unwrap();
        assert_eq!(id.len(), 16);
        assert!(!id.contains('/'));
        assert!(r["last_step"].as_i64().unwrap() >= 0, "{r}");
        assert!(r["rules"]
            .as_object()
            .unwrap()
            .contains_key("VanishingGradient"));
    }
    // The run page's data: curves per mode, thinned to the width asked for.
    let id = modes["id"].as_str().unwrap();
    let detail = get_json(&format!("{}/api/runs/{id}?width=50", s.base));
    assert!(detail.get("error").is_none(), "{detail}");
    let scalars = detail["data"]["scalars"].as_array().unwrap();
    assert!(!scalars.is_empty());
    let labels: Vec<&str> = scalars[0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert!(
        labels.contains(&"TRAIN") && labels.contains(&"EVAL"),
        "{labels:?}"
    );
    // A histogram counted on the server.
    let tensors = get_json(&format!("{}/api/runs/{id}/tensors", s.base));
    let t = tensors["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "fc.weight")
        .unwrap()
        .clone();
    let step = t["steps"][0].as_i64().unwrap();
    let h = get_json(&format!(
        "{}/api/runs/{id}/histogram?tensor=fc.weight&step={step}&bins=7",
        s.base
    ));
    let counts = h["histogram"]["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 7);
    assert!(counts.iter().map(|c| c.as_u64().unwrap()).sum::<u64>() > 0);
    // Health, compare, and the page with its assets, nothing from elsewhere.
    let health = get_json(&format!("{}/api/runs/{id}/health", s.base));
    assert!(
        health["health"]["records_read"].as_u64().unwrap() > 0,
        "{health}"
    );
    let other = listed[1]["id"].as_str().unwrap();
    let title = scalars[0]["title"].as_str().unwrap();
    let cmp = get_json(&format!(
        "{}/api/compare?runs={id},{other}&chart={title}",
        s.base
    ));
    assert_eq!(cmp["runs"].as_array().unwrap().len(), 2);
    assert!(
        cmp["runs"][0]["chart"]["series"].as_array().is_some(),
        "{cmp}"
    );
    // A job that starts while the server runs appears, and the runs page's stream says so.
    let stream = events(&format!("{}/api/events", s.base));
    fleet(dir.path(), &["sparse"]);
    let added = eventually(Duration::from_secs(30), "the new run listed", || {
        run_named(&s.base, "team/sparse")
    });
    let announced = loop {
        let (event, data) = stream
            .recv_timeout(Duration::from_secs(10))
            .expect("a run event");
        if event == "run" && data["run"]["name"] == "team/sparse" {
            break data;
        }
    };
    assert_eq!(announced["run"]["id"], added["id"]);
    let (status, page) = get(&format!("{}/", s.base));
    assert_eq!(status, 200);
    assert!(page.contains("/app.js") && page.contains("uPlot.iife.min.js"));
    for asset in [
        "/app.js",
        "/app.css",
        "/vendor/uplot/uPlot.iife.min.js",
        "/vendor/uplot/LICENSE",
    ] {
        let (status, body) = get(&format!("{}{asset}", s.base));
        assert_eq!(status, 200, "{asset}");
        assert!(
            !body.contains("https://fonts.") && !body.contains("cdn."),
            "{asset} fetches from elsewhere"
        );
    }
}

#[test]
fn a_curve_gains_points_while_the_job_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = start_job(&dir.path().join("job"));
    job_step(&store, 0);
    let s = serve(&[dir.path().to_str().unwrap()]);
    let run = eventually(Duration::from_secs(30), "the run at step 0", || {
        run_named(&s.base, "job").filter(|r| r["last_step"] == 0)
    });
    assert_eq!(run["status"], "live");
    let id = run["id"].as_str().unwrap().to_owned();
    let detail = get_json(&format!("{}/api/runs/{id}", s.base));
    let loss = detail["data"]["scalars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == "loss")
        .unwrap()
        .clone();
    assert_eq!(loss["series"][0]["steps"], serde_json::json!([0]));

    let stream = events(&format!("{}/api/events?run={id}", s.base));
    let (hello, _) = stream.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(hello, "hello");
    let mut latencies = Vec::new();
    for step in 1..8 {
        // Give the page's follow time to start before the first step is written.
        std::thread::sleep(Duration::from_millis(300));
        job_step(&store, step);
        let written = Instant::now();
        let mut norm_seen = false;
        let mut loss_seen = false;
        while !(norm_seen && loss_seen) {
            let (event, data) = stream
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("no event for step {step}"));
            if event == "points" && data["kind"] == "gradient_norms" {
                // The gradient's L2 norm at the new step: ‖(m, −m, m, −m)‖ = 2m.
                assert_eq!(data["tensor"], "gradient/w");
                assert_eq!(data["series"][0]["steps"], serde_json::json!([step]));
                let m = if step >= 5 { 1e-9 } else { 1e-2 };
                let v = data["series"][0]["values"][0].as_f64().unwrap();
                assert!((v - 2.0 * m).abs() < 1e-6 * m.max(1e-3), "{v}");
                norm_seen = true;
            }
            if event == "points" && data["tensor"] == "loss" {
                assert_eq!(data["kind"], "scalars");
                let steps = &data["series"][0]["steps"];
                assert_eq!(
                    steps,
                    &serde_json::json!([step]),
                    "only the new point: {data}"
                );
                let v = data["series"][0]["values"][0].as_f64().unwrap();
                assert!((v - 1.0 / (step as f64 + 1.0)).abs() < 1e-6);
                latencies.push(written.elapsed());
                loss_seen = true;
            }
        }
    }
    let worst = latencies.iter().max().unwrap();
    assert!(
        *worst < Duration::from_secs(1),
        "step-to-event latencies {latencies:?}"
    );
    // The vanishing gradient fires from step 5, and the run says so.
    let fired = eventually(
        Duration::from_secs(30),
        "VanishingGradient's firing",
        || {
            run_named(&s.base, "job")
                .filter(|r| r["rules"]["VanishingGradient"]["fired"].as_u64() > Some(0))
        },
    );
    assert_eq!(fired["rules"]["VanishingGradient"]["first_step"], 5);
    assert_eq!(fired["first_firing"]["rule"], "VanishingGradient");
    write_end_marker(&store).unwrap();
    eventually(Duration::from_secs(30), "the run ended", || {
        run_named(&s.base, "job").filter(|r| r["status"] == "ended")
    });
    let detail = get_json(&format!("{}/api/runs/{id}", s.base));
    let loss = detail["data"]["scalars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == "loss")
        .unwrap()
        .clone();
    assert_eq!(loss["series"][0]["steps"].as_array().unwrap().len(), 8);
    assert!(detail["firings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["step"] == 5));
}

#[test]
fn a_long_curve_is_thinned_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = start_job(&dir.path().join("long"));
    let losses: Vec<f32> = (0..1000)
        .map(|s| if s == 567 { 50.0 } else { 1.0 })
        .collect();
    for (step, l) in losses.iter().enumerate() {
        let tensors = [("loss", TensorValue::from(arr1(&[*l]).into_dyn()))];
        let w = StepWrite::new(step as i64, "worker_0", Mode::Train, &tensors);
        write_step(&store, &w).unwrap();
    }
    write_end_marker(&store).unwrap();
    let s = serve(&[dir.path().to_str().unwrap(), "--no-rules"]);
    let run = eventually(Duration::from_secs(60), "the long run read", || {
        run_named(&s.base, "long").filter(|r| r["status"] == "ended")
    });
    let id = run["id"].as_str().unwrap();
    let d = get_json(&format!("{}/api/runs/{id}?width=100", s.base));
    let series = &d["data"]["scalars"][0]["series"][0];
    let steps = series["steps"].as_array().unwrap();
    assert!(
        steps.len() <= 400 && steps.len() >= 100,
        "{} points",
        steps.len()
    );
    assert_eq!(steps[0], 0);
    assert_eq!(steps[steps.len() - 1], 999);
    assert!(
        series["values"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v.as_f64() == Some(50.0)),
        "the spike survives"
    );
}

#[test]
fn a_token_is_required_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), &["small"]);
    let s = serve(&[
        dir.path().to_str().unwrap(),
        "--host",
        "0.0.0.0",
        "--no-rules",
    ]);
    let token = s
        .url
        .split_once("?token=")
        .map(|(_, t)| t.to_owned())
        .expect("a generated token in the URL");
    assert_eq!(token.len(), 32);
    for path in ["/api/runs", "/", "/app.js", "/api/events", "/nothing"] {
        let (status, _) = get(&format!("{}{path}", s.base));
        assert_eq!(status, 401, "{path} without a token");
        let (status, _) = get(&format!("{}{path}?token=wrong{}", s.base, &token[5..]));
        assert_eq!(status, 401, "{path} with a wrong token");
    }
    let (status, _) = get(&format!("{}/api/runs?token={token}", s.base));
    assert_eq!(status, 200);
    let r = client()
        .get(format!("{}/api/runs", s.base))
        .header("x-smdebug-token", &token)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let r = client()
        .get(format!("{}/api/runs", s.base))
        .bearer_auth(&token)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The page's own links carry the token it was opened with.
    let (status, page) = get(&format!("{}/?token={token}", s.base));
    assert_eq!(status, 200);
    assert!(page.contains(&format!("/app.js?token={token}")));
    // A token given on the command line is the one required.
    let s2 = serve(&[
        dir.path().to_str().unwrap(),
        "--host",
        "0.0.0.0",
        "--token",
        "given-token-123",
        "--no-rules",
    ]);
    assert!(s2.url.ends_with("?token=given-token-123"), "{}", s2.url);
    assert_eq!(get(&format!("{}/api/runs", s2.base)).0, 401);
    assert_eq!(
        get(&format!("{}/api/runs?token=given-token-123", s2.base)).0,
        200
    );
}

/// Sends a raw request line (no client normalises the path) and returns the status.
fn raw_status(base: &str, request: &str) -> u16 {
    let addr = base.trim_start_matches("http://");
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    write!(
        c,
        "{request}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    out.split(' ').nth(1).unwrap().parse().unwrap()
}

#[test]
fn paths_links_and_foreign_hosts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fleet(dir.path(), &["small"]);
    fleet(outside.path(), &["modes"]);
    // A link inside the served folder to a trial outside it.
    std::os::unix::fs::symlink(
        outside.path().join("team/modes"),
        dir.path().join("team/link"),
    )
    .unwrap();
    let s = serve(&[dir.path().to_str().unwrap(), "--no-rules"]);
    let listed = eventually(Duration::from_secs(30), "the run", || {
        let r = runs(&s.base);
        (!r.is_empty()).then_some(r)
    });
    let names: Vec<&str> = listed.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["team/small"], "the linked trial is not served");
    let modes_location = outside.path().join("team/modes");
    let encoded = modes_location.to_str().unwrap().replace('/', "%2F");
    for path in [
        "/api/runs/..%2F..%2Fetc%2Fpasswd",
        "/api/runs/%2E%2E/%2E%2E/etc/passwd",
        &format!("/api/runs/{encoded}"),
        "/api/runs/team%2Fsmall",
        "/api/runs/team/small",
        &format!("/api/runs/{}", &listed[0]["id"].as_str().unwrap()[..15]),
        "/../../etc/passwd",
        "/vendor/uplot/../../Cargo.toml",
        "/api/runs/x/histogram?tensor=w&step=0",
    ] {
        let status = raw_status(&s.base, &format!("GET {path} HTTP/1.1"));
        assert_eq!(status, 404, "{path}");
    }
    assert_eq!(
        raw_status(&s.base, "POST /api/runs HTTP/1.1"),
        405,
        "read-only"
    );
    assert_eq!(
        raw_status(&s.base, "DELETE /api/runs HTTP/1.1"),
        405,
        "read-only"
    );
    // A loopback server answers to loopback names only (a rebound DNS name is refused).
    let r = client()
        .get(format!("{}/api/runs", s.base))
        .header("host", "attacker.example:80")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = client()
        .get(format!("{}/api/runs", s.base))
        .header("host", "localhost")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[test]
fn a_hostile_trial_shows_its_error_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path(), &["small"]);
    // Corrupt index files: every one garbage.
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    let recipe = Recipe::load(&presets.join("small.json")).unwrap();
    let bad_index = dir.path().join("team/bad-index");
    write_trial(
        &recipe,
        bad_index.to_str().unwrap(),
        WriteOptions::default(),
    )
    .unwrap();
    for d in std::fs::read_dir(bad_index.join("index")).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            std::fs::write(f.unwrap().path(), "{not json").unwrap();
        }
    }
    // Corrupt records: every events file's bytes scrambled past its first bytes.
    let bad_records = dir.path().join("team/bad-records");
    write_trial(
        &recipe,
        bad_records.to_str().unwrap(),
        WriteOptions::default(),
    )
    .unwrap();
    for d in std::fs::read_dir(bad_records.join("events")).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let mut bytes = std::fs::read(&p).unwrap();
            for b in bytes.iter_mut().skip(12) {
                *b ^= 0x5a;
            }
            std::fs::write(&p, bytes).unwrap();
        }
    }
    // A record whose index entry declares a huge shape and an absurd length.
    let huge = dir.path().join("team/huge");
    let store = start_job(&huge);
    let tensors = [("loss", TensorValue::from(arr1(&[1.0f32]).into_dyn()))];
    let shapes = [("weights/huge", vec![1u64 << 40, 1 << 40])];
    let mut w = StepWrite::new(0, "worker_0", Mode::Train, &tensors);
    w.shapes = &shapes;
    write_step(&store, &w).unwrap();
    let index = huge.join("index/000000000/000000000000_worker_0.json");
    let text = std::fs::read_to_string(&index)
        .unwrap()
        .replace("\"length\":", "\"length\":9999999999999,\"x\":");
    std::fs::write(&index, text).unwrap();
    // A collections file that is not JSON.
    let bad_collections = dir.path().join("team/bad-collections");
    std::fs::create_dir_all(bad_collections.join("collections/000000000")).unwrap();
    std::fs::write(
        bad_collections.join("collections/000000000/worker_0_collections.json"),
        "\u{0}\u{1}garbage",
    )
    .unwrap();

    let s = serve(&[dir.path().to_str().unwrap()]);
    let listed = eventually(Duration::from_secs(30), "five runs", || {
        let r = runs(&s.base);
        (r.len() == 5
            && r.iter()
                .all(|r| r["last_step"] != Value::Null || r["error"] != Value::Null))
        .then_some(r)
    });
    let by_name = |n: &str| listed.iter().find(|r| r["name"] == n).unwrap().clone();
    let bad = by_name("team/bad-index");
    assert!(bad["error"].as_str().unwrap().contains("index"), "{bad}");
    let bc = by_name("team/bad-collections");
    assert_eq!(bc["status"], "broken", "{bc}");
    assert!(
        bc["error"].as_str().unwrap().contains("collections"),
        "{bc}"
    );
    for name in [
        "team/bad-index",
        "team/bad-records",
        "team/huge",
        "team/bad-collections",
    ] {
        let id = by_name(name)["id"].as_str().unwrap().to_owned();
        let (status, body) = get(&format!("{}/api/runs/{id}", s.base));
        assert_eq!(status, 200, "{name}: {body}");
        let d: Value = serde_json::from_str(&body).unwrap();
        let shown = d["error"]
            .as_str()
            .map(str::to_owned)
            .or(d["summary"]["error"].as_str().map(str::to_owned));
        if name != "team/huge" {
            assert!(shown.is_some(), "{name} shows an error: {body}");
        }
        let (status, _) = get(&format!("{}/api/runs/{id}/health", s.base));
        assert_eq!(status, 200, "{name} health");
        get(&format!("{}/api/runs/{id}/tensors", s.base));
    }
    // The rule service could not read the scrambled records: the run says so, once.
    let judged = eventually(Duration::from_secs(30), "the rules' error", || {
        run_named(&s.base, "team/bad-records").filter(|r| r["rules_error"].is_string())
    });
    assert!(
        judged["rules_error"].as_str().unwrap().contains("CRC"),
        "{judged}"
    );
    let huge_id = by_name("team/huge")["id"].as_str().unwrap().to_owned();
    let (status, body) = get(&format!(
        "{}/api/runs/{huge_id}/histogram?tensor=loss&step=0",
        s.base
    ));
    assert!(status == 422, "{status} {body}");
    let records_id = by_name("team/bad-records")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let tensors = get_json(&format!("{}/api/runs/{records_id}/tensors", s.base));
    let name = tensors["tensors"][0]["name"].as_str().unwrap().to_owned();
    let step = tensors["tensors"][0]["steps"][0].as_i64().unwrap();
    let (status, body) = get(&format!(
        "{}/api/runs/{records_id}/histogram?tensor={name}&step={step}",
        s.base
    ));
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("error"));
    // Still serving, the healthy run too.
    let good = by_name("team/small");
    let d = get_json(&format!(
        "{}/api/runs/{}",
        s.base,
        good["id"].as_str().unwrap()
    ));
    assert!(d.get("error").is_none(), "{d}");
    assert_eq!(runs(&s.base).len(), 5);
}
