//! The one trial-location parser (`smdebug_storage::Location::parse`, used by the hook, the
//! reader and the CLI) on arbitrary text: a location or a typed `InvalidLocation` error,
//! never a panic; an object-store location prints as text that parses back to it.
use smdebug_storage::{Location, StorageError};

/// One input of this target: returns normally or fails an assertion (a bug).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Location::parse(text) {
        // A local path is kept as given (after `~` expansion); nothing more to check.
        Ok(Location::Local(_)) => {}
        Ok(location) => {
            let printed = location.to_string();
            assert_eq!(Location::parse(&printed).unwrap(), location, "{text:?}");
        }
        Err(StorageError::InvalidLocation { location, .. }) => assert_eq!(location, text),
        Err(other) => panic!("{text:?}: untyped error {other:?}"),
    }
}
