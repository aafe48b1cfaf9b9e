//! Index files (docs/src/format.md §10): reading what smdebug writes, writing it byte for byte.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use smdebug_config::pyjson::{write_key, write_str};

use crate::error::IndexFileError;
use crate::index_file::{
    index_mode, IndexFile, IndexMeta, ShapeEntry, TensorEntry, MAX_END_OFFSET, PAYLOAD_CRC_KEY,
};

impl IndexFile {
    /// An index file with the given meta and no entries.
    pub fn new(meta: IndexMeta) -> Self {
        IndexFile {
            meta,
            tensors: Vec::new(),
            shapes: Vec::new(),
        }
    }

    /// Parses an index file. `file` names it in errors.
    ///
    /// Accepts everything smdebug 1.0.34 writes and what its reader accepts, except values of
    /// a type smdebug never writes (a float or a numeric string where an integer belongs).
    /// Unknown keys are ignored; a missing `tensor_payload` or `shape_payload` is empty (but
    /// not both); `event_file_name` is required only when `tensor_payload` is not empty;
    /// `originalname: null` means "same as `tensorname`" (as in smdebug's `TensorShape`).
    /// Memory use is linear in the input size.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<IndexFile, IndexFileError> {
        if let Some(index) = crate::index_fast::parse(bytes) {
            return Ok(index);
        }
        Self::parse_tree(file, bytes)
    }

    /// [`IndexFile::parse`] through a JSON tree: slower, the reference for what is accepted
    /// and for the error of every document that is not (public for the equivalence tests).
    #[doc(hidden)]
    pub fn parse_tree(file: &str, bytes: &[u8]) -> Result<IndexFile, IndexFileError> {
        let doc: Value = serde_json::from_slice(bytes).map_err(|e| IndexFileError::Corrupt {
            file: file.to_owned(),
            message: e.to_string(),
            line: e.line(),
            column: e.column(),
        })?;
        Parser { file }.document(&doc)
    }

    /// The JSON this project writes: smdebug's exact text plus a [`PAYLOAD_CRC_KEY`] key
    /// after `length` in every tensor entry that has a CRC.
    pub fn to_json(&self) -> String {
        self.write(true)
    }

    /// The JSON smdebug would write for the same content, byte for byte (no
    /// [`PAYLOAD_CRC_KEY`]).
    ///
    /// Both writers emit the content as it is: a file with tensor entries but no
    /// `meta.event_file_name` is written, although neither smdebug's reader (`KeyError`) nor
    /// [`IndexFile::parse`] accepts it.
    pub fn to_python_json(&self) -> String {
        self.write(false)
    }

    fn write(&self, with_crc: bool) -> String {
        let mut out = String::with_capacity(128 + 64 * (self.tensors.len() + self.shapes.len()));
        out.push('{');
        write_key(&mut out, "meta");
        out.push('{');
        write_key(&mut out, "mode");
        write_str(&mut out, self.meta.mode.name());
        out.push_str(", ");
        write_key(&mut out, "mode_step");
        push_int(&mut out, self.meta.mode_step);
        if let Some(name) = &self.meta.event_file_name {
            out.push_str(", ");
            write_key(&mut out, "event_file_name");
            write_str(&mut out, name);
        }
        out.push_str("}, ");
        write_key(&mut out, "tensor_payload");
        out.push('[');
        for (i, t) in self.tensors.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('{');
            write_key(&mut out, "tensorname");
            write_str(&mut out, &t.name);
            out.push_str(", ");
            write_key(&mut out, "start_idx");
            push_int(&mut out, t.start_idx);
            out.push_str(", ");
            write_key(&mut out, "length");
            push_int(&mut out, t.length);
            if let (true, Some(crc)) = (with_crc, t.payload_crc32c) {
                out.push_str(", ");
                write_key(&mut out, PAYLOAD_CRC_KEY);
                push_int(&mut out, crc);
            }
            out.push('}');
        }
        out.push_str("], ");
        write_key(&mut out, "shape_payload");
        out.push('[');
        for (i, s) in self.shapes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('{');
            write_key(&mut out, "tensorname");
            write_str(&mut out, &s.name);
            out.push_str(", ");
            write_key(&mut out, "originalname");
            write_str(&mut out, &s.original_name);
            out.push_str(", ");
            write_key(&mut out, "shape");
            out.push('[');
            for (j, d) in s.shape.iter().enumerate() {
                if j > 0 {
                    out.push_str(", ");
                }
                push_int(&mut out, d);
            }
            out.push_str("]}");
        }
        out.push_str("]}");
        out
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Appends an integer as Python writes an `int`.
fn push_int(out: &mut String, value: impl std::fmt::Display) {
    // Writing into a String cannot fail.
    let _ = write!(out, "{value}");
}

