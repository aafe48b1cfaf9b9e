//! The settings a trial is opened with.

use smdebug_storage::StorageOptions;
use std::time::Duration;

/// How a trial waits for files that are not there yet: exponential backoff between polls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PollPolicy {
    /// First pause.
    pub initial: Duration,
    /// Longest pause.
    pub max: Duration,
}

impl Default for PollPolicy {
    fn default() -> Self {
        PollPolicy {
            initial: Duration::from_millis(5),
            max: Duration::from_millis(500),
        }
    }
}

impl PollPolicy {
    pub(crate) fn pauses(&self) -> impl Iterator<Item = Duration> + '_ {
        std::iter::successors(Some(self.initial), move |d| {
            Some((*d * 2).min(self.max).max(Duration::from_millis(1)))
        })
    }
}

/// Settings of [`Trial::open`](crate::Trial::open).
#[derive(Debug, Clone)]
pub struct TrialOptions {
    /// The trial's name (default: the last path component of the location, as smdebug).
    pub name: Option<String>,
    /// Only index files whose step `s` has `begin <= s < end` are loaded (smdebug's
    /// `range_steps`). Index keys sort by step, so the listings start at the range's first
    /// key and stop at its end: opening a range costs what the range holds, not what the
    /// trial holds.
    pub range_steps: Option<(Option<i64>, Option<i64>)>,
    /// Only the last `n` steps (of those before the end of `range_steps`, if any) that have
    /// an index file when the trial is opened, and the steps after them that appear later.
    /// Found without listing the older index folders (see `docs/src/scale.md`).
    pub last_steps: Option<usize>,
    /// Bytes of decoded values kept in memory (0 disables the cache). A value read once
    /// is kept in a probation part of 1/64 of this; only one asked for again after it
    /// left probation, an events file decoded whole, or what `prefetch` reads is kept in
    /// the rest, so that a one-pass scan does not fill the cache (see the crate README,
    /// "Caching").
    pub cache_bytes: usize,
    /// Object stores: bytes of whole events files kept in memory after reading them
    /// ahead (0 reads only the records asked for, on local disk too). An events file of at
    /// most 16 MiB is fetched whole on its second miss, or its first when it is at most
    /// 1 MiB, so that its other records cost no request; the oldest files are dropped past
    /// this budget. Local disk keeps no file bytes: a file of at most 128 KiB is read whole
    /// on its second miss and decoded at once into the value cache (`cache_bytes`).
    pub readahead_bytes: usize,
    /// `SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW` (default from the environment, else 1000).
    pub incomplete_step_window: i64,
    /// Pauses between polls while waiting for collections files or steps.
    pub poll: PollPolicy,
    /// How long to wait for the collections files; `None` waits until the job ends, as
    /// smdebug does.
    pub collections_timeout: Option<Duration>,
    /// Index files read at the same time during a refresh.
    pub index_concurrency: usize,
    /// Storage settings (retries, timeouts, range coalescing).
    pub storage: StorageOptions,
    /// What a refresh does with an index file it cannot parse. `false` (smdebug's
    /// behaviour): the refresh fails with the file's error. `true`: the file is skipped and
    /// its error kept; queries of that step then fail with it (see
    /// [`Trial::index_errors`](crate::Trial::index_errors)), and every other step stays readable.
    pub skip_corrupt_index_files: bool,
    /// Local disk: how many events files the trial keeps open between reads, so that a
    /// record read costs one positional read rather than an open, a read and a close
    /// (0 keeps none). Default: an eighth of the process's limit of open files, between 32
    /// and 1024 (on Linux from `/proc/self/limits`, else 128). All trials of a process
    /// together keep at most a quarter of that limit open.
    pub open_files: usize,
    /// Local disk, two cores or more: when `value` calls walk one tensor's steps forward,
    /// a background thread reads and decodes the next records into the value cache while
    /// the caller works on the current one (see the crate README, "Reading ahead").
    /// Default: on.
    pub read_ahead: bool,
}

impl Default for TrialOptions {
    fn default() -> Self {
        TrialOptions {
            name: None,
            range_steps: None,
            last_steps: None,
            cache_bytes: 256 << 20,
            readahead_bytes: 64 << 20,
            incomplete_step_window: std::env::var("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(1000),
            poll: PollPolicy::default(),
            collections_timeout: None,
            index_concurrency: 32,
            storage: StorageOptions::default(),
            skip_corrupt_index_files: false,
            open_files: crate::values::open_files::default_open_files(),
            read_ahead: true,
        }
    }
}
