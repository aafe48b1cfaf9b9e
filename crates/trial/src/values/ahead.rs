//! Reading ahead on a spare core, for a reader that walks one tensor's steps one `value`
//! call at a time (a rule, a notebook loop over `steps()`, the Python package's `value`).
//!
//! Such a reader spends each call's time in one positional read, the CRC and the decode of
//! one record, then in its own code, and the machine's other cores stay idle. Once two
//! calls walk the same tensor (same mode, same worker choice) forward, the trial hands the
//! next records of that walk to one background thread, which reads and decodes them into
//! the value cache's probation part while the reader works on the current one.
//!
//! The thread takes two of every three records of a job and leaves the third to the
//! reader: a reader that waited for every record would only move the work to another
//! core, while reading the third itself keeps both cores busy.
//!
//! Reader and thread do not wait for each other longer than a record takes. Both go
//! forward through the walk: the reader says where it is (`Walk::reader_at`), the thread
//! which record it is reading (`Walk::working`) and how far it got (`Walk::done`). The
//! thread skips a record the reader has reached; the reader waits only for the record the
//! thread is reading, and reads any other record it does not find cached itself. On a
//! machine whose other cores are busy the thread falls behind, and the reader reads
//! ahead of it. What the thread cached is only ever a cache entry, checked on each hit
//! against the index entry as every cached value is; a record the thread failed to read
//! is read again by the reader, which gets its error.

use crate::index::state::RecordLocation;
use crate::sync::lock;
use crate::values::cache::{Admit, ValueCache};
use crate::values::fetch::fetch_values;
use crate::values::file_cache::FileCache;
use smdebug_config::Mode;
use smdebug_storage::BlockingStore;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// Records per job at most: enough that a job (one channel send, perhaps a thread wake-up)
/// is sent every few calls, few enough that a reader that stops walking leaves little read
/// in vain.
const JOB_RECORDS_MAX: usize = 16;

/// The part of the probation cache one job may fill: the reader takes the records out
/// while the next job is read, so two jobs must fit, with room for the reader's own.
const JOB_SHARE_OF_PROBATION: u64 = 4;

/// How long a reader waits for the record the thread is reading before reading it itself (the
/// thread was not scheduled, or failed): many times what a record takes to read.
const WAIT_MAX: Duration = Duration::from_millis(2);

/// A wait longer than this means the thread is not getting a core of its own (the machine
/// is busy): the reader gives up reading ahead for the rest of its walk, since a thread
/// that shares the reader's core only adds switches between the two.
const WAIT_SLOW: Duration = Duration::from_micros(200);

/// The same when the reader found this many of the thread's records not yet started.
const BEHIND_MAX: u32 = 4;

/// What the read-ahead thread reads through: the trial's store, value cache and files.
pub(crate) struct Shared {
    pub store: Arc<BlockingStore>,
    pub cache: Arc<Mutex<ValueCache>>,
    pub files: Arc<Mutex<FileCache>>,
}

/// Which records a walk goes through: one tensor, one mode, one choice of worker.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WalkKey {
    tensor: usize,
    mode: Mode,
    worker: Option<String>,
}

/// One walk's progress, shared by the reader and the thread. Positions are the records'
/// mode steps, which grow along the walk. Written and read with `SeqCst`: of a reader that
/// stores `reader_at` then loads `working` and a thread that stores `working` then loads
/// `reader_at` for the same record, at least one sees the other.
#[derive(Debug)]
struct Walk {
    /// The position the reader asked for last.
    reader_at: AtomicI64,
    /// The position the thread is reading (or last read).
    working: AtomicI64,
    /// The highest position the thread is done with (cached, skipped or failed).
    done: AtomicI64,
    /// Set when the reader walks elsewhere: the thread drops the rest of the walk's jobs.
    cancelled: AtomicBool,
}

/// A job: the next records of a walk, in walk order.
struct Job {
    walk: Arc<Walk>,
    records: Vec<RecordLocation>,
}

/// The reader's current walk.
struct Current {
    key: WalkKey,
    /// Once two calls made it a walk.
    walk: Option<Arc<Walk>>,
    /// The last position asked for.
    last: i64,
    /// A wait was slow, or the thread fell behind: no read-ahead for the rest of this walk.
    given_up: bool,
    /// The positions sent to the thread that the reader has not reached yet.
    theirs: VecDeque<i64>,
    /// How many of them the reader reached before the thread started them.
    behind: u32,
}

