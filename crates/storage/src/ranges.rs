//! Several ranged reads of one object: coalescing close ranges and fetching concurrently.

use std::ops::Range;

use bytes::Bytes;
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::error::{Operation, Result, StorageError};
use crate::Storage;

/// How [`Storage::get_ranges`] fetches several ranges of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOptions {
    /// Ranges whose gap is at most this many bytes are fetched as one request and sliced
    /// afterwards; `None` never merges (one request per requested range, except for exact
    /// duplicates). Over-reading a little is cheaper than another round trip on object
    /// stores; on local disk a small gap avoids many tiny reads.
    pub coalesce_gap: Option<u64>,
    /// A merged range never grows beyond this many bytes by coalescing (a single requested
    /// range may still be larger), so one huge request does not serialize everything.
    pub max_coalesced_len: u64,
    /// At most this many requests are in flight at once.
    pub concurrency: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            coalesce_gap: Some(1024 * 1024),
            max_coalesced_len: 16 * 1024 * 1024,
            concurrency: 16,
        }
    }
}

/// The plan for a `get_ranges` call: merged requests and, for each requested range, which
/// request holds it and where.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) fetches: Vec<Range<u64>>,
    /// `(fetch index, offset of the requested range inside that fetch)` per requested range.
    pub(crate) parts: Vec<(usize, u64)>,
}

/// Merges `ranges` (already checked: `start <= end`) following `options`.
pub(crate) fn plan(ranges: &[Range<u64>], options: &ReadOptions) -> Plan {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|&i| (ranges[i].start, ranges[i].end));
    let mut fetches: Vec<Range<u64>> = Vec::new();
    let mut parts = vec![(0usize, 0u64); ranges.len()];
    for i in order {
        let r = &ranges[i];
        let merge = fetches.last().is_some_and(|last| {
            let contained = r.start >= last.start && r.end <= last.end;
            match options.coalesce_gap {
                _ if contained && (options.coalesce_gap.is_some() || *last == *r) => true,
                Some(gap) => {
                    r.start <= last.end.saturating_add(gap)
                        && r.end.max(last.end) - last.start <= options.max_coalesced_len
                }
                None => false,
            }
        });
        if merge {
            let last = fetches.last_mut().expect("checked above");
            last.end = last.end.max(r.end);
        } else {
            fetches.push(r.clone());
        }
        let idx = fetches.len() - 1;
        parts[i] = (idx, r.start - fetches[idx].start);
    }
    Plan { fetches, parts }
}

/// [`Storage::get_ranges`] in terms of [`Storage::get_range`]: checks the ranges, merges
/// them following `options`, fetches the merged ranges concurrently and returns exactly the
/// requested slices, in the order requested. Backends call this from their `get_ranges`.
pub async fn get_ranges_with<S: Storage + ?Sized>(
    store: &S,
    key: &str,
    ranges: &[Range<u64>],
    options: &ReadOptions,
) -> Result<Vec<Bytes>> {
    crate::validate_key(key)?;
    check_ranges(|| store.location(), key, ranges)?;
    let plan = plan(ranges, options);
    let fetched: Vec<Bytes> = stream::iter(plan.fetches.iter().cloned())
        .map(|r| store.get_range(key, r))
        .buffered(options.concurrency.max(1))
        .try_collect()
        .await
        .map_err(|e| match e {
            StorageError::RangeOutOfBounds {
                op,
                location,
                key,
                range,
                size,
            } => StorageError::RangeOutOfBounds {
                op,
                location,
                key,
                range: first_out_of_bounds(ranges, size).unwrap_or(range),
                size,
            },
            other => other,
        })?;
    Ok(plan.slice(ranges, &fetched))
}

/// Fails with [`StorageError::InvalidRange`] for the first range with `start > end`.
///
/// `location` is only called for the error, so a read that succeeds never formats the
/// store's location string: a small local read would pay for it on every call.
pub(crate) fn check_ranges(
    location: impl FnOnce() -> String,
    key: &str,
    ranges: &[Range<u64>],
) -> Result<()> {
    match ranges.iter().find(|r| r.start > r.end) {
        Some(bad) => Err(StorageError::InvalidRange {
            op: Operation::GetRange,
            location: location(),
            key: key.to_owned(),
            range: bad.clone(),
        }),
        None => Ok(()),
    }
}

/// The first requested range that ends beyond `size`: errors name it, not a merged fetch.
pub(crate) fn first_out_of_bounds(ranges: &[Range<u64>], size: u64) -> Option<Range<u64>> {
    ranges.iter().find(|r| r.end > size).cloned()
}

impl Plan {
    /// The requested ranges, in the order requested, sliced out of the merged `fetched`.
    pub(crate) fn slice(&self, ranges: &[Range<u64>], fetched: &[Bytes]) -> Vec<Bytes> {
        ranges
            .iter()
            .zip(&self.parts)
            .map(|(r, &(idx, offset))| {
                let start = offset as usize;
                fetched[idx].slice(start..start + (r.end - r.start) as usize)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opts(gap: Option<u64>) -> ReadOptions {
        ReadOptions {
            coalesce_gap: gap,
            max_coalesced_len: 100,
            concurrency: 4,
        }
    }

    #[test]
    fn merges_close_ranges_only() {
        let p = plan(&[20..30, 0..10, 12..15, 200..210], &opts(Some(5)));
        assert_eq!(p.fetches, vec![0..30, 200..210]);
        assert_eq!(p.parts, vec![(0, 20), (0, 0), (0, 12), (1, 0)]);
        let p = plan(&[20..30, 0..10, 12..15], &opts(None));
        assert_eq!(p.fetches, vec![0..10, 12..15, 20..30]);
        let p = plan(&[0..10, 0..10], &opts(None));
        assert_eq!(p.fetches, vec![0..10]);
    }

    #[test]
    fn respects_max_coalesced_len() {
        let p = plan(&[0..60, 61..120, 121..130], &opts(Some(5)));
        assert_eq!(p.fetches, vec![0..60, 61..130]);
    }

    proptest! {
        /// Every requested range lies inside its fetch at the planned offset.
        #[test]
        fn plan_covers_every_range(
            raw in proptest::collection::vec((0u64..500, 0u64..60), 0..40),
            gap in proptest::option::of(0u64..50),
        ) {
            let ranges: Vec<Range<u64>> = raw.iter().map(|&(s, l)| s..s + l).collect();
            let p = plan(&ranges, &opts(gap));
            prop_assert_eq!(p.parts.len(), ranges.len());
            for (r, &(idx, off)) in ranges.iter().zip(&p.parts) {
                let f = &p.fetches[idx];
                prop_assert_eq!(f.start + off, r.start);
                prop_assert!(r.end <= f.end);
            }
            if gap.is_none() {
                prop_assert!(p.fetches.len() <= ranges.len());
            }
        }
    }
}
