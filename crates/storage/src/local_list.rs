//! Local listings: walking the folders under a prefix, hiding files being written.

use std::fs::{self};
use std::io::{self};
use std::path::Path;

use crate::key::prefix_dir;
use crate::local_store::{is_absent, TEMP_SUFFIX};
use crate::stamps::{FolderStamps, Version};
use crate::{ListOptions, ObjectMeta};

pub(crate) fn list_blocking(
    root: &Path,
    prefix: &str,
    options: ListOptions,
    stamps: &FolderStamps,
) -> io::Result<Vec<ObjectMeta>> {
    let dir = prefix_dir(prefix);
    let mut out = Vec::new();
    let bounds = Bounds {
        prefix,
        start_after: options.start_after,
        end: options.end,
        sizes: !options.names_only,
        stamps,
    };
    walk(&root.join(dir), dir, &bounds, &mut out)?;
    out.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// What a listing keeps: keys starting with `prefix`, after `start_after`, before `end`;
/// with their sizes when `sizes` (else 0, and a plain file costs no `stat`).
struct Bounds<'a> {
    prefix: &'a str,
    start_after: Option<&'a str>,
    end: Option<&'a str>,
    sizes: bool,
    stamps: &'a FolderStamps,
}

/// The folders directly under `dir` (see [`Storage::list_folders`]): the sub-folders that
/// hold at least one object.
pub(crate) fn folders_blocking(root: &Path, dir: &str) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() => {}
            Ok(_) => continue,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        }
        let sub = format!("{dir}{name}/");
        // A folder counts only when an object lies under it, as on object stores.
        if has_object(&entry.path())? {
            out.push(sub);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Whether any object (a file not being written) lies under `dir`; stops at the first.
fn has_object(dir: &Path) -> io::Result<bool> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if is_absent(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        let temp = entry.file_name().to_string_lossy().ends_with(TEMP_SUFFIX);
        if (meta.is_file() && !temp) || (meta.is_dir() && has_object(&path)?) {
            return Ok(true);
        }
    }
    Ok(false)
}

fn walk(dir: &Path, dir_key: &str, bounds: &Bounds, out: &mut Vec<ObjectMeta>) -> io::Result<()> {
    let Bounds {
        prefix,
        start_after,
        end,
        sizes,
        stamps,
    } = *bounds;
    let listed_at = std::time::SystemTime::now();
    let version = match fs::metadata(dir) {
        Ok(meta) => Version::of(&meta),
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    if let (Some(s), Some(v)) = (start_after, &version) {
        if let Some(last) = stamps.last_name(dir, v) {
            // Every key in the folder sorts at or before `start_after`: nothing to list.
            if format!("{dir_key}{last}").as_str() <= s {
                return Ok(());
            }
        }
    }
    // The greatest name while every entry is a plain file; `None` once one is not.
    let mut last: Option<String> = Some(String::new());
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        // The folder was never created or was removed while we walked: nothing in it.
        Err(e) if is_absent(&e) => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            tracing::warn!(path = %entry.path().display(), "skipping a file name that is not UTF-8");
            last = None;
            continue;
        };
        let key = format!("{dir_key}{name}");
        let file_type = match entry.file_type() {
            Ok(t) => t,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        if let Some(l) = last.as_mut().filter(|_| file_type.is_file()) {
            if name.as_str() > l.as_str() {
                l.clone_from(&name);
            }
        } else {
            last = None;
        }
        if file_type.is_dir() {
            let sub = format!("{key}/");
            let may_match = sub.starts_with(prefix) || prefix.starts_with(&sub);
            // Every key under `sub` sorts before `start_after` when `start_after` is greater
            // than `sub` without extending it.
            let all_before = start_after.is_some_and(|s| s > sub.as_str() && !s.starts_with(&sub));
            // Every key under `sub` sorts at or after `end` when `sub` does.
            let all_after = end.is_some_and(|e| sub.as_str() >= e);
            if may_match && !all_before && !all_after {
                walk(&entry.path(), &sub, bounds, out)?;
            }
            continue;
        }
        if name.ends_with(TEMP_SUFFIX)
            || !key.starts_with(prefix)
            || start_after.is_some_and(|s| key.as_str() <= s)
            || end.is_some_and(|e| key.as_str() >= e)
        {
            continue;
        }
        if file_type.is_file() && !sizes {
            // The folder entry already says it is a plain file: a names-only listing of a
            // folder of index files is then one directory read, not a `stat` per file.
            out.push(ObjectMeta { key, size: 0 });
            continue;
        }
        // Follows symbolic links; a link to a folder (or a dangling one) is not an object.
        // A plain file is asked relative to the open folder (no walk of the whole path
        // again: a third of listing a folder of index files).
        let meta = if file_type.is_file() {
            entry.metadata()
        } else {
            fs::metadata(entry.path())
        };
        let meta = match meta {
            Ok(m) => m,
            Err(e) if is_absent(&e) => continue,
            Err(e) => return Err(e),
        };
        if meta.is_file() {
            out.push(ObjectMeta {
                key,
                size: meta.len(),
            });
        }
    }
    let seen = version
        .filter(|v| v.settled(listed_at))
        .zip(last.filter(|l| !l.is_empty()));
    stamps.remember(dir, seen);
    Ok(())
}
