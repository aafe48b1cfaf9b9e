//! Collections of tensors ([`Collection`]), the set a hook or trial knows
//! ([`CollectionManager`]) and its JSON file.

use crate::error::{invalid, ConfigError};
use crate::pyjson::{self, PyValue};
use crate::pyregex::PyRegex;
use crate::{Framework, ReductionConfig, SaveConfig};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

/// The names of smdebug's built-in collections (`CollectionKeys`).
pub mod keys {
    /// `default`
    pub const DEFAULT: &str = "default";
    /// `all`
    pub const ALL: &str = "all";
    /// `inputs`
    pub const INPUTS: &str = "inputs";
    /// `outputs`
    pub const OUTPUTS: &str = "outputs";
    /// `weights`
    pub const WEIGHTS: &str = "weights";
    /// `gradients`
    pub const GRADIENTS: &str = "gradients";
    /// `losses`
    pub const LOSSES: &str = "losses";
    /// `biases`
    pub const BIASES: &str = "biases";
    /// `layers`
    pub const LAYERS: &str = "layers";
    /// `sm_metrics`
    pub const SM_METRICS: &str = "sm_metrics";
    /// `optimizer_variables`
    pub const OPTIMIZER_VARIABLES: &str = "optimizer_variables";
    /// `tensorflow_summaries`
    pub const TENSORFLOW_SUMMARIES: &str = "tensorflow_summaries";
    /// `metrics`
    pub const METRICS: &str = "metrics";
    /// `hyperparameters` (XGBoost)
    pub const HYPERPARAMETERS: &str = "hyperparameters";
    /// `predictions` (XGBoost)
    pub const PREDICTIONS: &str = "predictions";
    /// `labels` (XGBoost)
    pub const LABELS: &str = "labels";
    /// `feature_importance` (XGBoost)
    pub const FEATURE_IMPORTANCE: &str = "feature_importance";
    /// `average_shap` (XGBoost)
    pub const AVERAGE_SHAP: &str = "average_shap";
    /// `full_shap` (XGBoost)
    pub const FULL_SHAP: &str = "full_shap";
    /// `trees` (XGBoost)
    pub const TREES: &str = "trees";

    /// Collections of scalars: no reductions; TensorBoard scalar summaries.
    pub const SCALAR_COLLECTIONS: &[&str] = &[
        LOSSES,
        METRICS,
        FEATURE_IMPORTANCE,
        AVERAGE_SHAP,
        SM_METRICS,
    ];
    /// Collections whose values are also sent to SageMaker Metrics.
    pub const SM_METRIC_COLLECTIONS: &[&str] = &[LOSSES, METRICS, SM_METRICS];
    /// Collections whose reduction config is forced to raw-only.
    pub const NON_REDUCTION_COLLECTIONS: &[&str] = &[
        LOSSES,
        METRICS,
        FEATURE_IMPORTANCE,
        AVERAGE_SHAP,
        SM_METRICS,
        TENSORFLOW_SUMMARIES,
    ];
    /// Collections whose `save_histogram` is forced false.
    pub const NON_HISTOGRAM_COLLECTIONS: &[&str] = NON_REDUCTION_COLLECTIONS;
}

/// A named group of tensors with its own save and reduction rules (smdebug's `Collection`).
///
/// A tensor belongs to a collection when its name is in [`Collection::tensor_names`] or when
/// one of the include regexes matches it anywhere (`re.search`).
///
/// ```
/// use smdebug_config::Collection;
/// let mut c = Collection::new("relu");
/// c.include("relu[0-9]+_output").unwrap();
/// assert!(c.contains("model/relu12_output_0").unwrap());
/// assert!(!c.contains("relu_input").unwrap());
/// assert!(c.include("relu(").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Collection {
    /// The collection's name.
    pub name: String,
    include_regex: Vec<String>,
    compiled: OnceLock<Result<Vec<PyRegex>, ConfigError>>,
    /// Names of tensors known to belong (written sorted).
    pub tensor_names: BTreeSet<String>,
    /// The collection's reduction config, if it has its own.
    pub reduction_config: Option<ReductionConfig>,
    /// The collection's save config, if it has its own.
    pub save_config: Option<SaveConfig>,
    /// Whether TensorBoard histograms are written for its tensors (default true).
    pub save_histogram: bool,
}

impl PartialEq for Collection {
    fn eq(&self, o: &Self) -> bool {
        self.name == o.name
            && self.include_regex == o.include_regex
            && self.tensor_names == o.tensor_names
            && self.reduction_config == o.reduction_config
            && self.save_config == o.save_config
            && self.save_histogram == o.save_histogram
    }
}

