//! Decoding tensor records as their index entries describe them: one record from its bytes,
//! or every record of an events file read whole.

use crate::error::{Result, TrialError};
use crate::index::state::RecordLocation;
use crate::values::cache::{Cached, DecodedFile};
use smdebug_record::{
    decode_exact_record, decode_tensor_event_bytes, masked_crc32c, records, TensorValue, HEADER_LEN,
};
use smdebug_storage::Bytes;
use std::sync::Arc;

/// Every tensor record of the first bytes of an events file read whole, decoded in one
/// pass while the bytes are hot: `(offset, record)` in file order. Payload CRCs are
/// computed here, so that a hit is checked against the index's `payload_crc32c` later. A
/// record that does not decode as a tensor event (the file-version event at offset 0) is
/// left out; the first framing error ends the pass (what follows is read record by record,
/// with that record's own error).
pub(crate) fn decode_all(whole: &Bytes) -> DecodedFile {
    let mut offsets = Vec::new();
    let mut out = Vec::new();
    for rec in records(whole) {
        let Ok(rec) = rec else { break };
        let start = rec.offset as usize + HEADER_LEN;
        let payload = whole.slice(start..start + rec.payload.len());
        let Ok(event) = decode_tensor_event_bytes(payload) else {
            continue;
        };
        offsets.push(rec.offset);
        out.push(Cached {
            value: Arc::new(event.tensor),
            tag: Arc::from(event.tag),
            step: event.step,
            length: rec.len(),
            crc: Some(masked_crc32c(rec.payload)),
        });
    }
    DecodedFile {
        offsets: offsets.into(),
        records: out.into(),
    }
}

/// Decodes one record's bytes as the index entry `loc` describes it.
pub(crate) fn decode_value(loc: &RecordLocation, bytes: &Bytes) -> Result<TensorValue> {
    // The payload as a slice of the read buffer, so the values are not copied twice.
    let event = decode_tensor_event_bytes(record_payload(loc, bytes)?).map_err(|e| {
        e.with_file(loc.event_file.to_string())
            .with_offset(loc.start)
    })?;
    check_event(loc, event.tag, event.step)?;
    Ok(event.tensor)
}

/// The payload of the record `bytes` holds, its framing and (when the index has it) its
/// payload CRC checked as the index entry `loc` describes it: a slice of `bytes`.
pub(crate) fn record_payload(loc: &RecordLocation, bytes: &Bytes) -> Result<Bytes> {
    let file = || loc.event_file.to_string();
    let record = decode_exact_record(bytes, loc.start).map_err(|e| e.with_file(file()))?;
    if let Some(crc) = loc.payload_crc32c {
        record
            .verify_payload_crc32c(crc)
            .map_err(|e| e.with_file(file()))?;
    }
    Ok(bytes.slice(HEADER_LEN..HEADER_LEN + record.payload.len()))
}

/// Whether a record's event (its `tag` and global `step`) is the one `loc` names.
pub(crate) fn check_event(loc: &RecordLocation, tag: String, step: i64) -> Result<()> {
    let file = || loc.event_file.to_string();
    if tag != loc.tag {
        return Err(TrialError::WrongRecord {
            file: file(),
            offset: loc.start,
            expected: loc.tag.clone(),
            found: tag,
        });
    }
    if step != loc.step {
        return Err(TrialError::WrongStep {
            file: file(),
            offset: loc.start,
            index_file: loc.index_file.to_string(),
            expected: loc.step,
            found: step,
        });
    }
    Ok(())
}
