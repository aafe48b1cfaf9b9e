//! The one error type of the crate: every failure says where it happened (file name when the
//! caller gave one, byte offset of the record when known) and what was wrong.
use std::fmt;

/// Where in the input an error happened.
///
/// The crate never opens files, so `file` is whatever name the caller attached with
/// [`RecordReader::with_name`](crate::RecordReader::with_name) or [`RecordError::with_file`];
/// `offset` is the byte offset of the start of the record (its length field) in that input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Position {
    /// Name of the input (usually a path or object key), if known.
    pub file: Option<String>,
    /// Byte offset of the start of the record concerned, if known.
    pub offset: Option<u64>,
}

impl Position {
    /// A location at `offset` in an unnamed input.
    pub fn at(offset: u64) -> Self {
        Position {
            file: None,
            offset: Some(offset),
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.offset) {
            (Some(file), Some(offset)) => write!(f, "{file} at byte {offset}"),
            (Some(file), None) => write!(f, "{file}"),
            (None, Some(offset)) => write!(f, "at byte {offset}"),
            (None, None) => write!(f, "in input"),
        }
    }
}

/// The part of a record that was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordPart {
    /// The 12-byte header: 8 length bytes and the 4-byte masked CRC of them.
    Header,
    /// The payload (the serialized protobuf).
    Payload,
    /// The 4-byte footer after the payload.
    Footer,
}

impl fmt::Display for RecordPart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordPart::Header => "header",
            RecordPart::Payload => "payload",
            RecordPart::Footer => "footer",
        })
    }
}

