//! The real servers the tests talk to, started for the duration of a test run.
use crate::listen::Listening;
use crate::peer;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The bucket created in the S3 test server.
pub const BUCKET: &str = "smdebug-test";

/// The environment variable naming the S3 server's process id, so that a benchmark can
/// read the server's CPU time ([`cpu_seconds`]).
pub const SERVER_PID_VAR: &str = "SMDEBUG_TEST_S3_SERVER_PID";

/// CPU seconds (user + system, all threads, the ended ones included) process `pid` has used
/// so far, from `/proc/PID/stat` (in clock ticks: 10 ms on Linux).
///
/// moto serves every request in Python under one GIL, so its CPU time over a client's
/// wall time tells whether the server was the bound (about 1.0: it had no idle moment),
/// and its CPU time for a client's requests is the least time any client needs for them.
pub fn cpu_seconds(pid: u32) -> Result<f64> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // Fields after the command name (which is in parentheses and may hold spaces): state is
    // field 3, utime field 14, stime field 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .with_context(|| format!("{path}: no command name"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64> {
        fields
            .get(i - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .map(|t| t as f64)
            .with_context(|| format!("{path}: no field {i}"))
    };
    Ok((ticks(14)? + ticks(15)?) / clock_ticks_per_second())
}

/// `sysconf(_SC_CLK_TCK)`, from `getconf CLK_TCK` (100 when that fails, the Linux value).
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        crate::util::output(Command::new("getconf").arg("CLK_TCK"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|&t: &f64| t > 0.0)
            .unwrap_or(100.0)
    })
}

/// The S3 server's pid from an environment made by [`S3Server::env`].
pub fn server_pid(env: &[(String, String)]) -> Option<u32> {
    env.iter()
        .find(|(k, _)| k == SERVER_PID_VAR)
        .and_then(|(_, v)| v.parse().ok())
}

/// A running moto S3 server; killed when dropped.
pub struct S3Server {
    server: Listening,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The `moto_server` executable, so tests can start private servers (fault tests).
    pub moto_server: PathBuf,
}

impl S3Server {
    /// Starts moto on a free loopback port and creates [`BUCKET`].
    pub fn start(tools_python: &Path) -> Result<S3Server> {
        let moto_server = tools_python.with_file_name("moto_server");
        let server = Listening::start("moto_server", |port| {
            let mut c = Command::new(&moto_server);
            c.args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            c
        })?;
        let server = S3Server {
            endpoint: server.endpoint(),
            server,
            moto_server,
        };
        // Buckets cannot be created through object_store; a plain HTTP PUT does it.
        let create = format!(
            "import urllib.request as u; u.urlopen(u.Request('{}/{BUCKET}', method='PUT')).read()",
            server.endpoint
        );
        crate::util::output(Command::new(tools_python).args(["-c", &create]))
            .context("creating the test bucket")?;
        Ok(server)
    }

    /// The environment variables that point tests (and smdebug's boto3) at this server.
    pub fn env(&self) -> Vec<(String, String)> {
        let pid = self.server.child.id().to_string();
        [
            (SERVER_PID_VAR, pid.as_str()),
            ("SMDEBUG_TEST_S3_ENDPOINT", self.endpoint.as_str()),
            ("SMDEBUG_TEST_S3_BUCKET", BUCKET),
            (
                "SMDEBUG_MOTO_SERVER",
                self.moto_server.to_str().unwrap_or_default(),
            ),
            ("AWS_ENDPOINT_URL", self.endpoint.as_str()),
            ("AWS_ENDPOINT_URL_S3", self.endpoint.as_str()),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ALLOW_HTTP", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

/// `cargo xtask services`: start everything and print the environment until interrupted.
pub fn run_foreground() -> Result<()> {
    let tools = peer::ensure_tools()?;
    let peer = peer::ensure_peer()?;
    let s3 = S3Server::start(&tools)?;
    let emulators = crate::stores::Emulators::start(&tools)?;
    println!("export SMDEBUG_PEER_PYTHON={}", peer.display());
    println!("export SMDEBUG_TOOLS_PYTHON={}", tools.display());
    for (k, v) in s3.env().into_iter().chain(emulators.env()) {
        // Single quotes: the GCS service account value is JSON.
        println!("export {k}='{v}'");
    }
    eprintln!("services running; Ctrl-C to stop");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