struct Parser<'a> {
    file: &'a str,
}

impl Parser<'_> {
    fn missing(&self, field: String) -> IndexFileError {
        IndexFileError::MissingField {
            file: self.file.to_owned(),
            field,
        }
    }

    fn wrong(&self, field: String, expected: &'static str, found: &Value) -> IndexFileError {
        IndexFileError::WrongType {
            file: self.file.to_owned(),
            field,
            expected,
            found: type_name(found),
        }
    }

    fn range(&self, field: String, value: &Value, expected: &'static str) -> IndexFileError {
        IndexFileError::OutOfRange {
            file: self.file.to_owned(),
            field,
            value: value.to_string(),
            expected,
        }
    }

    fn object<'v>(
        &self,
        v: &'v Value,
        field: &str,
    ) -> Result<&'v Map<String, Value>, IndexFileError> {
        v.as_object()
            .ok_or_else(|| self.wrong(field.to_owned(), "an object", v))
    }

    fn get<'v>(
        &self,
        obj: &'v Map<String, Value>,
        parent: &str,
        key: &str,
    ) -> Result<(&'v Value, String), IndexFileError> {
        let field = if parent.is_empty() {
            key.to_owned()
        } else {
            format!("{parent}.{key}")
        };
        match obj.get(key) {
            Some(v) => Ok((v, field)),
            None => Err(self.missing(field)),
        }
    }

    fn string<'v>(&self, v: &'v Value, field: String) -> Result<&'v str, IndexFileError> {
        v.as_str().ok_or_else(|| self.wrong(field, "a string", v))
    }

    fn u64(&self, v: &Value, field: String) -> Result<u64, IndexFileError> {
        match v {
            Value::Number(n) => n
                .as_u64()
                .ok_or_else(|| self.range(field, v, "an integer in 0..=2^64-1")),
            _ => Err(self.wrong(field, "an integer", v)),
        }
    }

    fn i64(&self, v: &Value, field: String) -> Result<i64, IndexFileError> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .ok_or_else(|| self.range(field, v, "an integer in -2^63..=2^63-1")),
            _ => Err(self.wrong(field, "an integer", v)),
        }
    }

    fn array<'v>(&self, v: &'v Value, field: &str) -> Result<&'v [Value], IndexFileError> {
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.wrong(field.to_owned(), "an array", v))
    }

    fn document(&self, doc: &Value) -> Result<IndexFile, IndexFileError> {
        let top = self.object(doc, "(document)")?;
        let (meta_v, _) = self.get(top, "", "meta")?;
        let meta_obj = self.object(meta_v, "meta")?;
        if meta_obj.is_empty() {
            return Err(IndexFileError::EmptyMeta {
                file: self.file.to_owned(),
            });
        }
        let tensor_v = top.get("tensor_payload");
        let shape_v = top.get("shape_payload");
        if tensor_v.is_none() && shape_v.is_none() {
            return Err(IndexFileError::NoPayload {
                file: self.file.to_owned(),
            });
        }
        let tensor_items = match tensor_v {
            Some(v) => self.array(v, "tensor_payload")?,
            None => &[],
        };
        let shape_items = match shape_v {
            Some(v) => self.array(v, "shape_payload")?,
            None => &[],
        };
        let meta = self.meta(meta_obj, !tensor_items.is_empty())?;

        let mut tensors = Vec::with_capacity(tensor_items.len());
        for (i, item) in tensor_items.iter().enumerate() {
            tensors.push(self.tensor(item, &format!("tensor_payload[{i}]"))?);
        }
        let mut shapes = Vec::with_capacity(shape_items.len());
        for (i, item) in shape_items.iter().enumerate() {
            shapes.push(self.shape(item, &format!("shape_payload[{i}]"))?);
        }
        Ok(IndexFile {
            meta,
            tensors,
            shapes,
        })
    }

    fn meta(
        &self,
        meta: &Map<String, Value>,
        needs_event_file: bool,
    ) -> Result<IndexMeta, IndexFileError> {
        let (mode_v, field) = self.get(meta, "meta", "mode")?;
        let mode_text = self.string(mode_v, field)?;
        let mode = index_mode(mode_text).ok_or_else(|| IndexFileError::UnknownMode {
            file: self.file.to_owned(),
            mode: mode_text.to_owned(),
        })?;
        let (step_v, field) = self.get(meta, "meta", "mode_step")?;
        let mode_step = self.i64(step_v, field)?;
        let event_file_name = match meta.get("event_file_name") {
            Some(v) => Some(self.string(v, "meta.event_file_name".into())?.to_owned()),
            None if needs_event_file => return Err(self.missing("meta.event_file_name".into())),
            None => None,
        };
        Ok(IndexMeta {
            mode,
            mode_step,
            event_file_name,
        })
    }

    fn tensor(&self, item: &Value, at: &str) -> Result<TensorEntry, IndexFileError> {
        let obj = self.object(item, at)?;
        let (v, field) = self.get(obj, at, "tensorname")?;
        let name = self.string(v, field)?.to_owned();
        let (v, field) = self.get(obj, at, "start_idx")?;
        let start_idx = self.u64(v, field)?;
        let (v, field) = self.get(obj, at, "length")?;
        let length = self.u64(v, field.clone())?;
        if start_idx
            .checked_add(length)
            .is_none_or(|end| end > MAX_END_OFFSET)
        {
            return Err(self.range(field, v, "a length whose record ends below 2^63"));
        }
        let payload_crc32c = match obj.get(PAYLOAD_CRC_KEY) {
            None => None,
            Some(v) => {
                let field = format!("{at}.{PAYLOAD_CRC_KEY}");
                let crc = self.u64(v, field.clone())?;
                Some(u32::try_from(crc).map_err(|_| self.range(field, v, "a 32-bit CRC"))?)
            }
        };
        Ok(TensorEntry {
            name,
            start_idx,
            length,
            payload_crc32c,
        })
    }

    fn shape(&self, item: &Value, at: &str) -> Result<ShapeEntry, IndexFileError> {
        let obj = self.object(item, at)?;
        let (v, field) = self.get(obj, at, "tensorname")?;
        let name = self.string(v, field)?.to_owned();
        let (v, field) = self.get(obj, at, "originalname")?;
        let original_name = match v {
            Value::Null => name.clone(),
            _ => self.string(v, field)?.to_owned(),
        };
        let (v, field) = self.get(obj, at, "shape")?;
        let dims = self.array(v, &field)?;
        let mut shape = Vec::with_capacity(dims.len());
        for (j, d) in dims.iter().enumerate() {
            shape.push(self.u64(d, format!("{field}[{j}]"))?);
        }
        Ok(ShapeEntry {
            name,
            original_name,
            shape,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smdebug_config::Mode;

    const FILE: &str = "index/000000000/000000000003_worker_0.json";
    const EXAMPLE: &str = r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "events/000000000003/000000000003_worker_0.tfevents"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 88}], "shape_payload": []}"#;

    fn parse(text: &str) -> Result<IndexFile, IndexFileError> {
        IndexFile::parse(FILE, text.as_bytes())
    }

    #[test]
    fn format_md_example_roundtrips_byte_for_byte() {
        let index = parse(EXAMPLE).unwrap();
        assert_eq!(index.to_python_json(), EXAMPLE);
        assert_eq!(index.to_json(), EXAMPLE, "no CRC, no extra key");
        assert_eq!(
            index.meta.event_file_key().unwrap(),
            Some("events/000000000003/000000000003_worker_0.tfevents")
        );
    }

    #[test]
    fn shape_only_file() {
        let text = r#"{"meta": {"mode": "EVAL", "mode_step": 0}, "tensor_payload": [], "shape_payload": [{"tensorname": "x:0", "originalname": "x:0", "shape": [2, 3]}, {"tensorname": "s", "originalname": "t", "shape": []}]}"#;
        let index = parse(text).unwrap();
        assert_eq!(index.meta.event_file_name, None);
        assert_eq!(index.meta.event_file_key().unwrap(), None);
        assert_eq!(index.shapes[0].shape, vec![2, 3]);
        assert_eq!(index.shapes[1].original_name, "t");
        assert_eq!(index.to_python_json(), text);
    }

    #[test]
    fn crc_key_is_written_and_read() {
        let mut index = parse(EXAMPLE).unwrap();
        index.tensors[0].payload_crc32c = Some(u32::MAX);
        let ours = index.to_json();
        assert!(
            ours.contains(r#""length": 88, "payload_crc32c": 4294967295}"#),
            "{ours}"
        );
        assert_eq!(parse(&ours).unwrap(), index);
        assert_eq!(index.to_python_json(), EXAMPLE);
    }

    #[test]
    fn accepts_what_smdebug_reader_accepts() {
        // Unknown keys, missing shape_payload, whitespace around the mode, duplicate keys
        // (last wins, like Python), empty event_file_name (smdebug's dummy fixtures), null
        // originalname.
        let index = parse(r#"{"meta": {"mode": " GLOBAL\n", "mode_step": 7, "event_file_name": "", "x": 1}, "tensor_payload": [{"tensorname": "gradients/dummy:0", "start_idx": 0, "length": 1, "extra": [1]}], "other": null}"#).unwrap();
        assert_eq!(index.meta.mode, Mode::Global);
        assert_eq!(index.tensors.len(), 1);
        assert!(
            index.meta.event_file_key().is_err(),
            "empty key is not fetchable"
        );
        let index = parse(r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "mode_step": 2}, "shape_payload": [{"tensorname": "a", "originalname": null, "shape": [0]}]}"#).unwrap();
        assert_eq!(index.meta.mode_step, 2);
        assert_eq!(index.shapes[0].original_name, "a");
        let index =
            parse(r#"{"meta": {"mode": "PREDICT", "mode_step": -3}, "tensor_payload": []}"#)
                .unwrap();
        assert_eq!(index.meta.mode_step, -3);
    }

    fn field_of(e: &IndexFileError) -> Option<&str> {
        match e {
            IndexFileError::MissingField { field, .. }
            | IndexFileError::WrongType { field, .. }
            | IndexFileError::OutOfRange { field, .. } => Some(field),
            _ => None,
        }
    }

    #[test]
    fn rejects_malformed_files_naming_file_and_field() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"tensor_payload": []}"#, Some("meta")),
            (r#"{"meta": [1], "tensor_payload": []}"#, Some("meta")),
            (
                r#"{"meta": {"mode_step": 1}, "tensor_payload": []}"#,
                Some("meta.mode"),
            ),
            (
                r#"{"meta": {"mode": 1, "mode_step": 1}, "tensor_payload": []}"#,
                Some("meta.mode"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN"}, "tensor_payload": []}"#,
                Some("meta.mode_step"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1.5}, "tensor_payload": []}"#,
                Some("meta.mode_step"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": "1"}, "tensor_payload": []}"#,
                Some("meta.mode_step"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 99999999999999999999}, "tensor_payload": []}"#,
                Some("meta.mode_step"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1}]}"#,
                Some("meta.event_file_name"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": 3}, "tensor_payload": []}"#,
                Some("meta.event_file_name"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1}, "tensor_payload": null}"#,
                Some("tensor_payload"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": -1}]}"#,
                Some("tensor_payload[0].length"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": -5, "length": 1}]}"#,
                Some("tensor_payload[0].start_idx"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": 1, "length": 9223372036854775807}]}"#,
                Some("tensor_payload[0].length"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": 1, "length": 18446744073709551616}]}"#,
                Some("tensor_payload[0].length"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"start_idx": 0, "length": 1}]}"#,
                Some("tensor_payload[0].tensorname"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [7]}"#,
                Some("tensor_payload[0]"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1, "event_file_name": "e"}, "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 1, "payload_crc32c": 4294967296}]}"#,
                Some("tensor_payload[0].payload_crc32c"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [{"tensorname": "a", "shape": []}]}"#,
                Some("shape_payload[0].originalname"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [{"tensorname": "a", "originalname": "a", "shape": [2, -1]}]}"#,
                Some("shape_payload[0].shape[1]"),
            ),
            (
                r#"{"meta": {"mode": "TRAIN", "mode_step": 1}, "shape_payload": [{"tensorname": "a", "originalname": "a", "shape": "2"}]}"#,
                Some("shape_payload[0].shape"),
            ),
            (r#"[]"#, Some("(document)")),
            (r#"{"meta": {}, "tensor_payload": []}"#, None),
            (r#"{"meta": {"mode": "TRAIN", "mode_step": 1}}"#, None),
            (
                r#"{"meta": {"mode": "train", "mode_step": 1}, "tensor_payload": []}"#,
                None,
            ),
            ("", None),
            ("{", None),
            ("\u{feff}{}", None),
        ];
        for (text, field) in cases {
            let err = parse(text).expect_err(text);
            assert_eq!(field_of(&err), *field, "{text} → {err}");
            let message = err.to_string();
            assert!(message.contains(FILE), "{message} names the file");
            if let Some(field) = field {
                assert!(message.contains(field), "{message} names {field}");
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = format!(
            r#"{{"meta": {{"mode": "TRAIN", "mode_step": 1, "x": {}{}}}, "tensor_payload": []}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        assert!(matches!(parse(&deep), Err(IndexFileError::Corrupt { .. })));
        assert!(matches!(
            IndexFile::parse(FILE, b"\xff\xfe"),
            Err(IndexFileError::Corrupt { .. })
        ));
    }

    #[test]
    fn unsafe_event_file_names_are_flagged() {
        for bad in ["/etc/passwd", "../x.tfevents", "events/../../x"] {
            let meta = IndexMeta {
                mode: Mode::Train,
                mode_step: 0,
                event_file_name: Some(bad.into()),
            };
            assert!(meta.event_file_key().is_err(), "{bad}");
        }
    }
}
