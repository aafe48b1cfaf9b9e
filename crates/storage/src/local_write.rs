//! Local puts: a file written under a temporary name beside its target, then renamed over it
//! (and synced as [`LocalSync`] says).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Operation, Result, StorageError};
use crate::key::{invalid, validate_key};
use crate::local_store::{LocalSync, TEMP_SUFFIX};
use crate::retry::LocalRetry;
use std::sync::Arc;

/// Makes temporary names unique among the puts of this process (the pid separates processes).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A key a put or a staged put may write: valid, and not named as the temporary files of
/// writes in progress are.
pub(crate) fn writable_key(key: &str) -> Result<()> {
    validate_key(key)?;
    if key.ends_with(TEMP_SUFFIX) {
        return Err(invalid(
            key,
            "ends with .tmp, which marks files being written on local disk",
        ));
    }
    Ok(())
}

pub(crate) fn put_blocking(path: &Path, data: &[u8], sync: LocalSync) -> io::Result<()> {
    stage_blocking(path, data, sync)?.publish()
}

/// A file written (and with [`LocalSync::Fsync`], synced) under its temporary name beside
/// `path`, not yet renamed over it. Dropped unpublished, the temporary file is removed.
#[derive(Debug)]
pub(crate) struct Temporary {
    tmp: PathBuf,
    path: PathBuf,
    sync: LocalSync,
    /// Renamed (nothing left to remove).
    published: bool,
}

impl Temporary {
    /// Renames the file over its target (and with [`LocalSync::Fsync`] syncs the folder).
    /// A failed attempt may be repeated.
    fn publish_once(&mut self) -> io::Result<()> {
        if !self.published {
            fs::rename(&self.tmp, &self.path)?;
            self.published = true;
        }
        match self.sync {
            LocalSync::Fsync => sync_dir(self.path.parent().unwrap_or(Path::new("."))),
            LocalSync::RenameOnly => Ok(()),
        }
    }

    fn publish(mut self) -> io::Result<()> {
        self.publish_once()
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `data` under a new temporary name beside `path` (the first half of a put).
pub(crate) fn stage_blocking(path: &Path, data: &[u8], sync: LocalSync) -> io::Result<Temporary> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("object");
    // A long final name must not make the temporary one exceed the file system's limit.
    let name = match name.char_indices().nth(64) {
        Some((cut, _)) => &name[..cut],
        None => name,
    };
    fs::create_dir_all(parent)?;
    let staged = Temporary {
        tmp: parent.join(format!(
            ".{name}.{}.{}{TEMP_SUFFIX}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        )),
        path: path.to_owned(),
        sync,
        published: false,
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&staged.tmp)?;
    // From here on, a failure drops `staged`, which removes the temporary file.
    file.write_all(data)?;
    if sync == LocalSync::Fsync {
        file.sync_all()?;
    }
    Ok(staged)
}

/// The local half of a [`StagedPut`]: the temporary file and what its publish needs.
#[derive(Debug)]
pub(crate) struct StagedFile {
    pub(crate) file: Temporary,
    pub(crate) retry: LocalRetry,
    pub(crate) location: String,
    pub(crate) looks: Arc<AtomicU64>,
}

impl StagedFile {
    /// Renames the file over `key`'s (transient errors retried as the store's puts are).
    pub(crate) fn publish(mut self, key: &str) -> Result<()> {
        let published = self
            .retry
            .run(|| self.file.publish_once())
            .map_err(|source| StorageError::Io {
                op: Operation::Put,
                location: self.location.clone(),
                key: key.to_owned(),
                source,
            });
        self.looks.fetch_add(1, Ordering::Release);
        published
    }
}

/// Makes the rename itself durable. Some file systems cannot fsync a folder; that is not a
/// reason to fail a put whose data is already synced.
fn sync_dir(dir: &Path) -> io::Result<()> {
    if cfg!(unix) {
        match File::open(dir).and_then(|d| d.sync_all()) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) => {}
            other => return other,
        }
    }
    Ok(())
}
