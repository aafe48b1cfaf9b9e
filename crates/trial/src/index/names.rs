//! Filtering tensor names as smdebug's `tensor_names(regex=, collection=)` does.

use crate::error::{Result, TrialError};
use smdebug_config::{Collection, Mode, PyRegex};

/// The filters of [`Trial::tensor_names_filtered`](crate::Trial::tensor_names_filtered).
#[derive(Debug, Clone)]
pub struct TensorFilter {
    /// Names at this step only (a mode step unless `mode` is GLOBAL).
    pub step: Option<i64>,
    /// The mode (GLOBAL: all).
    pub mode: Mode,
    /// Keep names matched (`re.search`) by any of these Python regexes.
    pub regex: Option<Vec<String>>,
    /// Keep names in this collection (listed, or matched by its regexes).
    pub collection: Option<String>,
}

impl Default for TensorFilter {
    fn default() -> Self {
        TensorFilter {
            step: None,
            mode: Mode::Global,
            regex: None,
            collection: None,
        }
    }
}

fn compile(patterns: &[String]) -> Result<Vec<PyRegex>> {
    patterns
        .iter()
        .map(|p| {
            PyRegex::new(p).map_err(|source| TrialError::Collections {
                file: "(regex argument)".into(),
                source,
            })
        })
        .collect()
}

fn matches_any(regexes: &[PyRegex], name: &str) -> Result<bool> {
    for r in regexes {
        if r.search(name).map_err(|source| TrialError::Collections {
            file: "(regex argument)".into(),
            source,
        })? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The names of `base` that `filter`'s regexes or collection keep (all of them when it has
/// neither); `collection` gives the collection of a name (as `Trial::collection` does).
pub(crate) fn select(
    base: Vec<String>,
    filter: &TensorFilter,
    collection: impl FnOnce(&str) -> Collection,
) -> Result<Vec<String>> {
    let keep: Option<Vec<PyRegex>> = match (&filter.regex, &filter.collection) {
        (Some(_), Some(_)) => {
            return Err(TrialError::ValueError {
                message: "Only one of `regex` or `collection` can be passed to this method".into(),
            })
        }
        (None, None) => return Ok(base),
        (Some(rx), None) => Some(compile(rx)?),
        (None, Some(_)) => None,
    };
    let mut out = Vec::new();
    if let Some(regexes) = keep {
        for name in base {
            if matches_any(&regexes, &name)? {
                out.push(name);
            }
        }
    } else if let Some(coll) = &filter.collection {
        let coll = collection(coll);
        let regexes = compile(coll.include_regex())?;
        for name in base {
            if coll.tensor_names.contains(&name) || matches_any(&regexes, &name)? {
                out.push(name);
            }
        }
    }
    Ok(out)
}
