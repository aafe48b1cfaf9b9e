//! CPU work of one call spread over scoped threads, joined before the call returns, its
//! results handed back in order on the calling thread while the rest is computed.
//!
//! One loop, two ways to call it: [`for_each_ordered`] over borrowed items in chunks, the
//! calling thread computing too (the trial reader decodes records and parses index files
//! through it; `smdebug-export` reads and reduces a step bucket's entries), and
//! [`for_each_owned`] over owned items one at a time, the calling thread only consuming so
//! that each result is handed over as soon as it is ready (`smdebug-fleet` runs a trial per
//! item through it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex, OnceLock};

/// `available_parallelism`, asked once: it reads cgroup files on every call, too slow for a
/// query of one record.
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Chunks a helper may have finished ahead of the one the consumer takes next, per thread,
/// at least: bounds the results held in memory whatever the number of items.
const AHEAD_CHUNKS: usize = 4;

/// Items a helper may have finished ahead of the consumer, per thread, at least, when
/// chunks are small: enough that a helper rarely waits for the consumer.
const AHEAD_ITEMS: usize = 64;

/// `items.iter().map(f)` on up to `min(cores, max_threads)` threads (this one included),
/// each taking the next item when done; results in the order of `items`.
pub(crate) fn map<T: Sync, R: Send>(
    items: &[T],
    max_threads: usize,
    name: &str,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    let threads = cores().min(max_threads);
    let Ok(()) = for_each_ordered(items, threads, 1, name, f, |_, r| {
        out.push(r);
        Ok::<(), std::convert::Infallible>(())
    });
    out
}

/// `for x in items { consume(x, f(x))? }` with `f` on up to `threads` threads, this one
/// included (the caller caps `threads` by the cores it wants to use).
///
/// `consume` runs on this thread, in the order of `items`, as soon as each result and those
/// before it are ready, so consuming overlaps with computing; while the next result is not
/// ready this thread computes a chunk itself. Threads take `chunk` items at a time, so that a
/// hand-over between threads (a channel message, maybe a wake-up) is paid per chunk, not per
/// small item. No thread starts a chunk more than a few chunks (and at least 64 items) per
/// thread ahead of the one the consumer takes next, so the results waiting to be consumed
/// stay bounded however many items there are and however long one item takes. The first
/// error of `consume` stops the helpers (they finish the chunk in hand) and is returned.
/// Helper threads are named `name`; a helper that cannot be started leaves its share to
/// the others. A panic of `f` on a helper is resumed on this thread.
///
/// ```
/// let items: Vec<u32> = (0..100).collect();
/// let mut doubled = Vec::new();
/// smdebug_trial::parallel::for_each_ordered(&items, 2, 8, "example", |&x| x * 2, |_, r| {
///     doubled.push(r);
///     Ok::<(), String>(())
/// })?;
/// assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
/// # Ok::<(), String>(())
/// ```
pub fn for_each_ordered<T: Sync, R: Send, E>(
    items: &[T],
    threads: usize,
    chunk: usize,
    name: &str,
    f: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(&T, R) -> Result<(), E>,
) -> Result<(), E> {
    let run = Run {
        threads,
        chunk,
        name,
        consumer_computes: true,
    };
    run.go(items.len(), |i| f(&items[i]), |i, r| consume(&items[i], r))
}

