//! What the writer thread makes of a tensor: the events file and index file of a step
//! ([`StepFile`]: framed records, and index entries pointing into them), and the tensors
//! smdebug stores for reductions and health summaries (computed in one pass over the
//! tensor's elements by `smdebug-reduce`).

use crate::error::WriterError;
use smdebug_config::{HealthSummary, Mode, ReductionShape};
use smdebug_index::{
    event_file_key, index_file_key, HealthPart, IndexFile, IndexMeta, ShapeEntry, TensorEntry,
};
use smdebug_record::{RecordInfo, TensorValue};
use smdebug_reduce::{Flavor, Health, ReductionRequest, Scalar, TensorView};

/// The events and index file of one (step, worker) being assembled.
pub(crate) struct StepFile {
    /// The global step.
    pub step: i64,
    /// The framed records of the events file.
    events: Vec<u8>,
    /// The index file (`None` until the step has a record or a shape).
    index: Option<IndexFile>,
    /// The index's meta names the events file (set by the first record).
    has_event_file_name: bool,
}

/// The objects of a finished step: its events file (none for a step with only shapes),
/// then its index file, as (key, bytes).
pub(crate) struct StepObjects {
    /// The events file.
    pub events: Option<(String, Vec<u8>)>,
    /// The index file.
    pub index: (String, String),
}

impl StepFile {
    /// An empty step file of global step `step`, its records going into `events` (cleared).
    pub fn new(step: i64, mut events: Vec<u8>) -> Self {
        events.clear();
        StepFile {
            step,
            events,
            index: None,
            has_event_file_name: false,
        }
    }

    /// Whether the index names the events file already (a record was appended).
    pub fn names_event_file(&self) -> bool {
        self.has_event_file_name
    }

    /// Appends the record `encode` writes into the events file, and its index entry.
    /// `event_key`: the events file's key, named in the index by the first record.
    pub fn append(
        &mut self,
        name: String,
        (mode, mode_step): (Mode, i64),
        event_key: Option<String>,
        encode: impl FnOnce(&mut Vec<u8>, &str) -> Result<RecordInfo, smdebug_record::RecordError>,
    ) -> Result<(), WriterError> {
        let info = encode(&mut self.events, &name).map_err(|source| WriterError::Encode {
            name: name.clone(),
            step: self.step,
            source,
        })?;
        // smdebug's IndexWriter takes the meta from the first tensor record (replacing a
        // meta that only a shape set, which lacks the event file name).
        if !self.has_event_file_name {
            let meta = IndexMeta {
                mode,
                mode_step,
                event_file_name: event_key,
            };
            match &mut self.index {
                Some(index) => index.meta = meta,
                None => self.index = Some(IndexFile::new(meta)),
            }
            self.has_event_file_name = true;
        }
        if let Some(index) = self.index.as_mut() {
            index.tensors.push(TensorEntry {
                name,
                start_idx: info.offset,
                length: info.len,
                payload_crc32c: Some(info.payload_crc32c),
            });
        }
        Ok(())
    }

    /// Adds `name`'s shape entry to the index file (made on the step's first entry).
    pub fn push_shape(&mut self, (mode, mode_step): (Mode, i64), name: &str, shape: &[usize]) {
        let index = self.index.get_or_insert_with(|| {
            IndexFile::new(IndexMeta {
                mode,
                mode_step,
                event_file_name: None,
            })
        });
        index.shapes.push(ShapeEntry {
            name: name.to_owned(),
            original_name: name.to_owned(),
            shape: shape.iter().map(|&d| d as u64).collect(),
        });
    }

    /// The objects to publish for `worker`, in order; `None` for a step with no entry.
    pub fn into_objects(self, worker: &str) -> Result<Option<StepObjects>, WriterError> {
        let Some(index) = self.index else {
            return Ok(None);
        };
        let events = if self.events.is_empty() {
            None
        } else {
            Some((event_file_key(self.step, worker)?, self.events))
        };
        let index = (index_file_key(self.step, worker)?, index.to_json());
        Ok(Some(StepObjects { events, index }))
    }
}

