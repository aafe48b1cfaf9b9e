use std::fmt;
use std::str::FromStr;

/// The phase of training a step belongs to (smdebug's `ModeKeys`).
///
/// The integer values are the ones written in event-file metadata; the names are the ones
/// written in index and collections JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Training steps (`TRAIN`, 1).
    Train,
    /// Evaluation steps (`EVAL`, 2).
    Eval,
    /// Inference steps (`PREDICT`, 3).
    Predict,
    /// No mode was set: the mode step is the global step (`GLOBAL`, 4).
    Global,
}

impl Mode {
    /// All modes in smdebug's order (TRAIN, EVAL, PREDICT, GLOBAL).
    pub const ALL: [Mode; 4] = [Mode::Train, Mode::Eval, Mode::Predict, Mode::Global];

    /// The integer smdebug writes in the `mode` plugin entry of an event.
    pub fn as_int(self) -> u8 {
        match self {
            Mode::Train => 1,
            Mode::Eval => 2,
            Mode::Predict => 3,
            Mode::Global => 4,
        }
    }

    /// The mode's position in [`Mode::ALL`], for tables indexed by mode.
    pub fn index(self) -> usize {
        usize::from(self.as_int() - 1)
    }

    /// The mode for an integer written in an event, if it is one of the four.
    pub fn from_int(value: i64) -> Option<Mode> {
        match value {
            1 => Some(Mode::Train),
            2 => Some(Mode::Eval),
            3 => Some(Mode::Predict),
            4 => Some(Mode::Global),
            _ => None,
        }
    }

    /// The upper-case name used in JSON files (`"TRAIN"`, …).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Train => "TRAIN",
            Mode::Eval => "EVAL",
            Mode::Predict => "PREDICT",
            Mode::Global => "GLOBAL",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A string that names no mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode {0:?}: expected one of TRAIN, EVAL, PREDICT, GLOBAL")]
pub struct ParseModeError(pub String);

impl FromStr for Mode {
    type Err = ParseModeError;

    /// Accepts the upper-case names and, like smdebug's `str_to_mode_keys`, their lower-case forms.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "TRAIN" | "train" => Ok(Mode::Train),
            "EVAL" | "eval" => Ok(Mode::Eval),
            "PREDICT" | "predict" => Ok(Mode::Predict),
            "GLOBAL" | "global" => Ok(Mode::Global),
            other => Err(ParseModeError(other.to_string())),
        }
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_and_names_roundtrip() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_int(m.as_int() as i64), Some(m));
            assert_eq!(m.name().parse::<Mode>().unwrap(), m);
            assert_eq!(m.name().to_lowercase().parse::<Mode>().unwrap(), m);
        }
        assert_eq!(Mode::from_int(0), None);
        assert!("Train".parse::<Mode>().is_err());
    }
}
