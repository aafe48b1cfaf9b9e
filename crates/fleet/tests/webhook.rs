//! The watcher's webhook against a receiver on 127.0.0.1 (a small HTTP server in the test):
//! each firing posted once as `{"text": …}`, failed posts retried, and nothing lost or
//! posted twice across a restart or while the receiver is down.

use crate::common::{vanishing_from_5, write_job, Job};
use smdebug_fleet::{WatchEvent, WatchOptions, WatchRule, Watcher, WebhookOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A receiver that answers 500 to its first `fail_first` requests and 200 after, keeping
/// the bodies it accepted.
struct Receiver {
    url: String,
    accepted: Arc<Mutex<Vec<serde_json::Value>>>,
    requests: Arc<AtomicUsize>,
}

fn receiver(fail_first: usize) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks/T000/B000", listener.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let requests = Arc::new(AtomicUsize::new(0));
    let (a, n) = (Arc::clone(&accepted), Arc::clone(&requests));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut length = 0usize;
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            assert!(
                request_line.starts_with("POST /hooks/T000/B000 "),
                "{request_line}"
            );
            let seen = n.fetch_add(1, Ordering::SeqCst);
            let status = if seen < fail_first {
                "500 Internal Server Error"
            } else {
                a.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                "200 OK"
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
            );
        }
    });
    Receiver {
        url,
        accepted,
        requests,
    }
}

fn options(root: &Path, state: &Path, url: &str) -> WatchOptions {
    let rule = WatchRule::new("VanishingGradient");
    let mut o = WatchOptions::new(vec![root.to_str().unwrap().to_owned()], vec![rule]);
    o.state = Some(state.to_owned());
    o.log = Some(state.with_extension("firings.jsonl"));
    o.poll = Duration::from_millis(20);
    o.until_idle = true;
    o.idle = Duration::from_millis(200);
    let mut w = WebhookOptions::new(url);
    w.attempts = 3;
    w.backoff = Duration::from_millis(10);
    w.timeout = Duration::from_secs(5);
    o.webhook = Some(w);
    o
}

fn job(root: &Path, name: &str) {
    let j = Job {
        steps: 8,
        grad: vanishing_from_5,
        nan_at: &[],
        pause: Duration::ZERO,
    };
    write_job(&root.join(name), &j);
}

fn texts(r: &Receiver) -> Vec<String> {
    r.accepted
        .lock()
        .unwrap()
        .iter()
        .map(|v| {
            assert_eq!(v.as_object().unwrap().len(), 1, "only `text`: {v}");
            v["text"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn run(o: WatchOptions) -> (smdebug_fleet::WatchSummary, usize) {
    let failures = AtomicUsize::new(0);
    let mut w = Watcher::new(o).unwrap();
    let summary = w
        .run(
            &|e| {
                if let WatchEvent::WebhookFailed { .. } = e {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            },
            &AtomicBool::new(false),
        )
        .unwrap();
    (summary, failures.into_inner())
}

#[test]
fn each_firing_is_posted_once_retried_and_not_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    job(&root, "a");
    let state = dir.path().join("watch.json");
    let r = receiver(2);
    let (summary, failures) = run(options(&root, &state, &r.url));
    assert_eq!(failures, 0, "the retries within a pass absorb two 500s");
    assert_eq!(summary.webhook_pending, 0);
    assert_eq!(summary.firings_new, 3);
    let posted = texts(&r);
    assert_eq!(posted.len(), 3, "{posted:?}");
    for (text, step) in posted.iter().zip([5, 6, 7]) {
        assert!(
            text.starts_with(&format!("smdebug: a: VanishingGradient fired at step {step} (TRAIN step {step}) on gradient/w: ")),
            "{text}"
        );
    }
    assert_eq!(r.requests.load(Ordering::SeqCst), 5);

    // A restart with a new job: only the new job's firings are posted.
    job(&root, "b");
    let (summary, _) = run(options(&root, &state, &r.url));
    assert_eq!(summary.webhook_pending, 0);
    let posted = texts(&r);
    assert_eq!(posted.len(), 6, "{posted:?}");
    assert!(
        posted[3..].iter().all(|t| t.starts_with("smdebug: b: ")),
        "{posted:?}"
    );
    // And one more with nothing new: nothing posted.
    let (_, _) = run(options(&root, &state, &r.url));
    assert_eq!(texts(&r).len(), 6);
}

#[test]
fn firings_wait_while_the_receiver_is_down_and_none_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("jobs");
    job(&root, "a");
    let state = dir.path().join("watch.json");
    // A port nothing listens on.
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/hooks/T000/B000", l.local_addr().unwrap())
    };
    let (summary, failures) = run(options(&root, &state, &closed));
    assert_eq!(summary.firings_new, 3);
    assert_eq!(
        summary.webhook_pending, 3,
        "nothing delivered, nothing dropped"
    );
    assert!(failures > 0);
    // The receiver is back (another URL, as after a fix): every firing, in order, once.
    let r = receiver(0);
    let (summary, failures) = run(options(&root, &state, &r.url));
    assert_eq!((summary.webhook_pending, failures), (0, 0));
    let posted = texts(&r);
    assert_eq!(posted.len(), 3, "{posted:?}");
    assert!(posted[0].contains("at step 5") && posted[2].contains("at step 7"));
    let (_, _) = run(options(&root, &state, &r.url));
    assert_eq!(texts(&r).len(), 3, "none posted twice");
}
