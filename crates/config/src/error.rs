//! The errors of this crate.

use crate::pyjson::JsonSyntaxError;
use crate::{Mode, ReductionKind};

/// A configuration that cannot be built or a JSON document that does not describe one.
///
/// `path` fields name where in the document the problem is, e.g.
/// `HookParameters.train.save_interval` or `collections.weights.save_config.TRAIN`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON (or not UTF-8).
    #[error(transparent)]
    Json(#[from] JsonSyntaxError),
    /// A value of the wrong type or out of range.
    #[error("{path}: invalid value {value}: expected {expected}")]
    InvalidValue {
        /// Where the value is.
        path: String,
        /// The value as JSON text (truncated).
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A required key is missing.
    #[error("{path}: missing key {key:?}")]
    MissingKey {
        /// The object that lacks the key.
        path: String,
        /// The key.
        key: &'static str,
    },
    /// A key that is not allowed there.
    #[error("{path}: unknown key {key:?} (allowed: {allowed})")]
    UnknownKey {
        /// The object holding the key.
        path: String,
        /// The key.
        key: String,
        /// The keys that are allowed.
        allowed: &'static str,
    },
    /// A reduction or norm name smdebug does not accept (unknown, `median`, or a norm
    /// among reductions and vice versa).
    #[error(
        "{}{path}: invalid {kind} {name:?}: allowed are {}",
        in_collection(.collection.as_deref()),
        .kind.allowed_names()
    )]
    InvalidReduction {
        /// The collection whose reduction config holds the name; `None` for the hook's own
        /// reduction config and for a reduction config read on its own.
        collection: Option<String>,
        /// Where the name is.
        path: String,
        /// Which list it was meant for (and so which names are allowed).
        kind: ReductionKind,
        /// The rejected name (for the string form: the op part extracted from the item).
        name: String,
    },
    /// A regular expression that cannot be compiled with Python `re` semantics.
    #[error("invalid regex {pattern:?}: {message}")]
    Regex {
        /// The pattern as given.
        pattern: String,
        /// Why it failed.
        message: String,
    },
    /// A file could not be read (only [`crate::HookConfig::from_path`]).
    #[error("cannot read {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
}

/// Why a save decision cannot be made (Python raises in these cases).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShouldSaveError {
    /// The save config has no entry for this mode (`SaveConfig ... is not ready`).
    #[error("save config has no configuration for mode {0} (merge it with a default first)")]
    NotReady(Mode),
    /// `save_interval` is 0 and the step is not in `save_steps` (Python: `ZeroDivisionError`).
    #[error("save_interval is 0: cannot decide step {0} by interval")]
    ZeroInterval(i64),
}

impl ConfigError {
    /// The same error, attributed to collection `name` when it is a
    /// [`ConfigError::InvalidReduction`] not yet attributed to one (a reduction config does
    /// not know which collection holds it); any other error unchanged.
    pub fn in_collection(self, name: &str) -> Self {
        match self {
            ConfigError::InvalidReduction {
                collection: None,
                path,
                kind,
                name: op,
            } => ConfigError::InvalidReduction {
                collection: Some(name.to_owned()),
                path,
                kind,
                name: op,
            },
            other => other,
        }
    }
}

fn in_collection(collection: Option<&str>) -> String {
    collection.map_or_else(String::new, |c| format!("collection {c:?}: "))
}

pub(crate) fn invalid(
    path: impl Into<String>,
    value: &crate::pyjson::PyValue,
    expected: &'static str,
) -> ConfigError {
    ConfigError::InvalidValue {
        path: path.into(),
        value: value.repr(),
        expected,
    }
}
