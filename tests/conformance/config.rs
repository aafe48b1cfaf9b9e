//! smdebug-config against the real smdebug: collections files both ways, Python `re.search`
//! on the default collection regexes, and `SaveConfig.should_save_step` decisions.

use serde_json::{json, Value};
use smdebug_config::{
    Collection, CollectionManager, Framework, Mode, ReductionConfig, SaveConfig, SaveConfigMode,
    ShouldSaveError,
};
use smdebug_conformance::{conformance_presets, peer_dir, peer_python, tempdir, write_fixture};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Runs a peer script with `input` on stdin and parses its JSON output.
fn peer_stdin(script: &str, input: &Value) -> Value {
    let mut child = Command::new(peer_python())
        .arg(peer_dir().join(script))
        .env("SMDEBUG_LOG_LEVEL", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{script} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("peer printed JSON")
}

fn collection_files(trial: &Path) -> Vec<PathBuf> {
    let dir = trial.join("collections/000000000");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

#[test]
fn collections_files_written_by_smdebug_reserialize_byte_identically() {
    let mut checked = 0;
    for preset in conformance_presets() {
        let tmp = tempdir();
        let trial = write_fixture(&preset, &tmp.path().join("trial"));
        for f in collection_files(&trial) {
            let bytes = std::fs::read(&f).unwrap();
            let cm = CollectionManager::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{preset}: {}: {e}", f.display()));
            assert_eq!(
                cm.to_json().as_bytes(),
                &bytes[..],
                "{preset}: {} re-serialized differently",
                f.display()
            );
            assert!(cm.num_workers().is_some());
            checked += 1;
        }
    }
    assert!(checked > 0, "no collections file in any preset");
}

fn normalized(cm: &CollectionManager) -> Value {
    let mut colls = serde_json::Map::new();
    for c in cm.collections() {
        let rc = c.reduction_config.as_ref().map(|r| {
            let names = |v: Vec<&str>| json!(v);
            json!({
                "reductions": names(r.reductions.iter().map(|x| x.name()).collect()),
                "abs_reductions": names(r.abs_reductions.iter().map(|x| x.name()).collect()),
                "norms": names(r.norms.iter().map(|x| x.name()).collect()),
                "abs_norms": names(r.abs_norms.iter().map(|x| x.name()).collect()),
                "save_raw_tensor": r.save_raw_tensor,
                "save_shape": r.save_shape,
            })
        });
        let sc = c.save_config.as_ref().map(|s| {
            let mut m = serde_json::Map::new();
            for mode in Mode::ALL {
                m.insert(
                    mode.name().into(),
                    s.get(mode).map_or(Value::Null, |c| {
                        json!([c.save_interval, c.start_step, c.end_step, c.save_steps])
                    }),
                );
            }
            Value::Object(m)
        });
        colls.insert(
            c.name.clone(),
            json!({
                "include_regex": c.include_regex(),
                "tensor_names": c.tensor_names.iter().collect::<Vec<_>>(),
                "reduction_config": rc,
                "save_config": sc,
                "save_histogram": c.save_histogram,
            }),
        );
    }
    json!({"collections": colls, "num_workers": cm.num_workers()})
}

fn managers_we_write() -> Vec<CollectionManager> {
    let mut out = Vec::new();
    for fw in Framework::ALL {
        let mut cm = CollectionManager::with_defaults(fw).unwrap();
        let hook = SaveConfig::new(SaveConfigMode::every(fw.default_save_interval()));
        for c in cm.collections_mut() {
            c.save_config = Some(hook.clone());
            c.reduction_config = Some(ReductionConfig::raw_only());
        }
        out.push(cm);
    }
    let mut cm = CollectionManager::new();
    let mut c = Collection::new("custom ünïcode 😀 \"q\" \\ /");
    c.include("relu[0-9]+_output").unwrap();
    c.include("^(?!gradient).*bias").unwrap();
    for t in ["zeta", "Alpha", "beta", "é", "tab\there", "ctl\u{1}\u{7f}"] {
        c.add_tensor_name(t);
    }
    c.reduction_config = Some(
        ReductionConfig::from_sagemaker_str(
            "min,max,mean,std,variance,sum,prod,l1_norm,abs_l2_norm,abs_mean",
        )
        .unwrap(),
    );
    let mut partial = SaveConfig::from_modes([(
        Mode::Eval,
        Some(SaveConfigMode {
            save_interval: 3,
            start_step: -2,
            end_step: Some(40),
            save_steps: vec![1, 99, 1 << 40],
        }),
    )]);
    partial.merge_default(&SaveConfig::from_modes([(
        Mode::Train,
        Some(SaveConfigMode::every(7)),
    )]));
    c.save_config = Some(partial);
    c.save_histogram = false;
    cm.add(c);
    let mut shared = Collection::new("shares_a_partial_hook_config");
    shared.add_tensor_name("x:0");
    shared.save_config = Some(SaveConfig::from_modes([(
        Mode::Train,
        Some(SaveConfigMode::every(7)),
    )]));
    cm.add(shared);
    cm.add(Collection::new("bare"));
    cm.set_num_workers(4);
    out.push(cm);
    out.push(CollectionManager::new());
    out
}

#[test]
fn collections_files_we_write_load_in_smdebug_with_the_same_content() {
    let tmp = tempdir();
    let managers = managers_we_write();
    let mut paths = Vec::new();
    for (i, cm) in managers.iter().enumerate() {
        let p = tmp.path().join(format!("w{i}_collections.json"));
        std::fs::write(&p, cm.to_json()).unwrap();
        paths.push(p.to_str().unwrap().to_string());
    }
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let got = smdebug_conformance::run_peer_json("config_collections.py", &args);
    let got = got.as_array().unwrap();
    assert_eq!(got.len(), managers.len());
    for (cm, py) in managers.iter().zip(got) {
        assert_eq!(py["reexport"].as_str().unwrap(), cm.to_json());
        assert_eq!(py["content"], normalized(cm));
    }
}

/// Realistic tensor names of every framework plus adversarial ones.
fn tensor_names() -> Vec<String> {
    let mut names = Vec::new();
    for layer in [
        "fc1",
        "fc2",
        "conv1",
        "conv2.0",
        "bn1",
        "layer4.1.downsample.0",
        "embedding",
    ] {
        for p in [
            "weight",
            "bias",
            "running_mean",
            "weight_orig",
            "bias_hh_l0",
        ] {
            names.push(format!("{layer}.{p}"));
            names.push(format!("gradient/{layer}.{p}"));
            names.push(format!("gradients/{layer}.{p}"));
            names.push(format!("Net_{layer}.{p}"));
        }
        for io in ["input", "output"] {
            for i in 0..2 {
                names.push(format!("{layer}_{io}_{i}"));
            }
        }
    }
    for l in [
        "CrossEntropyLoss",
        "MSELoss",
        "loss",
        "Loss",
        "softmaxcrossentropyloss0",
        "l2loss1",
    ] {
        for io in ["input", "output"] {
            for i in 0..3 {
                names.push(format!("{l}_{io}_{i}"));
                names.push(format!("{l}_{io}{i}"));
            }
        }
    }
    for scope in [
        "dense",
        "dense_1",
        "conv2d/Conv2D",
        "model/batch_normalization",
    ] {
        for v in ["kernel:0", "bias:0", "gamma:0", "beta:0", "moving_mean:0"] {
            names.push(format!("{scope}/{v}"));
            names.push(format!("gradients/{scope}/{v}"));
            names.push(format!("training/Adam/{scope}/{v}"));
            names.push(format!("weights/{scope}/{v}"));
            names.push(format!("gradients/{scope}/BiasAddGrad:0"));
        }
    }
    for n in [
        "loss:0",
        "metrics/accuracy:0",
        "Adam/learning_rate:0",
        "inputs/x:0",
        "outputs/y:0",
    ] {
        names.push(n.to_string());
    }
    for block in ["dense0", "conv0", "hybridsequential0_dense0"] {
        for p in ["weight", "bias", "gamma"] {
            names.push(format!("{block}_{p}"));
            names.push(format!("gradient/{block}_{p}"));
        }
        for io in ["input", "output"] {
            names.push(format!("{block}_relu0_{io}_0"));
            names.push(format!("softmaxcrossentropyloss0_{io}_0"));
        }
    }
    for d in [
        "train",
        "validation",
        "test",
        "eval",
        "valid_0",
        "Train",
        "x_y",
    ] {
        for m in [
            "rmse",
            "auc",
            "map",
            "logloss",
            "error@0.5",
            "merror",
            "aucpr",
            "map@3",
            "ndcg",
            "mae",
        ] {
            names.push(format!("{d}-{m}"));
        }
    }
    for f in ["f0", "f1", "bias", "feature/x"] {
        names.push(format!("hyperparameters/{f}"));
        names.push(format!("feature_importance/weight/{f}"));
        names.push(format!("average_shap/{f}"));
        names.push(format!("full_shap/{f}"));
        names.push(format!("trees/{f}"));
    }
    names.extend(
        [
            "predictions",
            "labels",
            "predictions2",
            "my_labels",
            "average_shap/",
            "full_shap/b",
            "full_shap/s",
            "average_shap/ias",
            "",
            " ",
            "weight",
            "bias",
            "gradient",
            "gradientweight",
            "xgradient/weight",
            "GRADIENT/fc.weight",
            "labels\n",
            "predictions\n",
            "labels\n\n",
            "train-rmse\n",
            "fc.weight\n",
            "é.weight",
            "gradient/é",
            "fc😀.bias",
            "a\u{0}weight",
            "loss_output",
            "Loss_output",
            "loss__output",
            "Loss_input_output",
            "Loss_inputs_output",
            "loss1_output_0",
            "[A-z]-x",
            "^-x",
            "`-1",
            "_-_",
            "a-b-c",
            "train-auc-x",
            "trainauc",
            "hyperparameters",
            "hyperparameters/",
            "trees",
            "biases",
            "biasweight",
            "weightbias",
            "x/weights/y",
            "weights//bias",
            "weights/a/bias",
            "weights/a/b",
            "weights/bias",
            "multi\nline.weight",
            "gradient\n.weight",
        ]
        .map(String::from),
    );
    names
}

#[test]
fn default_collection_regexes_match_like_python_re_search() {
    let mut patterns: Vec<String> = Vec::new();
    for fw in Framework::ALL {
        for (_, rs) in fw.default_collections() {
            patterns.extend(rs.iter().map(|s| s.to_string()));
        }
    }
    // The Keras GradientTape additions and user-style / dialect-edge patterns.
    patterns.extend(
        [
            "^weights/.*/((?!bias).)*$",
            ".*loss.*",
            "relu*",
            "conv2d",
            "dense_?[0-9]*/kernel",
            "^labels$",
            "x$",
            "a{",
            "a{,2}b",
            "[[]",
            "(?<=gradient/).*bias",
            "(?<!gradient/)fc",
            "\\Aweight",
            "bias\\Z",
            "\\bweight\\b",
            "(?i)LOSS",
            "[^/bias]$",
            "",
            "(?P<n>fc)\\d",
            "(?<=a+)b",
            "(",
            "*x",
            "(?<!ab|c)x",
        ]
        .map(String::from),
    );
    patterns.sort();
    patterns.dedup();
    let names = tensor_names();
    assert!(names.len() >= 300, "only {} names", names.len());
    let py = peer_stdin(
        "config_regex.py",
        &json!({"patterns": patterns, "names": names}),
    );
    let py = py.as_array().unwrap();
    let mut compared = 0;
    for (p, row) in patterns.iter().zip(py) {
        let ours = smdebug_config::PyRegex::new(p);
        match row {
            Value::Null => assert!(ours.is_err(), "Python rejects {p:?}, we accept it"),
            Value::Array(row) => {
                let ours = ours.unwrap_or_else(|e| panic!("Python accepts {p:?}, we do not: {e}"));
                for (n, want) in names.iter().zip(row) {
                    assert_eq!(
                        ours.search(n).unwrap(),
                        want.as_bool().unwrap(),
                        "re.search({p:?}, {n:?})"
                    );
                    compared += 1;
                }
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert!(compared > 10_000);
}

#[test]
fn save_config_decisions_match_should_save_step() {
    let mut configs: Vec<SaveConfig> = Vec::new();
    for interval in [1, 2, 3, 7, 100, 500, 0, -3] {
        for start in [0, -5, 5, 150] {
            for end in [None, Some(0), Some(10), Some(201)] {
                for steps in [vec![], vec![3, 7], vec![-1, 12, 200]] {
                    configs.push(SaveConfig::new(SaveConfigMode {
                        save_interval: interval,
                        start_step: start,
                        end_step: end,
                        save_steps: steps,
                    }));
                }
            }
        }
    }
    // Per-mode configs with unconfigured modes (Python raises "not ready").
    configs.push(SaveConfig::from_modes([
        (Mode::Eval, Some(SaveConfigMode::every(3))),
        (Mode::Train, Some(SaveConfigMode::every(2))),
    ]));
    let steps: Vec<i64> = (-3..=60)
        .chain([99, 100, 150, 199, 200, 201, 500, 1000])
        .collect();
    let docs: Vec<Value> = configs
        .iter()
        .map(|c| serde_json::from_str(&c.to_json()).unwrap())
        .collect();
    let py = peer_stdin("config_save.py", &json!({"configs": docs, "steps": steps}));
    for (c, row) in configs.iter().zip(py.as_array().unwrap()) {
        for mode in Mode::ALL {
            let want = row[mode.name()].as_array().unwrap();
            for (s, w) in steps.iter().zip(want) {
                let ours = match c.should_save(mode, *s) {
                    Ok(b) => json!(b),
                    Err(ShouldSaveError::NotReady(_)) => json!("SMDebugValueError"),
                    Err(ShouldSaveError::ZeroInterval(_)) => json!("ZeroDivisionError"),
                    Err(e) => panic!("no Python counterpart known for {e}"),
                };
                assert_eq!(&ours, w, "{} mode {mode} step {s}", c.to_json());
            }
        }
    }
}

const HOOK_DOCS: &[&str] = &[
    r#"{"LocalPath": "/tmp/all_params", "HookParameters": {"save_interval": "2", "save_all": "true", "include_workers": "one", "export_tensorboard": "true", "tensorboard_dir": "/tmp/tensorboard"},
        "CollectionConfigurations": [{"CollectionName": "weights", "CollectionParameters": {"save_histogram": "false"}}, {"CollectionName": "gradients", "CollectionParameters": {"save_histogram": false}}]}"#,
    r#"{"LocalPath": "/tmp/p", "HookParameters": {"save_interval": 1, "train.save_interval": 2, "eval.save_interval": 3},
        "CollectionConfigurations": [{"CollectionName": "weights"}, {"CollectionName": "losses", "CollectionParameters": {"eval.save_interval": 4, "global.save_interval": 5}}]}"#,
    r#"{"HookParameters": {"save_steps": "0, 1,2,3", "reductions": "max, mean, variance", "save_shape": true, "include_regex": "relu*, conv"},
        "CollectionConfigurations": [{"CollectionName": "ReluActivation", "CollectionParameters": {"include_regex": "relu*", "reductions": "min,abs_max", "save_raw_tensor": true, "train.end_step": "7", "start_step": 2.9}}]}"#,
    r#"{"HookParameters": {"end_step": 0, "eval.save_interval": null}, "CollectionConfigurations": [{"CollectionName": "c", "CollectionParameters": null}, {"CollectionName": "c", "CollectionParameters": {"save_interval": null, "include_regex": "a,b"}}]}"#,
    r#"{"HookParameters": null, "CollectionConfigurations": null}"#,
];

#[test]
fn hook_configs_parse_like_smdebug_json_config() {
    let tmp = tempdir();
    let mut paths = Vec::new();
    for (i, doc) in HOOK_DOCS.iter().enumerate() {
        let p = tmp.path().join(format!("hook{i}.json"));
        std::fs::write(&p, doc).unwrap();
        paths.push(p.to_str().unwrap().to_string());
    }
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let py = smdebug_conformance::run_peer_json("config_hook.py", &args);
    for (doc, py) in HOOK_DOCS.iter().zip(py.as_array().unwrap()) {
        let c = smdebug_config::HookConfig::from_json(doc).unwrap();
        let h = &c.hook;
        let mut cm = CollectionManager::new();
        c.apply_to(&mut cm).unwrap();
        let ours = json!({
            "out_dir": c.local_path,
            "save_config": serde_json::from_str::<Value>(&h.save_config.to_json()).unwrap(),
            "reduction_config": h.reduction_config.as_ref().map(|r| serde_json::from_str::<Value>(&r.to_json()).unwrap()),
            "save_all": h.save_all,
            "include_regex": h.include_regex,
            "include_workers": match h.include_workers { smdebug_config::IncludeWorkers::One => "one", smdebug_config::IncludeWorkers::All => "all" },
            "export_tensorboard": h.export_tensorboard,
            "tensorboard_dir": h.tensorboard_dir,
            "include_collections": c.include_collections(),
            "collections": cm.to_json(),
        });
        assert_eq!(&ours, py, "{doc}");
    }
}
