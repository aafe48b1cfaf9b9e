//! TFRecord framing: `u64 LE length`, masked CRC32C of those 8 bytes, payload, `u32` footer.
//!
//! Writers choose the footer ([`Footer`]); readers accept both kinds and verify the real ones.
use crate::crc::{masked_crc32c, MAGIC_FOOTER};
use crate::error::{Position, RecordError, RecordPart, Result};
use std::io::{Read, Write};

/// Bytes of framing around each payload: 8 length + 4 length CRC + 4 footer.
pub const FRAMING_LEN: u64 = 16;

/// Bytes before the payload: 8 length + 4 length CRC.
pub const HEADER_LEN: usize = 12;

/// Bytes after the payload.
pub const FOOTER_LEN: usize = 4;

/// Payload bytes read from a stream per step, so a corrupt length field (which still passed
/// its CRC) cannot make the reader allocate more than the stream actually delivers.
const READ_CHUNK: usize = 64 * 1024;

/// What goes into the 4 bytes after a payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Footer {
    /// The constant [`MAGIC_FOOTER`] (`B3 C0 2D 06`): what smdebug writes in a trial's
    /// `events/` files, and what Python smdebug's trial reader requires there.
    Magic,
    /// The real masked CRC32C of the payload: what TensorFlow and TensorBoard write and
    /// verify (smdebug's TensorBoard files).
    Crc,
}

/// Where a written record ended up, as the index writer needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RecordInfo {
    /// Offset of the record's first byte (its length field) from the start of the output:
    /// the index file's `start_idx`.
    pub offset: u64,
    /// Whole record length including the 16 framing bytes: the index file's `length`.
    pub len: u64,
    /// Payload length alone (`len - 16`).
    pub payload_len: u64,
    /// Masked CRC32C of the payload, computed even when the footer is [`Footer::Magic`], so
    /// that it can be stored beside the record's location and checked on range reads.
    pub payload_crc32c: u32,
}

/// The 12-byte header of a record with `payload_len` payload bytes.
fn header(payload_len: u64) -> [u8; HEADER_LEN] {
    let len_bytes = payload_len.to_le_bytes();
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&len_bytes);
    h[8..].copy_from_slice(&masked_crc32c(&len_bytes).to_le_bytes());
    h
}

/// Footer value and masked payload CRC for `payload`.
fn footer_and_crc(payload: &[u8], footer: Footer) -> (u32, u32) {
    let crc = masked_crc32c(payload);
    let value = match footer {
        Footer::Magic => MAGIC_FOOTER,
        Footer::Crc => crc,
    };
    (value, crc)
}

/// Appends one framed record holding `payload` to `out` and says where it went (offsets are
/// relative to the start of `out`).
///
/// ```
/// use smdebug_record::{append_record, Footer};
/// let mut file = Vec::new();
/// let first = append_record(&mut file, b"hello", Footer::Magic);
/// let second = append_record(&mut file, b"world!", Footer::Magic);
/// assert_eq!((first.offset, first.len), (0, 21));
/// assert_eq!((second.offset, second.len), (21, 22));
/// assert_eq!(file.len(), 43);
/// ```
pub fn append_record(out: &mut Vec<u8>, payload: &[u8], footer: Footer) -> RecordInfo {
    let offset = out.len() as u64;
    let payload_len = payload.len() as u64;
    let (footer_value, crc) = footer_and_crc(payload, footer);
    out.reserve(payload.len() + FRAMING_LEN as usize);
    out.extend_from_slice(&header(payload_len));
    out.extend_from_slice(payload);
    out.extend_from_slice(&footer_value.to_le_bytes());
    RecordInfo {
        offset,
        len: payload_len + FRAMING_LEN,
        payload_len,
        payload_crc32c: crc,
    }
}

