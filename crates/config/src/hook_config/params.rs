//! The parsed parameters of a hook configuration: the save-config keys as given per mode,
//! `HookParameters` and one `CollectionConfigurations` entry.

use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, py_int, PyValue};
use crate::pystr::python_strip;
use crate::save_config::join;
use crate::{Mode, ReductionConfig, SaveConfig, SaveConfigMode};

/// The save-config keys given for one mode prefix (or without prefix).
///
/// For the three integer keys: `None` = key absent, `Some(None)` = key given as `null` (which
/// in smdebug overrides lower-precedence values with the built-in default), `Some(Some(n))`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModeSaveParams {
    /// `save_interval`.
    pub save_interval: Option<Option<i64>>,
    /// `start_step`.
    pub start_step: Option<Option<i64>>,
    /// `end_step`.
    pub end_step: Option<Option<i64>>,
    /// `save_steps` (given as a comma-separated string in the JSON).
    pub save_steps: Option<Vec<i64>>,
}

impl ModeSaveParams {
    /// `merge_two_dicts(self, over)`: keys of `over` win.
    pub(super) fn merged(&self, over: &ModeSaveParams) -> ModeSaveParams {
        ModeSaveParams {
            save_interval: over.save_interval.or(self.save_interval),
            start_step: over.start_step.or(self.start_step),
            end_step: over.end_step.or(self.end_step),
            save_steps: over.save_steps.clone().or_else(|| self.save_steps.clone()),
        }
    }

    /// `SaveConfigMode.from_dict(self, defaults)`: absent keys from `defaults`, `null` keys
    /// the built-in defaults.
    pub(super) fn resolve(&self, defaults: &SaveConfigMode) -> SaveConfigMode {
        let base = SaveConfigMode::default();
        SaveConfigMode {
            save_interval: match self.save_interval {
                None => defaults.save_interval,
                Some(v) => v.unwrap_or(base.save_interval),
            },
            start_step: match self.start_step {
                None => defaults.start_step,
                Some(v) => v.unwrap_or(base.start_step),
            },
            end_step: match self.end_step {
                None => defaults.end_step,
                Some(v) => v,
            },
            save_steps: self
                .save_steps
                .clone()
                .unwrap_or_else(|| defaults.save_steps.clone()),
        }
    }

    fn write(&self, prefix: &str, out: &mut Vec<(String, PyValue)>) {
        let int = |v: Option<i64>| v.map_or(PyValue::Null, PyValue::Int);
        if let Some(v) = self.save_interval {
            out.push((format!("{prefix}save_interval"), int(v)));
        }
        if let Some(v) = self.start_step {
            out.push((format!("{prefix}start_step"), int(v)));
        }
        if let Some(v) = self.end_step {
            out.push((format!("{prefix}end_step"), int(v)));
        }
        if let Some(v) = &self.save_steps {
            let s: Vec<String> = v.iter().map(i64::to_string).collect();
            out.push((format!("{prefix}save_steps"), PyValue::Str(s.join(","))));
        }
    }
}

/// The save-config keys of a `HookParameters` or `CollectionParameters` object: unprefixed and
/// per mode (`train.`, `eval.`, `predict.`, `global.`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaveParams {
    /// Keys without prefix (all modes).
    pub all: ModeSaveParams,
    /// Keys with a mode prefix, in the order TRAIN, EVAL, PREDICT, GLOBAL.
    pub per_mode: [ModeSaveParams; 4],
}

fn prefix(m: Mode) -> &'static str {
    match m {
        Mode::Train => "train.",
        Mode::Eval => "eval.",
        Mode::Predict => "predict.",
        Mode::Global => "global.",
    }
}

impl SaveParams {
    /// The merged keys of a mode: its prefixed keys over the unprefixed ones.
    pub fn for_mode(&self, m: Mode) -> ModeSaveParams {
        self.all.merged(&self.per_mode[m.index()])
    }

