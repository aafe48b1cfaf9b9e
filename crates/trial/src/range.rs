//! Step ranges: which index files a trial loads, and finding the latest steps without
//! listing every index folder.

use crate::Result;
use smdebug_index::{classify_key, index_step_bound, TrialFile, INDEX_DIR};
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

/// The first of the last `n` global steps that have an index file before `end` (`None`:
/// fewer than `n` steps exist, so every step is wanted).
///
/// Lists the index folders (one delimiter listing), then the keys of the newest folders
/// only, newest first, until `n` steps were seen: the cost does not grow with the number
/// of older steps.
pub(crate) fn first_of_last_steps(
    store: &BlockingStore,
    n: usize,
    end: Option<i64>,
) -> Result<Option<i64>> {
    let prefix = format!("{INDEX_DIR}/");
    let end_key = end.and_then(index_step_bound);
    let mut folders = store.list_folders(&prefix)?;
    if let Some(e) = &end_key {
        // Folders that start at or after the end hold only steps past it.
        folders.retain(|f| f.as_str() < e.as_str());
    }
    let mut steps = BTreeSet::new();
    for folder in folders.iter().rev() {
        for obj in store.list_until(folder, None, end_key.as_deref())? {
            if let TrialFile::Index(name) = classify_key(&obj.key)? {
                if end.is_none_or(|e| name.step < e) {
                    steps.insert(name.step);
                }
            }
        }
        if steps.len() >= n {
            break;
        }
    }
    Ok(if n > 0 && steps.len() >= n {
        steps.iter().rev().nth(n - 1).copied()
    } else {
        None
    })
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
}