/// Appends one framed record whose payload `encode` writes straight into `out`, so a large
/// payload is not built in a buffer of its own and copied again.
///
/// `encode` must only append to the vector it gets; what it appends is the payload.
///
/// ```
/// use smdebug_record::{append_record, append_record_with, Footer};
/// let mut a = Vec::new();
/// let mut b = Vec::new();
/// let x = append_record(&mut a, b"hello", Footer::Crc);
/// let y = append_record_with(&mut b, Footer::Crc, |out| out.extend_from_slice(b"hello"));
/// assert_eq!((a, x), (b, y));
/// ```
pub fn append_record_with(
    out: &mut Vec<u8>,
    footer: Footer,
    encode: impl FnOnce(&mut Vec<u8>),
) -> RecordInfo {
    let offset = out.len();
    out.extend_from_slice(&[0u8; HEADER_LEN]);
    encode(out);
    let payload_start = offset + HEADER_LEN;
    let payload_len = (out.len() - payload_start) as u64;
    let (footer_value, crc) = footer_and_crc(&out[payload_start..], footer);
    out[offset..payload_start].copy_from_slice(&header(payload_len));
    out.extend_from_slice(&footer_value.to_le_bytes());
    RecordInfo {
        offset: offset as u64,
        len: payload_len + FRAMING_LEN,
        payload_len,
        payload_crc32c: crc,
    }
}

/// One framed record holding `payload`, as a new buffer.
pub fn encode_record(payload: &[u8], footer: Footer) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + FRAMING_LEN as usize);
    append_record(&mut out, payload, footer);
    out
}

/// Writes framed records to any [`Write`], keeping track of offsets.
///
/// Wrap a file in a [`std::io::BufWriter`] first: each record is three small writes.
///
/// ```
/// use smdebug_record::{Footer, RecordWriter};
/// let mut w = RecordWriter::new(Vec::new(), Footer::Crc);
/// let info = w.write_record(b"payload")?;
/// assert_eq!(info.len, 7 + 16);
/// assert_eq!(w.offset(), 23);
/// let bytes = w.into_inner();
/// assert_eq!(bytes.len(), 23);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
#[derive(Debug)]
pub struct RecordWriter<W> {
    inner: W,
    footer: Footer,
    offset: u64,
}

impl<W: Write> RecordWriter<W> {
    /// A writer at offset 0 of a new output.
    pub fn new(inner: W, footer: Footer) -> Self {
        Self::with_offset(inner, footer, 0)
    }

    /// A writer whose output already holds `offset` bytes (appending to an existing file).
    pub fn with_offset(inner: W, footer: Footer, offset: u64) -> Self {
        RecordWriter {
            inner,
            footer,
            offset,
        }
    }

    /// Writes one record and returns where it went.
    ///
    /// On an I/O error the output may hold part of the record, and the offset is no longer
    /// reliable: drop the writer.
    pub fn write_record(&mut self, payload: &[u8]) -> Result<RecordInfo> {
        let offset = self.offset;
        let payload_len = payload.len() as u64;
        let (footer_value, crc) = footer_and_crc(payload, self.footer);
        let io = |source| RecordError::Io {
            at: Position::at(offset),
            source,
        };
        self.inner.write_all(&header(payload_len)).map_err(io)?;
        self.inner.write_all(payload).map_err(io)?;
        self.inner
            .write_all(&footer_value.to_le_bytes())
            .map_err(io)?;
        self.offset += payload_len + FRAMING_LEN;
        Ok(RecordInfo {
            offset,
            len: payload_len + FRAMING_LEN,
            payload_len,
            payload_crc32c: crc,
        })
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> Result<()> {
        self.inner.flush().map_err(|source| RecordError::Io {
            at: Position::at(self.offset),
            source,
        })
    }

    /// Bytes written so far (plus the starting offset): where the next record will start.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The footer this writer puts on every record.
    pub fn footer(&self) -> Footer {
        self.footer
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// Gives the underlying writer back (not flushed: call [`flush`](Self::flush) first if
    /// it buffers).
    pub fn into_inner(self) -> W {
        self.inner
    }
}

/// Checks the footer of `payload` and says which kind it is.
fn check_footer(payload: &[u8], stored: u32, offset: u64) -> Result<Footer> {
    if stored == MAGIC_FOOTER {
        return Ok(Footer::Magic);
    }
    let computed = masked_crc32c(payload);
    if stored == computed {
        Ok(Footer::Crc)
    } else {
        Err(RecordError::BadDataCrc {
            at: Position::at(offset),
            expected: stored,
            computed,
        })
    }
}

/// Checks the header's length CRC and returns the declared payload length.
fn check_header(h: &[u8; HEADER_LEN], offset: u64) -> Result<u64> {
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&h[..8]);
    let mut crc_bytes = [0u8; 4];
    crc_bytes.copy_from_slice(&h[8..]);
    let stored = u32::from_le_bytes(crc_bytes);
    let computed = masked_crc32c(&len_bytes);
    if stored != computed {
        return Err(RecordError::BadLengthCrc {
            at: Position::at(offset),
            stored,
            computed,
        });
    }
    Ok(u64::from_le_bytes(len_bytes))
}

fn verify_expected(payload: &[u8], expected: u32, offset: u64) -> Result<()> {
    let computed = masked_crc32c(payload);
    if computed == expected {
        Ok(())
    } else {
        Err(RecordError::BadDataCrc {
            at: Position::at(offset),
            expected,
            computed,
        })
    }
}

/// A record read from a stream (owns its payload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Offset of the record's first byte in the stream.
    pub offset: u64,
    /// The payload (a serialized `Event` in event files).
    pub payload: Vec<u8>,
    /// Which kind of footer the record had (a real CRC footer has been verified).
    pub footer: Footer,
}

