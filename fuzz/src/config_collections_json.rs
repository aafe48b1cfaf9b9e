//! Collections JSON parser: any input gives a manager or a typed error, and a parsed manager
//! re-serializes to text that parses back to the same manager and the same text.
use smdebug_config::CollectionManager;

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    if let Ok(cm) = CollectionManager::from_slice(data) {
        let text = cm.to_json();
        let back = CollectionManager::from_json(&text).expect("our own output parses");
        assert_eq!(back.to_json(), text);
        for c in cm.collections() {
            // Matching must not panic, whatever the regexes are.
            let _ = c.contains("fc1.weight");
        }
    }
}
