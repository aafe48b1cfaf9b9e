//! Hook JSON config parser: any input gives a configuration or a typed error; a parsed
//! configuration serializes (when its regexes allow the comma form) to a document that parses
//! back to an equal configuration.
use smdebug_config::{CollectionManager, HookConfig};

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    if let Ok(cfg) = HookConfig::from_slice(data) {
        if let Ok(text) = cfg.to_json() {
            let back = HookConfig::from_json(&text).expect("our own output parses");
            assert_eq!(back, cfg);
        }
        let mut cm = CollectionManager::new();
        let _ = cfg.apply_to(&mut cm);
    }
}
