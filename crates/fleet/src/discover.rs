//! Finding the trials of a fleet: one listing per location, no file opened.

use crate::error::{FleetError, Result};
use smdebug_storage::{BlockingStore, Location, StorageOptions};
use std::collections::BTreeSet;

/// One trial of a fleet: the name it is reported under and the location it is opened at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TrialRef {
    /// The fleet name: the trial's path relative to the location it was found under
    /// (`job-7/debug-output`), or the location as given when the location is the trial
    /// itself. With several locations, the location as given, `/`, then that path, so
    /// names stay unique.
    pub name: String,
    /// Where to open it (`smdebug_trial::Trial::open`): a local path or an object-store URL.
    pub location: String,
}

/// The folders whose presence below a folder makes that folder a trial: the reader lists
/// `index/` for steps and `collections/` for the workers (docs/src/format.md §2).
const TRIAL_FOLDERS: [&str; 2] = ["index", "collections"];

/// The suffix of a local file still being written (`smdebug_index::TEMP_SUFFIX`; readers
/// never see it, and a trial with nothing else is not one yet).
const TEMP_SUFFIX: &str = ".tmp";

/// The trial roots among `keys` (relative to one location, `/`-separated), sorted.
///
/// A key names a trial root when one of its folders is `index` or `collections` with
/// something below it (a file being written, ending in `.tmp`, does not count): the root
/// is the path before the first such folder. `""` means the location itself is a trial;
/// then it is the only root. A root inside another root (a trial kept inside a trial's
/// folder) is part of the outer trial and not listed.
///
/// ```
/// let keys = [
///     "job-b/index/000000000/000000000000_worker_0.json",
///     "job-a/collections/000000000/worker_0_collections.json",
///     "job-a/events/000000000000/000000000000_worker_0.tfevents",
///     "notes/readme.txt",
///     "job-c/index/000000000/000000000000_worker_0.json.tmp",
/// ];
/// assert_eq!(smdebug_fleet::trial_roots(keys), ["job-a", "job-b"]);
/// assert_eq!(smdebug_fleet::trial_roots(["index/000000000/x.json", "a/index/y.json"]), [""]);
/// ```
pub fn trial_roots<'a>(keys: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut roots = BTreeSet::new();
    for key in keys {
        if key.ends_with(TEMP_SUFFIX) {
            continue;
        }
        let parts: Vec<&str> = key.split('/').filter(|c| !c.is_empty()).collect();
        let found = parts
            .iter()
            .enumerate()
            .find(|(i, c)| TRIAL_FOLDERS.contains(c) && i + 1 < parts.len());
        if let Some((i, _)) = found {
            roots.insert(parts[..i].join("/"));
        }
    }
    if roots.contains("") {
        return vec![String::new()];
    }
    let mut out: Vec<String> = Vec::new();
    for root in roots {
        // Sorted order puts a root right before the roots inside it.
        let inside = out.last().is_some_and(|outer| {
            root.strip_prefix(outer.as_str())
                .is_some_and(|r| r.starts_with('/'))
        });
        if !inside {
            out.push(root);
        }
    }
    out
}

/// The trials at or below each of `locations` (local paths or object-store URLs), sorted
/// by name: a location with an `index/` or `collections/` folder directly inside is one
/// trial (found with one folder listing); otherwise every trial below it, found with one
/// listing of its keys ([`trial_roots`]; no file is opened). A location holding no trial
/// (or missing) adds none.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// for job in ["b", "a/run"] {
///     let index = dir.path().join(job).join("index/000000000");
///     std::fs::create_dir_all(&index)?;
///     std::fs::write(index.join("000000000000_worker_0.json"), "{}")?;
/// }
/// let trials = smdebug_fleet::discover(&[dir.path().to_str().unwrap()])?;
/// let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
/// assert_eq!(names, ["a/run", "b"]);
/// assert!(trials[0].location.ends_with("a/run"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn discover<S: AsRef<str>>(locations: &[S]) -> Result<Vec<TrialRef>> {
    discover_with(locations, &StorageOptions::default())
}

/// [`discover`] with storage options (retries, endpoints).
pub fn discover_with<S: AsRef<str>>(
    locations: &[S],
    options: &StorageOptions,
) -> Result<Vec<TrialRef>> {
    let mut given: Vec<&str> = locations.iter().map(|l| l.as_ref().trim()).collect();
    given.dedup();
    if given.is_empty() {
        return Err(FleetError::InvalidOptions("no location given".into()));
    }
    let several = given.len() > 1;
    let mut out = BTreeSet::new();
    for text in given {
        let storage_error = |source| FleetError::Storage {
            location: text.to_owned(),
            source,
        };
        let location = Location::parse(text).map_err(storage_error)?;
        let store = BlockingStore::open_with(&location, options).map_err(storage_error)?;
        // One folder listing says whether the location is a trial itself, without
        // listing the (possibly many) keys inside it.
        let top = store.list_folders("").map_err(storage_error)?;
        let roots = if top
            .iter()
            .any(|f| TRIAL_FOLDERS.contains(&f.trim_end_matches('/')))
        {
            vec![String::new()]
        } else if store.storage().as_sync().is_some() {
            let mut roots = Vec::new();
            roots_by_folder(&store, top, &mut roots).map_err(storage_error)?;
            roots
        } else {
            let keys = store.list_keys("", None, None).map_err(storage_error)?;
            trial_roots(keys.iter().map(String::as_str))
        };
        let shown = text.trim_end_matches('/');
        let shown = if shown.is_empty() { text } else { shown };
        for root in roots {
            let name = match (root.is_empty(), several) {
                (true, _) => shown.to_owned(),
                (false, false) => root.clone(),
                (false, true) => format!("{shown}/{root}"),
            };
            out.insert(TrialRef {
                name,
                location: join(&location, &root),
            });
        }
    }
    Ok(out.into_iter().collect())
}