impl Collection {
    /// An empty collection (no regexes, no tensors, no own configs, histograms on).
    pub fn new(name: impl Into<String>) -> Self {
        Collection {
            name: name.into(),
            include_regex: Vec::new(),
            compiled: OnceLock::new(),
            tensor_names: BTreeSet::new(),
            reduction_config: None,
            save_config: None,
            save_histogram: true,
        }
    }

    /// The include regexes (Python syntax), in order.
    pub fn include_regex(&self) -> &[String] {
        &self.include_regex
    }

    /// Appends an include regex; a pattern that cannot be compiled is refused with an error
    /// naming it.
    pub fn include(&mut self, pattern: &str) -> Result<(), ConfigError> {
        PyRegex::new(pattern)?;
        self.include_regex.push(pattern.to_string());
        self.compiled = OnceLock::new();
        Ok(())
    }

    /// Replaces the include regexes; nothing changes if one of them cannot be compiled (the
    /// error names it).
    pub fn set_include_regex(&mut self, patterns: Vec<String>) -> Result<(), ConfigError> {
        for p in &patterns {
            PyRegex::new(p)?;
        }
        self.include_regex = patterns;
        self.compiled = OnceLock::new();
        Ok(())
    }

    /// Adds a tensor name.
    pub fn add_tensor_name(&mut self, name: impl Into<String>) {
        self.tensor_names.insert(name.into());
    }

    /// Whether a tensor name is listed.
    pub fn has_tensor_name(&self, name: &str) -> bool {
        self.tensor_names.contains(name)
    }

    /// Removes a tensor name.
    pub fn remove_tensor_name(&mut self, name: &str) {
        self.tensor_names.remove(name);
    }

    fn regexes(&self) -> Result<&[PyRegex], ConfigError> {
        self.compiled
            .get_or_init(|| self.include_regex.iter().map(|p| PyRegex::new(p)).collect())
            .as_ref()
            .map(Vec::as_slice)
            .map_err(Clone::clone)
    }

