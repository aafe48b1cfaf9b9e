//! When to save: [`SaveConfigMode`] (one mode) and [`SaveConfig`] (all four modes).

use crate::error::{invalid, ConfigError, ShouldSaveError};
use crate::pyjson::{self, py_int, PyValue};
use crate::Mode;

/// smdebug's default `save_interval`.
pub const DEFAULT_SAVE_INTERVAL: i64 = 500;

/// The save rule of one mode (smdebug's `SaveConfigMode`).
///
/// A mode step `s` is saved when it is listed in `save_steps`, **or** when
/// `start_step <= s < end_step` and `s % save_interval == 0`: `save_steps` adds to the interval
/// rule, it does not replace it.
///
/// ```
/// use smdebug_config::SaveConfigMode;
/// let c = SaveConfigMode { save_steps: vec![3, 7], ..SaveConfigMode::default() };
/// let saved: Vec<i64> = (0..1001).filter(|&s| c.should_save(s).unwrap()).collect();
/// assert_eq!(saved, [0, 3, 7, 500, 1000]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SaveConfigMode {
    /// Save every `save_interval` steps (default 500). 0 makes the interval rule undecidable,
    /// as in Python (which divides by zero).
    pub save_interval: i64,
    /// First step the interval rule may save (default 0). Not an offset: interval 100 from 150
    /// saves 200, 300, …
    pub start_step: i64,
    /// First step the interval rule no longer saves (exclusive; `None` = no end).
    pub end_step: Option<i64>,
    /// Steps saved in any case, in addition to the interval rule.
    pub save_steps: Vec<i64>,
}

impl Default for SaveConfigMode {
    fn default() -> Self {
        SaveConfigMode {
            save_interval: DEFAULT_SAVE_INTERVAL,
            start_step: 0,
            end_step: None,
            save_steps: Vec::new(),
        }
    }
}

impl SaveConfigMode {
    /// A config saving every `save_interval` steps from step 0, with no end.
    pub fn every(save_interval: i64) -> Self {
        SaveConfigMode {
            save_interval,
            ..Self::default()
        }
    }

    /// Whether mode step `step` is saved (`SaveConfigMode.should_save_step`).
    ///
    /// Fails only when `save_interval` is 0 and the step is not listed in `save_steps`.
    pub fn should_save(&self, step: i64) -> Result<bool, ShouldSaveError> {
        if self.save_steps.contains(&step) {
            return Ok(true);
        }
        let in_range = step >= self.start_step && self.end_step.is_none_or(|e| step < e);
        if !in_range {
            return Ok(false);
        }
        if self.save_interval == 0 {
            return Err(ShouldSaveError::ZeroInterval(step));
        }
        // Python's `%` and Rust's differ in sign only, so "divisible" agrees; `checked_rem`
        // guards i64::MIN % -1.
        Ok(step.checked_rem(self.save_interval).is_none_or(|r| r == 0))
    }

    /// The JSON object smdebug writes (`to_json_dict`): keys `save_interval`, `save_steps`,
    /// `start_step`, `end_step`, in that order.
    pub fn to_json_value(&self) -> PyValue {
        PyValue::Object(vec![
            ("save_interval".into(), PyValue::Int(self.save_interval)),
            (
                "save_steps".into(),
                PyValue::Array(self.save_steps.iter().map(|&s| PyValue::Int(s)).collect()),
            ),
            ("start_step".into(), PyValue::Int(self.start_step)),
            (
                "end_step".into(),
                self.end_step.map_or(PyValue::Null, PyValue::Int),
            ),
        ])
    }

    /// Reads the JSON object form (`SaveConfigMode.from_dict` with no defaults): missing or
    /// `null` keys take the defaults, unknown keys are ignored, numbers go through Python's
    /// `int()` (so `"10"` and `2.7` are accepted), `save_steps` must be a list of ints.
    pub fn from_json_value(v: &PyValue, path: &str) -> Result<Self, ConfigError> {
        let PyValue::Object(_) = v else {
            return Err(invalid(path, v, "an object"));
        };
        let mut c = SaveConfigMode::default();
        if let Some(x) = v.get("save_interval").filter(|x| **x != PyValue::Null) {
            c.save_interval = int_field(x, path, "save_interval")?;
        }
        if let Some(x) = v.get("start_step").filter(|x| **x != PyValue::Null) {
            c.start_step = int_field(x, path, "start_step")?;
        }
        if let Some(x) = v.get("end_step").filter(|x| **x != PyValue::Null) {
            c.end_step = Some(int_field(x, path, "end_step")?);
        }
        if let Some(x) = v.get("save_steps").filter(|x| **x != PyValue::Null) {
            c.save_steps = save_steps_list(x, &format!("{path}.save_steps"))?;
        }
        Ok(c)
    }
}

