//! Discovery over trials written from the peer presets, and the runner over them with a
//! corrupt one.

use crate::common::{corrupt, healthy, write_job, Job};
use smdebug_fleet::{discover, FleetError, Runner, TrialRef};
use smdebug_synth::{write_trial, Recipe, WriteOptions};
use std::path::Path;
use std::time::Duration;

fn preset(name: &str) -> Recipe {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/peer/presets")
        .join(format!("{name}.json"));
    Recipe::load(&path).unwrap()
}

/// `root/team-a/{small,modes}/debug-output`, `root/team-b/workers`, `root/broken`, and a
/// folder with no trial.
fn fleet(root: &Path) {
    for (recipe, out) in [
        ("small", "team-a/small/debug-output"),
        ("modes", "team-a/modes/debug-output"),
        ("workers", "team-b/workers"),
    ] {
        let out = root.join(out);
        write_trial(
            &preset(recipe),
            out.to_str().unwrap(),
            WriteOptions::default(),
        )
        .unwrap();
    }
    let job = Job {
        steps: 3,
        grad: healthy,
        nan_at: &[],
        pause: Duration::ZERO,
    };
    write_job(&root.join("broken"), &job);
    corrupt(&root.join("broken"));
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/readme.txt"), "no trial here").unwrap();
}

#[test]
fn finds_every_trial_below_a_prefix_sorted() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path());
    let root = dir.path().to_str().unwrap();
    let trials = discover(&[root]).unwrap();
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "broken",
            "team-a/modes/debug-output",
            "team-a/small/debug-output",
            "team-b/workers"
        ]
    );
    for t in &trials {
        assert_eq!(Path::new(&t.location), dir.path().join(&t.name));
    }
    // A trial given directly is one trial, named as given.
    let one = dir.path().join("team-b/workers");
    let trials = discover(&[one.to_str().unwrap()]).unwrap();
    assert_eq!(
        trials,
        [TrialRef {
            name: one.to_str().unwrap().to_owned(),
            location: one.to_str().unwrap().to_owned()
        }]
    );
    // Several locations: names carry the location.
    let a = dir.path().join("team-a");
    let trials = discover(&[a.to_str().unwrap(), one.to_str().unwrap()]).unwrap();
    let names: Vec<String> = trials.into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            format!("{}/modes/debug-output", a.display()),
            format!("{}/small/debug-output", a.display()),
            one.display().to_string(),
        ]
    );
    // Nothing there (yet): no trial, no error.
    assert!(discover(&[dir.path().join("absent").to_str().unwrap()])
        .unwrap()
        .is_empty());
    assert!(matches!(
        discover(&["ftp://x"]),
        Err(FleetError::Storage { .. })
    ));
}

#[test]
fn finds_trials_in_an_object_store() {
    let recipe = preset("small");
    for job in ["j2", "j1"] {
        let out = format!("memory://fleet-discovery/jobs/{job}");
        let store = smdebug_storage::Location::parse(&out)
            .unwrap()
            .open()
            .unwrap();
        smdebug_synth::write_trial_into(&recipe, &out, store, WriteOptions::default()).unwrap();
    }
    let trials = discover(&["memory://fleet-discovery/jobs"]).unwrap();
    assert_eq!(
        trials,
        ["j1", "j2"].map(|j| TrialRef {
            name: j.into(),
            location: format!("memory://fleet-discovery/jobs/{j}")
        })
    );
    let steps = Runner::new(2)
        .run(&trials, |t| {
            smdebug_trial::create_trial(&t.location)?.steps(smdebug_trial::Mode::Global, false)
        })
        .unwrap();
    assert!(steps.iter().all(|o| o.result.as_ref().unwrap().len() == 5));
}

#[test]
fn a_corrupt_trial_is_named_and_the_others_read() {
    let dir = tempfile::tempdir().unwrap();
    fleet(dir.path());
    let trials = discover(&[dir.path().to_str().unwrap()]).unwrap();
    let read = |t: &TrialRef| -> Result<usize, smdebug_trial::TrialError> {
        Ok(smdebug_trial::create_trial(&t.location)?
            .tensor_names()?
            .len())
    };
    let outcomes = Runner::new(2).run(&trials, read).unwrap();
    assert_eq!(outcomes.len(), 4);
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.result.is_err())
        .map(|o| o.trial.name.as_str())
        .collect();
    assert_eq!(failed, ["broken"]);
    assert!(outcomes[1..]
        .iter()
        .all(|o| o.result.as_ref().unwrap() > &0));
    let err = Runner::new(2).strict(true).run(&trials, read).unwrap_err();
    assert!(err.to_string().starts_with("trial broken: "), "{err}");
}
