//! The SageMaker hook JSON configuration (`debughookconfig.json`): parsing it into a
//! [`HookConfig`] and writing it back. Its parameters are in `params.rs`, where the file
//! is found (and the one read) in `locate.rs`.

use crate::collection::CollectionManager;
use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, PyValue};
use crate::pyregex::PyRegex;
use crate::pystr::python_strip;
use crate::save_config::join;
use crate::{Mode, ReductionConfig, SaveConfig, SaveConfigMode};
use std::path::Path;

mod locate;
mod params;

pub use locate::{
    hook_config_path, is_sagemaker_job, tensorboard_config_path, TensorBoardConfig,
    CHECKPOINT_CONFIG_FILE_PATH_ENV, CONFIG_FILE_PATH_ENV, DEFAULT_CHECKPOINT_CONFIG_FILE_PATH,
    DEFAULT_CONFIG_FILE_PATH, DEFAULT_SAGEMAKER_OUTDIR, DEFAULT_TENSORBOARD_CONFIG_FILE_PATH,
    TENSORBOARD_CONFIG_FILE_PATH_ENV, TRAINING_JOB_NAME_ENV,
};
pub use params::{CollectionConfig, HookParameters, IncludeWorkers, ModeSaveParams, SaveParams};

/// The SageMaker hook configuration (`debughookconfig.json`).
///
/// ```
/// use smdebug_config::{HookConfig, Mode};
/// let c = HookConfig::from_json(r#"{
///   "LocalPath": "/tmp/out",
///   "HookParameters": {"save_interval": "2", "train.save_interval": 5, "reductions": "min"},
///   "CollectionConfigurations": [
///     {"CollectionName": "losses", "CollectionParameters": {"eval.save_interval": 4}}]
/// }"#).unwrap();
/// assert_eq!(c.local_path, "/tmp/out");
/// assert_eq!(c.hook.save_config.get(Mode::Train).unwrap().save_interval, 5);
/// assert_eq!(c.hook.save_config.get(Mode::Eval).unwrap().save_interval, 2);
/// assert!(!c.hook.reduction_config.as_ref().unwrap().save_raw_tensor);
/// let losses = &c.collections.as_ref().unwrap()[0];
/// assert_eq!(losses.save_config.get(Mode::Eval).unwrap().save_interval, 4);
/// assert_eq!(losses.save_config.get(Mode::Train).unwrap().save_interval, 5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct HookConfig {
    /// `S3OutputPath` (not used by smdebug: SageMaker uploads `LocalPath` there).
    pub s3_output_path: Option<String>,
    /// `LocalPath`: the hook's output directory (default [`DEFAULT_SAGEMAKER_OUTDIR`]).
    pub local_path: String,
    /// `HookParameters`.
    pub hook: HookParameters,
    /// `CollectionConfigurations` (`None` when absent or null).
    pub collections: Option<Vec<CollectionConfig>>,
}

/// smdebug's `parse_bool(arg, default)`: `null` → default; `true`/`false` (and 0/1, which
/// Python compares equal to them); `"true"`, `"True"`, `"false"`, `"False"`.
fn parse_bool(v: &PyValue, default: bool, path: &str) -> Result<bool, ConfigError> {
    match v {
        PyValue::Null => Ok(default),
        PyValue::Bool(b) => Ok(*b),
        PyValue::Int(0) => Ok(false),
        PyValue::Int(1) => Ok(true),
        PyValue::Float(f) if *f == 0.0 => Ok(false),
        PyValue::Float(f) if *f == 1.0 => Ok(true),
        PyValue::Str(s) if s == "true" || s == "True" => Ok(true),
        PyValue::Str(s) if s == "false" || s == "False" => Ok(false),
        _ => Err(invalid(
            path,
            v,
            "a boolean or one of \"true\", \"True\", \"false\", \"False\"",
        )),
    }
}

fn split_regexes(v: &PyValue, path: &str) -> Result<Vec<String>, ConfigError> {
    let PyValue::Str(s) = v else {
        return Err(invalid(path, v, "a comma-separated string of regexes"));
    };
    let items: Vec<String> = s.split(',').map(|x| python_strip(x).to_string()).collect();
    for p in &items {
        PyRegex::new(p)?;
    }
    Ok(items)
}

