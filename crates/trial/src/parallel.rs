//! CPU work of one reader call spread over scoped threads, joined before the call returns.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, OnceLock};

/// `available_parallelism`, asked once: it reads cgroup files on every call, which showed
/// up in the profile of one-record queries.
pub(crate) fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `items.iter().map(f)` on up to `min(cores, max_threads)` threads (this one included),
/// each taking the next item when done; results in the order of `items`.
pub(crate) fn map<T: Sync, R: Send>(
    items: &[T],
    max_threads: usize,
    name: &str,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for_each_ordered(items, max_threads, name, f, |r| out.push(r));
    out
}

/// `for r in items.iter().map(f) { consume(r) }` with `f` on up to `min(cores,
/// max_threads)` threads: `consume` runs on this thread, in the order of `items`, as soon as
/// each result and those before it are ready, so consuming overlaps with computing. While
/// the next result is not ready this thread computes an item itself.
pub(crate) fn for_each_ordered<T: Sync, R: Send>(
    items: &[T],
    max_threads: usize,
    name: &str,
    f: impl Fn(&T) -> R + Sync,
    mut consume: impl FnMut(R),
) {
    let threads = cores().min(max_threads).min(items.len());
    if threads <= 1 {
        items.iter().map(f).for_each(consume);
        return;
    }
    let next = AtomicUsize::new(0);
    let take = || {
        let k = next.fetch_add(1, Ordering::Relaxed);
        items.get(k).map(|item| (k, f(item)))
    };
    std::thread::scope(|scope| {
        // Bounded: helpers parse at most this far ahead of the consumer, so the results
        // waiting to be consumed (parsed index files, when a trial opens) stay a few hundred,
        // not the whole trial.
        let (tx, rx) = mpsc::sync_channel(64 * threads);
        for _ in 1..threads {
            let tx = tx.clone();
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
        let mut ready: BTreeMap<usize, R> = BTreeMap::new();
        let mut want = 0;
        while want < items.len() {
            if let Some(r) = ready.remove(&want) {
                consume(r);
                want += 1;
                continue;
            }
            let arrived = match rx.try_recv() {
                Ok(done) => Some(done),
                Err(_) => take(),
            };
            let (k, r) = match arrived {
                Some(done) => done,
                None => match rx.recv() {
                    Ok(done) => done,
                    // Every helper ended without sending `want`: one panicked, and leaving
                    // the scope resumes its panic.
                    Err(_) => break,
                },
            };
            ready.insert(k, r);
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order_and_runs_every_item_once() {
        let items: Vec<u32> = (0..1000).collect();
        let out = super::map(&items, 4, "test", |&x| x * 2);
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u32], 4, "test", |&x| x).is_empty());
    }

    #[test]
    fn consumes_in_order_every_item_once() {
        let items: Vec<u32> = (0..1000).collect();
        let mut seen = Vec::new();
        super::for_each_ordered(&items, 4, "test", |&x| x * 2, |r| seen.push(r));
        assert_eq!(seen, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        super::for_each_ordered(&[] as &[u32], 4, "test", |&x| x, |_| panic!("no items"));
    }
}
