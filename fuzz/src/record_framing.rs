//! Arbitrary bytes through every framing decoder: the streaming reader, the slice iterator,
//! and the index-entry decoder at an arbitrary (offset, length). Any input must give records
//! or a typed error, never a panic or an allocation sized by the input's length field.
use smdebug_record::{decode_record_at, records, RecordReader};

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    // The first 16 bytes choose a range for decode_record_at; the rest is the file.
    let file = if data.len() >= 16 {
        let mut start = [0u8; 8];
        let mut length = [0u8; 8];
        start.copy_from_slice(&data[..8]);
        length.copy_from_slice(&data[8..16]);
        let file = &data[16..];
        // Keep most ranges near the file so they are not all out of bounds.
        let start = u64::from_le_bytes(start) % (file.len() as u64 + 2);
        let length = u64::from_le_bytes(length) % (file.len() as u64 + 18);
        if let Ok(rec) = decode_record_at(file, start, length) {
            assert_eq!(rec.len(), length);
            assert_eq!(rec.offset, start);
        }
        file
    } else {
        data
    };

    let mut streamed = 0u64;
    let mut stream_ok = true;
    for rec in RecordReader::new(file) {
        match rec {
            Ok(r) => {
                assert_eq!(r.offset, streamed);
                streamed += r.len();
            }
            Err(_) => stream_ok = false,
        }
    }
    let mut sliced = 0u64;
    let mut slice_ok = true;
    for rec in records(file) {
        match rec {
            Ok(r) => {
                assert_eq!(r.offset, sliced);
                sliced += r.len();
            }
            Err(_) => slice_ok = false,
        }
    }
    // Both readers must agree on what is valid.
    assert_eq!(streamed, sliced);
    assert_eq!(stream_ok, slice_ok);
    if stream_ok {
        assert_eq!(streamed, file.len() as u64);
    }
}