impl Record {
    /// Whole record length including the 16 framing bytes.
    pub fn len(&self) -> u64 {
        self.payload.len() as u64 + FRAMING_LEN
    }

    /// Always false: a record has at least its 16 framing bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Checks the payload against a masked CRC32C the caller knows from elsewhere (e.g. the
    /// `payload_crc32c` of an index entry); useful when the footer is the magic constant.
    pub fn verify_payload_crc32c(&self, expected: u32) -> Result<()> {
        verify_expected(&self.payload, expected, self.offset)
    }
}

/// A record inside a byte slice (borrows its payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Offset of the record's first byte, counted as the caller asked (see
    /// [`parse_record`]).
    pub offset: u64,
    /// The payload.
    pub payload: &'a [u8],
    /// Which kind of footer the record had (a real CRC footer has been verified).
    pub footer: Footer,
}

impl RecordRef<'_> {
    /// Whole record length including the 16 framing bytes.
    pub fn len(&self) -> u64 {
        self.payload.len() as u64 + FRAMING_LEN
    }

    /// Always false: a record has at least its 16 framing bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Checks the payload against a masked CRC32C the caller knows from elsewhere.
    pub fn verify_payload_crc32c(&self, expected: u32) -> Result<()> {
        verify_expected(self.payload, expected, self.offset)
    }

    /// Copies the payload into an owned [`Record`].
    pub fn to_owned_record(&self) -> Record {
        Record {
            offset: self.offset,
            payload: self.payload.to_vec(),
            footer: self.footer,
        }
    }
}

/// Parses the record at the start of `buf` (bytes after it are ignored). `base_offset` is
/// the offset of `buf[0]` in the whole input; it only goes into [`RecordRef::offset`] and
/// error locations.
pub fn parse_record(buf: &[u8], base_offset: u64) -> Result<RecordRef<'_>> {
    let at = || Position::at(base_offset);
    if buf.len() < HEADER_LEN {
        return Err(RecordError::Truncated {
            at: at(),
            part: RecordPart::Header,
            needed: HEADER_LEN as u64,
            available: buf.len() as u64,
        });
    }
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(&buf[..HEADER_LEN]);
    let declared = check_header(&h, base_offset)?;
    let rest = &buf[HEADER_LEN..];
    // Compare in u64: `declared` may not fit in usize.
    if declared > rest.len() as u64 {
        return Err(RecordError::LengthBeyondInput {
            at: at(),
            declared,
            available: rest.len() as u64,
        });
    }
    let payload_len = declared as usize;
    let (payload, after) = rest.split_at(payload_len);
    if after.len() < FOOTER_LEN {
        return Err(RecordError::Truncated {
            at: at(),
            part: RecordPart::Footer,
            needed: FOOTER_LEN as u64,
            available: after.len() as u64,
        });
    }
    let mut f = [0u8; FOOTER_LEN];
    f.copy_from_slice(&after[..FOOTER_LEN]);
    let footer = check_footer(payload, u32::from_le_bytes(f), base_offset)?;
    Ok(RecordRef {
        offset: base_offset,
        payload,
        footer,
    })
}

