//! `smdebug doctor` on every peer preset the real smdebug writes: nothing found, but for the
//! two presets built with a problem (`workers`: worker_3 skips step 2; `workers_incomplete`:
//! lagging workers, job still running), whose problems it names; and every one is reported
//! as not verifiable until `smdebug seal`.

use smdebug_conformance::{check, conformance_presets, smdebug_bin, tempdir, write_fixture};
use std::process::Command;

fn doctor(trial: &std::path::Path) -> (i32, serde_json::Value) {
    let o = Command::new(smdebug_bin())
        .args(["doctor", "--json"])
        .arg(trial)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap(), v)
}

#[test]
fn doctor_finds_nothing_on_good_presets_and_names_the_built_in_problems() {
    for preset in conformance_presets() {
        let dir = tempdir();
        let trial = write_fixture(&preset, &dir.path().join("t"));
        let (code, v) = doctor(&trial);
        let kinds: Vec<&str> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["kind"].as_str().unwrap())
            .collect();
        let what = v["findings"].to_string();
        match preset.as_str() {
            "workers" => {
                assert_eq!((code, kinds), (1, vec!["incomplete-steps"]), "{v}");
                assert!(what.contains("worker_3 lacks steps 2"), "{what}");
            }
            "workers_incomplete" => {
                assert_eq!(
                    (code, kinds),
                    (1, vec!["incomplete-steps", "no-end-marker"]),
                    "{v}"
                );
                assert!(what.contains("worker_1 lacks steps 1"), "{what}");
                assert!(what.contains("worker_2 lacks steps 4-5"), "{what}");
            }
            _ => assert_eq!((code, kinds), (0, Vec::<&str>::new()), "{preset}: {v}"),
        }
        assert_eq!(v["payloads_verifiable"]["with_crc"], 0, "{preset}: {v}");
        let seal = Command::new(smdebug_bin())
            .arg("seal")
            .arg(&trial)
            .output()
            .unwrap();
        check(seal, &format!("seal {preset}"));
        let (_, v) = doctor(&trial);
        assert_eq!(v["payloads_verifiable"]["all"], true, "{preset}: {v}");
    }
}
