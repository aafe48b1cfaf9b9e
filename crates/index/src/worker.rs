//! Worker names: validation before they become file names, TF device (de)serialization.

use crate::error::{LayoutError, WorkerNameProblem};

/// Longest worker name (in bytes) accepted in a file name.
///
/// The longest file name built from a worker is `{step}_{worker}.tfevents.tmp` with a 20-character
/// step; 200 keeps that under the usual 255-byte file-name limit with room to spare.
pub const MAX_WORKER_NAME_BYTES: usize = 200;

/// Checks that a worker name can safely become part of a file name in the trial.
///
/// Refused (never encoded — a refused name is a bug in the caller, and an encoding would have
/// to be understood by Python readers too): empty names, names over
/// [`MAX_WORKER_NAME_BYTES`] bytes, `/` or `\`, `..`, NUL and other control characters
/// (C0, DEL, C1). Everything else — `_`, `-`, `:`, `.`, spaces, non-ASCII — is allowed.
///
/// TF device strings (`/job:worker/replica:0/task:0/device:GPU:0`) contain `/`: pass them
/// through [`serialize_tf_device`] first, as smdebug does.
///
/// ```
/// use smdebug_index::{validate_worker, serialize_tf_device};
/// assert!(validate_worker("worker_0").is_ok());
/// assert!(validate_worker("../../etc").is_err());
/// assert!(validate_worker(&serialize_tf_device("/job:worker/replica:0/task:0/device:GPU:0")).is_ok());
/// ```
pub fn validate_worker(worker: &str) -> Result<(), LayoutError> {
    let problem = if worker.is_empty() {
        Some(WorkerNameProblem::Empty)
    } else if worker.len() > MAX_WORKER_NAME_BYTES {
        Some(WorkerNameProblem::TooLong)
    } else if worker.contains(['/', '\\']) {
        Some(WorkerNameProblem::PathSeparator)
    } else if worker.contains("..") {
        Some(WorkerNameProblem::DotDot)
    } else if worker.chars().any(char::is_control) {
        Some(WorkerNameProblem::ControlCharacter)
    } else {
        None
    };
    match problem {
        Some(problem) => Err(LayoutError::InvalidWorker {
            worker: worker.to_owned(),
            problem,
        }),
        None => Ok(()),
    }
}

/// smdebug's `serialize_tf_device`: every `/` becomes `_`, then every `:` becomes `-`.
///
/// smdebug's Trial applies it to *every* worker name (not only TF devices) when it builds its
/// `last_index_token`, so `a:b` becomes `a-b` there.
///
/// ```
/// use smdebug_index::serialize_tf_device;
/// assert_eq!(
///     serialize_tf_device("/job:worker/replica:0/task:1/device:GPU:0"),
///     "_job-worker_replica-0_task-1_device-GPU-0"
/// );
/// ```
pub fn serialize_tf_device(device: &str) -> String {
    device.replace('/', "_").replace(':', "-")
}

/// smdebug's `deserialize_tf_device`: every `_` becomes `/`, then every `-` becomes `:`.
///
/// Not the inverse of [`serialize_tf_device`] for names that contain `_` or `-` themselves
/// (`job_a` → `job/a`), which is how smdebug behaves.
pub fn deserialize_tf_device(name: &str) -> String {
    name.replace('_', "/").replace('-', ":")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(w: &str) -> Option<WorkerNameProblem> {
        match validate_worker(w) {
            Ok(()) => None,
            Err(LayoutError::InvalidWorker { problem, worker }) => {
                assert_eq!(worker, w, "the error names the worker");
                Some(problem)
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn accepts_real_worker_names() {
        for w in [
            "worker_0",
            "worker_11",
            "chief_0",
            "algo-1",
            "ip-10-0-0-1.ec2.internal",
            "_job-worker_replica-0_task-1_device-GPU-0",
            "1234_myhost",
            "wörker é",
        ] {
            assert_eq!(problem(w), None, "{w:?}");
        }
    }

    #[test]
    fn refuses_hostile_names() {
        assert_eq!(problem(""), Some(WorkerNameProblem::Empty));
        assert_eq!(problem("a/b"), Some(WorkerNameProblem::PathSeparator));
        assert_eq!(problem("a\\b"), Some(WorkerNameProblem::PathSeparator));
        assert_eq!(problem(".."), Some(WorkerNameProblem::DotDot));
        assert_eq!(problem("x..y"), Some(WorkerNameProblem::DotDot));
        assert_eq!(problem("a\0b"), Some(WorkerNameProblem::ControlCharacter));
        assert_eq!(problem("a\nb"), Some(WorkerNameProblem::ControlCharacter));
        assert_eq!(
            problem("a\u{7f}"),
            Some(WorkerNameProblem::ControlCharacter)
        );
        assert_eq!(
            problem("a\u{85}"),
            Some(WorkerNameProblem::ControlCharacter)
        );
        assert_eq!(
            problem(&"w".repeat(MAX_WORKER_NAME_BYTES)),
            None,
            "the limit itself is allowed"
        );
        assert_eq!(problem(&"w".repeat(5000)), Some(WorkerNameProblem::TooLong));
        let message = validate_worker(&"w".repeat(5000)).unwrap_err().to_string();
        assert!(message.len() < 300, "error message stays short: {message}");
    }

    #[test]
    fn tf_devices_roundtrip() {
        // docs/src/testing.md B.13
        for d in ["/device:GPU:0", "/replica:0/task:0/device:GPU:0"] {
            assert_eq!(deserialize_tf_device(&serialize_tf_device(d)), d);
        }
        // The serialized form never contains '/', so TF devices always pass validation
        // unless they carry control characters or "..".
        assert!(validate_worker(&serialize_tf_device("/job:a/../x")).is_err());
        assert_eq!(deserialize_tf_device("job_a-b"), "job/a:b");
    }
}