    /// Whether any include regex matches `name` (`match_inc`). A regex that cannot be compiled
    /// (possible only for collections read from a file) gives an error naming it.
    pub fn matches_regex(&self, name: &str) -> Result<bool, ConfigError> {
        for r in self.regexes()? {
            if r.search(name)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether a tensor belongs: listed, or matched by a regex.
    pub fn contains(&self, name: &str) -> Result<bool, ConfigError> {
        Ok(self.has_tensor_name(name) || self.matches_regex(name)?)
    }

    /// The JSON object smdebug writes (`Collection.to_json_dict`).
    pub fn to_json_value(&self) -> PyValue {
        PyValue::Object(vec![
            ("name".into(), PyValue::Str(self.name.clone())),
            (
                "include_regex".into(),
                PyValue::Array(
                    self.include_regex
                        .iter()
                        .cloned()
                        .map(PyValue::Str)
                        .collect(),
                ),
            ),
            (
                "tensor_names".into(),
                PyValue::Array(
                    self.tensor_names
                        .iter()
                        .cloned()
                        .map(PyValue::Str)
                        .collect(),
                ),
            ),
            (
                "reduction_config".into(),
                self.reduction_config
                    .as_ref()
                    .map_or(PyValue::Null, ReductionConfig::to_json_value),
            ),
            (
                "save_config".into(),
                self.save_config
                    .as_ref()
                    .map_or(PyValue::Null, SaveConfig::to_json_value),
            ),
            ("save_histogram".into(), PyValue::Bool(self.save_histogram)),
        ])
    }

    /// `json.dumps(collection.to_json_dict())`.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    /// Reads the JSON object form (`Collection.from_dict`). Missing keys take defaults, unknown
    /// keys are ignored; regexes are kept as text (an invalid one fails when matching, as in
    /// Python).
    pub fn from_json_value(v: &PyValue, path: &str) -> Result<Self, ConfigError> {
        let PyValue::Object(_) = v else {
            return Err(invalid(path, v, "an object"));
        };
        let p = |k: &str| crate::save_config::join(path, k);
        let name = match v.get("name") {
            Some(PyValue::Str(s)) => s.clone(),
            Some(other) => return Err(invalid(p("name"), other, "a string")),
            None => {
                return Err(ConfigError::MissingKey {
                    path: path.to_string(),
                    key: "name",
                })
            }
        };
        let mut c = Collection::new(name);
        match v.get("include_regex") {
            // Python keeps `false` for a missing key; both mean "no regex".
            None | Some(PyValue::Null) => {}
            Some(PyValue::Array(items)) => {
                for it in items {
                    match it {
                        PyValue::Str(s) => c.include_regex.push(s.clone()),
                        _ => return Err(invalid(p("include_regex"), it, "a list of strings")),
                    }
                }
            }
            Some(other) => return Err(invalid(p("include_regex"), other, "a list of strings")),
        }
        match v.get("tensor_names") {
            None => {}
            Some(PyValue::Array(items)) => {
                for it in items {
                    match it {
                        PyValue::Str(s) => {
                            c.tensor_names.insert(s.clone());
                        }
                        _ => return Err(invalid(p("tensor_names"), it, "a list of strings")),
                    }
                }
            }
            Some(other) => return Err(invalid(p("tensor_names"), other, "a list of strings")),
        }
        c.reduction_config = match v.get("reduction_config") {
            None | Some(PyValue::Null) => None,
            Some(r) => Some(
                ReductionConfig::from_json_value(r, &p("reduction_config"))
                    .map_err(|e| e.in_collection(&c.name))?,
            ),
        };
        c.save_config = match v.get("save_config") {
            None | Some(PyValue::Null) => None,
            Some(s) => Some(SaveConfig::from_json_value(s, &p("save_config"))?),
        };
        c.save_histogram = match v.get("save_histogram") {
            None => true,
            Some(PyValue::Bool(b)) => *b,
            Some(other) => return Err(invalid(p("save_histogram"), other, "a JSON boolean")),
        };
        Ok(c)
    }

    /// Parses the JSON text form of one collection.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        Self::from_json_value(&pyjson::parse(text)?, "collection")
    }
}

/// The collections of a hook or trial, in insertion order, plus the file's `_meta`
/// (smdebug's `CollectionManager`). This is also the model of the collections file
/// `collections/000000000/<worker>_collections.json`.
///
/// ```
/// use smdebug_config::{CollectionManager, Framework};
/// let mut cm = CollectionManager::with_defaults(Framework::PyTorch).unwrap();
/// cm.get_or_create("custom").include("relu").unwrap();
/// let text = cm.to_json();
/// assert!(text.ends_with(r#""_meta": {"num_workers": 1}}"#));
/// let back = CollectionManager::from_json(&text).unwrap();
/// assert_eq!(back, cm);
/// let names: Vec<_> = back.collections_containing("fc1.weight").unwrap();
/// assert_eq!(names, ["weights"]);
/// ```
#[derive(Debug, Clone)]
pub struct CollectionManager {
    collections: Vec<Collection>,
    by_name: HashMap<String, usize>,
    meta: Vec<(String, PyValue)>,
}

impl Default for CollectionManager {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for CollectionManager {
    /// Same collections by name (order ignored, as Python's dict equality); `_meta` is not
    /// compared, as in Python.
    fn eq(&self, o: &Self) -> bool {
        self.collections.len() == o.collections.len()
            && self.collections.iter().all(|c| o.get(&c.name) == Some(c))
    }
}

const MANAGER_KEYS: &str = "collections, _meta";

impl CollectionManager {
    /// No collections, `num_workers` 1.
    pub fn new() -> Self {
        CollectionManager {
            collections: Vec::new(),
            by_name: HashMap::new(),
            meta: vec![("num_workers".into(), PyValue::Int(1))],
        }
    }

    /// The default collections of a framework with their regexes.
    pub fn with_defaults(framework: Framework) -> Result<Self, ConfigError> {
        let mut cm = Self::new();
        for (name, regexes) in framework.default_collections() {
            let c = cm.get_or_create(name);
            for r in regexes {
                c.include(r)?;
            }
        }
        Ok(cm)
    }

    /// The collection called `name`.
    pub fn get(&self, name: &str) -> Option<&Collection> {
        self.by_name.get(name).map(|&i| &self.collections[i])
    }

    /// The collection called `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Collection> {
        self.by_name.get(name).map(|&i| &mut self.collections[i])
    }

