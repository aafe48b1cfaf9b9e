use smdebug_serve::{ServeError, ServeOptions, Server};
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

fn trial(root: &Path, name: &str) {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/peer/presets");
    let recipe = Recipe::load(&presets.join("small.json")).unwrap();
    write_trial(
        &recipe,
        root.join(name).to_str().unwrap(),
        WriteOptions::default(),
    )
    .unwrap();
}

fn options(root: &Path) -> ServeOptions {
    let mut o = ServeOptions::new(vec![root.to_str().unwrap().to_owned()]);
    o.port = 0;
    o.rules.clear();
    o
}

/// `GET path` with `Connection: close`: the status and the body.
fn get(server: &Server, path: &str) -> (u16, String) {
    let mut c = TcpStream::connect(server.addr()).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).unwrap().parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn serves_the_runs_and_stops_with_a_stream_open() {
    let dir = tempfile::tempdir().unwrap();
    trial(dir.path(), "a");
    trial(dir.path(), "b");
    let server = Server::start(options(dir.path())).unwrap();
    assert_eq!(server.runs(), 2, "found at start");
    assert!(server.token().is_none());
    assert!(server.url().starts_with("http://127.0.0.1:"));
    let (status, body) = get(&server, "/api/runs");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    // A page's stream, left open.
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    write!(
        stream,
        "GET /api/events HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 64];
    let n = stream.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("HTTP/1.1 200"));
    let start = Instant::now();
    server.stop();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "stop took {:?}",
        start.elapsed()
    );
    // The stream was ended by the server.
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest);
}

#[test]
fn off_loopback_a_token_is_generated_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    trial(dir.path(), "a");
    let mut o = options(dir.path());
    o.host = "0.0.0.0".into();
    let server = Server::start(o.clone()).unwrap();
    let token = server.token().unwrap().to_owned();
    assert!(server.url().ends_with(&format!("?token={token}")));
    assert_eq!(get(&server, "/api/runs").0, 401);
    assert_eq!(get(&server, &format!("/api/runs?token={token}")).0, 200);
    o.token = Some("a b".into());
    assert!(matches!(
        Server::start(o.clone()),
        Err(ServeError::InvalidOptions(_))
    ));
    o.token = None;
    o.paths.clear();
    assert!(matches!(
        Server::start(o),
        Err(ServeError::InvalidOptions(_))
    ));
    // The port in use: the bind error names the address.
    let mut taken = options(dir.path());
    taken.port = server.addr().port();
    let e = Server::start(taken).unwrap_err();
    assert!(matches!(e, ServeError::Bind { .. }), "{e}");
    assert!(e.to_string().contains(&server.addr().port().to_string()));
}
