//! Step ranges: which index files a trial loads, and finding the latest steps without
//! listing every index folder.

use crate::error::Result;
use smdebug_index::{
    classify_key, index_bucket_key, index_step_bound, TrialFile, INDEX_DIR, STEPS_PER_INDEX_BUCKET,
};
use smdebug_storage::BlockingStore;
use std::collections::BTreeSet;
use std::str::FromStr;

/// A half-open range of global steps, `A:B` (either end may be left out): the text form of
/// [`TrialOptions::range_steps`](crate::TrialOptions::range_steps) that the command-line
/// tools take (`--steps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepRange {
    /// First step included.
    pub start: Option<i64>,
    /// First step excluded.
    pub end: Option<i64>,
}

impl StepRange {
    /// Whether `step` is in the range.
    pub fn contains(&self, step: i64) -> bool {
        self.start.is_none_or(|s| step >= s) && self.end.is_none_or(|e| step < e)
    }

    /// The range as [`TrialOptions::range_steps`](crate::TrialOptions::range_steps) takes it
    /// (`None` when unbounded on both sides).
    pub fn to_range_steps(self) -> Option<(Option<i64>, Option<i64>)> {
        (self.start.is_some() || self.end.is_some()).then_some((self.start, self.end))
    }
}

impl FromStr for StepRange {
    type Err = String;
    /// `A:B`, `A:`, `:B`, or `N` (that step only).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let num = |t: &str| -> std::result::Result<Option<i64>, String> {
            let t = t.trim();
            if t.is_empty() {
                return Ok(None);
            }
            t.parse()
                .map(Some)
                .map_err(|_| format!("bad step {t:?} in step range {s:?}"))
        };
        match s.split_once(':') {
            Some((a, b)) => Ok(StepRange {
                start: num(a)?,
                end: num(b)?,
            }),
            None => {
                let n = num(s)?.ok_or_else(|| "empty step range".to_string())?;
                Ok(StepRange {
                    start: Some(n),
                    end: Some(n.saturating_add(1)),
                })
            }
        }
    }
}

/// The listing bounds of the index files of steps `begin <= s < end`: the start-after key
/// and the end key (see [`index_step_bound`]); `None` where a bound cannot be expressed as a
/// key, and the listing then goes on (the step filter still applies).
pub(crate) fn listing_bounds(
    range: (Option<i64>, Option<i64>),
) -> (Option<String>, Option<String>) {
    let (begin, end) = range;
    (
        begin.filter(|&b| b > 0).and_then(index_step_bound),
        end.and_then(index_step_bound),
    )
}

/// What [`last_steps`] found: the first of the last steps, and the index keys it listed
/// from there on.
#[derive(Debug, Default)]
pub(crate) struct LastSteps {
    /// The first of the last `n` steps (`None`: fewer than `n` steps exist, so every step is
    /// wanted).
    pub first: Option<i64>,
    /// Every index key from the first step on (every key when `first` is `None`) before the
    /// end, sorted, as a listing made while looking gave them: the open's first refresh takes
    /// them instead of listing the same keys again.
    pub keys: Vec<String>,
}

/// Growth of the step window a probe of an object store lists, newest steps first.
const WINDOW_GROWTH: i64 = 4;

