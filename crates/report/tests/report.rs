//! The report reads what the Trial API reads, marks rules where they fired, stays bounded,
//! and `plot` draws a chart that is not blank.

use smdebug_config::Mode;
use smdebug_hook::{HookBuilder, SaveConfig, SaveConfigMode};
use smdebug_record::TensorValue;
use smdebug_report::{report, NoProgress, ReportOptions, RuleChoice};
use smdebug_trial::{Trial, TrialOptions};

/// A TRAIN/EVAL trial written by the hook: a loss in both modes, one weight, its gradient
/// (vanishing at global step 12) and a ReLU output, saved every step.
fn hook_trial(dir: &std::path::Path) -> String {
    let out = dir.join("trial").to_str().unwrap().to_owned();
    let mut relu = smdebug_config::Collection::new("relu_output");
    relu.include(".*relu_output").unwrap();
    let mut hook = HookBuilder::new(&out)
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .collection(relu)
        .include_collections(["weights", "gradients", "losses", "relu_output"])
        .build()
        .unwrap();
    let mut w = 1.0f32;
    for step in 0..16i64 {
        let mode = if step % 4 == 3 {
            Mode::Eval
        } else {
            Mode::Train
        };
        hook.set_mode(mode);
        hook.step().unwrap();
        let loss = 2.0 / (1.0 + step as f32) + if mode == Mode::Eval { 0.1 } else { 0.0 };
        hook.save(
            "CrossEntropyLoss_output_0",
            TensorValue::from(ndarray::arr0(loss).into_dyn()),
        )
        .unwrap();
        if mode == Mode::Train {
            let g = if step == 12 { 1e-9f32 } else { 0.01 };
            w -= 0.05;
            hook.save(
                "fc.weight",
                TensorValue::from(ndarray::arr2(&[[w, -w], [0.5 * w, 2.0]]).into_dyn()),
            )
            .unwrap();
            hook.save(
                "gradient/fc.weight",
                TensorValue::from(ndarray::arr2(&[[g, -g], [g, g]]).into_dyn()),
            )
            .unwrap();
            // 8 samples x 4 units; unit 3 is never active.
            let relu = ndarray::Array2::from_shape_fn((8, 4), |(s, u)| {
                if u == 3 {
                    0.0f32
                } else {
                    (s + u) as f32
                }
            });
            hook.save("dense0_relu_output_0", TensorValue::from(relu.into_dyn()))
                .unwrap();
        }
    }
    hook.close().unwrap();
    out
}

/// The JSON document embedded in the page.
fn embedded(html: &str) -> serde_json::Value {
    let start_tag = r#"<script type="application/json" id="smdebug-report-data">"#;
    let start = html.find(start_tag).expect("embedded data") + start_tag.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end].replace("<\\/", "</")).unwrap()
}