    pub(super) fn parse(obj: &PyValue, path: &str) -> Result<SaveParams, ConfigError> {
        let PyValue::Object(items) = obj else {
            return Err(invalid(path, obj, "an object"));
        };
        let mut sp = SaveParams::default();
        for (k, v) in items {
            let (slot, key) = match Mode::ALL
                .iter()
                .find_map(|&m| k.strip_prefix(prefix(m)).map(|rest| (m, rest)))
            {
                Some((m, rest)) => (&mut sp.per_mode[m.index()], rest),
                None => (&mut sp.all, k.as_str()),
            };
            let p = join(path, k);
            let opt_int = |v: &PyValue| -> Result<Option<i64>, ConfigError> {
                match v {
                    PyValue::Null => Ok(None),
                    _ => py_int(v).map(Some).ok_or_else(|| {
                        invalid(p.clone(), v, "an integer or a numeric string (64-bit)")
                    }),
                }
            };
            match key {
                "save_interval" => slot.save_interval = Some(opt_int(v)?),
                "start_step" => slot.start_step = Some(opt_int(v)?),
                "end_step" => slot.end_step = Some(opt_int(v)?),
                "save_steps" => {
                    let PyValue::Str(s) = v else {
                        return Err(invalid(p, v, "a string of comma-separated integers"));
                    };
                    let mut steps = Vec::new();
                    // smdebug: `[int(x) for x in split(save_steps)]`, `split` strips each item.
                    for item in s.split(',') {
                        let n = pyjson::py_int_str(python_strip(item)).ok_or_else(|| {
                            ConfigError::InvalidValue {
                                path: p.clone(),
                                value: format!("{item:?} in {}", v.repr()),
                                expected: "a string of comma-separated integers",
                            }
                        })?;
                        steps.push(n);
                    }
                    slot.save_steps = Some(steps);
                }
                _ => {}
            }
        }
        Ok(sp)
    }

    pub(super) fn write(&self, out: &mut Vec<(String, PyValue)>) {
        self.all.write("", out);
        for m in Mode::ALL {
            self.per_mode[m.index()].write(prefix(m), out);
        }
    }
}

/// `include_workers`: which workers of a distributed job write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeWorkers {
    /// Only the chief (`"one"`, the default).
    #[default]
    One,
    /// Every worker (`"all"`).
    All,
}

/// The parsed `HookParameters`.
#[derive(Debug, Clone, PartialEq)]
pub struct HookParameters {
    /// The save-config keys as given.
    pub save: SaveParams,
    /// The hook's save config: every mode resolved (prefixed key → unprefixed key → default).
    pub save_config: SaveConfig,
    /// The hook's reduction config; `Some` only when `reductions` is given (then
    /// `save_raw_tensor` and `save_shape` default to false).
    pub reduction_config: Option<ReductionConfig>,
    /// `save_all` (default false).
    pub save_all: bool,
    /// `include_regex`, split at commas (added to the `default` collection).
    pub include_regex: Option<Vec<String>>,
    /// `include_workers` (default one).
    pub include_workers: IncludeWorkers,
    /// `export_tensorboard` (default false; ignored in SageMaker jobs).
    pub export_tensorboard: bool,
    /// `tensorboard_dir` (ignored in SageMaker jobs).
    pub tensorboard_dir: Option<String>,
}

/// One entry of `CollectionConfigurations`.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionConfig {
    /// `CollectionName`.
    pub name: String,
    /// The save-config keys of `CollectionParameters` as given.
    pub save: SaveParams,
    /// The collection's complete save config: per mode, collection prefixed key → collection
    /// key → hook prefixed key → hook key → built-in default.
    pub save_config: SaveConfig,
    /// `Some` when `reductions` is given.
    pub reduction_config: Option<ReductionConfig>,
    /// `include_regex`, split at commas (appended to the collection's regexes).
    pub include_regex: Option<Vec<String>>,
    /// `save_histogram`, when given.
    pub save_histogram: Option<bool>,
}