fn opt_string(v: Option<&PyValue>, path: &str) -> Result<Option<String>, ConfigError> {
    match v {
        None | Some(PyValue::Null) => Ok(None),
        Some(PyValue::Str(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(path, other, "a string")),
    }
}

const HP: &str = "HookParameters";

impl HookConfig {
    /// Parses the JSON text with smdebug's defaults (interval 500 where nothing is given).
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_with_defaults(text, &SaveConfigMode::default())
    }

    /// Parses the JSON text; `defaults` fills hook save-config keys given nowhere (smdebug's
    /// XGBoost hook passes interval 10). Collection configs still fall back to the built-in
    /// defaults, as in smdebug.
    pub fn from_json_with_defaults(
        text: &str,
        defaults: &SaveConfigMode,
    ) -> Result<Self, ConfigError> {
        Self::from_json_value(&pyjson::parse(text)?, defaults)
    }

    /// Like [`HookConfig::from_json`], from bytes that must be UTF-8.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        let text = pyjson::utf8_text(bytes)?;
        Self::from_json(text)
    }

    /// Reads and parses a file.
    pub fn from_path(path: &Path) -> Result<Self, ConfigError> {
        let bytes = std::fs::read(path).map_err(|e| ConfigError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Self::from_slice(&bytes)
    }

    /// Finds the file as smdebug does ([`hook_config_path`]) and parses it; `Ok(None)` when
    /// there is no file (smdebug then creates no hook).
    pub fn locate(explicit: Option<&Path>) -> Result<Option<Self>, ConfigError> {
        let path = hook_config_path(explicit);
        if !path.exists() {
            return Ok(None);
        }
        Self::from_path(&path).map(Some)
    }

    /// Builds the configuration from a parsed JSON value.
    pub fn from_json_value(v: &PyValue, defaults: &SaveConfigMode) -> Result<Self, ConfigError> {
        let PyValue::Object(_) = v else {
            return Err(invalid("", v, "an object"));
        };
        let s3_output_path = opt_string(v.get("S3OutputPath"), "S3OutputPath")?;
        let local_path = match v.get("LocalPath") {
            None => DEFAULT_SAGEMAKER_OUTDIR.to_string(),
            Some(PyValue::Str(s)) => s.clone(),
            Some(other) => return Err(invalid("LocalPath", other, "a string")),
        };
        let empty = PyValue::Object(Vec::new());
        let hp = match v.get(HP) {
            None | Some(PyValue::Null) => &empty,
            Some(x) => x,
        };
        let save = SaveParams::parse(hp, HP)?;
        let save_config = SaveConfig::from_modes(
            Mode::ALL
                .iter()
                .map(|&m| (m, Some(save.for_mode(m).resolve(defaults)))),
        );
        let reduction_config = match hp.get("reductions") {
            Some(_) => Some(ReductionConfig::from_json_value(hp, HP)?),
            None => None,
        };
        let save_all = match hp.get("save_all") {
            Some(x) => parse_bool(x, false, "HookParameters.save_all")?,
            None => false,
        };
        let include_regex = hp
            .get("include_regex")
            .map(|x| split_regexes(x, "HookParameters.include_regex"))
            .transpose()?;
        let include_workers = match hp.get("include_workers") {
            None => IncludeWorkers::One,
            Some(PyValue::Str(s)) if s == "one" => IncludeWorkers::One,
            Some(PyValue::Str(s)) if s == "all" => IncludeWorkers::All,
            Some(other) => {
                return Err(invalid(
                    "HookParameters.include_workers",
                    other,
                    "\"one\" or \"all\"",
                ))
            }
        };
        let export_tensorboard = match hp.get("export_tensorboard") {
            Some(x) => parse_bool(x, false, "HookParameters.export_tensorboard")?,
            None => false,
        };
        let tensorboard_dir =
            opt_string(hp.get("tensorboard_dir"), "HookParameters.tensorboard_dir")?;
        let hook = HookParameters {
            save,
            save_config,
            reduction_config,
            save_all,
            include_regex,
            include_workers,
            export_tensorboard,
            tensorboard_dir,
        };
        let collections = match v.get("CollectionConfigurations") {
            None | Some(PyValue::Null) => None,
            Some(PyValue::Array(items)) => Some(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, it)| {
                        parse_collection(it, &format!("CollectionConfigurations[{i}]"), &hook.save)
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(other) => {
                return Err(invalid(
                    "CollectionConfigurations",
                    other,
                    "a list of collection configurations",
                ))
            }
        };
        Ok(HookConfig {
            s3_output_path,
            local_path,
            hook,
            collections,
        })
    }

    /// The collection names listed in `CollectionConfigurations`, in order (smdebug adds them
    /// to the hook's `include_collections`); `None` when the list is absent.
    pub fn include_collections(&self) -> Option<Vec<&str>> {
        self.collections
            .as_ref()
            .map(|cs| cs.iter().map(|c| c.name.as_str()).collect())
    }

    /// Applies `CollectionConfigurations` to a manager as smdebug's
    /// `add_collections_to_manager` does: creates missing collections, sets their save config,
    /// and their reduction config, regexes and `save_histogram` where given.
    pub fn apply_to(&self, manager: &mut CollectionManager) -> Result<(), ConfigError> {
        for cfg in self.collections.iter().flatten() {
            let c = manager.get_or_create(&cfg.name);
            c.save_config = Some(cfg.save_config.clone());
            if let Some(r) = &cfg.reduction_config {
                c.reduction_config = Some(r.clone());
            }
            for p in cfg.include_regex.iter().flatten() {
                c.include(p)?;
            }
            if let Some(h) = cfg.save_histogram {
                c.save_histogram = h;
            }
        }
        Ok(())
    }

    /// A JSON document that parses back to an equal configuration (not byte-compatible with
    /// any particular SageMaker file: keys are written in one fixed order). Fails when a regex
    /// cannot be written in the comma-separated form (it contains a comma or surrounding
    /// whitespace).
    pub fn to_json(&self) -> Result<String, ConfigError> {
        let mut top = Vec::new();
        if let Some(s) = &self.s3_output_path {
            top.push(("S3OutputPath".to_string(), PyValue::Str(s.clone())));
        }
        top.push(("LocalPath".into(), PyValue::Str(self.local_path.clone())));
        let h = &self.hook;
        let mut hp = Vec::new();
        h.save.write(&mut hp);
        if let Some(r) = &h.reduction_config {
            if let PyValue::Object(items) = r.to_json_value() {
                hp.extend(items);
            }
        }
        hp.push(("save_all".into(), PyValue::Bool(h.save_all)));
        if let Some(r) = &h.include_regex {
            hp.push((
                "include_regex".into(),
                join_regexes(r, "HookParameters.include_regex")?,
            ));
        }
        hp.push((
            "include_workers".into(),
            PyValue::Str(
                match h.include_workers {
                    IncludeWorkers::One => "one",
                    IncludeWorkers::All => "all",
                }
                .into(),
            ),
        ));
        hp.push((
            "export_tensorboard".into(),
            PyValue::Bool(h.export_tensorboard),
        ));
        if let Some(d) = &h.tensorboard_dir {
            hp.push(("tensorboard_dir".into(), PyValue::Str(d.clone())));
        }
        top.push((HP.into(), PyValue::Object(hp)));
        if let Some(cs) = &self.collections {
            let mut arr = Vec::new();
            for (i, c) in cs.iter().enumerate() {
                let mut cp = Vec::new();
                c.save.write(&mut cp);
                if let Some(r) = &c.reduction_config {
                    if let PyValue::Object(items) = r.to_json_value() {
                        cp.extend(items);
                    }
                }
                if let Some(r) = &c.include_regex {
                    let path = format!("CollectionConfigurations[{i}].include_regex");
                    cp.push(("include_regex".into(), join_regexes(r, &path)?));
                }
                if let Some(b) = c.save_histogram {
                    cp.push(("save_histogram".into(), PyValue::Bool(b)));
                }
                arr.push(PyValue::Object(vec![
                    ("CollectionName".into(), PyValue::Str(c.name.clone())),
                    ("CollectionParameters".into(), PyValue::Object(cp)),
                ]));
            }
            top.push(("CollectionConfigurations".into(), PyValue::Array(arr)));
        }
        Ok(pyjson::to_string(&PyValue::Object(top)))
    }
}

fn join_regexes(r: &[String], path: &str) -> Result<PyValue, ConfigError> {
    for p in r {
        if p.contains(',') || python_strip(p) != p {
            return Err(ConfigError::InvalidValue {
                path: path.to_string(),
                value: format!("{p:?}"),
                expected: "regexes without commas or surrounding whitespace (the JSON form is comma-separated)",
            });
        }
    }
    Ok(PyValue::Str(r.join(",")))
}

fn parse_collection(
    v: &PyValue,
    path: &str,
    hook_save: &SaveParams,
) -> Result<CollectionConfig, ConfigError> {
    let PyValue::Object(_) = v else {
        return Err(invalid(path, v, "an object with CollectionName"));
    };
    let name = match v.get("CollectionName") {
        Some(PyValue::Str(s)) => s.clone(),
        Some(other) => return Err(invalid(join(path, "CollectionName"), other, "a string")),
        None => {
            return Err(ConfigError::MissingKey {
                path: path.to_string(),
                key: "CollectionName",
            })
        }
    };
    let empty = PyValue::Object(Vec::new());
    let cp_path = join(path, "CollectionParameters");
    let cp = match v.get("CollectionParameters") {
        None | Some(PyValue::Null) => &empty,
        Some(x) => x,
    };
    let save = SaveParams::parse(cp, &cp_path)?;
    let save_config = SaveConfig::from_modes(Mode::ALL.iter().map(|&m| {
        let merged = hook_save.for_mode(m).merged(&save.for_mode(m));
        (m, Some(merged.resolve(&SaveConfigMode::default())))
    }));
    let reduction_config = match cp.get("reductions") {
        Some(_) => Some(
            ReductionConfig::from_json_value(cp, &cp_path).map_err(|e| e.in_collection(&name))?,
        ),
        None => None,
    };
    let include_regex = cp
        .get("include_regex")
        .map(|x| split_regexes(x, &join(&cp_path, "include_regex")))
        .transpose()?;
    let save_histogram = cp
        .get("save_histogram")
        .map(|x| parse_bool(x, true, &join(&cp_path, "save_histogram")))
        .transpose()?;
    Ok(CollectionConfig {
        name,
        save,
        save_config,
        reduction_config,
        include_regex,
        save_histogram,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(c: &SaveConfig) -> Vec<i64> {
        Mode::ALL
            .iter()
            .map(|&m| c.get(m).unwrap().save_interval)
            .collect()
    }

    #[test]
    fn precedence_like_test_collection_defaults() {
        let c = HookConfig::from_json(
            r#"{"LocalPath": "/tmp/x", "HookParameters": {"save_interval": 1, "train.save_interval": 2, "eval.save_interval": 3},
               "CollectionConfigurations": [
                 {"CollectionName": "weights"},
                 {"CollectionName": "losses", "CollectionParameters": {"eval.save_interval": 4, "global.save_interval": 5}}]}"#,
        )
        .unwrap();
        assert_eq!(intervals(&c.hook.save_config), [2, 3, 1, 1]);
        let cs = c.collections.as_ref().unwrap();
        assert_eq!(intervals(&cs[0].save_config), [2, 3, 1, 1]);
        assert_eq!(intervals(&cs[1].save_config), [2, 4, 1, 5]);
        assert_eq!(c.include_collections().unwrap(), ["weights", "losses"]);
    }

    #[test]
    fn all_params_json() {
        let c = HookConfig::from_json(
            r#"{"S3OutputPath": "s3://b/p", "LocalPath": "/tmp/t",
                "HookParameters": {"save_interval": "2", "save_all": "true", "include_workers": "one",
                                   "export_tensorboard": "true", "tensorboard_dir": "/tmp/tensorboard",
                                   "save_steps": "0, 1,2"},
                "CollectionConfigurations": [
                  {"CollectionName": "weights", "CollectionParameters": {"save_histogram": "false"}},
                  {"CollectionName": "gradients", "CollectionParameters": {"save_histogram": false}}]}"#,
        )
        .unwrap();
        assert!(c.hook.save_all && c.hook.export_tensorboard);
        assert_eq!(c.hook.tensorboard_dir.as_deref(), Some("/tmp/tensorboard"));
        assert_eq!(
            c.hook.save_config.get(Mode::Eval).unwrap().save_steps,
            [0, 1, 2]
        );
        let cs = c.collections.as_ref().unwrap();
        assert!(cs.iter().all(|c| c.save_histogram == Some(false)));
        let mut cm = CollectionManager::new();
        c.apply_to(&mut cm).unwrap();
        assert!(!cm.get("weights").unwrap().save_histogram);
        let back = HookConfig::from_json(&c.to_json().unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn list_items_are_stripped_like_python_str_strip() {
        // U+001F is whitespace to `str.strip()` (smdebug's `split`), not to `int()`.
        let c = HookConfig::from_json(
            r#"{"HookParameters": {"save_steps": "\u001f3 ,4", "include_regex": " a\u001c,\tb "}}"#,
        )
        .unwrap();
        assert_eq!(
            c.hook.save_config.get(Mode::Train).unwrap().save_steps,
            [3, 4]
        );
        assert_eq!(
            c.hook.include_regex.as_deref(),
            Some(&["a".to_string(), "b".to_string()][..])
        );
    }

    #[test]
    fn reductions_turn_off_raw_tensors_and_errors_name_keys() {
        let c =
            HookConfig::from_json(r#"{"HookParameters": {"reductions": "max, mean, variance"}}"#)
                .unwrap();
        let r = c.hook.reduction_config.unwrap();
        assert!(!r.save_raw_tensor && r.reductions.len() == 3);
        assert_eq!(c.local_path, DEFAULT_SAGEMAKER_OUTDIR);
        let cases = [
            (
                r#"{"HookParameters": {"save_steps": [1]}}"#,
                "HookParameters.save_steps",
            ),
            (
                r#"{"HookParameters": {"save_steps": "1,,2"}}"#,
                "HookParameters.save_steps",
            ),
            (
                r#"{"HookParameters": {"train.save_interval": "abc"}}"#,
                "HookParameters.train.save_interval",
            ),
            (
                r#"{"HookParameters": {"save_all": "TRUE"}}"#,
                "HookParameters.save_all",
            ),
            (r#"{"HookParameters": {"reductions": "median"}}"#, "median"),
            (
                r#"{"HookParameters": {"reductions": "min", "save_raw_tensor": "true"}}"#,
                "save_raw_tensor",
            ),
            (
                r#"{"CollectionConfigurations": [{"CollectionParameters": {}}]}"#,
                "CollectionName",
            ),
            (
                r#"{"CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": {"include_regex": "a("}}]}"#,
                "a(",
            ),
            (r#"{"HookParameters": []}"#, "HookParameters"),
        ];
        for (text, needle) in cases {
            let e = HookConfig::from_json(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn an_unknown_reduction_names_its_collection_and_the_name() {
        let e = HookConfig::from_json(
            r#"{"CollectionConfigurations": [
                 {"CollectionName": "weights", "CollectionParameters": {"reductions": "min"}},
                 {"CollectionName": "biases", "CollectionParameters": {"reductions": "min, abs_l3_norm"}}]}"#,
        )
        .unwrap_err();
        let ConfigError::InvalidReduction {
            collection,
            name,
            kind,
            path,
            ..
        } = &e
        else {
            panic!("{e:?}");
        };
        assert_eq!(collection.as_deref(), Some("biases"));
        assert_eq!((name.as_str(), *kind), ("l3", crate::ReductionKind::Norm));
        assert!(path.starts_with("CollectionConfigurations[1]"), "{path}");
        assert!(e.to_string().contains("collection \"biases\""), "{e}");
        assert!(e.to_string().contains("\"l3\""), "{e}");
        // The hook's own reductions belong to no collection.
        let e = HookConfig::from_json(r#"{"HookParameters": {"reductions": "l2"}}"#).unwrap_err();
        assert!(
            matches!(&e, ConfigError::InvalidReduction { collection: None, name, .. } if name == "l2"),
            "{e:?}"
        );
    }

    #[test]
    fn tensorboard_config_is_read_as_smdebug_reads_it() {
        let read = |t: &str| TensorBoardConfig::from_slice(t.as_bytes());
        assert_eq!(
            read(r#"{"LocalPath": "/opt/ml/output/tensorboard"}"#)
                .unwrap()
                .local_path
                .as_deref(),
            Some("/opt/ml/output/tensorboard")
        );
        for none in [r#"{}"#, r#"{"LocalPath": null, "other": 1}"#] {
            assert_eq!(read(none).unwrap().local_path, None, "{none}");
        }
        assert!(matches!(
            read(r#"{"LocalPath": "#),
            Err(ConfigError::Json(_))
        ));
        assert!(matches!(
            TensorBoardConfig::from_slice(b"\xff"),
            Err(ConfigError::Json(_))
        ));
        for (bad, at) in [(r#"["/tb"]"#, ""), (r#"{"LocalPath": 3}"#, "LocalPath")] {
            let e = read(bad).unwrap_err();
            assert!(
                matches!(&e, ConfigError::InvalidValue { path, .. } if path == at),
                "{bad}: {e:?}"
            );
        }
        let d = std::env::temp_dir().join(format!("smdebug-tb-config-{}", std::process::id()));
        assert_eq!(
            TensorBoardConfig::locate(Some(&d.join("none.json"))).unwrap(),
            None
        );
    }

    #[test]
    fn null_overrides_and_xgboost_defaults() {
        let d = SaveConfigMode::every(10);
        let c = HookConfig::from_json_with_defaults(
            r#"{"HookParameters": {"eval.save_interval": null},
                "CollectionConfigurations": [{"CollectionName": "metrics", "CollectionParameters": null}]}"#,
            &d,
        )
        .unwrap();
        assert_eq!(intervals(&c.hook.save_config), [10, 500, 10, 10]);
        let cs = c.collections.as_ref().unwrap();
        assert_eq!(intervals(&cs[0].save_config), [500, 500, 500, 500]);
    }
}