/// The first of the last `n` global steps that have an index file before `end`, and the
/// index keys from it on.
///
/// Lists the index folders (one delimiter listing), then only the newest keys: on local disk
/// the newest folders, names only (one directory read each); on an object store a window
/// of the newest `n` steps of the newest folder (a listing that starts after the window's
/// first key), widened four times over until it holds `n` steps, then older folders the
/// same way. The cost grows with `n` and the number of workers, not with the number of older
/// steps, and a trial that saved every step needs two requests.
pub(crate) fn last_steps(store: &BlockingStore, n: usize, end: Option<i64>) -> Result<LastSteps> {
    let prefix = format!("{INDEX_DIR}/");
    let end_key = end.and_then(index_step_bound);
    let mut folders = store.list_folders(&prefix)?;
    if let Some(e) = &end_key {
        // Folders that start at or after the end hold only steps past it.
        folders.retain(|f| f.as_str() < e.as_str());
    }
    // Local disk reads a folder's names at once: a window saves nothing there.
    let local = store.storage().as_sync().is_some();
    let mut steps = BTreeSet::new();
    // The keys listed, one run per folder, newest folder first.
    let mut runs: Vec<Vec<String>> = Vec::new();
    for (i, folder) in folders.iter().enumerate().rev() {
        let newest = i + 1 == folders.len();
        let span = bucket_steps(folder).filter(|_| !local);
        let mut width = i64::try_from(n).unwrap_or(i64::MAX).max(1);
        let mut found = BTreeSet::new();
        let keys = loop {
            // The window's first step: the whole folder when the folder's steps are unknown.
            let lo = span.map(|(first, after)| {
                let top = end.map_or(after, |e| e.min(after));
                top.saturating_sub(width).max(first)
            });
            let start_after = lo.and_then(index_step_bound);
            // The newest folder is listed on past its end, so that the keys cover every
            // step from the window on, also in a folder that appeared meanwhile.
            let listed = if newest {
                match &start_after {
                    Some(s) => store.list_keys(&prefix, Some(s), end_key.as_deref())?,
                    None => store.list_keys(&prefix, Some(folder), end_key.as_deref())?,
                }
            } else {
                store.list_keys(folder, start_after.as_deref(), end_key.as_deref())?
            };
            found.clear();
            for key in &listed {
                if let TrialFile::Index(name) = classify_key(key)? {
                    if end.is_none_or(|e| name.step < e) {
                        found.insert(name.step);
                    }
                }
            }
            let whole = match (lo, span) {
                (Some(lo), Some((first, _))) => lo <= first,
                _ => true,
            };
            if whole || steps.len() + found.len() >= n {
                break listed;
            }
            width = width.saturating_mul(WINDOW_GROWTH);
        };
        steps.extend(found);
        runs.push(keys);
        if steps.len() >= n {
            break;
        }
    }
    let first = if n > 0 && steps.len() >= n {
        steps.iter().rev().nth(n - 1).copied()
    } else {
        None
    };
    let mut keys = Vec::new();
    for run in runs.into_iter().rev() {
        for key in run {
            let wanted = match (first, classify_key(&key)?) {
                (Some(f), TrialFile::Index(name)) => name.step >= f,
                _ => true,
            };
            if wanted {
                keys.push(key);
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(LastSteps { first, keys })
}

/// The steps a bucket folder `index/{b:09}/` holds, `b * 1000 .. (b + 1) * 1000`; `None` for
/// a folder of another name.
fn bucket_steps(folder: &str) -> Option<(i64, i64)> {
    let digits = folder
        .strip_prefix(INDEX_DIR)?
        .strip_prefix('/')?
        .strip_suffix('/')?;
    let bucket: i64 = digits.parse().ok()?;
    let first = bucket.checked_mul(STEPS_PER_INDEX_BUCKET)?;
    // Only the canonical spelling: another folder name may hold any steps.
    (format!("{}/", index_bucket_key(first)) == folder)
        .then(|| Some((first, first.checked_add(STEPS_PER_INDEX_BUCKET)?)))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_ranges_parse_as_export_and_the_cli_write_them() {
        let r: StepRange = "3:7".parse().unwrap();
        assert_eq!((r.start, r.end), (Some(3), Some(7)));
        assert!(r.contains(3) && r.contains(6) && !r.contains(7) && !r.contains(2));
        let r: StepRange = "5".parse().unwrap();
        assert_eq!((r.start, r.end), (Some(5), Some(6)));
        let r: StepRange = ":9".parse().unwrap();
        assert_eq!(r.to_range_steps(), Some((None, Some(9))));
        assert_eq!(":".parse::<StepRange>().unwrap().to_range_steps(), None);
        assert!("a:3".parse::<StepRange>().is_err());
        assert!("".parse::<StepRange>().is_err());
    }

    #[test]
    fn bucket_folders_name_their_steps() {
        assert_eq!(bucket_steps("index/000000001/"), Some((1000, 2000)));
        assert_eq!(bucket_steps("index/000000000/"), Some((0, 1000)));
        assert_eq!(bucket_steps("index/1/"), None);
        assert_eq!(bucket_steps("index/x/"), None);
        assert_eq!(bucket_steps("other/000000001/"), None);
    }
}
