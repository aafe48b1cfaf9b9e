//! Local reads: objects opened once for many ranged reads (`SyncStorage::open_sync`), and the
//! positional reads every local read ends in.

use std::fs::File;
use std::io::{self};
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::error::{Operation, Result, StorageError};
use crate::local_store::LocalStorage;
use crate::ranges::{check_ranges, first_out_of_bounds, plan};
use crate::{Storage, SyncObject};
use std::sync::Mutex;

/// Reads `fetches` from one open file; `Ok(Err(size))` when one reaches beyond its end.
pub(crate) fn read_ranges(
    path: &Path,
    fetches: &[Range<u64>],
) -> io::Result<std::result::Result<Vec<Bytes>, u64>> {
    let file = open_object(path)?;
    let size = file.metadata()?.len();
    if fetches.iter().any(|r| r.end > size) {
        return Ok(Err(size));
    }
    read_fetches(&file, fetches).map(Ok)
}

/// Reads each of `fetches` from `file` with positional reads; a range past the file's end
/// is [`io::ErrorKind::UnexpectedEof`] (callers check the size first, so only a file cut
/// short meanwhile gets there).
fn read_fetches(file: &File, fetches: &[Range<u64>]) -> io::Result<Vec<Bytes>> {
    fetches
        .iter()
        .map(|range| {
            // Bounded by the file's size, which the caller checked.
            read_vec_at(file, (range.end - range.start) as usize, range.start).map(Bytes::from)
        })
        .collect()
}

/// Opens `path` for reading; a folder is not an object.
pub(crate) fn open_object(path: &Path) -> io::Result<File> {
    let file = File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a folder, not an object",
        ));
    }
    Ok(file)
}

/// A local file kept open for positional reads: one `pread` per merged range, where a read
/// by key resolves the path, opens, seeks and closes each time.
///
/// Whether the file still has a name (it was not removed, or replaced by a rename over it)
/// and its size are checked with an `fstat` when the store has looked for or made a change
/// since the last check (a listing, `exists`, put, publish or delete through it or a clone),
/// or when a range reaches past the size last seen. A reader learns of another process's
/// changes by listing, and the listing makes its handles check again: between two listings
/// a handle serves the bytes of the file the last one saw, so that a reader's view of its
/// events files moves with its view of the index, not between two of its reads. Checking
/// only then keeps the `fstat`, a system call costing about what reading a record does, off
/// the path that reads every value of a trial one call at a time. A file renamed over this
/// one during a read does not change the old file's bytes (objects are replaced whole, never
/// written in place).
#[derive(Debug)]
pub(crate) struct LocalObject {
    pub(crate) store: LocalStorage,
    pub(crate) key: String,
    pub(crate) file: File,
    /// `(the store's looks, the file's size)` at the last check that found it named.
    pub(crate) checked: Mutex<Option<(u64, u64)>>,
}

impl LocalObject {
    fn range_error(&self, ranges: &[Range<u64>], size: u64) -> StorageError {
        StorageError::RangeOutOfBounds {
            op: Operation::GetRange,
            location: self.store.location(),
            key: self.key.clone(),
            range: first_out_of_bounds(ranges, size).unwrap_or_default(),
            size,
        }
    }

    /// The file's current size, or `None` when it no longer has a name (removed, or
    /// replaced by a rename over it): its old bytes are no longer what the key names.
    fn current_size(&self) -> io::Result<Option<u64>> {
        let meta = self.file.metadata()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if meta.nlink() == 0 {
                return Ok(None);
            }
        }
        Ok(Some(meta.len()))
    }
}

impl SyncObject for LocalObject {
    fn key(&self) -> &str {
        &self.key
    }

    fn get_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let io_error = |e| self.store.io_error(Operation::GetRange, &self.key, e);
        check_ranges(|| self.store.location(), &self.key, ranges)?;
        let replaced = || StorageError::Replaced {
            op: Operation::GetRange,
            location: self.store.location(),
            key: self.key.clone(),
        };
        let looks = self.store.looks.load(Ordering::Acquire);
        let last = *self.checked.lock().unwrap_or_else(|p| p.into_inner());
        let size = match last {
            Some((at, size)) if at == looks && first_out_of_bounds(ranges, size).is_none() => size,
            _ => {
                let size = self
                    .current_size()
                    .map_err(io_error)?
                    .ok_or_else(replaced)?;
                // The looks read before the check: a change looked for meanwhile makes the
                // next read check again.
                *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = Some((looks, size));
                size
            }
        };
        if first_out_of_bounds(ranges, size).is_some() {
            return Err(self.range_error(ranges, size));
        }
        let plan = plan(ranges, &self.store.read);
        let fetched = match self
            .store
            .retry
            .run(|| read_fetches(&self.file, &plan.fetches))
        {
            Ok(fetched) => fetched,
            // Truncated since the size was asked: say so with its size now.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                let now = self
                    .current_size()
                    .map_err(io_error)?
                    .ok_or_else(replaced)?;
                return Err(self.range_error(ranges, now));
            }
            Err(e) => return Err(io_error(e)),
        };
        Ok(plan.slice(ranges, &fetched))
    }
}

/// `len` bytes of `file` from `offset` ([`io::ErrorKind::UnexpectedEof`] when it ends first).
///
/// Read into the new buffer's uninitialised capacity: zeroing it first, as a `&mut [u8]` for
/// `read_exact_at` needs, would add a pass over as much memory as the kernel's copy (the
/// allocator's zeroing and the page clearing behind it) to every read of a value.
#[cfg(unix)]
fn read_vec_at(file: &File, len: usize, mut offset: u64) -> io::Result<Vec<u8>> {
    // Exactly `len` of capacity (`Vec::with_capacity` guarantees it), so that a read never
    // goes past the range.
    let mut buf = Vec::with_capacity(len);
    while buf.len() < len {
        // Reads into the spare capacity and extends the length by what was read.
        match rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => offset += n as u64,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(buf)
}

#[cfg(windows)]
fn read_vec_at(file: &File, len: usize, mut offset: u64) -> io::Result<Vec<u8>> {
    use std::os::windows::fs::FileExt;
    let mut out = vec![0u8; len];
    let mut buf = &mut out[..];
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}