/// The trial roots below the folders `folders` (as [`BlockingStore::list_folders`] gives
/// them), the same as [`trial_roots`] of every key below them, found folder by folder: on
/// local disk, where a listing reads folders one by one, a trial's own folders (its events
/// above all, a folder per step) are never read, only enough of its `index/` or
/// `collections/` to see that it holds a file.
fn roots_by_folder(
    store: &BlockingStore,
    folders: Vec<String>,
    out: &mut Vec<String>,
) -> smdebug_storage::Result<()> {
    for folder in folders {
        let name = folder.trim_end_matches('/');
        let name = name.rsplit('/').next().unwrap_or(name);
        if TRIAL_FOLDERS.contains(&name) {
            // Its parent was no trial: it holds files being written at most, and so no
            // trial either (`trial_roots` counts the first such folder of a key only).
            continue;
        }
        let mut marked = false;
        for marker in TRIAL_FOLDERS {
            let keys = store.list_keys(&format!("{folder}{marker}/"), None, None)?;
            if keys.iter().any(|k| !k.ends_with(TEMP_SUFFIX)) {
                marked = true;
                break;
            }
        }
        if marked {
            out.push(folder.trim_end_matches('/').to_owned());
        } else {
            roots_by_folder(store, store.list_folders(&folder)?, out)?;
        }
    }
    Ok(())
}

/// `location` with `root` (a relative `/`-separated path) below it, as a location string.
fn join(location: &Location, root: &str) -> String {
    match (location, root.is_empty()) {
        (_, true) => location.to_string(),
        (Location::Local(path), false) => path.join(root).display().to_string(),
        (other, false) => format!("{other}/{root}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nested_roots_belong_to_the_outer_trial() {
        let keys = [
            "a/index/000000000/1_worker_0.json",
            "a/tb/index/x.json",
            "ab/collections/000000000/worker_0_collections.json",
        ];
        assert_eq!(trial_roots(keys), ["a", "ab"]);
        assert!(trial_roots(["index", "x/collections", "y/index.json"]).is_empty());
    }

    #[test]
    fn joins_object_store_prefixes() {
        let l = Location::parse("s3://b").unwrap();
        assert_eq!(join(&l, "x/y"), "s3://b/x/y");
        let l = Location::parse("memory://m/p").unwrap();
        assert_eq!(join(&l, ""), "memory://m/p");
        assert_eq!(join(&l, "j"), "memory://m/p/j");
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("index".to_owned()),
            Just("collections".to_owned()),
            Just("events".to_owned()),
            "[a-z]{1,3}",
        ]
    }

    proptest! {
        /// On local disk, the trials found folder by folder are those of the keys.
        #[test]
        fn local_discovery_finds_the_roots_of_the_keys(
            keys in proptest::collection::vec(proptest::collection::vec(segment(), 1..6), 1..20),
            tmp in proptest::bool::ANY,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut written: Vec<String> = Vec::new();
            for k in keys {
                let mut k = k.join("/");
                if tmp && written.len() % 3 == 1 {
                    k.push_str(TEMP_SUFFIX);
                }
                // A file cannot also be a folder: keep the keys the disk can hold.
                let clash = written.iter().any(|w| {
                    w == &k || w.starts_with(&format!("{k}/")) || k.starts_with(&format!("{w}/"))
                });
                if clash {
                    continue;
                }
                let path = dir.path().join(&k);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, "x").unwrap();
                written.push(k);
            }
            let location = dir.path().to_str().unwrap();
            let expected: Vec<String> = match trial_roots(written.iter().map(String::as_str)) {
                roots if roots == [""] => vec![location.to_owned()],
                roots => roots,
            };
            let top_is_trial = written.iter().any(|k| {
                TRIAL_FOLDERS.iter().any(|f| k.starts_with(&format!("{f}/")))
            });
            let found: Vec<String> = discover(&[location]).unwrap().into_iter().map(|t| t.name).collect();
            if !top_is_trial {
                prop_assert_eq!(found, expected);
            }
        }

        /// Whatever the keys and their order: roots are sorted, unique, none inside
        /// another, each the prefix of a key with `index/` or `collections/` below it.
        #[test]
        fn roots_are_sorted_disjoint_and_found_in_the_keys(
            keys in proptest::collection::vec(proptest::collection::vec(segment(), 1..6), 0..20)
        ) {
            let keys: Vec<String> = keys.iter().map(|k| k.join("/")).collect();
            let roots = trial_roots(keys.iter().map(String::as_str));
            let mut reversed = keys.clone();
            reversed.reverse();
            prop_assert_eq!(&roots, &trial_roots(reversed.iter().map(String::as_str)));
            prop_assert!(roots.windows(2).all(|w| w[0] < w[1]));
            for r in &roots {
                let inside = roots.iter().any(|o| o != r && r.starts_with(&format!("{o}/")));
                prop_assert!(!inside, "{} is inside another root", r);
                let marked = |k: &String| TRIAL_FOLDERS.iter().any(|f| {
                    let head = if r.is_empty() { format!("{f}/") } else { format!("{r}/{f}/") };
                    k.starts_with(&head) && k.len() > head.len()
                });
                prop_assert!(keys.iter().any(marked), "{} in {:?}", r, keys);
            }
            if roots.iter().any(String::is_empty) {
                prop_assert_eq!(roots.len(), 1);
            }
        }
    }
}
