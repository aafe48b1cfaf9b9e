//! `smdebug report` in a real browser: headless Chromium (Debian's `chromium`, installed by
//! `cargo xtask test`; `SMDEBUG_CHROMIUM` names another binary) opens the report of a demo
//! trial and of the multi-worker `workers` preset written by the real Python smdebug, with
//! name resolution and proxies pointing nowhere. The DOM Chromium built must hold every
//! section, charts whose paths have points, and the rule markers at the steps the rules
//! fired; Chromium's network log must show no request made for the page; a screenshot is
//! saved (`target/browser/`) and must not be blank.

use smdebug_conformance::{check, smdebug_bin, tempdir, write_fixture};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The report's sections, by element id.
const SECTIONS: &[&str] = &[
    "summary",
    "scalars",
    "gradient-norms",
    "weight-norms",
    "update-ratio",
    "activations",
    "histograms",
    "completeness",
    "rules",
    "health",
];

fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("SMDEBUG_CHROMIUM") {
        return PathBuf::from(p);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("chromium"))
            .find(|p| p.is_file())
    });
    found.expect(
        "the browser tests need Debian's chromium: `cargo xtask test` installs it \
         (apt-get install chromium), or set SMDEBUG_CHROMIUM",
    )
}

/// What one headless Chromium run of a page gave.
struct Load {
    dom: String,
    /// URLs the page asked the network for (from the net log: requests whose network
    /// isolation key is the file:// page, which leaves out Chromium's own background
    /// requests).
    page_requests: Vec<String>,
}

fn chromium_command(profile: &Path) -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        // The network is off: no name resolves, every proxied connection goes nowhere.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

fn url(page: &Path) -> String {
    format!("file://{}", page.canonicalize().unwrap().display())
}

/// Loads `page`, returning Chromium's DOM and the page's network requests.
fn load(page: &Path) -> Load {
    let dir = tempdir();
    let netlog = dir.path().join("netlog.json");
    let o = chromium_command(&dir.path().join("profile"))
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--dump-dom")
        .arg(url(page))
        .output()
        .expect("run chromium");
    let o = check(o, "chromium --dump-dom");
    let log: serde_json::Value = serde_json::from_slice(&std::fs::read(&netlog).unwrap())
        .expect("chromium's net log is JSON");
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_i64()
        .expect("URL_REQUEST_START_JOB in the net log's constants");
    let page_requests = log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_i64() == Some(start_job))
        .filter(|e| {
            e["params"]["network_isolation_key"]
                .as_str()
                .is_some_and(|k| k.contains("file://"))
        })
        .filter_map(|e| e["params"]["url"].as_str().map(str::to_owned))
        .filter(|u| !u.starts_with("file:"))
        .collect();
    Load {
        dom: String::from_utf8(o.stdout).unwrap(),
        page_requests,
    }
}

/// Screenshots `page` into `target/browser/<name>.png` (and `out`) and checks that it is
/// not blank: mostly white, with text, and with the charts' blue.
fn screenshot(page: &Path, name: &str) -> PathBuf {
    let dir = tempdir();
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/browser");
    std::fs::create_dir_all(&target).unwrap();
    let png_path = target.join(format!("{name}.png"));
    let o = chromium_command(&dir.path().join("profile"))
        .args(["--window-size=1300,2600", "--force-device-scale-factor=0.5"])
        .arg(format!("--screenshot={}", png_path.display()))
        .arg(url(page))
        .output()
        .expect("run chromium");
    check(o, "chromium --screenshot");
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).expect("the screenshot"),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let ch = info.color_type.samples();
    let px: Vec<&[u8]> = buf[..info.buffer_size()].chunks(ch).collect();
    let white = px.iter().filter(|p| p[..3] == [255, 255, 255]).count();
    let dark = px.iter().filter(|p| p[..3].iter().all(|&c| c < 90)).count();
    // The series colour #0072b2 and the histogram bars #56b4e9 (anti-aliasing aside).
    let blue = px
        .iter()
        .filter(|p| p[2] > 150 && p[0] < 120 && p[2] as i32 - p[0] as i32 > 80)
        .count();
    println!(
        "{name}: screenshot {} ({}x{}): {white} white, {dark} dark, {blue} blue pixels",
        png_path.display(),
        info.width,
        info.height
    );
    assert!(
        white > px.len() / 3,
        "{name}: the page background is not there"
    );
    assert!(dark > 2000, "{name}: no text rendered ({dark} dark pixels)");
    assert!(blue > 500, "{name}: no chart drawn ({blue} blue pixels)");
    png_path
}

/// Values of `attr="…"` on elements whose opening tag contains `marker`.
fn attrs<'a>(dom: &'a str, marker: &str, attr: &str) -> Vec<&'a str> {
    let key = format!("{attr}=\"");
    dom.match_indices(marker)
        .filter_map(|(i, _)| {
            let tag_start = dom[..i].rfind('<')?;
            let tag_end = i + dom[i..].find('>')?;
            let tag = &dom[tag_start..tag_end];
            let a = tag.find(&key)? + key.len();
            Some(&tag[a..a + tag[a..].find('"')?])
        })
        .collect()
}