/// The reader's side: the current walk and what has been sent for it.
#[derive(Default)]
struct ReaderState {
    tx: Option<mpsc::SyncSender<Job>>,
    current: Option<Current>,
    /// The last position sent to the thread, and the position at which to send the next job.
    sent_until: i64,
    next_job_at: i64,
}

/// A trial's read-ahead (see the module documentation).
pub(crate) struct ReadAhead {
    shared: Option<Shared>,
    /// The records of one job, from the probation part's size and the walk's record size.
    probation_bytes: u64,
    state: Mutex<ReaderState>,
}

impl std::fmt::Debug for ReadAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadAhead")
            .field("on", &self.shared.is_some())
            .field("probation_bytes", &self.probation_bytes)
            .finish_non_exhaustive()
    }
}

/// The walk a record belongs to, as [`ReadAhead::claim`] found it.
pub(crate) struct Claim {
    walk: Option<Arc<Walk>>,
    /// Send a job of the records after this position (the reader finds them in the trial's
    /// state and gives them to [`ReadAhead::send`]).
    pub next_job_after: Option<i64>,
}

impl ReadAhead {
    /// Read-ahead through `shared`, or none (`None`: one core, object stores, no cache, or
    /// switched off).
    pub fn new(shared: Option<Shared>, probation_bytes: usize) -> Self {
        ReadAhead {
            shared,
            probation_bytes: probation_bytes as u64,
            state: Mutex::new(ReaderState::default()),
        }
    }

    /// Whether this trial reads ahead at all.
    #[cfg(test)]
    pub(crate) fn is_on(&self) -> bool {
        self.shared.is_some()
    }

    /// Records of `length` bytes per job (below 2: no read-ahead, they would not fit the
    /// cache).
    pub fn job_records(&self, length: u64) -> usize {
        let fit = self.probation_bytes / JOB_SHARE_OF_PROBATION / length.max(1);
        (fit as usize).min(JOB_RECORDS_MAX)
    }

