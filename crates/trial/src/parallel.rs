//! CPU work of one call spread over scoped threads, joined before the call returns, its
//! results handed back in order on the calling thread while the rest is computed.
//!
//! The trial reader uses it to decode records and parse index files; `smdebug-export`
//! reads and reduces a step bucket's entries through it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};

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
/// small item. Helpers run at most a few chunks (and at least 64 items) per thread ahead of
/// the consumer, so the results waiting to be consumed stay bounded however many items
/// there are. The first error of `consume` stops the helpers (they finish the chunk in
/// hand) and is returned. Helper threads are named `name`; a helper that cannot be started
/// leaves its share to the others. A panic of `f` on a helper is resumed on this thread.
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
    let chunk = chunk.max(1);
    let chunks = items.len().div_ceil(chunk);
    let threads = threads.min(chunks);
    if threads <= 1 {
        return items.iter().try_for_each(|x| consume(x, f(x)));
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let take = || {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let k = next.fetch_add(1, Ordering::Relaxed);
        let lo = k.checked_mul(chunk)?;
        let c = items.get(lo..items.len().min(lo + chunk))?;
        (!c.is_empty()).then(|| (k, c.iter().map(&f).collect::<Vec<R>>()))
    };
    let ahead = AHEAD_CHUNKS.max(AHEAD_ITEMS.div_ceil(chunk));
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel(ahead * threads);
        for _ in 1..threads {
            let tx = tx.clone();
            let take = &take;
            let helper = move || {
                while let Some(done) = take() {
                    if tx.send(done).is_err() {
                        return;
                    }
                }
            };
            // A helper that cannot start leaves its share to the others.
            let _ = std::thread::Builder::new()
                .name(name.to_owned())
                .spawn_scoped(scope, helper);
        }
        drop(tx);
        let mut ready: BTreeMap<usize, Vec<R>> = BTreeMap::new();
        let mut want = 0;
        let mut result = Ok(());
        'consume: while want < chunks {
            if let Some(rs) = ready.remove(&want) {
                for (x, r) in items[want * chunk..].iter().zip(rs) {
                    if let Err(e) = consume(x, r) {
                        result = Err(e);
                        break 'consume;
                    }
                }
                want += 1;
                continue;
            }
            let arrived = match rx.try_recv() {
                Ok(done) => Some(done),
                Err(_) => take(),
            };
            let (k, rs) = match arrived {
                Some(done) => done,
                None => match rx.recv() {
                    Ok(done) => done,
                    // Every helper ended without sending `want`: one panicked, and leaving
                    // the scope resumes its panic.
                    Err(_) => break,
                },
            };
            ready.insert(k, rs);
        }
        // Helpers blocked on a full channel see it closed and end.
        stop.store(true, Ordering::Relaxed);
        drop(rx);
        result
    })
}

#[cfg(test)]
mod tests {
    use super::{for_each_ordered, map};

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
            let computed = std::sync::atomic::AtomicUsize::new(0);
            let mut seen = 0;
            let r = for_each_ordered(
                &items,
                2,
                chunk,
                "test",
                |&x| {
                    computed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
}
