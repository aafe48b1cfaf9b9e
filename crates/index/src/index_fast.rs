//! A typed parser for index files in the layout every writer produces (both payload lists
//! present, no nulls, no duplicate keys). It allocates only what the result keeps instead
//! of building a JSON tree first, which matters when a trial with tens of thousands of
//! records is opened.
//!
//! It returns `None` whenever the document is anything else — including every document the
//! tree parser would reject — and [`IndexFile::parse`] then falls back to the tree parser,
//! which is the reference for what is accepted and for the error messages. A property test
//! checks that whatever this parser accepts, the tree parser accepts with the same result.

use serde::{Deserialize, Deserializer};

use crate::index_file::{
    index_mode, IndexFile, IndexMeta, ShapeEntry, TensorEntry, MAX_END_OFFSET,
};

#[derive(Deserialize)]
struct Doc {
    meta: Meta,
    tensor_payload: Vec<Entry>,
    shape_payload: Vec<Shape>,
}

#[derive(Deserialize)]
struct Meta {
    mode: String,
    mode_step: i64,
    #[serde(default, deserialize_with = "present")]
    event_file_name: Option<String>,
}

#[derive(Deserialize)]
struct Entry {
    tensorname: String,
    start_idx: u64,
    length: u64,
    #[serde(default, deserialize_with = "present")]
    payload_crc32c: Option<u32>,
}

#[derive(Deserialize)]
struct Shape {
    tensorname: String,
    // Required, but may be null ("same as tensorname").
    #[serde(deserialize_with = "nullable")]
    originalname: Option<String>,
    shape: Vec<u64>,
}

/// An optional key that must not be null when present (null is the tree parser's business).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// The index file, or `None` when the tree parser must decide.
pub(crate) fn parse(bytes: &[u8]) -> Option<IndexFile> {
    // Checked as UTF-8 in one pass up front, the strings need no check of their own while
    // parsing (a tenth of the parse).
    let text = std::str::from_utf8(bytes).ok()?;
    let doc: Doc = serde_json::from_str(text).ok()?;
    let mode = index_mode(&doc.meta.mode)?;
    if !doc.tensor_payload.is_empty() && doc.meta.event_file_name.is_none() {
        return None;
    }
    let mut tensors = Vec::with_capacity(doc.tensor_payload.len());
    for e in doc.tensor_payload {
        if e.start_idx
            .checked_add(e.length)
            .is_none_or(|end| end > MAX_END_OFFSET)
        {
            return None;
        }
        tensors.push(TensorEntry {
            name: e.tensorname,
            start_idx: e.start_idx,
            length: e.length,
            payload_crc32c: e.payload_crc32c,
        });
    }
    let shapes = doc
        .shape_payload
        .into_iter()
        .map(|s| ShapeEntry {
            original_name: s.originalname.unwrap_or_else(|| s.tensorname.clone()),
            name: s.tensorname,
            shape: s.shape,
        })
        .collect();
    Some(IndexFile {
        meta: IndexMeta {
            mode,
            mode_step: doc.meta.mode_step,
            event_file_name: doc.meta.event_file_name,
        },
        tensors,
        shapes,
    })
}