/// Decodes the one record at `start..start + length` of `file`, as an index entry gives it
/// (`start_idx`, `length` = whole record including the 16 framing bytes).
///
/// The range must hold exactly one record: a record that is shorter or longer than `length`
/// is an error ([`RecordError::LengthMismatch`] or [`RecordError::LengthBeyondInput`]).
///
/// ```
/// use smdebug_record::{append_record, decode_record_at, Footer};
/// let mut file = Vec::new();
/// append_record(&mut file, b"first", Footer::Magic);
/// let info = append_record(&mut file, b"second", Footer::Magic);
/// let rec = decode_record_at(&file, info.offset, info.len)?;
/// assert_eq!(rec.payload, b"second");
/// rec.verify_payload_crc32c(info.payload_crc32c)?;
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
pub fn decode_record_at(file: &[u8], start: u64, length: u64) -> Result<RecordRef<'_>> {
    let available = file.len() as u64;
    let end = start.checked_add(length);
    match end {
        Some(end) if end <= available => {}
        _ => {
            return Err(RecordError::RangeOutOfBounds {
                at: Position::at(start),
                length,
                available,
            })
        }
    }
    // Both fit in usize now: they are at most file.len().
    let slice = &file[start as usize..(start + length) as usize];
    decode_exact_record(slice, start)
}

/// Decodes `bytes` as exactly one record (the result of a ranged read of one index entry).
/// `base_offset` is where `bytes` started in the file, for error messages.
pub fn decode_exact_record(bytes: &[u8], base_offset: u64) -> Result<RecordRef<'_>> {
    let rec = parse_record(bytes, base_offset)?;
    if rec.len() != bytes.len() as u64 {
        return Err(RecordError::LengthMismatch {
            at: Position::at(base_offset),
            expected: bytes.len() as u64,
            actual: rec.len(),
        });
    }
    Ok(rec)
}

/// Iterates over the records of a whole event file held in memory, without copying.
///
/// Stops after the first error.
///
/// ```
/// use smdebug_record::{append_record, records, Footer};
/// let mut file = Vec::new();
/// append_record(&mut file, b"a", Footer::Magic);
/// append_record(&mut file, b"bc", Footer::Crc);
/// let payloads: Vec<&[u8]> = records(&file).map(|r| r.map(|r| r.payload)).collect::<Result<_, _>>()?;
/// assert_eq!(payloads, [&b"a"[..], &b"bc"[..]]);
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
pub fn records(file: &[u8]) -> SliceRecords<'_> {
    SliceRecords {
        rest: file,
        offset: 0,
        failed: false,
    }
}

/// Iterator returned by [`records`].
#[derive(Debug, Clone)]
pub struct SliceRecords<'a> {
    rest: &'a [u8],
    offset: u64,
    failed: bool,
}