/// Everything that can go wrong reading or writing the bytes of an event file.
///
/// Bad input always ends up here, never in a panic, and nothing is allocated from a size
/// read from the input before it is checked against the bytes actually available.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The masked CRC32C stored after the length field does not match the length bytes.
    #[error("{at}: length CRC mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    BadLengthCrc {
        /// Where the record starts.
        at: Position,
        /// The masked CRC found in the file.
        stored: u32,
        /// The masked CRC of the 8 length bytes.
        computed: u32,
    },
    /// The footer is neither the smdebug magic constant nor the masked CRC of the payload,
    /// or the payload's CRC differs from the one the caller expected.
    #[error("{at}: payload CRC mismatch: expected {expected:#010x}, computed {computed:#010x}")]
    BadDataCrc {
        /// Where the record starts.
        at: Position,
        /// The masked CRC found in the footer or supplied by the caller.
        expected: u32,
        /// The masked CRC of the payload.
        computed: u32,
    },
    /// The input ended inside a record.
    #[error("{at}: record truncated in its {part}: {needed} bytes needed, {available} available")]
    Truncated {
        /// Where the record starts.
        at: Position,
        /// Which part was cut short.
        part: RecordPart,
        /// Bytes that part needs.
        needed: u64,
        /// Bytes of it that were there.
        available: u64,
    },
    /// The length field claims more payload than the input holds (the length field itself
    /// passed its CRC, so the input is cut short or the range given was wrong).
    #[error("{at}: declared payload length {declared} exceeds the {available} bytes available")]
    LengthBeyondInput {
        /// Where the record starts.
        at: Position,
        /// Payload length from the length field.
        declared: u64,
        /// Payload bytes available after the header.
        available: u64,
    },
    /// A range that should hold exactly one record (an index entry's `start_idx`/`length`)
    /// holds a record of another size.
    #[error("{at}: expected a record of {expected} bytes, its framing says {actual}")]
    LengthMismatch {
        /// Where the record starts.
        at: Position,
        /// Length the caller gave (including the 16 framing bytes).
        expected: u64,
        /// Length from the record's own length field plus 16.
        actual: u64,
    },
    /// The range `start..start + length` is not inside the input.
    #[error("{at}: range of {length} bytes does not fit in the {available}-byte input")]
    RangeOutOfBounds {
        /// The start of the range.
        at: Position,
        /// Length of the range.
        length: u64,
        /// Length of the input.
        available: u64,
    },
    /// The payload is not a valid protobuf of the expected message.
    #[error("{at}: cannot decode {message} protobuf: {source}")]
    Protobuf {
        /// Where the record starts.
        at: Position,
        /// The message type being decoded (`"Event"`).
        message: &'static str,
        /// What prost reported.
        #[source]
        source: prost::DecodeError,
    },
    /// The tensor's `DataType` is not one this crate can decode (quantized, bfloat16,
    /// resource, variant, `*_REF`, or a number TensorFlow does not define).
    #[error("{at}: unsupported tensor dtype {dtype}")]
    UnsupportedDType {
        /// Where the record starts.
        at: Position,
        /// The raw `DataType` number.
        dtype: i32,
    },
    /// The tensor's content does not match its shape and dtype (wrong byte count, negative
    /// dimension, invalid UTF-8 string, ...).
    #[error("{at}: malformed tensor: {reason}")]
    MalformedTensor {
        /// Where the record starts.
        at: Position,
        /// What was wrong.
        reason: String,
    },
    /// A tensor that smdebug's format cannot represent (e.g. a string tensor that is not
    /// 1-D, which the Python writer rejects too).
    #[error("{at}: cannot encode tensor: {reason}")]
    UnencodableTensor {
        /// Where (usually unknown when encoding).
        at: Position,
        /// Why.
        reason: String,
    },
    /// The event is valid protobuf but not what was asked for (no summary, no tensor value,
    /// a mode outside 1..=4, an unparsable mode step, ...).
    #[error("{at}: unexpected event: {reason}")]
    UnexpectedEvent {
        /// Where the record starts.
        at: Position,
        /// What was missing or wrong.
        reason: String,
    },
    /// Reading from or writing to the underlying stream failed.
    #[error("{at}: I/O error: {source}")]
    Io {
        /// Where the record starts.
        at: Position,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// The `at` field of any [`RecordError`] variant, by reference or by mutable reference as
/// `$e` is (every variant carries one: the list is written once for both accessors).
macro_rules! position_of {
    ($e:expr) => {
        match $e {
            RecordError::BadLengthCrc { at, .. }
            | RecordError::BadDataCrc { at, .. }
            | RecordError::Truncated { at, .. }
            | RecordError::LengthBeyondInput { at, .. }
            | RecordError::LengthMismatch { at, .. }
            | RecordError::RangeOutOfBounds { at, .. }
            | RecordError::Protobuf { at, .. }
            | RecordError::UnsupportedDType { at, .. }
            | RecordError::MalformedTensor { at, .. }
            | RecordError::UnencodableTensor { at, .. }
            | RecordError::UnexpectedEvent { at, .. }
            | RecordError::Io { at, .. } => at,
        }
    };
}

impl RecordError {
    /// Where the error happened.
    pub fn location(&self) -> &Position {
        position_of!(self)
    }

    fn location_mut(&mut self) -> &mut Position {
        position_of!(self)
    }

    /// Attaches the name of the input (a path or object key) to the error.
    #[must_use]
    pub fn with_file(mut self, file: impl Into<String>) -> Self {
        self.location_mut().file = Some(file.into());
        self
    }

    /// Sets the record offset if the error does not know it yet (errors from decoding a
    /// payload alone do not know where the payload came from).
    #[must_use]
    pub fn with_offset(mut self, offset: u64) -> Self {
        let at = self.location_mut();
        if at.offset.is_none() {
            at.offset = Some(offset);
        }
        self
    }

    pub(crate) fn malformed(reason: impl Into<String>) -> Self {
        RecordError::MalformedTensor {
            at: Position::default(),
            reason: reason.into(),
        }
    }

    pub(crate) fn unexpected_event(reason: impl Into<String>) -> Self {
        RecordError::UnexpectedEvent {
            at: Position::default(),
            reason: reason.into(),
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = RecordError> = std::result::Result<T, E>;
