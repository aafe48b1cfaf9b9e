//! Reading a value once: for readers that go through a trial's values one by one and want a
//! summary of each (statistics, a few elements), not the values kept.
//!
//! [`fetch_once`] reads a record that is not cached on its own, checks it as
//! [`crate::values::decode::decode_value`] does, and leaves its elements as the record holds them
//! ([`EncodedTensor`]): no array is allocated, no element copied, and nothing goes into the
//! value cache, which a one-pass scan would only fill with values never asked for again.
//! What the cache holds, and the small events files that `fetch_values` reads whole on
//! their second miss, are served as `fetch_values` serves them (decoded, cached), so that
//! a scan over many small records keeps its one read per file.

use crate::error::{Result, TrialError};
use crate::index::state::RecordLocation;
use crate::sync::lock;
use crate::values::cache::{cached, Admit, ValueCache};
use crate::values::decode::{check_event, record_payload};
use crate::values::fetch::fetch_values;
use crate::values::file_cache::FileCache;
use crate::values::open_files::{read_open, Slot};
use smdebug_record::{decode_tensor_event_encoded, EncodedTensor, TensorValue};
use smdebug_storage::{BlockingStore, Bytes};
use std::sync::{Arc, Mutex};

/// A raw value as [`crate::Tensor::value_once`] gives it: decoded (the trial had it cached,
/// or read its small events file whole), or as its record holds it.
#[derive(Debug, Clone)]
pub enum OnceValue {
    /// A decoded value, shared with the trial's cache.
    Decoded(Arc<TensorValue>),
    /// The record's tensor, its elements not decoded.
    Encoded(EncodedTensor),
}

impl OnceValue {
    /// The element type.
    pub fn dtype(&self) -> smdebug_record::DType {
        match self {
            OnceValue::Decoded(v) => v.dtype(),
            OnceValue::Encoded(e) => e.dtype(),
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            OnceValue::Decoded(v) => v.shape(),
            OnceValue::Encoded(e) => e.shape(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            OnceValue::Decoded(v) => v.len(),
            OnceValue::Encoded(e) => e.len(),
        }
    }

    /// Whether the value has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`smdebug_reduce::finite_stats`] of the elements (from the record's bytes when
    /// encoded; bit for bit the same either way); `None` for complex numbers and strings.
    pub fn finite_stats(&self) -> Option<smdebug_reduce::FiniteStats> {
        match self {
            OnceValue::Decoded(v) => Some(v.reduce_view()?.finite_stats()),
            OnceValue::Encoded(e) => e.finite_stats(),
        }
    }

    /// The value, decoded (a copy of the elements when encoded).
    pub fn value(&self) -> Result<Arc<TensorValue>> {
        match self {
            OnceValue::Decoded(v) => Ok(Arc::clone(v)),
            OnceValue::Encoded(e) => Ok(Arc::new(e.decode()?)),
        }
    }
}

/// The value of `loc` for a reader that reads it once (see the module's documentation).
pub(crate) fn fetch_once(
    store: &BlockingStore,
    cache: &Mutex<ValueCache>,
    readahead: &Mutex<FileCache>,
    loc: &RecordLocation,
) -> Result<OnceValue> {
    let budget = {
        let cache = lock(cache);
        if let Some(v) = cached(&cache, loc) {
            return Ok(OnceValue::Decoded(v));
        }
        cache.budget
    };
    let decoded = || match fetch_values(store, cache, readahead, &[loc], Admit::Policy).pop() {
        Some(v) => v.map(OnceValue::Decoded),
        None => Err(TrialError::tensor_unavailable_for_step(
            &loc.tag,
            loc.mode_step,
            loc.mode,
            false,
        )),
    };
    // Object stores: `fetch_values` groups, reads ahead and retries as it should.
    let storage = Arc::clone(store.storage());
    let Some(sync) = storage.as_sync() else {
        return decoded();
    };
    let file = &loc.event_file;
    let slot = {
        let mut files = lock(readahead);
        // The decision `fetch_values` takes for this file (a small file is read whole on
        // its second miss, and its records cached as one entry).
        if files.reads_whole(file, loc.event_file_end, budget) {
            drop(files);
            return decoded();
        }
        files.open.plan(file)
    };
    let mut handle = match &slot {
        Slot::Held(h) => Some(Arc::clone(h)),
        Slot::Reserved | Slot::Closed => None,
    };
    let range = loc.start..loc.start.saturating_add(loc.length);
    let read = read_open(sync, file, &mut handle, std::slice::from_ref(&range));
    if matches!(slot, Slot::Closed) {
        handle = None;
    }
    lock(readahead).open.keep(file, &slot, handle);
    let bytes = match read.map(|mut parts| parts.pop()) {
        Ok(Some(bytes)) => bytes,
        // As `fetch_values` treats a file that is gone: the value is not there.
        Err(e) if e.is_not_found() => {
            return Err(TrialError::tensor_unavailable_for_step(
                &loc.tag,
                loc.mode_step,
                loc.mode,
                false,
            ))
        }
        // Past a truncated file's end: the error of a read of the record on its own.
        Err(e) if e.is_range_error() => store.get_range(file, range)?,
        Err(e) => return Err(TrialError::Storage(e)),
        Ok(None) => {
            return Err(TrialError::InvalidArgument {
                message: "internal: a record was not read".into(),
            })
        }
    };
    decode_encoded(loc, &bytes).map(OnceValue::Encoded)
}

/// [`crate::values::decode::decode_value`] leaving the elements encoded: the same checks, the same
/// errors.
pub(crate) fn decode_encoded(loc: &RecordLocation, bytes: &Bytes) -> Result<EncodedTensor> {
    let event = decode_tensor_event_encoded(record_payload(loc, bytes)?).map_err(|e| {
        e.with_file(loc.event_file.to_string())
            .with_offset(loc.start)
    })?;
    check_event(loc, event.tag, event.step)?;
    Ok(event.tensor)
}
