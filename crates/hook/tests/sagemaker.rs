//! A hook built from the SageMaker configuration inside a SageMaker job, where the
//! TensorBoard folder comes from `TENSORBOARD_CONFIG_FILE_PATH`. Its own test binary: it
//! sets process-wide environment variables that would change other tests' hooks.

use smdebug_config::{
    ConfigError, HookConfig, TENSORBOARD_CONFIG_FILE_PATH_ENV, TRAINING_JOB_NAME_ENV,
};

use smdebug_hook::{HookBuilder, HookError, TensorValue};

#[test]
fn the_tensorboard_config_of_a_sagemaker_job_is_used_and_a_malformed_one_refused() {
    let d = tempfile::tempdir().unwrap();
    let trial = d.path().join("trial");
    let tb = d.path().join("tb");
    let tb_config = d.path().join("tensorboardconfig.json");
    std::env::set_var(TRAINING_JOB_NAME_ENV, "smdebug-rs-test");
    std::env::set_var(TENSORBOARD_CONFIG_FILE_PATH_ENV, &tb_config);
    let config = HookConfig::from_json(&format!(
        r#"{{"LocalPath": "{}", "HookParameters": {{"save_interval": "1"}}}}"#,
        trial.display()
    ))
    .unwrap();

    std::fs::write(&tb_config, r#"{"LocalPath": 42}"#).unwrap();
    let err = HookBuilder::from_hook_config(&config).unwrap_err();
    assert!(
        matches!(&err, HookError::TensorBoardConfig { source: ConfigError::InvalidValue { path, .. }, .. }
            if path == "LocalPath"),
        "{err:?}"
    );
    std::fs::write(&tb_config, "{\"LocalPath\": ").unwrap();
    let err = HookBuilder::from_hook_config(&config).unwrap_err();
    assert!(
        matches!(
            &err,
            HookError::TensorBoardConfig {
                source: ConfigError::Json(_),
                ..
            }
        ),
        "{err:?}"
    );

    std::fs::write(
        &tb_config,
        format!(r#"{{"LocalPath": "{}"}}"#, tb.display()),
    )
    .unwrap();
    let mut hook = HookBuilder::from_hook_config(&config)
        .unwrap()
        .build()
        .unwrap();
    hook.step().unwrap();
    let loss = TensorValue::from(ndarray::arr0(0.5f32).into_dyn());
    hook.save("CrossEntropyLoss_output_0", loss).unwrap();
    hook.close().unwrap();
    // The loss as a TensorBoard scalar, in the folder the TensorBoard config names.
    let written = walk(&tb);
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0].contains("/GLOBAL/000000000000_"), "{written:?}");
    assert!(std::fs::metadata(&written[0]).unwrap().len() > 0);
    // SageMaker writes the end marker itself.
    assert!(!trial.join("training_job_end.ts").exists());
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}
