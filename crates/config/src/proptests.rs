//! Property tests: save decisions against a brute-force reference, JSON round trips.

use crate::*;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use std::collections::HashSet;

fn mode_cfg() -> impl Strategy<Value = SaveConfigMode> {
    (
        prop_oneof![1i64..60, -20i64..0, Just(500)],
        -50i64..300,
        option::of(-50i64..400),
        vec(-100i64..600, 0..5),
    )
        .prop_map(
            |(save_interval, start_step, end_step, save_steps)| SaveConfigMode {
                save_interval,
                start_step,
                end_step,
                save_steps,
            },
        )
}

fn save_config() -> impl Strategy<Value = SaveConfig> {
    prop_oneof![
        mode_cfg().prop_map(SaveConfig::new),
        vec((0usize..4, option::of(mode_cfg())), 0..5)
            .prop_map(|v| SaveConfig::from_modes(v.into_iter().map(|(i, c)| (Mode::ALL[i], c)))),
    ]
}

/// Saved steps enumerated from their definition: the listed steps plus every multiple of the
/// interval inside `[start, end)`.
fn brute_force(c: &SaveConfigMode, lo: i64, hi: i64) -> HashSet<i64> {
    let mut saved: HashSet<i64> = c.save_steps.iter().copied().collect();
    let end = c.end_step.unwrap_or(i64::MAX);
    let k_max = (hi.abs().max(lo.abs()) / c.save_interval.abs()) + 1;
    for k in -k_max..=k_max {
        let s = k * c.save_interval;
        if s >= c.start_step && s < end {
            saved.insert(s);
        }
    }
    saved
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_./:0-9]{0,12}",
        any::<String>(),
        "[\\u{0}-\\u{7f}éλ😀\"\\\\]{0,8}",
    ]
}

