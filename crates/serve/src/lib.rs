//! A live, read-only web view of smdebug trials and fleets: `smdebug serve PATH…`.
//!
//! [`Server::start`] finds every trial under the served paths (local folders, `s3://`,
//! `gs://`, `az://` prefixes, as `smdebug_fleet::discover` does, again as jobs start),
//! keeps one open `smdebug_trial::Trial` per run and refreshes it as the reader does, and
//! serves:
//!
//! * a **runs page** (status live / ended / broken, last step, modes, workers, rule verdicts
//!   and first firing; a regex filter, grouping by folder, sorting);
//! * a **run page**: loss and scalar curves per mode, gradient and weight norms per layer
//!   (lines and a layer × step heatmap), update ratios, activations, a tensor's histogram
//!   at a step chosen with a slider (counted in the server), worker completeness, health
//!   findings and the rule firings marked on the step axis; the data is
//!   `smdebug_report`'s, gathered over the open trial;
//! * a **compare view** overlaying one chart of several runs;
//! * the JSON API behind them (`/api/runs`, `/api/runs/{id}`, `/api/runs/{id}/histogram`,
//!   `/api/compare`, …) and a server-sent event stream (`/api/events`) that sends a page
//!   the new points of the run it shows within a poll of the step's index file.
//!
//! Long curves are thinned on the server ([`downsample`], min/max per pixel bucket); the
//! rule verdicts come from a `smdebug_fleet::Watcher` over the same paths.
//!
//! Secure by default: the server binds `127.0.0.1:6007` and answers only requests naming a
//! loopback host; bound elsewhere it requires a token (given, or generated and shown in
//! [`Server::url`]) on every request; runs are addressed by an opaque id, never by a path;
//! a trial that cannot be read shows its error on its page. Every file of the pages is
//! compiled in (uPlot is vendored with its licence).
//!
//! ```no_run
//! let server = smdebug_serve::Server::start(smdebug_serve::ServeOptions::new(vec![
//!     "/data/jobs".into(),
//! ]))?;
//! println!("open {}", server.url());
//! server.wait();
//! # Ok::<(), smdebug_serve::ServeError>(())
//! ```
#![deny(missing_docs, unsafe_code)]

mod api;
mod assets;
mod auth;
mod downsample;
mod error;
mod live;
mod poll;
mod runs;
mod service;

pub use auth::{generate_token, TOKEN_HEADER};
pub use downsample::downsample;
pub use error::{Result, ServeError};
pub use live::LiveEvent;
pub use runs::{RuleState, RunSummary, Status};

use axum::routing::get;
use axum::Router;
use smdebug_fleet::RuleSpec;
use smdebug_storage::StorageOptions;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

/// The port `smdebug serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 6007;

/// Settings of [`Server::start`].
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Trials, folders of trials or object-store prefixes to serve.
    pub paths: Vec<String>,
    /// The address or host name to bind (default `127.0.0.1`).
    pub host: String,
    /// The port (default [`DEFAULT_PORT`]; 0 picks a free one).
    pub port: u16,
    /// The token requests must carry. Off loopback one is generated when none is given;
    /// on loopback none is required unless one is given.
    pub token: Option<String>,
    /// The rules whose verdicts the runs page shows (default: the report's default set).
    pub rules: Vec<RuleSpec>,
    /// Pause between two refreshes of a run a page follows.
    pub poll: Duration,
    /// Pause between two looks for new trials under the paths.
    pub discover_every: Duration,
    /// Storage settings (endpoints, retries).
    pub storage: StorageOptions,
    /// Where each rule firing is posted once (as `smdebug watch --webhook` posts them; the
    /// rule service's state is in memory, so a restart posts a run's firings again).
    pub webhook: Option<String>,
}

impl ServeOptions {
    /// Serves `paths` on `127.0.0.1:6007` with the default rules, a 250 ms poll of followed
    /// runs and a look for new trials every 2 s.
    pub fn new(paths: Vec<String>) -> Self {
        ServeOptions {
            paths,
            host: Ipv4Addr::LOCALHOST.to_string(),
            port: DEFAULT_PORT,
            token: None,
            rules: smdebug_report::DEFAULT_RULES
                .iter()
                .map(|r| RuleSpec::new(r))
                .collect(),
            poll: Duration::from_millis(250),
            discover_every: Duration::from_secs(2),
            storage: StorageOptions::default(),
            webhook: None,
        }
    }
}

/// What the handlers and the background threads share.
pub(crate) struct Shared {
    pub options: ServeOptions,
    pub token: Option<String>,
    pub runs: runs::Runs,
    pub events: broadcast::Sender<Arc<LiveEvent>>,
    pub shutdown: watch::Sender<bool>,
    pub stop: AtomicBool,
    pub discovery_error: Mutex<Option<String>>,
    pub rules_error: Mutex<Option<String>>,
}

