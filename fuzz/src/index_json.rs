//! Index JSON parser, trial file-name and reduction-name parsers on arbitrary input: typed errors, never a
//! panic; whatever parses must write back and parse to the same value.
use smdebug_index::{
    classify_key, index_file_key, parse_collections_file_name, parse_step_file_name,
    python_worker_from_step_file, reverse_reduction_tensor_name, validate_worker, IndexFile,
    TrialFile,
};

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    if let Ok(index) = IndexFile::parse("fuzz.json", data) {
        let ours = index.to_json();
        assert!(ours.is_ascii());
        assert_eq!(
            IndexFile::parse("ours.json", ours.as_bytes()).unwrap(),
            index
        );
        let python = index.to_python_json();
        let back = IndexFile::parse("python.json", python.as_bytes()).unwrap();
        assert_eq!(back.to_python_json(), python);
        assert_eq!(back.tensors.len(), index.tensors.len());
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = classify_key(text);
    let _ = parse_step_file_name(text);
    let _ = parse_collections_file_name(text);
    let _ = python_worker_from_step_file(text);
    let _ = reverse_reduction_tensor_name(text);
    // Any name that passes validation must give a key that parses back to it.
    if validate_worker(text).is_ok() {
        let step = data
            .iter()
            .fold(0i64, |acc, &b| acc.wrapping_mul(31).wrapping_add(b as i64));
        let key = index_file_key(step, text).unwrap();
        match classify_key(&key) {
            Ok(TrialFile::Index(f)) => {
                assert_eq!(f.step, step);
                assert_eq!(f.file_worker, text);
            }
            other => panic!("{key:?} classified as {other:?}"),
        }
    }
}