fn reduction_config() -> impl Strategy<Value = ReductionConfig> {
    (
        vec(0usize..7, 0..4),
        vec(0usize..7, 0..4),
        vec(0usize..2, 0..3),
        vec(0usize..2, 0..3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(r, ar, n, an, raw, shape)| ReductionConfig {
            reductions: r
                .into_iter()
                .map(|i| ReductionConfig::ALLOWED_REDUCTIONS[i])
                .collect(),
            abs_reductions: ar
                .into_iter()
                .map(|i| ReductionConfig::ALLOWED_REDUCTIONS[i])
                .collect(),
            norms: n
                .into_iter()
                .map(|i| ReductionConfig::ALLOWED_NORMS[i])
                .collect(),
            abs_norms: an
                .into_iter()
                .map(|i| ReductionConfig::ALLOWED_NORMS[i])
                .collect(),
            save_raw_tensor: raw,
            save_shape: shape,
            ..Default::default()
        })
}

const PATTERNS: &[&str] = &[
    "^(?!gradient).*weight",
    "^gradient",
    "relu[0-9]*",
    "x$",
    "^[a-zA-z]+-.+(?<!(auc|map))$",
    "a{",
    "",
];

fn collection() -> impl Strategy<Value = Collection> {
    (
        text(),
        vec(0usize..PATTERNS.len(), 0..3),
        vec(text(), 0..4),
        option::of(reduction_config()),
        option::of(save_config()),
        any::<bool>(),
    )
        .prop_map(|(name, pats, tensors, rc, sc, hist)| {
            let mut c = Collection::new(name);
            for p in pats {
                c.include(PATTERNS[p]).unwrap();
            }
            for t in tensors {
                c.add_tensor_name(t);
            }
            c.reduction_config = rc;
            c.save_config = sc;
            c.save_histogram = hist;
            c
        })
}

proptest! {
    #[test]
    fn should_save_equals_brute_force(c in mode_cfg(), steps in vec(-120i64..700, 1..40)) {
        let saved = brute_force(&c, -120, 700);
        for s in steps {
            prop_assert_eq!(c.should_save(s).unwrap(), saved.contains(&s), "step {}", s);
        }
    }

    #[test]
    fn save_config_json_roundtrips(c in save_config()) {
        let text = c.to_json();
        let back = SaveConfig::from_json(&text).unwrap();
        prop_assert_eq!(&back, &c);
        prop_assert_eq!(back.to_json(), text);
    }

    #[test]
    fn reduction_config_json_and_string_roundtrip(c in reduction_config()) {
        let back = ReductionConfig::from_json(&c.to_json()).unwrap();
        prop_assert_eq!(&back, &c);
        let s = ReductionConfig::from_sagemaker_str(&c.reductions_string()).unwrap();
        prop_assert_eq!(s.reductions, c.reductions);
        prop_assert_eq!(s.abs_norms, c.abs_norms);
    }

    #[test]
    fn collections_file_roundtrips(cs in vec(collection(), 0..5), workers in 1i64..64) {
        let mut cm = CollectionManager::new();
        for c in cs {
            cm.add(c);
        }
        cm.set_num_workers(workers);
        let text = cm.to_json();
        prop_assert!(text.is_ascii());
        let back = CollectionManager::from_json(&text).unwrap();
        prop_assert_eq!(&back, &cm);
        prop_assert_eq!(back.to_json(), text);
    }

    #[test]
    fn any_string_survives_python_json_escaping(s in any::<String>()) {
        let mut out = String::new();
        pyjson::write_str(&mut out, &s);
        prop_assert!(out.is_ascii());
        prop_assert_eq!(pyjson::parse(&out).unwrap(), PyValue::Str(s));
    }

    #[test]
    fn hook_config_json_roundtrips(
        interval in option::of(1i64..1000),
        train in option::of(option::of(1i64..50)),
        steps in option::of(vec(0i64..100, 1..4)),
        red in option::of(reduction_config()),
        save_all in any::<bool>(),
        regexes in option::of(vec(0usize..PATTERNS.len() - 2, 1..3)),
        colls in option::of(vec((text(), option::of(1i64..20), option::of(any::<bool>())), 0..3)),
    ) {
        let mut hp = Vec::new();
        if let Some(i) = interval { hp.push(("save_interval".to_string(), PyValue::Int(i))); }
        if let Some(t) = train {
            hp.push(("train.save_interval".to_string(), t.map_or(PyValue::Null, PyValue::Int)));
        }
        if let Some(s) = &steps {
            let items: Vec<String> = s.iter().map(|x| x.to_string()).collect();
            hp.push(("save_steps".to_string(), PyValue::Str(items.join(", "))));
        }
        if let Some(PyValue::Object(items)) = red.as_ref().map(ReductionConfig::to_json_value) {
            hp.extend(items);
        }
        hp.push(("save_all".to_string(), PyValue::Str(if save_all { "True" } else { "false" }.into())));
        if let Some(r) = &regexes {
            let ps: Vec<&str> = r.iter().map(|&i| PATTERNS[i]).collect();
            hp.push(("include_regex".to_string(), PyValue::Str(ps.join(","))));
        }
        let mut top = vec![
            ("LocalPath".to_string(), PyValue::Str("/tmp/x".into())),
            ("HookParameters".to_string(), PyValue::Object(hp)),
        ];
        if let Some(cs) = &colls {
            let arr = cs.iter().map(|(name, eval, hist)| {
                let mut cp = Vec::new();
                if let Some(e) = eval { cp.push(("eval.save_interval".to_string(), PyValue::Int(*e))); }
                if let Some(h) = hist { cp.push(("save_histogram".to_string(), PyValue::Bool(*h))); }
                PyValue::Object(vec![
                    ("CollectionName".to_string(), PyValue::Str(name.clone())),
                    ("CollectionParameters".to_string(), PyValue::Object(cp)),
                ])
            }).collect();
            top.push(("CollectionConfigurations".to_string(), PyValue::Array(arr)));
        }
        let doc = pyjson::to_string(&PyValue::Object(top));
        let cfg = HookConfig::from_json(&doc).unwrap();
        prop_assert_eq!(cfg.hook.save_all, save_all);
        let again = HookConfig::from_json(&cfg.to_json().unwrap()).unwrap();
        prop_assert_eq!(again, cfg);
    }
}
