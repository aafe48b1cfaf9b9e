//! `smdebug watch --webhook URL` against a receiver on 127.0.0.1 (a small HTTP server in the
//! test): each firing posted once as `{"text": …}` (what a Slack incoming webhook takes), a
//! refused post retried, and a restart with the same state posting nothing again.

use crate::serve::{job_step, start_job};
use smdebug_synth::steps::write_end_marker;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Answers 503 to the first request and 200 after; keeps the bodies it accepted.
fn receiver() -> (String, Arc<Mutex<Vec<serde_json::Value>>>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/services/T/B/X", listener.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::new(AtomicUsize::new(0));
    let (a, n) = (Arc::clone(&accepted), Arc::clone(&requests));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0;
            let mut json = false;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                json |= lower.starts_with("content-type: application/json");
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            assert!(json, "posted as JSON");
            let status = if n.fetch_add(1, Ordering::SeqCst) == 0 {
                "503 Service Unavailable"
            } else {
                a.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                "200 OK"
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, accepted, requests)
}

#[test]
fn watch_posts_each_firing_to_the_webhook_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    let store = start_job(&root.join("job-1"));
    for step in 0..8 {
        job_step(&store, step);
    }
    write_end_marker(&store).unwrap();
    let (url, accepted, requests) = receiver();
    let state = dir.path().join("watch.json");
    let watch = || {
        Command::new(env!("CARGO_BIN_EXE_smdebug"))
            .arg("watch")
            .arg(&root)
            .args([
                "--rule",
                "VanishingGradient",
                "--until-idle",
                "--poll",
                "0.05",
                "--json",
            ])
            .arg("--state")
            .arg(&state)
            .arg("--webhook")
            .arg(&url)
            .output()
            .unwrap()
    };
    let o = watch();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    let posted: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "posted")
        .collect();
    assert_eq!(posted.len(), 3, "{stdout}");
    let texts: Vec<String> = accepted
        .lock()
        .unwrap()
        .iter()
        .map(|v| v["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    for (t, step) in texts.iter().zip([5, 6, 7]) {
        assert!(
            t.starts_with(&format!(
                "smdebug: job-1: VanishingGradient fired at step {step} "
            )),
            "{t}"
        );
    }
    assert_eq!(
        requests.load(Ordering::SeqCst),
        4,
        "one refused post, retried"
    );
    // Restarted with the same state: nothing new, nothing posted twice.
    let o = watch();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(accepted.lock().unwrap().len(), 3);
    assert_eq!(requests.load(Ordering::SeqCst), 4);
}
