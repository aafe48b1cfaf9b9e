//! Where the flight recorder's files live in a trial (docs/src/format.md, "Flight
//! recorder"): the manifest each worker's hook writes when its recorder fires, and the
//! trigger object a rule (or a person) creates to make it fire. Readers of the original
//! smdebug ignore both: they are outside `index/`, `events/` and `collections/`.

use crate::error::LayoutError;
use crate::worker::validate_worker;

/// Folder of the flight-recorder manifests.
pub const FLIGHT_RECORDER_DIR: &str = "flight_recorder";

/// The object whose appearance makes every watching recorder write what it holds (like the
/// stop signal, [`crate::DEFAULT_STOP_SIGNAL_FILE`], which the recorder also watches, but
/// without stopping training). The recorder deletes it once it has fired, so it can fire
/// again.
pub const FLIGHT_RECORDER_TRIGGER_FILE: &str = "flight_recorder_trigger.smd";

/// `flight_recorder/{worker}_manifest.json`: which steps a worker's recorder wrote, when,
/// why and by which trigger.
///
/// ```
/// assert_eq!(
///     smdebug_index::flight_recorder_manifest_key("worker_0").unwrap(),
///     "flight_recorder/worker_0_manifest.json"
/// );
/// ```
pub fn flight_recorder_manifest_key(worker: &str) -> Result<String, LayoutError> {
    validate_worker(worker)?;
    Ok(format!("{FLIGHT_RECORDER_DIR}/{worker}_manifest.json"))
}