impl<'a> Iterator for SliceRecords<'a> {
    type Item = Result<RecordRef<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match parse_record(self.rest, self.offset) {
            Ok(rec) => {
                let len = rec.len() as usize;
                self.rest = &self.rest[len..];
                self.offset += len as u64;
                Some(Ok(rec))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads records one by one from any [`Read`] (a file, a network body, a slice).
///
/// Every record's length CRC is verified; a footer may be the smdebug magic constant or the
/// real payload CRC, which is then verified. The end of the stream exactly between two
/// records ends the iteration; anywhere else it is an [`RecordError::Truncated`]. After the first
/// error the iterator yields nothing more. The payload is read in bounded chunks, so a huge
/// length field costs only as much memory as the stream actually delivers.
///
/// ```
/// use smdebug_record::{encode_record, Footer, RecordReader};
/// let mut bytes = encode_record(b"one", Footer::Magic);
/// bytes.extend(encode_record(b"two", Footer::Crc));
/// let mut reader = RecordReader::new(&bytes[..]).with_name("mem.tfevents");
/// let first = reader.next().unwrap()?;
/// assert_eq!((first.offset, &first.payload[..], first.footer), (0, &b"one"[..], Footer::Magic));
/// let second = reader.next().unwrap()?;
/// assert_eq!((second.offset, second.footer), (19, Footer::Crc));
/// assert!(reader.next().is_none());
/// # Ok::<(), smdebug_record::RecordError>(())
/// ```
#[derive(Debug)]
pub struct RecordReader<R> {
    inner: R,
    offset: u64,
    name: Option<String>,
    done: bool,
}

impl<R: Read> RecordReader<R> {
    /// A reader positioned at offset 0 of the stream.
    pub fn new(inner: R) -> Self {
        Self::with_offset(inner, 0)
    }

    /// A reader whose stream starts at `offset` of the file (e.g. after a seek), so that
    /// record offsets and errors count from the start of the file.
    pub fn with_offset(inner: R, offset: u64) -> Self {
        RecordReader {
            inner,
            offset,
            name: None,
            done: false,
        }
    }

    /// Names the input in errors (a path or object key).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Offset where the next record starts.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Gives the underlying reader back.
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads the next record: `Ok(None)` at a clean end of the stream.
    pub fn read_record(&mut self) -> Result<Option<Record>> {
        if self.done {
            return Ok(None);
        }
        let result = self.read_record_inner();
        match &result {
            Ok(Some(rec)) => self.offset += rec.len(),
            Ok(None) | Err(_) => self.done = true,
        }
        result.map_err(|e| match &self.name {
            Some(name) => e.with_file(name.clone()),
            None => e,
        })
    }

    fn read_record_inner(&mut self) -> Result<Option<Record>> {
        let offset = self.offset;
        let mut h = [0u8; HEADER_LEN];
        let got = self.fill(&mut h)?;
        if got == 0 {
            return Ok(None);
        }
        if got < HEADER_LEN {
            return Err(RecordError::Truncated {
                at: Position::at(offset),
                part: RecordPart::Header,
                needed: HEADER_LEN as u64,
                available: got as u64,
            });
        }
        let declared = check_header(&h, offset)?;
        let mut payload = Vec::new();
        let mut remaining = declared;
        while remaining > 0 {
            let chunk = remaining.min(READ_CHUNK as u64) as usize;
            let start = payload.len();
            payload.resize(start + chunk, 0);
            let got = self.fill(&mut payload[start..])?;
            if got < chunk {
                return Err(RecordError::Truncated {
                    at: Position::at(offset),
                    part: RecordPart::Payload,
                    needed: declared,
                    available: (start + got) as u64,
                });
            }
            remaining -= chunk as u64;
        }
        let mut f = [0u8; FOOTER_LEN];
        let got = self.fill(&mut f)?;
        if got < FOOTER_LEN {
            return Err(RecordError::Truncated {
                at: Position::at(offset),
                part: RecordPart::Footer,
                needed: FOOTER_LEN as u64,
                available: got as u64,
            });
        }
        let footer = check_footer(&payload, u32::from_le_bytes(f), offset)?;
        Ok(Some(Record {
            offset,
            payload,
            footer,
        }))
    }

    /// Reads until `buf` is full or the stream ends; returns the bytes read.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(RecordError::Io {
                        at: Position::at(self.offset),
                        source,
                    })
                }
            }
        }
        Ok(filled)
    }
}