    /// The collection called `name`, created empty at the end if missing (`get`).
    pub fn get_or_create(&mut self, name: &str) -> &mut Collection {
        let i = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                self.collections.push(Collection::new(name));
                self.by_name
                    .insert(name.to_string(), self.collections.len() - 1);
                self.collections.len() - 1
            }
        };
        &mut self.collections[i]
    }

    /// Registers a collection; one with the same name is replaced in its position (`add`).
    pub fn add(&mut self, c: Collection) {
        match self.by_name.get(&c.name) {
            Some(&i) => self.collections[i] = c,
            None => {
                self.by_name.insert(c.name.clone(), self.collections.len());
                self.collections.push(c);
            }
        }
    }

    /// The collections in order.
    pub fn collections(&self) -> impl Iterator<Item = &Collection> {
        self.collections.iter()
    }

    /// The collections in order, mutably.
    pub fn collections_mut(&mut self) -> impl Iterator<Item = &mut Collection> {
        self.collections.iter_mut()
    }

    /// The number of collections.
    pub fn len(&self) -> usize {
        self.collections.len()
    }

    /// Whether there are no collections.
    pub fn is_empty(&self) -> bool {
        self.collections.is_empty()
    }

    /// `_meta.num_workers` through Python's `int()`; `None` when it is not an integer.
    pub fn num_workers(&self) -> Option<i64> {
        self.meta_value("num_workers").and_then(pyjson::py_int)
    }

    /// Sets `_meta.num_workers`.
    pub fn set_num_workers(&mut self, n: i64) {
        self.set_meta("num_workers", PyValue::Int(n));
    }

    /// A `_meta` entry.
    pub fn meta_value(&self, key: &str) -> Option<&PyValue> {
        self.meta.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets a `_meta` entry, keeping the position of an existing key (`update_meta`).
    pub fn set_meta(&mut self, key: &str, value: PyValue) {
        match self.meta.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.meta.push((key.to_string(), value)),
        }
    }

    /// Names of the collections that contain a tensor, in order.
    pub fn collections_containing(&self, tensor: &str) -> Result<Vec<&str>, ConfigError> {
        let mut out = Vec::new();
        for c in &self.collections {
            if c.contains(tensor)? {
                out.push(c.name.as_str());
            }
        }
        Ok(out)
    }

    /// The JSON value of the collections file: `{"collections": {...}, "_meta": {...}}`.
    pub fn to_json_value(&self) -> PyValue {
        PyValue::Object(vec![
            (
                "collections".into(),
                PyValue::Object(
                    self.collections
                        .iter()
                        .map(|c| (c.name.clone(), c.to_json_value()))
                        .collect(),
                ),
            ),
            ("_meta".into(), PyValue::Object(self.meta.clone())),
        ])
    }

    /// The collections file's text, byte for byte as smdebug's `export` writes it.
    pub fn to_json(&self) -> String {
        pyjson::to_string(&self.to_json_value())
    }

    /// Reads a collections file (`CollectionManager.load_from_string`).
    ///
    /// Each collection is registered under the `name` inside its object (the key is ignored,
    /// as in Python); a later one with the same name replaces the earlier in its position.
    /// `_meta` entries are kept in order; `num_workers` must be an integer (or numeric string).
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let v = pyjson::parse(text)?;
        Self::from_json_value(&v)
    }

    /// Like [`CollectionManager::from_json`], from bytes that must be UTF-8.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ConfigError> {
        let text = pyjson::utf8_text(bytes)?;
        Self::from_json(text)
    }

    /// Reads the parsed JSON value of a collections file.
    pub fn from_json_value(v: &PyValue) -> Result<Self, ConfigError> {
        let PyValue::Object(items) = v else {
            return Err(invalid("", v, "an object with keys collections and _meta"));
        };
        if let Some((k, _)) = items
            .iter()
            .find(|(k, _)| k != "collections" && k != "_meta")
        {
            return Err(ConfigError::UnknownKey {
                path: String::new(),
                key: k.clone(),
                allowed: MANAGER_KEYS,
            });
        }
        let colls = v.get("collections").ok_or(ConfigError::MissingKey {
            path: String::new(),
            key: "collections",
        })?;
        let meta = v.get("_meta").ok_or(ConfigError::MissingKey {
            path: String::new(),
            key: "_meta",
        })?;
        let PyValue::Object(colls) = colls else {
            return Err(invalid("collections", colls, "an object"));
        };
        let mut cm = CollectionManager::new();
        for (key, cv) in colls {
            let c = Collection::from_json_value(cv, &format!("collections.{key}"))?;
            cm.add(c);
        }
        let PyValue::Object(meta) = meta else {
            return Err(invalid("_meta", meta, "an object"));
        };
        for (k, mv) in meta {
            cm.set_meta(k, mv.clone());
        }
        if let Some(nw) = cm.meta_value("num_workers") {
            if pyjson::py_int(nw).is_none() {
                return Err(invalid("_meta.num_workers", nw, "an integer"));
            }
        }
        Ok(cm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, SaveConfigMode};

    #[test]
    fn set_include_regex_replaces_or_refuses_whole() {
        let mut c = Collection::new("c");
        c.include("^a").unwrap();
        assert!(c.contains("ab").unwrap());
        c.set_include_regex(vec!["^b".into()]).unwrap();
        assert!(!c.contains("ab").unwrap() && c.contains("ba").unwrap());
        assert!(c.set_include_regex(vec!["^c".into(), "(".into()]).is_err());
        assert_eq!(c.include_regex(), ["^b"]);
    }

    #[test]
    fn an_unknown_reduction_in_a_collections_file_names_the_collection() {
        let text = r#"{"collections": {"weights": {"name": "weights", "include_regex": ["w"], "reduction_config": {"reductions": "min,abs_maximum"}}}, "_meta": {}}"#;
        let e = CollectionManager::from_json(text).unwrap_err();
        let ConfigError::InvalidReduction {
            collection,
            name,
            kind,
            ..
        } = &e
        else {
            panic!("{e:?}");
        };
        assert_eq!(collection.as_deref(), Some("weights"));
        assert_eq!(
            (name.as_str(), *kind),
            ("maximum", crate::ReductionKind::Reduction)
        );
        assert!(e.to_string().starts_with("collection \"weights\": "), "{e}");
    }

    #[test]
    fn export_load_roundtrip_like_smdebug_tests() {
        let mut c = Collection::new("default");
        c.include("conv2d").unwrap();
        c.add_tensor_name("b");
        c.add_tensor_name("a");
        c.reduction_config = Some(ReductionConfig::from_sagemaker_str("min,abs_l2_norm").unwrap());
        let back = Collection::from_json(&c.to_json()).unwrap();
        assert_eq!(back, c);
        assert_eq!(
            c.to_json(),
            r#"{"name": "default", "include_regex": ["conv2d"], "tensor_names": ["a", "b"], "reduction_config": {"save_raw_tensor": false, "reductions": "min,abs_l2_norm", "save_shape": false}, "save_config": null, "save_histogram": true}"#
        );
        let empty = Collection::new("x");
        assert_eq!(Collection::from_json(&empty.to_json()).unwrap(), empty);
        let mut per = Collection::new("p");
        per.save_config = Some(SaveConfig::from_modes([
            (Mode::Train, Some(SaveConfigMode::every(10))),
            (
                Mode::Eval,
                Some(SaveConfigMode {
                    start_step: 1,
                    ..Default::default()
                }),
            ),
        ]));
        let back = Collection::from_json(&per.to_json()).unwrap();
        assert_eq!(back.to_json(), per.to_json());
    }

    #[test]
    fn manager_rules() {
        let mut cm = CollectionManager::new();
        assert_eq!(
            cm.to_json(),
            r#"{"collections": {}, "_meta": {"num_workers": 1}}"#
        );
        cm.get_or_create("a").add_tensor_name("t");
        cm.add(Collection::new("b"));
        let mut a2 = Collection::new("a");
        a2.save_histogram = false;
        cm.add(a2);
        let names: Vec<_> = cm.collections().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(!cm.get("a").unwrap().save_histogram);
        // Keys are ignored; the name inside wins.
        let cm = CollectionManager::from_json(
            r#"{"collections": {"k": {"name": "n"}}, "_meta": {"x": 1, "num_workers": "3"}}"#,
        )
        .unwrap();
        assert!(cm.get("n").is_some());
        assert_eq!(cm.num_workers(), Some(3));
        assert!(cm
            .to_json()
            .ends_with(r#""_meta": {"num_workers": "3", "x": 1}}"#));
        for bad in [
            r#"{"collections": {}}"#,
            r#"{"_meta": {}}"#,
            r#"{"collections": {}, "_meta": {}, "x": 1}"#,
            r#"{"collections": [], "_meta": {}}"#,
            r#"{"collections": {"a": {"name": "a", "save_config": {"train": null}}}, "_meta": {}}"#,
            r#"{"collections": {}, "_meta": {"num_workers": "x"}}"#,
            "null",
        ] {
            assert!(CollectionManager::from_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn framework_defaults_match_names() {
        let cm = CollectionManager::with_defaults(Framework::PyTorch).unwrap();
        assert_eq!(cm.collections_containing("fc1.bias").unwrap(), ["biases"]);
        assert_eq!(
            cm.collections_containing("gradient/fc1.weight").unwrap(),
            ["gradients"]
        );
        let x = CollectionManager::with_defaults(Framework::XGBoost).unwrap();
        assert_eq!(
            x.collections_containing("train-rmse").unwrap(),
            ["metrics", "losses"]
        );
        assert_eq!(x.collections_containing("train-auc").unwrap(), ["metrics"]);
        let names: Vec<_> = x.collections().map(|c| c.name.clone()).collect();
        assert_eq!(&names[names.len() - 2..], ["metrics", "losses"]);
    }
}