/// `for (i, x) in items.into_iter().enumerate() { consume(i, f(i, x))? }` with at most
/// `workers` calls of `f` in progress at once, each on a thread of its own (named `name`);
/// with one worker or one item, on this thread.
///
/// The loop of [`for_each_ordered`] for items that are each a large piece of work (a whole
/// trial): they are taken one at a time, and this thread only consumes, so that a result is
/// handed to `consume` as soon as it and every result before it are done, never held back
/// while this thread computes. What `f` holds while it runs (an open trial) is therefore
/// bounded by `workers`; the results finished ahead of the consumer are bounded as in
/// [`for_each_ordered`] (at least 64 per worker). The first error of `consume` stops the
/// run: no item starts after it, the ones in progress finish, and the error is returned.
/// When no worker thread can be started, this thread computes the items itself.
///
/// ```
/// let mut seen = Vec::new();
/// let items: Vec<u64> = vec![1, 2, 3, 4];
/// smdebug_trial::parallel::for_each_owned(items, 2, "example", |_, x| x * 10, |i, r| {
///     seen.push((i, r));
///     Ok::<(), String>(())
/// })?;
/// assert_eq!(seen, [(0, 10), (1, 20), (2, 30), (3, 40)]);
/// # Ok::<(), String>(())
/// ```
pub fn for_each_owned<T: Send, R: Send, E>(
    items: Vec<T>,
    workers: usize,
    name: &str,
    f: impl Fn(usize, T) -> R + Sync,
    consume: impl FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E> {
    let n = items.len();
    // Each index is claimed by exactly one thread, which takes its item out.
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let item = |i: usize| {
        let taken = slots[i].lock().unwrap_or_else(|p| p.into_inner()).take();
        f(i, taken.expect("each index is claimed once"))
    };
    let run = Run {
        // One worker runs on this thread: the consumer computes when there is no helper.
        threads: if workers <= 1 { 1 } else { workers + 1 },
        chunk: 1,
        name,
        consumer_computes: false,
    };
    run.go(n, item, consume)
}

/// How a loop runs: see [`for_each_ordered`] and [`for_each_owned`].
struct Run<'a> {
    /// Threads, this one included.
    threads: usize,
    /// Items a thread takes at a time.
    chunk: usize,
    /// The helper threads' name.
    name: &'a str,
    /// Whether this thread computes a chunk while the next result is not ready (more
    /// throughput), or only waits and consumes (each result consumed without delay).
    consumer_computes: bool,
}

impl Run<'_> {
    /// `consume(i, f(i))` for `i` in `0..n`, in order, as the type's settings say.
    fn go<R: Send, E>(
        &self,
        n: usize,
        f: impl Fn(usize) -> R + Sync,
        mut consume: impl FnMut(usize, R) -> Result<(), E>,
    ) -> Result<(), E> {
        let chunk = self.chunk.max(1);
        let chunks = n.div_ceil(chunk);
        let helpers = self.threads.saturating_sub(1);
        let threads = if self.consumer_computes {
            self.threads.min(chunks)
        } else {
            helpers.min(chunks) + 1
        };
        if threads <= 1 || chunks <= 1 {
            return (0..n).try_for_each(|i| consume(i, f(i)));
        }
        let next = AtomicUsize::new(0);
        let ahead = AHEAD_CHUNKS.max(AHEAD_ITEMS.div_ceil(chunk)) * threads;
        let window = Window::new(ahead);
        let compute = |k: usize| {
            let lo = k * chunk;
            (k, (lo..n.min(lo + chunk)).map(&f).collect::<Vec<R>>())
        };
        // The next chunk, claimed; `None` once every chunk is claimed or the run stops.
        let claim = || {
            if window.stopped() {
                return None;
            }
            let k = next.fetch_add(1, Ordering::Relaxed);
            (k < chunks).then_some(k)
        };
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::sync_channel(ahead);
            let mut started = 0;
            for _ in 1..threads {
                let tx = tx.clone();
                let (claim, window, compute) = (&claim, &window, &compute);
                let helper = move || {
                    while let Some(k) = claim() {
                        if !window.wait_for(k) || tx.send(compute(k)).is_err() {
                            return;
                        }
                    }
                };
                // A helper that cannot start leaves its share to the others.
                let spawned = std::thread::Builder::new()
                    .name(self.name.to_owned())
                    .spawn_scoped(scope, helper);
                started += usize::from(spawned.is_ok());
            }
            drop(tx);
            let consumer_computes = self.consumer_computes || started == 0;
            let mut ready: BTreeMap<usize, Vec<R>> = BTreeMap::new();
            let mut want = 0;
            let mut result = Ok(());
            'consume: while want < chunks {
                if let Some(rs) = ready.remove(&want) {
                    for (i, r) in (want * chunk..).zip(rs) {
                        if let Err(e) = consume(i, r) {
                            result = Err(e);
                            break 'consume;
                        }
                    }
                    want += 1;
                    window.consumed(want);
                    continue;
                }
                let arrived = match rx.try_recv() {
                    Ok(done) => Some(done),
                    // This thread keeps to the window too (give or take the chunks the
                    // helpers claim meanwhile): a slow chunk on a helper must not let it
                    // compute everything after it.
                    Err(_)
                        if consumer_computes && window.open_for(next.load(Ordering::Relaxed)) =>
                    {
                        claim().map(compute)
                    }
                    Err(_) => None,
                };
                let (k, rs) = match arrived {
                    Some(done) => done,
                    None => match rx.recv() {
                        Ok(done) => done,
                        // Every helper ended without sending `want`: one panicked, and
                        // leaving the scope resumes its panic.
                        Err(_) => break,
                    },
                };
                ready.insert(k, rs);
            }
            // Helpers waiting for the window or blocked on a full channel see the stop or
            // the channel closed, and end.
            window.stop();
            drop(rx);
            result
        })
    }
}