pub(crate) fn int_field(v: &PyValue, path: &str, key: &str) -> Result<i64, ConfigError> {
    py_int(v).ok_or_else(|| {
        invalid(
            join(path, key),
            v,
            "an integer (or a numeric string) within the 64-bit range",
        )
    })
}

fn save_steps_list(v: &PyValue, path: &str) -> Result<Vec<i64>, ConfigError> {
    let PyValue::Array(items) = v else {
        return Err(invalid(path, v, "a list of integers"));
    };
    items
        .iter()
        .map(|x| match x {
            // `bool` is an `int` in Python, so smdebug accepts it; it means 0 or 1.
            PyValue::Int(i) => Ok(*i),
            PyValue::Bool(b) => Ok(*b as i64),
            _ => Err(invalid(path, x, "a list of integers (64-bit)")),
        })
        .collect()
}

pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The save rules of all four modes (smdebug's `SaveConfig`).
///
/// Each mode has a [`SaveConfigMode`] or none ("not configured": asking it fails until
/// [`SaveConfig::merge_default`] fills it). The order of the modes is kept because smdebug
/// writes them in the order they were given.
///
/// The examples of smdebug's documentation:
///
/// ```
/// use smdebug_config::{Mode, SaveConfig, SaveConfigMode};
/// let saved = |c: &SaveConfigMode, n: i64| -> Vec<i64> {
///     (0..n).filter(|&s| c.should_save(s).unwrap()).collect()
/// };
/// let c = SaveConfigMode { save_interval: 100, end_step: Some(201), ..Default::default() };
/// assert_eq!(saved(&c, 1000), [0, 100, 200]);
/// let c = SaveConfigMode { save_interval: 100, start_step: 150, ..Default::default() };
/// assert_eq!(saved(&c, 401), [200, 300, 400]);
/// let all = SaveConfig::new(c);
/// assert!(all.should_save(Mode::Eval, 300).unwrap());
/// ```
#[derive(Debug, Clone)]
pub struct SaveConfig {
    modes: Vec<(Mode, Option<SaveConfigMode>)>,
}

impl Default for SaveConfig {
    /// Every mode saves every 500 steps (`SaveConfig()`).
    fn default() -> Self {
        SaveConfig::new(SaveConfigMode::default())
    }
}

impl PartialEq for SaveConfig {
    /// Mode by mode, ignoring the order (as Python's `__eq__`).
    fn eq(&self, other: &Self) -> bool {
        Mode::ALL.iter().all(|&m| self.get(m) == other.get(m))
    }
}

impl SaveConfig {
    /// The same rule for all four modes (`SaveConfig(save_interval=…, …)`), in the order
    /// TRAIN, EVAL, PREDICT, GLOBAL.
    pub fn new(config: SaveConfigMode) -> Self {
        SaveConfig {
            modes: Mode::ALL
                .iter()
                .map(|&m| (m, Some(config.clone())))
                .collect(),
        }
    }

    /// A per-mode config (`SaveConfig(mode_save_configs={…})`): the given modes in the given
    /// order (a repeated mode keeps its first position and its last value), then the missing
    /// modes, not configured.
    pub fn from_modes(configs: impl IntoIterator<Item = (Mode, Option<SaveConfigMode>)>) -> Self {
        let mut modes: Vec<(Mode, Option<SaveConfigMode>)> = Vec::with_capacity(4);
        for (m, c) in configs {
            match modes.iter_mut().find(|(k, _)| *k == m) {
                Some(slot) => slot.1 = c,
                None => modes.push((m, c)),
            }
        }
        for m in Mode::ALL {
            if !modes.iter().any(|(k, _)| *k == m) {
                modes.push((m, None));
            }
        }
        SaveConfig { modes }
    }

    /// The rule of a mode, if configured.
    pub fn get(&self, mode: Mode) -> Option<&SaveConfigMode> {
        self.modes
            .iter()
            .find(|(m, _)| *m == mode)
            .and_then(|(_, c)| c.as_ref())
    }

    /// The rule of a mode, if configured, to change in place (a handle that writes through to
    /// this config, as the Python `SaveConfig.mode_save_configs[mode]` is).
    pub fn get_mut(&mut self, mode: Mode) -> Option<&mut SaveConfigMode> {
        self.modes
            .iter_mut()
            .find(|(m, _)| *m == mode)
            .and_then(|(_, c)| c.as_mut())
    }

    /// Sets (or clears) the rule of a mode, keeping its position.
    pub fn set(&mut self, mode: Mode, config: Option<SaveConfigMode>) {
        if let Some(slot) = self.modes.iter_mut().find(|(m, _)| *m == mode) {
            slot.1 = config;
        }
    }

    /// The modes in their serialization order with their rules.
    pub fn modes(&self) -> impl Iterator<Item = (Mode, Option<&SaveConfigMode>)> {
        self.modes.iter().map(|(m, c)| (*m, c.as_ref()))
    }

    /// Whether every mode has a rule.
    pub fn is_complete(&self) -> bool {
        self.modes.iter().all(|(_, c)| c.is_some())
    }

    /// Whether mode step `step` of `mode` is saved (`SaveConfig.should_save_step`).
    pub fn should_save(&self, mode: Mode, step: i64) -> Result<bool, ShouldSaveError> {
        self.get(mode)
            .ok_or(ShouldSaveError::NotReady(mode))?
            .should_save(step)
    }

    /// Fills every unconfigured mode from `default` (or with [`SaveConfigMode::default`] where
    /// `default` has none either), as `merge_default_save_config` does. Filled modes keep
    /// their position.
    pub fn merge_default(&mut self, default: &SaveConfig) {
        for (m, c) in self.modes.iter_mut() {
            if c.is_none() {
                *c = Some(default.get(*m).cloned().unwrap_or_default());
            }
        }
    }

    /// The JSON object smdebug writes: mode names as keys in this config's order, each a
    /// [`SaveConfigMode`] object or `null`.
    pub fn to_json_value(&self) -> PyValue {
        PyValue::Object(
            self.modes
                .iter()
                .map(|(m, c)| {
                    (
                        m.name().to_string(),
                        c.as_ref()
                            .map_or(PyValue::Null, SaveConfigMode::to_json_value),
                    )
                })
                .collect(),
        )
    }

    /// `json.dumps(save_config.to_json_dict())`.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    /// Reads the JSON object form (`SaveConfig.from_dict`): keys must be exact upper-case mode
    /// names, values `null` or objects (see [`SaveConfigMode::from_json_value`]); modes not
    /// given are not configured.
    pub fn from_json_value(v: &PyValue, path: &str) -> Result<Self, ConfigError> {
        let PyValue::Object(items) = v else {
            return Err(invalid(path, v, "an object keyed by mode name"));
        };
        let mut modes = Vec::with_capacity(items.len());
        for (k, val) in items {
            let mode = match k.as_str() {
                "TRAIN" => Mode::Train,
                "EVAL" => Mode::Eval,
                "PREDICT" => Mode::Predict,
                "GLOBAL" => Mode::Global,
                _ => {
                    return Err(ConfigError::UnknownKey {
                        path: path.to_string(),
                        key: k.clone(),
                        allowed: "TRAIN, EVAL, PREDICT, GLOBAL (exact upper case)",
                    })
                }
            };
            let p = join(path, k);
            let c = match val {
                PyValue::Null => None,
                _ => Some(SaveConfigMode::from_json_value(val, &p)?),
            };
            modes.push((mode, c));
        }
        Ok(SaveConfig::from_modes(modes))
    }

    /// Parses the JSON text form.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_value(&pyjson::parse(text)?, "save_config")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(c: &SaveConfigMode, range: std::ops::Range<i64>) -> Vec<i64> {
        range.filter(|&s| c.should_save(s).unwrap()).collect()
    }

    #[test]
    fn documentation_examples() {
        let d = SaveConfigMode::default();
        assert_eq!(saved(&d, 0..1001), [0, 500, 1000]);
        assert_eq!(saved(&SaveConfigMode::every(1), 0..4), [0, 1, 2, 3]);
        let c = SaveConfigMode {
            save_interval: 100,
            end_step: Some(200),
            ..d.clone()
        };
        assert_eq!(saved(&c, 0..1000), [0, 100]);
        let c = SaveConfigMode {
            save_interval: 100,
            end_step: Some(201),
            ..d.clone()
        };
        assert_eq!(saved(&c, 0..1000), [0, 100, 200]);
        let c = SaveConfigMode {
            save_interval: 100,
            start_step: 150,
            ..d.clone()
        };
        assert_eq!(saved(&c, 0..501), [200, 300, 400, 500]);
        let c = SaveConfigMode {
            save_steps: vec![3, 7],
            ..d.clone()
        };
        assert_eq!(saved(&c, 0..1001), [0, 3, 7, 500, 1000]);
        // Per-mode: TRAIN 1, EVAL 2, PREDICT 3, GLOBAL 4.
        let per = SaveConfig::from_modes(
            Mode::ALL
                .iter()
                .zip(1..)
                .map(|(&m, i)| (m, Some(SaveConfigMode::every(i)))),
        );
        for (i, m) in Mode::ALL.iter().enumerate() {
            let i = i as i64 + 1;
            for s in 0..13 {
                assert_eq!(per.should_save(*m, s).unwrap(), s % i == 0);
            }
        }
    }

    #[test]
    fn spec_consequences() {
        let c = SaveConfigMode {
            save_interval: 100,
            start_step: 150,
            end_step: Some(450),
            ..Default::default()
        };
        assert_eq!(saved(&c, 0..1000), [200, 300, 400]);
        let off = SaveConfig::new(SaveConfigMode {
            end_step: Some(0),
            ..Default::default()
        });
        for s in [0, 19, 100] {
            assert!(!off.should_save(Mode::Global, s).unwrap());
        }
        let listed = SaveConfigMode {
            start_step: 10,
            end_step: Some(20),
            save_steps: vec![5, 25],
            ..Default::default()
        };
        assert!(listed.should_save(5).unwrap() && listed.should_save(25).unwrap());
        assert!(!SaveConfigMode::every(1).should_save(-1).unwrap());
        let neg = SaveConfigMode {
            save_interval: 1,
            start_step: -5,
            ..Default::default()
        };
        assert!(neg.should_save(-1).unwrap());
        let zero = SaveConfigMode {
            save_interval: 0,
            save_steps: vec![4],
            ..Default::default()
        };
        assert_eq!(zero.should_save(3), Err(ShouldSaveError::ZeroInterval(3)));
        assert!(zero.should_save(4).unwrap());
        let min = SaveConfigMode {
            save_interval: -1,
            start_step: i64::MIN,
            ..Default::default()
        };
        assert!(min.should_save(i64::MIN).unwrap());
    }

    #[test]
    fn partial_configs_merge_in_place() {
        let mut coll = SaveConfig::from_modes([(Mode::Eval, Some(SaveConfigMode::every(3)))]);
        assert_eq!(
            coll.should_save(Mode::Train, 0),
            Err(ShouldSaveError::NotReady(Mode::Train))
        );
        let hook = SaveConfig::from_modes([(Mode::Train, Some(SaveConfigMode::every(7)))]);
        coll.merge_default(&hook);
        assert_eq!(
            coll.to_json(),
            "{\"EVAL\": {\"save_interval\": 3, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \
             \"TRAIN\": {\"save_interval\": 7, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \
             \"PREDICT\": {\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \
             \"GLOBAL\": {\"save_interval\": 500, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}}"
        );
        assert_eq!(
            hook.to_json(),
            "{\"TRAIN\": {\"save_interval\": 7, \"save_steps\": [], \"start_step\": 0, \"end_step\": null}, \
             \"EVAL\": null, \"PREDICT\": null, \"GLOBAL\": null}"
        );
    }

    #[test]
    fn get_mut_changes_one_configured_mode() {
        let mut c = SaveConfig::from_modes([(Mode::Eval, Some(SaveConfigMode::every(3)))]);
        assert!(c.get_mut(Mode::Train).is_none());
        c.get_mut(Mode::Eval).unwrap().save_interval = 7;
        assert_eq!(c.get(Mode::Eval), Some(&SaveConfigMode::every(7)));
    }

    #[test]
    fn json_roundtrip_and_errors() {
        let c = SaveConfig::new(SaveConfigMode {
            save_interval: 11,
            start_step: 10,
            save_steps: vec![50],
            end_step: None,
        });
        let back = SaveConfig::from_json(&c.to_json()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.to_json(), c.to_json());
        let lenient = SaveConfig::from_json(
            r#"{"TRAIN": {"save_interval": "10", "other": 1}, "EVAL": {"start_step": 2.7}}"#,
        )
        .unwrap();
        assert_eq!(lenient.get(Mode::Train).unwrap().save_interval, 10);
        assert_eq!(lenient.get(Mode::Eval).unwrap().start_step, 2);
        assert!(lenient.get(Mode::Predict).is_none());
        let err = SaveConfig::from_json(r#"{"train": {}}"#).unwrap_err();
        assert!(err.to_string().contains("\"train\""), "{err}");
        let err = SaveConfig::from_json(r#"{"TRAIN": {"save_interval": "abc"}}"#).unwrap_err();
        assert!(err.to_string().contains("TRAIN.save_interval"), "{err}");
        assert!(err.to_string().contains("\"abc\""), "{err}");
        assert!(SaveConfig::from_json(r#"{"TRAIN": {"save_steps": [1.0]}}"#).is_err());
        assert!(SaveConfig::from_json(r#"{"TRAIN": {"save_steps": "1,2"}}"#).is_err());
        assert!(SaveConfig::from_json(r#"{"TRAIN": 5}"#).is_err());
    }
}