/// The checks both pages share; returns the DOM.
fn check_page(page: &Path, name: &str) -> String {
    let loaded = load(page);
    let dom = &loaded.dom;
    assert!(
        loaded.page_requests.is_empty(),
        "{name}: the page made network requests: {:?}",
        loaded.page_requests
    );
    for s in SECTIONS {
        assert!(
            dom.contains(&format!("<section id=\"{s}\">")),
            "{name}: section {s} missing from the DOM"
        );
    }
    // Charts with data: the loss chart has paths with points and at least two of them.
    let points: Vec<usize> = attrs(dom, "class=\"series\"", "data-points")
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        points.iter().filter(|&&p| p >= 2).count() >= 3,
        "{name}: too few chart lines with points: {points:?}"
    );
    for d in attrs(dom, "class=\"series\"", "d") {
        assert!(
            d.is_empty() || d.starts_with('M'),
            "{name}: a broken path {d:.80}"
        );
    }
    screenshot(page, name);
    dom.clone()
}

/// The embedded data block, as Chromium kept it.
fn embedded(dom: &str) -> serde_json::Value {
    let tag = "id=\"smdebug-report-data\">";
    let start = dom.find(tag).expect("the data block") + tag.len();
    let end = start + dom[start..].find("</script>").unwrap();
    serde_json::from_str(&dom[start..end].replace("<\\/", "</")).unwrap()
}

#[test]
fn demo_report_renders_offline_with_rule_markers_at_the_firing_steps() {
    let dir = tempdir();
    let trial = dir.path().join("exploding");
    let o = Command::new(smdebug_bin())
        .args(["demo", "--json", "--scenario", "exploding", "--steps", "60"])
        .arg("--out")
        .arg(&trial)
        .output()
        .expect("run smdebug demo");
    let o = check(o, "smdebug demo");
    let mut fired: Vec<(String, i64)> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["rule"].as_str().unwrap().to_owned(),
                v["step"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(!fired.is_empty(), "the exploding demo fires a rule");
    let page = dir.path().join("exploding.html");
    let dom = check_page(&page, "demo-exploding");

    // Every firing the demo printed has a marker at its step on the rule timeline (a
    // marker per pixel column; the demo's 60 steps are far fewer than the pixels).
    let timeline = &dom[dom.find("id=\"rule-timeline\"").expect("the timeline")..];
    let timeline = &timeline[..timeline.find("</figure>").unwrap()];
    let mut markers: Vec<(String, i64)> = attrs(timeline, "class=\"rule-marker\"", "data-rule")
        .into_iter()
        .zip(attrs(timeline, "class=\"rule-marker\"", "data-step"))
        .map(|(r, s)| (r.to_owned(), s.parse().unwrap()))
        .collect();
    fired.sort();
    fired.dedup();
    markers.sort();
    assert_eq!(
        markers, fired,
        "markers at the steps the demo's rules fired"
    );
    // The loss's first firing is marked on the loss chart too.
    assert!(dom.contains("<figure class=\"chart\" id=\"scalars-0\""));
    // The numbers in the browser's copy are the numbers of the trial: the loss is there,
    // TRAIN and EVAL.
    let data = embedded(&dom);
    let loss = &data["scalars"][0];
    assert_eq!(loss["title"], "CrossEntropyLoss_output_0");
    let labels: Vec<&str> = loss["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["TRAIN", "EVAL"]);
}

#[test]
fn multi_worker_peer_report_renders_offline_with_its_heatmap() {
    let dir = tempdir();
    let trial = write_fixture("workers", &dir.path().join("workers"));
    let page = dir.path().join("workers.html");
    let o = Command::new(smdebug_bin())
        .arg("report")
        .arg(&trial)
        .arg("-o")
        .arg(&page)
        .output()
        .expect("run smdebug report");
    check(o, "smdebug report");
    let dom = check_page(&page, "peer-workers");
    let cells = attrs(&dom, "class=\"cell\"", "data-fraction");
    assert!(!cells.is_empty(), "the completeness heatmap has cells");
    // worker_3 skips global step 2: exactly one cell is not complete.
    let partial: Vec<&&str> = cells.iter().filter(|f| **f != "1.000").collect();
    assert_eq!(partial.len(), 1, "{cells:?}");
    assert!(dom.contains("worker_3 at step 2"));
    assert!(dom.contains("<tr class=\"verdict\""));
}

/// The network check is not blind: a page that loads an image from an address is seen
/// asking for it.
#[test]
fn the_network_check_sees_a_page_request() {
    let dir = tempdir();
    let page = dir.path().join("remote.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>x</p><img src=\"http://127.0.0.1:9/x.png\"></body></html>",
    )
    .unwrap();
    let loaded = load(&page);
    assert_eq!(loaded.page_requests, ["http://127.0.0.1:9/x.png"]);
}