    /// Called by `Tensor::value` before it fetches `loc`, the record of `tensor` it asks
    /// for with `worker`: follows the walk, waits if the thread is reading that record, and
    /// says whether to send the next job.
    pub fn claim(&self, tensor: usize, worker: Option<&str>, loc: &RecordLocation) -> Claim {
        let none = Claim {
            walk: None,
            next_job_after: None,
        };
        if self.shared.is_none() || self.job_records(loc.length) < 2 {
            return none;
        }
        let position = loc.mode_step;
        let theirs;
        let (walk, next_job_after) = {
            let mut st = lock(&self.state);
            let same = matches!(&st.current, Some(c)
                if c.key.tensor == tensor && c.key.mode == loc.mode
                    && c.key.worker.as_deref() == worker && c.last < position);
            if !same {
                if let Some(old) = st.current.as_ref().and_then(|c| c.walk.as_ref()) {
                    old.cancelled.store(true, Ordering::Relaxed);
                }
                let key = WalkKey {
                    tensor,
                    mode: loc.mode,
                    worker: worker.map(str::to_owned),
                };
                st.current = Some(Current {
                    key,
                    walk: None,
                    last: position,
                    given_up: false,
                    theirs: VecDeque::new(),
                    behind: 0,
                });
                return none;
            }
            let next_job_at = st.next_job_at;
            let sent_until = st.sent_until;
            let Some(c) = st.current.as_mut() else {
                return none;
            };
            c.last = position;
            if c.given_up {
                return none;
            }
            while c.theirs.front().is_some_and(|&p| p < position) {
                c.theirs.pop_front();
            }
            theirs = c.theirs.front() == Some(&position);
            match &c.walk {
                Some(w) => (
                    Arc::clone(w),
                    (position >= next_job_at).then_some(sent_until),
                ),
                // The second call forward: a walk from here on.
                None => {
                    let w = Arc::new(Walk {
                        reader_at: AtomicI64::new(position),
                        working: AtomicI64::new(i64::MIN),
                        done: AtomicI64::new(i64::MIN),
                        cancelled: AtomicBool::new(false),
                    });
                    c.walk = Some(Arc::clone(&w));
                    st.sent_until = position;
                    (w, Some(position))
                }
            }
        };
        walk.reader_at.fetch_max(position, Ordering::SeqCst);
        let done = walk.done.load(Ordering::SeqCst) >= position;
        let working = walk.working.load(Ordering::SeqCst);
        if theirs && !done && working < position {
            // The thread has not started it: it does not keep up.
            let mut st = lock(&self.state);
            if let Some(c) = st.current.as_mut() {
                c.behind += 1;
                if c.behind >= BEHIND_MAX {
                    c.given_up = true;
                    walk.cancelled.store(true, Ordering::Relaxed);
                    return none;
                }
            }
        }
        // Being read by the thread: wait until it is done with it (then it is cached).
        if !done && working == position {
            let start = Instant::now();
            let mut spins = 0u32;
            while walk.done.load(Ordering::Acquire) < position && start.elapsed() < WAIT_MAX {
                if spins < 64 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if start.elapsed() > WAIT_SLOW {
                walk.cancelled.store(true, Ordering::Relaxed);
                if let Some(c) = lock(&self.state).current.as_mut() {
                    c.given_up = true;
                }
                return none;
            }
        }
        Claim {
            walk: Some(walk),
            next_job_after,
        }
    }

    /// Sends `records` (the walk's next ones after `claim`'s `next_job_after`, in order, at
    /// most [`ReadAhead::job_records`]) to the thread, starting it on the first job. No
    /// records: the walk has reached its end, and no more jobs are due.
    pub fn send(&self, claim: Claim, records: Vec<RecordLocation>) {
        let (Some(walk), Some(shared)) = (claim.walk, &self.shared) else {
            return;
        };
        let mut st = lock(&self.state);
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            st.next_job_at = i64::MAX;
            return;
        };
        // Half-way through this job, the next one goes out.
        st.next_job_at = records[records.len() / 2].mode_step.max(first.mode_step);
        st.sent_until = last.mode_step;
        if st.tx.is_none() {
            st.tx = spawn(shared);
        }
        // Every third record is the reader's (see the module documentation).
        let records: Vec<RecordLocation> = records
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % 3 != 2)
            .map(|(_, r)| r)
            .collect();
        if let Some(c) = st.current.as_mut() {
            c.theirs.extend(records.iter().map(|r| r.mode_step));
        }
        let job = Job { walk, records };
        if let Some(tx) = &st.tx {
            match tx.try_send(job) {
                // Full: the thread is behind by whole jobs; the reader reads this one.
                Ok(()) | Err(mpsc::TrySendError::Full(_)) => {}
                // The thread is gone: read alone from now on.
                Err(mpsc::TrySendError::Disconnected(_)) => st.tx = None,
            }
        }
    }
}

/// Starts the thread; `None` when it cannot be started (the reader reads alone).
fn spawn(shared: &Shared) -> Option<mpsc::SyncSender<Job>> {
    // Two jobs queued at most: a thread that does not run (a busy machine, a forked
    // process) holds up no more than that.
    let (tx, rx) = mpsc::sync_channel::<Job>(2);
    let store = Arc::clone(&shared.store);
    let cache = Arc::clone(&shared.cache);
    let files = Arc::clone(&shared.files);
    std::thread::Builder::new()
        .name("smdebug-trial-ahead".into())
        .spawn(move || {
            // Ends when the trial (the sender) is dropped.
            for job in rx {
                for loc in &job.records {
                    if job.walk.cancelled.load(Ordering::Relaxed) {
                        break;
                    }
                    let walk = &job.walk;
                    let position = loc.mode_step;
                    walk.working.store(position, Ordering::SeqCst);
                    // Not when the reader got there first: it reads the record itself.
                    if walk.reader_at.load(Ordering::SeqCst) < position {
                        // Errors are the reader's to see: it reads the record again.
                        drop(fetch_values(&store, &cache, &files, &[loc], Admit::Policy));
                    }
                    walk.done.fetch_max(position, Ordering::SeqCst);
                }
            }
        })
        .ok()
        .map(|_| tx)
}
