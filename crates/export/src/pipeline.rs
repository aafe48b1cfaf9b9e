//! Reading and reducing entries on a few threads while this thread turns the results into
//! rows and encodes them: one pool for a whole step bucket instead of threads started and
//! joined per handful of entries, so no core waits for the slowest thread of a round nor for
//! the encoder.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Chunks a helper may have finished ahead of the one this thread consumes next, per
/// thread: bounds the outcomes held in memory whatever the bucket's size.
const AHEAD_PER_THREAD: usize = 4;

/// `for x in items { consume(x, f(x))? }` with `f` on up to `threads` threads, this one
/// included: `consume` runs here, in the order of `items`, as soon as each result and those
/// before it are ready, and this thread computes a chunk itself whenever the next result is
/// not ready. Threads take `chunk` items at a time, so that a hand-over between threads
/// (a channel message, maybe a wake-up) is paid per chunk, not per small item. The first
/// error of `consume` stops the helpers (they finish the chunk in hand) and is returned.
pub(crate) fn for_each_ordered<T: Sync, R: Send, E>(
    items: &[T],
    threads: usize,
    chunk: usize,
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
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel(AHEAD_PER_THREAD * threads);
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
                .name("smdebug-export".to_owned())
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
    use super::for_each_ordered;

    #[test]
    fn consumes_every_item_once_in_order() {
        let items: Vec<u32> = (0..5000).collect();
        for (threads, chunk) in [(1, 1), (2, 1), (2, 7), (4, 64), (2, 10_000)] {
            let mut seen = Vec::new();
            for_each_ordered(
                &items,
                threads,
                chunk,
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
            |&x| x,
            |_, _| -> Result<(), ()> { panic!("no items") },
        )
        .unwrap();
    }

    #[test]
    fn the_first_consumer_error_stops_the_run() {
        let items: Vec<u32> = (0..100_000).collect();
        let computed = std::sync::atomic::AtomicUsize::new(0);
        let mut seen = 0;
        let r = for_each_ordered(
            &items,
            2,
            4,
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
        assert!(computed.into_inner() < 1000);
    }
}
