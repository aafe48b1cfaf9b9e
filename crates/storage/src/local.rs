//! The local filesystem backend: [`LocalStorage`] as a [`Storage`] and a [`SyncStorage`].

use std::fs::{self};
use std::ops::Range;

use async_trait::async_trait;
use bytes::Bytes;

use crate::error::{Operation, Result, StorageError};
use crate::key::{validate_key, validate_prefix};
use crate::local_list::{folders_blocking, list_blocking};
use crate::local_read::{open_object, read_ranges, LocalObject};
use crate::local_store::{is_absent, LocalStorage};
use crate::local_write::{put_blocking, stage_blocking, writable_key, StagedFile};
use crate::ranges::{check_ranges, first_out_of_bounds, plan};
use crate::{ListOptions, ObjectMeta, StagedPut, Storage, SyncObject, SyncStorage};
use std::sync::{Arc, Mutex};

#[async_trait]
impl Storage for LocalStorage {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    async fn list_opts(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let (me, p, s, e, names_only) = (
            self.clone(),
            prefix.to_owned(),
            options.start_after.map(str::to_owned),
            options.end.map(str::to_owned),
            options.names_only,
        );
        self.blocking(move || {
            let options = ListOptions {
                start_after: s.as_deref(),
                end: e.as_deref(),
                names_only,
            };
            me.list_opts_sync(&p, options)
        })
        .await?
    }

    async fn list_folders(&self, dir: &str) -> Result<Vec<String>> {
        let (me, d) = (self.clone(), dir.to_owned());
        self.blocking(move || me.list_folders_sync(&d)).await?
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.get_sync(&k)).await?
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.get_range_sync(&k, range)).await?
    }

    async fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        validate_key(key)?;
        let (me, k, r) = (self.clone(), key.to_owned(), ranges.to_vec());
        self.blocking(move || me.get_ranges_sync(&k, &r)).await?
    }

    async fn put(&self, key: &str, data: Bytes) -> Result<()> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.put_sync(&k, data)).await?
    }

    async fn exists(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.exists_sync(&k)).await?
    }

    async fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let (me, k) = (self.clone(), key.to_owned());
        self.blocking(move || me.delete_sync(&k)).await?
    }

    fn as_sync(&self) -> Option<&dyn SyncStorage> {
        Some(self)
    }
}

impl SyncStorage for LocalStorage {
    fn put_sync(&self, key: &str, data: Bytes) -> Result<()> {
        writable_key(key)?;
        let path = self.path(key);
        let put = self
            .retry
            .run(|| put_blocking(&path, &data, self.sync))
            .map_err(|e| self.io_error(Operation::Put, key, e));
        self.looked();
        put
    }

    fn stage_sync(&self, key: &str, data: Bytes) -> Result<StagedPut> {
        writable_key(key)?;
        let path = self.path(key);
        let file = self
            .retry
            .run(|| stage_blocking(&path, &data, self.sync))
            .map_err(|e| self.io_error(Operation::Put, key, e))?;
        Ok(StagedPut::written(
            key,
            StagedFile {
                file,
                retry: self.retry.clone(),
                location: self.location(),
                looks: Arc::clone(&self.looks),
            },
        ))
    }

    fn exists_sync(&self, key: &str) -> Result<bool> {
        validate_key(key)?;
        let path = self.path(key);
        let exists = self
            .retry
            .run(|| match fs::metadata(&path) {
                Ok(m) => Ok(m.is_file()),
                Err(e) if is_absent(&e) => Ok(false),
                Err(e) => Err(e),
            })
            .map_err(|e| self.io_error(Operation::Exists, key, e));
        self.looked();
        exists
    }

    fn delete_sync(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let path = self.path(key);
        let deleted = self
            .retry
            .run(|| match fs::remove_file(&path) {
                Err(e) if is_absent(&e) => Ok(()),
                other => other,
            })
            .map_err(|e| self.io_error(Operation::Delete, key, e));
        self.looked();
        deleted
    }

    fn list_opts_sync(&self, prefix: &str, options: ListOptions<'_>) -> Result<Vec<ObjectMeta>> {
        validate_prefix(prefix)?;
        let listed = self
            .retry
            .run(|| list_blocking(&self.root, prefix, options, &self.stamps))
            .map_err(|e| self.io_error(Operation::List, prefix, e));
        self.looked();
        listed
    }

    fn list_folders_sync(&self, dir: &str) -> Result<Vec<String>> {
        crate::validate_folder(dir)?;
        let listed = self
            .retry
            .run(|| folders_blocking(&self.root, dir))
            .map_err(|e| self.io_error(Operation::List, dir, e));
        self.looked();
        listed
    }

    fn get_sync(&self, key: &str) -> Result<Bytes> {
        validate_key(key)?;
        let path = self.path(key);
        self.retry
            .run(|| fs::read(&path))
            .map(Bytes::from)
            .map_err(|e| self.io_error(Operation::Get, key, e))
    }

    fn get_range_sync(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        Ok(self
            .get_ranges_sync(key, std::slice::from_ref(&range))?
            .pop()
            .unwrap_or_default())
    }

    fn open_sync(&self, key: &str) -> Result<Arc<dyn SyncObject>> {
        validate_key(key)?;
        let path = self.path(key);
        let file = self
            .retry
            .run(|| open_object(&path))
            .map_err(|e| self.io_error(Operation::Get, key, e))?;
        Ok(Arc::new(LocalObject {
            store: self.clone(),
            key: key.to_owned(),
            file,
            checked: Mutex::new(None),
        }))
    }

    /// One open file for all ranges; merged as the store's [`ReadOptions`](crate::ReadOptions) say, read one
    /// after the other (from the page cache, parallel reads of one file gain nothing).
    fn get_ranges_sync(&self, key: &str, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        validate_key(key)?;
        check_ranges(|| self.location(), key, ranges)?;
        let plan = plan(ranges, &self.read);
        let path = self.path(key);
        let read = self
            .retry
            .run(|| read_ranges(&path, &plan.fetches))
            .map_err(|e| self.io_error(Operation::GetRange, key, e))?;
        match read {
            Ok(fetched) => Ok(plan.slice(ranges, &fetched)),
            Err(size) => Err(StorageError::RangeOutOfBounds {
                op: Operation::GetRange,
                location: self.location(),
                key: key.to_owned(),
                range: first_out_of_bounds(ranges, size).unwrap_or_default(),
                size,
            }),
        }
    }
}
