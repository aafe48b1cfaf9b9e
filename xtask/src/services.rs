//! The real servers the tests talk to, started for the duration of a test run.
use crate::peer;
use anyhow::{bail, Context, Result};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The bucket created in the S3 test server.
pub const BUCKET: &str = "smdebug-test";

/// A running moto S3 server; killed when dropped.
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The `moto_server` executable, so tests can start private servers (fault tests).
    pub moto_server: PathBuf,
}

impl S3Server {
    /// Starts moto on a free loopback port and creates [`BUCKET`].
    pub fn start(tools_python: &Path) -> Result<S3Server> {
        let moto_server = tools_python.with_file_name("moto_server");
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(&moto_server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {}", moto_server.display()))?;
        let server = S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            moto_server,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("moto server did not listen on port {port} within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
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
        [
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

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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
