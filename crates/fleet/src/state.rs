//! The watcher's progress, kept in a small JSON file replaced atomically.

use crate::error::{FleetError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The state file's format version.
pub const STATE_VERSION: u32 = 1;

/// Where one trial of a watched fleet stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    /// Found, but its collections files are not all there yet (the job is starting).
    #[default]
    Waiting,
    /// Being evaluated while the job writes.
    Watching,
    /// Training ended and every rule evaluated every step: nothing more will happen.
    Ended,
    /// It failed repeatedly (a corrupt file, a trial that cannot be read); no longer watched.
    Broken,
}

impl TrialStatus {
    /// Whether the watcher is done with the trial.
    pub fn is_final(self) -> bool {
        matches!(self, TrialStatus::Ended | TrialStatus::Broken)
    }
}

/// One trial's entry in the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TrialState {
    /// Where it is opened.
    pub location: String,
    /// Where it stands.
    pub status: TrialStatus,
    /// Per rule label: the first global step not evaluated yet (every firing before it is
    /// in the firing log).
    pub next_step: BTreeMap<String, i64>,
    /// Firings recorded for it.
    pub firings: u64,
    /// Failures in a row (reset by a pass that succeeds).
    pub failures: u32,
    /// The last error, when it failed.
    pub error: Option<String>,
}

/// Everything the watcher must remember across a restart.
///
/// Invariant (see the crate docs, "Exactly once"): the firing log holds at least
/// `log_bytes` bytes, and every firing the state counts is among them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchState {
    /// [`STATE_VERSION`].
    pub version: u32,
    /// The rule labels the state was made for.
    pub rules: Vec<String>,
    /// The firing log's length when the state was saved.
    pub log_bytes: u64,
    /// Per trial (by fleet name).
    pub trials: BTreeMap<String, TrialState>,
    /// How many firings of the log, in log order, the webhook has taken (the first ones
    /// of the log; the others are posted after a restart).
    #[serde(default)]
    pub webhook_sent: u64,
}

impl WatchState {
    /// An empty state for these rules.
    pub fn new(rules: Vec<String>) -> Self {
        WatchState {
            version: STATE_VERSION,
            rules,
            log_bytes: 0,
            trials: BTreeMap::new(),
            webhook_sent: 0,
        }
    }

    /// Reads the state at `path`; `None` when there is no file.
    pub fn load(path: &Path) -> Result<Option<Self>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(FleetError::Io {
                    path: path.to_owned(),
                    source,
                })
            }
        };
        let state: WatchState =
            serde_json::from_slice(&bytes).map_err(|e| FleetError::Corrupt {
                path: path.to_owned(),
                reason: format!("not a watch state: {e}"),
            })?;
        if state.version != STATE_VERSION {
            return Err(FleetError::Corrupt {
                path: path.to_owned(),
                reason: format!(
                    "state version {} (this build reads {STATE_VERSION})",
                    state.version
                ),
            });
        }
        Ok(Some(state))
    }

    /// Writes the state to `path` atomically: a temporary file beside it, synced, then
    /// renamed over it (a crash leaves the old state or the new one, never a mix).
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |p: &Path| {
            let p = p.to_owned();
            move |source| FleetError::Io { path: p, source }
        };
        let temp = temp_path(path);
        let text = serde_json::to_vec_pretty(self).map_err(|e| FleetError::Corrupt {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let mut file = std::fs::File::create(&temp).map_err(io(&temp))?;
        file.write_all(&text)
            .and_then(|()| file.sync_all())
            .map_err(io(&temp))?;
        drop(file);
        std::fs::rename(&temp, path).map_err(io(path))?;
        // The rename itself is durable once the folder is synced; where a folder cannot be
        // opened for that (some file systems), the rename is still atomic.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

/// `<path>.tmp`, beside the state file (same folder, so the rename stays on one file system).
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        assert_eq!(WatchState::load(&path).unwrap(), None);
        let mut s = WatchState::new(vec!["R".into()]);
        s.log_bytes = 10;
        s.trials.insert(
            "job".into(),
            TrialState {
                location: "/x/job".into(),
                status: TrialStatus::Watching,
                next_step: [("R".to_owned(), 7)].into(),
                ..Default::default()
            },
        );
        s.save(&path).unwrap();
        s.save(&path).unwrap();
        assert_eq!(WatchState::load(&path).unwrap(), Some(s));
        assert!(!temp_path(&path).exists());
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(
            WatchState::load(&path),
            Err(FleetError::Corrupt { .. })
        ));
    }
}