impl Shared {
    /// Tells every open stream (none listening is fine).
    pub fn send(&self, event: LiveEvent) {
        let _ = self.events.send(Arc::new(event));
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A running server: its threads stop with [`Server::stop`] (or when it is dropped).
pub struct Server {
    addr: SocketAddr,
    url: String,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr> {
    let host = host.trim();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    (host, port)
        .to_socket_addrs()
        .map_err(|e| ServeError::InvalidOptions(format!("host {host:?}: {e}")))?
        .next()
        .ok_or_else(|| ServeError::InvalidOptions(format!("host {host:?} has no address")))
}

impl Server {
    /// Binds, finds the trials under the paths once, and starts serving in the background.
    pub fn start(options: ServeOptions) -> Result<Server> {
        if options.paths.is_empty() {
            return Err(ServeError::InvalidOptions("no path to serve".into()));
        }
        let addr = resolve(&options.host, options.port)?;
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| ServeError::Bind { addr, source })?;
        let addr = listener.local_addr().map_err(ServeError::Start)?;
        listener.set_nonblocking(true).map_err(ServeError::Start)?;
        let loopback = addr.ip().is_loopback();
        let token = match (&options.token, loopback) {
            (Some(t), _) if !auth::usable_token(t) => {
                return Err(ServeError::InvalidOptions(
                    "the token must be 8 to 256 letters, digits or -._~".into(),
                ))
            }
            (Some(t), _) => Some(t.clone()),
            (None, false) => Some(generate_token().map_err(ServeError::Start)?),
            (None, true) => None,
        };
        let labels = options.rules.iter().map(|r| r.label.clone()).collect();
        let (events, _) = broadcast::channel(4096);
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            options,
            token: token.clone(),
            runs: runs::Runs::new(labels),
            events,
            shutdown,
            stop: AtomicBool::new(false),
            discovery_error: Mutex::new(None),
            rules_error: Mutex::new(None),
        });
        poll::discover(&shared);
        let watcher = service::watcher(&shared)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("smdebug-serve")
            .enable_all()
            .build()
            .map_err(ServeError::Start)?;
        let router = router(Arc::clone(&shared), loopback);
        let mut shutdown = shared.shutdown.subscribe();
        let mut threads = Vec::new();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map_err(ServeError::Start)
        };
        threads.push(spawn(
            "smdebug-serve-http",
            Box::new(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                        return;
                    };
                    let _ = axum::serve(listener, router)
                        .with_graceful_shutdown(async move {
                            let _ = shutdown.wait_for(|s| *s).await;
                        })
                        .await;
                });
            }),
        )?);
        let s = Arc::clone(&shared);
        threads.push(spawn("smdebug-serve-poll", Box::new(move || poll::run(s)))?);
        if let Some(w) = watcher {
            let s = Arc::clone(&shared);
            threads.push(spawn(
                "smdebug-serve-rules",
                Box::new(move || service::run(s, w)),
            )?);
        }
        let shown = match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let url = match &token {
            Some(t) => format!("http://{shown}:{}/?token={t}", addr.port()),
            None => format!("http://{shown}:{}/", addr.port()),
        };
        Ok(Server {
            addr,
            url,
            shared,
            threads,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to open (with the token, when one is required).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The token requests must carry, if any.
    pub fn token(&self) -> Option<&str> {
        self.shared.token.as_deref()
    }

    /// Number of runs found so far.
    pub fn runs(&self) -> usize {
        self.shared.runs.len()
    }

    /// Blocks until the server stops (a [`Stopper`], or the end of its HTTP thread).
    pub fn wait(&self) {
        // The HTTP thread is the first one started.
        while !self.shared.stopping() && !self.threads.first().is_some_and(|t| t.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A handle that stops the server from another thread (a signal handler).
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.shared))
    }

    /// Stops serving: open event streams end, requests in progress finish, the background
    /// threads end; returns once they have.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = self.shared.shutdown.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Stops a [`Server`] from another thread.
#[derive(Clone)]
pub struct Stopper(Arc<Shared>);

impl std::fmt::Debug for Stopper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stopper")
    }
}

impl Stopper {
    /// Asks the server to stop; [`Server::wait`] returns, and the owner's
    /// [`Server::stop`] (or drop) joins its threads.
    pub fn stop(&self) {
        self.0.stop.store(true, Ordering::SeqCst);
        let _ = self.0.shutdown.send(true);
    }
}

fn router(shared: Arc<Shared>, loopback: bool) -> Router {
    let access = Arc::new(auth::Access {
        token: shared.token.clone(),
        loopback,
    });
    let mut r = Router::new()
        .route("/", get(assets::index))
        .route("/api/runs", get(api::runs))
        .route("/api/runs/{id}", get(api::run))
        .route("/api/runs/{id}/health", get(api::health))
        .route("/api/runs/{id}/tensors", get(api::tensors))
        .route("/api/runs/{id}/histogram", get(api::histogram))
        .route("/api/runs/{id}/firings", get(api::firings))
        .route("/api/compare", get(api::compare))
        .route("/api/events", get(api::events));
    for (route, _, _) in assets::FILES {
        r = r.route(route, get(move || async move { assets::file(route) }));
    }
    r.fallback(|| async { (axum::http::StatusCode::NOT_FOUND, "not found\n") })
        .layer(axum::middleware::from_fn_with_state(access, auth::check))
        .with_state(shared)
}