#[test]
fn the_loss_drawn_is_the_loss_the_trial_api_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = hook_trial(dir.path());
    let page = report(
        &path,
        &TrialOptions::default(),
        &ReportOptions::default(),
        &NoProgress,
    )
    .unwrap();
    let doc = embedded(&page.html);
    assert_eq!(doc["schema"], "smdebug-report/v1");
    let trial = Trial::open(&path, TrialOptions::default()).unwrap();
    let loss = trial.tensor("CrossEntropyLoss_output_0").unwrap();
    let chart = doc["scalars"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["title"] == "CrossEntropyLoss_output_0")
        .expect("loss chart");
    let series = chart["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "TRAIN and EVAL on one chart: {chart}");
    for (s, mode) in series.iter().zip([Mode::Train, Mode::Eval]) {
        assert_eq!(s["label"], mode.to_string());
        let mode_steps: Vec<i64> = loss.steps(mode, false).unwrap();
        assert_eq!(
            s["mode_steps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect::<Vec<_>>(),
            mode_steps
        );
        for (i, ms) in mode_steps.iter().enumerate() {
            let v = loss.value(*ms, mode, None).unwrap();
            let want = f64::from(*v.as_array::<f32>().unwrap().iter().next().unwrap());
            assert_eq!(s["values"][i].as_f64().unwrap(), want, "{mode} step {ms}");
            let g = trial.global_step(mode, *ms).unwrap().unwrap();
            assert_eq!(s["steps"][i].as_i64().unwrap(), g);
        }
    }
    // The page draws both series as paths with points.
    assert!(page.html.contains(r#"data-label="TRAIN" data-points=""#));
    assert!(page.html.contains(r#"data-label="EVAL" data-points=""#));
    // Norms: the weight's norm at each step is the L2 norm of all its elements (the
    // Frobenius norm; smdebug's `l2` reduction of a matrix is its spectral norm instead).
    let wn = &doc["weight_norms"][0]["series"][0];
    let w = trial.tensor("fc.weight").unwrap();
    assert_eq!(wn["steps"].as_array().unwrap().len(), 12);
    for (i, s) in wn["steps"].as_array().unwrap().iter().enumerate() {
        let s = s.as_i64().unwrap();
        let v = w.value(s, Mode::Global, None).unwrap();
        let l2 = v
            .as_array::<f32>()
            .unwrap()
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        let drawn = wn["values"][i].as_f64().unwrap();
        assert!((drawn - l2).abs() <= 1e-6 * l2.abs(), "{drawn} vs {l2}");
    }
    assert!(!doc["update_ratios"].as_array().unwrap().is_empty());
    // One dead unit in four.
    let act = &doc["activations"][0]["series"][0];
    assert_eq!(act["label"], "dead fraction");
    assert_eq!(act["values"][0].as_f64(), Some(0.25));
    assert!(!doc["histograms"].as_array().unwrap().is_empty());
    assert!(doc["completeness"].is_null(), "single worker");
}

#[test]
fn rule_markers_stand_at_the_firing_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = hook_trial(dir.path());
    let options = ReportOptions {
        rules: vec![
            RuleChoice::new("VanishingGradient"),
            RuleChoice::new("ExplodingTensor"),
        ],
        ..ReportOptions::default()
    };
    let page = report(&path, &TrialOptions::default(), &options, &NoProgress).unwrap();
    let vg = &page.data.rules[0];
    assert_eq!(vg.rule, "VanishingGradient");
    assert_eq!(vg.error, None);
    let steps: Vec<i64> = vg.firings.iter().map(|f| f.step).collect();
    assert_eq!(steps, [12]);
    assert!(
        page.html
            .contains(r#"<line class="rule-marker" data-rule="VanishingGradient" data-step="12""#),
        "marker at the firing step"
    );
    assert_eq!(page.data.rules[1].fired, 0);
    assert!(!page
        .html
        .contains(r#"data-rule="ExplodingTensor" data-step"#));
    assert!(page
        .html
        .contains(r#"data-rule="ExplodingTensor" data-fired="0""#));
    // No script but the data block, no external reference.
    assert_eq!(page.html.matches("<script").count(), 1);
    for bad in ["src=", "href=", "url(", "@import", "http://", "https://"] {
        let outside_svg_ns = page
            .html
            .replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
        assert!(!outside_svg_ns.contains(bad), "{bad} in the page");
    }
}

#[test]
fn the_default_rules_follow_the_chosen_ones_once_the_trial_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = hook_trial(dir.path());
    let options = ReportOptions {
        rules: vec![RuleChoice::new("AllZero")],
        default_rules: true,
        ..ReportOptions::default()
    };
    let page = report(&path, &TrialOptions::default(), &options, &NoProgress).unwrap();
    let ran: Vec<&str> = page.data.rules.iter().map(|r| r.rule.as_str()).collect();
    let mut want = vec!["AllZero"];
    want.extend(smdebug_report::DEFAULT_RULES);
    assert_eq!(ran, want);
}

#[test]
fn an_unknown_rule_is_refused_before_reading() {
    let options = ReportOptions {
        rules: vec![RuleChoice::new("NoSuchRule")],
        ..ReportOptions::default()
    };
    let e = report(
        "/nonexistent/trial",
        &TrialOptions::default(),
        &options,
        &NoProgress,
    )
    .unwrap_err();
    assert!(e.to_string().contains("NoSuchRule"), "{e}");
}

#[test]
fn a_multi_worker_preset_gets_a_completeness_heatmap() {
    let recipe_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/peer/presets/workers.json"
    );
    let recipe = smdebug_synth::Recipe::load(std::path::Path::new(recipe_path)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("workers").to_str().unwrap().to_owned();
    smdebug_synth::write_trial(&recipe, &out, Default::default()).unwrap();
    let page = report(
        &out,
        &TrialOptions::default(),
        &ReportOptions::default(),
        &NoProgress,
    )
    .unwrap();
    let c = page.data.completeness.as_ref().expect("heatmap");
    assert_eq!(c.workers, 12);
    // worker_3 skips global step 2 (the preset says so).
    assert!(c.missing.contains(&("worker_3".to_owned(), 2)), "{c:?}");
    assert_eq!(c.missing_count, 1);
    assert!(page.html.contains(r#"class="cell" data-fraction="0.000""#));
}

#[test]
fn a_long_trial_is_sampled_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long").to_str().unwrap().to_owned();
    let mut hook = HookBuilder::new(&out)
        .save_config(SaveConfig::new(SaveConfigMode::every(1)))
        .include_collections(["weights", "losses"])
        .build()
        .unwrap();
    let steps = 3000;
    for step in 0..steps {
        hook.step().unwrap();
        hook.save(
            "CrossEntropyLoss_output_0",
            TensorValue::from(ndarray::arr0((step as f32 * 0.01).sin()).into_dyn()),
        )
        .unwrap();
        hook.save(
            "fc.weight",
            TensorValue::from(ndarray::arr1(&[step as f32, 1.0]).into_dyn()),
        )
        .unwrap();
    }
    hook.close().unwrap();
    let options = ReportOptions {
        max_points: 100,
        max_embedded: 500,
        ..ReportOptions::default()
    };
    let page = report(&out, &TrialOptions::default(), &options, &NoProgress).unwrap();
    let loss = &page.data.scalars[0].series[0];
    assert!(loss.sampled && loss.steps.len() <= 500 && loss.steps.len() >= 499);
    assert_eq!(loss.steps[0], 0);
    assert_eq!(*loss.steps.last().unwrap(), steps - 1);
    let norm = &page.data.weight_norms[0].series[0];
    assert!(norm.sampled && norm.steps.len() == 100);
    // Every path has at most 4 points per half-pixel column of the widest chart.
    for m in page.html.match_indices("data-points=\"") {
        let rest = &page.html[m.0 + m.1.len()..];
        let n: usize = rest[..rest.find('"').unwrap()].parse().unwrap();
        assert!(n <= 4 * 2 * 760, "{n} points in one path");
    }
}

#[cfg(feature = "plot")]
#[test]
fn plot_writes_a_png_that_is_not_blank_and_an_svg() {
    use smdebug_report::plot::{plot, PlotOptions};
    let dir = tempfile::tempdir().unwrap();
    let path = hook_trial(dir.path());
    let options = PlotOptions {
        tensor: regex::Regex::new("^gradient/").unwrap(),
        stat: "l2".into(),
        mode: Mode::Train,
        steps: Default::default(),
        size: (640, 400),
    };
    let png_path = dir.path().join("g.png");
    let lines = plot(&path, &TrialOptions::default(), &options, &png_path).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].points.len(), 12);
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (640, 400));
    let px = &buf[..info.buffer_size()];
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = px.chunks(channels).collect();
    let white = pixels.iter().filter(|p| p[..3] == [255, 255, 255]).count();
    let dark = pixels
        .iter()
        .filter(|p| p[..3].iter().all(|&c| c < 100))
        .count();
    let coloured = pixels
        .iter()
        .filter(|p| {
            let (mx, mn) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            mx - mn > 80
        })
        .count();
    assert!(white > pixels.len() / 2, "a white background");
    assert!(dark > 500, "axes and text drawn: {dark} dark pixels");
    assert!(coloured > 200, "a coloured line: {coloured} pixels");

    let svg_path = dir.path().join("g.svg");
    plot(&path, &TrialOptions::default(), &options, &svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("<polyline") || svg.contains("<path"), "a line");
    assert!(
        svg.contains("gradient/fc.weight"),
        "the legend names the tensor"
    );

    let bad = PlotOptions {
        stat: "median".into(),
        ..options
    };
    assert!(plot(&path, &TrialOptions::default(), &bad, &svg_path).is_err());
}

/// Weight matrices match, but `--stat value` draws one-element tensors only: the error says
/// how many matched, why nothing was drawn, and which statistics to pick; a regex that
/// matches nothing says that instead.
#[cfg(feature = "plot")]
#[test]
fn plot_says_why_matching_tensors_drew_nothing() {
    use smdebug_report::plot::{plot, PlotOptions};
    use smdebug_report::ReportError;
    let dir = tempfile::tempdir().unwrap();
    let path = hook_trial(dir.path());
    let options = PlotOptions {
        tensor: regex::Regex::new("^gradient/").unwrap(),
        stat: "value".into(),
        mode: Mode::Train,
        steps: Default::default(),
        size: (320, 200),
    };
    let out = dir.path().join("v.svg");
    let err = plot(&path, &TrialOptions::default(), &options, &out).unwrap_err();
    match &err {
        ReportError::NothingToPlot {
            matched,
            multi_element,
            ..
        } => assert_eq!((*matched, *multi_element), (1, 1)),
        other => panic!("{other}"),
    }
    let message = err.to_string();
    assert!(message.contains("1 tensor(s) match"), "{message}");
    assert!(message.contains("more than one element"), "{message}");
    assert!(message.contains("--stat (min, max, mean"), "{message}");

    let none = PlotOptions {
        tensor: regex::Regex::new("^no_such_tensor$").unwrap(),
        ..options
    };
    let message = plot(&path, &TrialOptions::default(), &none, &out)
        .unwrap_err()
        .to_string();
    assert_eq!(message, "no tensor matches \"^no_such_tensor$\"");
}