/// How far helpers may run ahead of the consumer: a chunk `k` starts only once
/// `k < consumed + ahead`. Waiting helpers sleep on a condition variable, woken only when
/// one is waiting, so that the consumer pays an atomic store per chunk and nothing more.
struct Window {
    ahead: usize,
    consumed: AtomicUsize,
    waiting: AtomicUsize,
    stop: AtomicBool,
    lock: Mutex<()>,
    wake: Condvar,
}

impl Window {
    fn new(ahead: usize) -> Self {
        Window {
            ahead: ahead.max(1),
            consumed: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn open_for(&self, k: usize) -> bool {
        k < self
            .consumed
            .load(Ordering::SeqCst)
            .saturating_add(self.ahead)
    }

    /// Waits until chunk `k` may start; `false` when the run stopped instead.
    fn wait_for(&self, k: usize) -> bool {
        if self.open_for(k) {
            return true;
        }
        let mut guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        // Counted before the check, under the lock: a consumer that moves on after the
        // check sees the count and wakes this thread once it waits.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let open = loop {
            if self.stop.load(Ordering::SeqCst) {
                break false;
            }
            if self.open_for(k) {
                break true;
            }
            guard = self.wake.wait(guard).unwrap_or_else(|p| p.into_inner());
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        open
    }

    /// The consumer took every chunk before `chunks`.
    fn consumed(&self, chunks: usize) {
        self.consumed.store(chunks, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
            self.wake.notify_all();
        }
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::{for_each_ordered, for_each_owned, map};
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn map_keeps_order_and_runs_every_item_once() {
        let items: Vec<u32> = (0..1000).collect();
        let out = map(&items, 4, "test", |&x| x * 2);
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(map(&[] as &[u32], 4, "test", |&x| x).is_empty());
    }

    #[test]
    fn consumes_every_item_once_in_order() {
        let items: Vec<u32> = (0..5000).collect();
        for (threads, chunk) in [(1, 1), (2, 1), (4, 1), (2, 7), (4, 64), (2, 10_000)] {
            let mut seen = Vec::new();
            for_each_ordered(
                &items,
                threads,
                chunk,
                "test",
                |&x| x * 2,
                |&x, r| {
                    assert_eq!(r, x * 2);
                    seen.push(r);
                    Ok::<(), ()>(())
                },
            )
            .unwrap();
            assert_eq!(seen, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        }
        for_each_ordered(
            &[] as &[u32],
            2,
            4,
            "test",
            |&x| x,
            |_, _| -> Result<(), ()> { panic!("no items") },
        )
        .unwrap();
    }

    #[test]
    fn the_first_consumer_error_stops_the_run() {
        let items: Vec<u32> = (0..100_000).collect();
        for chunk in [1, 4] {
            let computed = AtomicUsize::new(0);
            let mut seen = 0;
            let r = for_each_ordered(
                &items,
                2,
                chunk,
                "test",
                |&x| {
                    computed.fetch_add(1, Ordering::Relaxed);
                    x
                },
                |_, x| {
                    seen += 1;
                    if x == 10 {
                        Err(x)
                    } else {
                        Ok(())
                    }
                },
            );
            assert_eq!((r, seen), (Err(10), 11));
            // The helper stopped soon after: at most what fits ahead of the consumer.
            assert!(computed.into_inner() < 1000, "chunk {chunk}");
        }
    }

    proptest! {
        /// Results come back in item order, every item runs once, and no more than
        /// `workers` run at the same time.
        #[test]
        fn owned_items_ordered_complete_and_bounded(n in 0usize..40, workers in 0usize..6) {
            let running = AtomicIsize::new(0);
            let peak = AtomicIsize::new(0);
            let calls = AtomicUsize::new(0);
            let mut out = Vec::new();
            let f = |i, x: usize| {
                assert_eq!(i, x);
                calls.fetch_add(1, Ordering::SeqCst);
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(200));
                running.fetch_sub(1, Ordering::SeqCst);
                x * 3
            };
            let Ok(()) = for_each_owned((0..n).collect(), workers, "test", f, |_, r| {
                out.push(r);
                Ok::<(), std::convert::Infallible>(())
            });
            prop_assert_eq!(out, (0..n).map(|x| x * 3).collect::<Vec<_>>());
            prop_assert_eq!(calls.load(Ordering::SeqCst), n);
            prop_assert!(peak.load(Ordering::SeqCst) <= workers.max(1) as isize);
        }
    }

    /// The first item is slow and waits for the others to get far ahead: they must not,
    /// whichever way the loop is called, so the results waiting for the first stay few.
    #[test]
    fn a_slow_item_holds_back_the_others() {
        const N: usize = 100_000;
        const FAR: usize = 5_000;
        let items: Vec<usize> = (0..N).collect();
        let computed = AtomicUsize::new(0);
        let f = |x: usize| {
            if x == 0 {
                let until = Instant::now() + Duration::from_millis(300);
                while computed.load(Ordering::SeqCst) < FAR && Instant::now() < until {
                    std::thread::yield_now();
                }
            }
            computed.fetch_add(1, Ordering::SeqCst)
        };
        // The value of the first item is how many items were done before it ended.
        let mut ordered = None;
        for_each_ordered(
            &items,
            2,
            1,
            "test",
            |&x| f(x),
            |_, r| {
                ordered.get_or_insert(r);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        computed.store(0, Ordering::SeqCst);
        let mut owned = None;
        for_each_owned(
            items,
            2,
            "test",
            |_, x| f(x),
            |_, r| {
                owned.get_or_insert(r);
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert!(ordered.is_some_and(|r| r < FAR), "{ordered:?}");
        assert!(owned.is_some_and(|r| r < FAR), "{owned:?}");
    }

    /// A result is consumed while the next item is still running: the second item waits
    /// for the first to be consumed, which a consumer busy with an item of its own or
    /// holding results back would not do in time.
    #[test]
    fn owned_results_are_consumed_as_soon_as_they_are_ready() {
        let consumed_first = std::sync::atomic::AtomicBool::new(false);
        let mut seen = Vec::new();
        for_each_owned(
            vec![0, 1, 2],
            2,
            "test",
            |_, x: u32| {
                if x == 0 {
                    return true;
                }
                let until = Instant::now() + Duration::from_secs(10);
                while !consumed_first.load(Ordering::SeqCst) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(1));
                }
                consumed_first.load(Ordering::SeqCst)
            },
            |i, r| {
                consumed_first.store(true, Ordering::SeqCst);
                seen.push((i, r));
                Ok::<(), ()>(())
            },
        )
        .unwrap();
        assert_eq!(seen, [(0, true), (1, true), (2, true)]);
    }
}