impl<R: Read> Iterator for RecordReader<R> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout_is_length_crc_payload_footer() {
        let rec = encode_record(b"abc", Footer::Magic);
        assert_eq!(&rec[..8], &3u64.to_le_bytes());
        assert_eq!(
            &rec[8..12],
            &masked_crc32c(&3u64.to_le_bytes()).to_le_bytes()
        );
        assert_eq!(&rec[12..15], b"abc");
        assert_eq!(&rec[15..], &[0xB3, 0xC0, 0x2D, 0x06]);
        let rec = encode_record(b"abc", Footer::Crc);
        assert_eq!(&rec[15..], &masked_crc32c(b"abc").to_le_bytes());
    }

    #[test]
    fn writer_reports_offsets_and_the_real_payload_crc_even_with_magic_footer() {
        let mut w = RecordWriter::with_offset(Vec::new(), Footer::Magic, 100);
        let a = w.write_record(b"xy").unwrap();
        let b = w.write_record(b"").unwrap();
        assert_eq!(
            a,
            RecordInfo {
                offset: 100,
                len: 18,
                payload_len: 2,
                payload_crc32c: masked_crc32c(b"xy")
            }
        );
        assert_eq!((b.offset, b.len, b.payload_len), (118, 16, 0));
        assert_eq!(w.offset(), 134);
        assert_eq!(w.into_inner().len(), 34);
    }

    #[test]
    fn empty_payload_roundtrips() {
        let rec = encode_record(b"", Footer::Crc);
        let r = decode_exact_record(&rec, 0).unwrap();
        assert!(r.payload.is_empty());
        assert_eq!(r.footer, Footer::Crc);
    }

    #[test]
    fn bad_length_crc_is_reported_with_offset_and_file() {
        let mut bytes = encode_record(b"one", Footer::Magic);
        bytes.extend(encode_record(b"two", Footer::Magic));
        bytes[19 + 8] ^= 1;
        let mut r = RecordReader::new(&bytes[..]).with_name("f.tfevents");
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err();
        assert!(matches!(err, RecordError::BadLengthCrc { .. }), "{err}");
        assert_eq!(
            err.location(),
            &Position {
                file: Some("f.tfevents".into()),
                offset: Some(19)
            }
        );
        assert_eq!(
            err.to_string().split(':').next().unwrap(),
            "f.tfevents at byte 19"
        );
        assert!(r.next().is_none(), "reader stops after an error");
    }

    #[test]
    fn wrong_crc_footer_is_bad_data_crc() {
        let mut bytes = encode_record(b"payload", Footer::Crc);
        let n = bytes.len();
        bytes[n - 1] ^= 0x80;
        let err = parse_record(&bytes, 7).unwrap_err();
        assert!(matches!(err, RecordError::BadDataCrc { .. }), "{err}");
        assert_eq!(err.location().offset, Some(7));
    }

    #[test]
    fn caller_supplied_crc_is_checked() {
        let bytes = encode_record(b"payload", Footer::Magic);
        let r = parse_record(&bytes, 0).unwrap();
        r.verify_payload_crc32c(masked_crc32c(b"payload")).unwrap();
        let err = r
            .verify_payload_crc32c(masked_crc32c(b"other"))
            .unwrap_err();
        assert!(matches!(err, RecordError::BadDataCrc { .. }));
    }

    #[test]
    fn huge_declared_length_is_an_error_not_an_allocation() {
        let len = u64::MAX - 3;
        let mut bytes = len.to_le_bytes().to_vec();
        bytes.extend(masked_crc32c(&len.to_le_bytes()).to_le_bytes());
        bytes.extend(b"short");
        let err = parse_record(&bytes, 0).unwrap_err();
        assert!(matches!(
            err,
            RecordError::LengthBeyondInput {
                declared,
                available: 5,
                ..
            } if declared == len
        ));
        let err = RecordReader::new(&bytes[..]).next().unwrap().unwrap_err();
        assert!(matches!(
            err,
            RecordError::Truncated {
                part: RecordPart::Payload,
                available: 5,
                ..
            }
        ));
    }

    #[test]
    fn decode_record_at_checks_the_range_and_the_length() {
        let mut file = Vec::new();
        let a = append_record(&mut file, b"aaaa", Footer::Magic);
        let b = append_record(&mut file, b"bb", Footer::Magic);
        assert_eq!(
            decode_record_at(&file, b.offset, b.len).unwrap().payload,
            b"bb"
        );
        assert!(matches!(
            decode_record_at(&file, b.offset, b.len + 1),
            Err(RecordError::RangeOutOfBounds { .. })
        ));
        assert!(matches!(
            decode_record_at(&file, u64::MAX, 2),
            Err(RecordError::RangeOutOfBounds { .. })
        ));
        // A range covering two records is not one record.
        assert!(matches!(
            decode_record_at(&file, a.offset, a.len + b.len),
            Err(RecordError::LengthMismatch {
                expected: 38,
                actual: 20,
                ..
            })
        ));
        // A range shorter than the record.
        assert!(matches!(
            decode_record_at(&file, a.offset, a.len - 1),
            Err(RecordError::Truncated {
                part: RecordPart::Footer,
                ..
            })
        ));
        assert!(matches!(
            decode_record_at(&file, a.offset, a.len - 5),
            Err(RecordError::LengthBeyondInput { .. })
        ));
    }

    #[test]
    fn slice_iterator_walks_all_records() {
        let mut file = Vec::new();
        for p in [&b"x"[..], b"", b"zzz"] {
            append_record(&mut file, p, Footer::Crc);
        }
        let got: Vec<(u64, Vec<u8>)> = records(&file)
            .map(|r| r.map(|r| (r.offset, r.payload.to_vec())))
            .collect::<Result<_>>()
            .unwrap();
        assert_eq!(
            got,
            vec![(0, b"x".to_vec()), (17, vec![]), (33, b"zzz".to_vec())]
        );
    }
}