/// The requested reductions (`None` where one cannot be computed) and, when asked for, the
/// health summary, from one pass.
pub(crate) fn reduce_tensor(
    t: &TensorValue,
    requests: &[ReductionRequest],
    health: HealthSummary,
    flavor: Flavor,
) -> (Vec<Option<Scalar>>, Option<Health>) {
    let Some(view) = t.reduce_view() else {
        return (vec![None; requests.len()], None);
    };
    let (out, health) = if health == HealthSummary::Off {
        (view.reduce(requests, flavor), None)
    } else {
        let histogram = health == HealthSummary::Histogram;
        let (out, h) = view.reduce_with_health(requests, flavor, histogram);
        (out, Some(h))
    };
    (out.into_iter().map(|r| r.ok()).collect(), health)
}

/// The health summary of a tensor the flight recorder watches, when it holds NaN or
/// infinities: a cheap all-finite scan first, since at nearly every step nothing is wrong
/// and the counts and range only go into the trigger's message.
pub(crate) fn non_finite(v: &TensorView<'_>) -> Option<Health> {
    (!v.all_finite()).then(|| v.health(false))
}

/// The records of a health summary (layout in `smdebug_index::HealthPart`).
pub(crate) fn health_tensors(h: &Health) -> Vec<(HealthPart, TensorValue)> {
    let counts = [h.elements, h.nan, h.pos_inf, h.neg_inf, h.zeros].map(saturating_i64);
    let mut out = vec![
        (
            HealthPart::Counts,
            TensorValue::from(ndarray::arr1(&counts).into_dyn()),
        ),
        (
            HealthPart::Range,
            TensorValue::from(ndarray::arr1(&[h.finite_min, h.finite_max, h.amax]).into_dyn()),
        ),
    ];
    if let Some(hist) = &h.histogram {
        let v: Vec<i64> = hist.iter().copied().map(saturating_i64).collect();
        out.push((
            HealthPart::Histogram,
            TensorValue::from(ndarray::Array1::from(v).into_dyn()),
        ));
    }
    out
}

/// A count as int64 (counts of elements held in memory never reach `i64::MAX`).
fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// A reduction result as the tensor smdebug stores: 0-d (PyTorch/TF hooks) or shape `[1]`
/// (the numpy path through `make_numpy_array`), in the result's dtype.
pub(crate) fn scalar_tensor(s: Scalar, shape: ReductionShape) -> TensorValue {
    fn arr<T: Clone>(v: T, shape: ReductionShape) -> ndarray::ArrayD<T> {
        match shape {
            ReductionShape::Scalar => ndarray::arr0(v).into_dyn(),
            ReductionShape::OneElement => ndarray::arr1(&[v]).into_dyn(),
        }
    }
    match s {
        Scalar::Bool(v) => TensorValue::from(arr(v, shape)),
        Scalar::I8(v) => TensorValue::from(arr(v, shape)),
        Scalar::I16(v) => TensorValue::from(arr(v, shape)),
        Scalar::I32(v) => TensorValue::from(arr(v, shape)),
        Scalar::I64(v) => TensorValue::from(arr(v, shape)),
        Scalar::U8(v) => TensorValue::from(arr(v, shape)),
        Scalar::U16(v) => TensorValue::from(arr(v, shape)),
        Scalar::U32(v) => TensorValue::from(arr(v, shape)),
        Scalar::U64(v) => TensorValue::from(arr(v, shape)),
        Scalar::F16(v) => TensorValue::from(arr(v, shape)),
        Scalar::F32(v) => TensorValue::from(arr(v, shape)),
        Scalar::F64(v) => TensorValue::from(arr(v, shape)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_tensors_have_the_requested_shape_and_dtype() {
        let t = scalar_tensor(Scalar::I64(6), ReductionShape::Scalar);
        assert_eq!(t.shape(), &[] as &[usize]);
        assert_eq!(t.dtype(), smdebug_record::DType::Int64);
        let t = scalar_tensor(Scalar::F32(1.5), ReductionShape::OneElement);
        assert_eq!(t.shape(), &[1]);
    }
}
