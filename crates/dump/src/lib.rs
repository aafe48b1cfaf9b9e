//! The trial dump, schema `smdebug-trial-dump/v1`: everything the Trial/Tensor API of
//! `smdebug-trial` says about a trial as one JSON document, call for call what
//! `tests/peer/dump.py` asks the Python smdebug, so two implementations can be compared with
//! `compare_dumps.py`. It is what `smdebug dump` prints; the conformance suite, the fuzz
//! target `trial_open` and the benchmarks use it as a library.
//!
//! It lives outside the reader so that the reader's public API and dependencies (no JSON
//! writer, no sha256) are only what reading a trial needs.
//!
//! Errors are data: recorded in place as `{"error": {"type", "message"}}` where `type` is
//! the kind of failure by the name of the Python exception class
//! ([`smdebug_trial::ErrorKind::as_str`]).
//!
//! ```
//! use smdebug_dump::{dump_trial, DumpOptions, SCHEMA};
//!
//! // A folder that holds no trial: the failure to open it is recorded, not raised.
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("training_job_end.ts"), b"")?;
//! let doc = dump_trial(dir.path().to_str().unwrap(), &DumpOptions::default());
//! assert_eq!(doc["schema"], SCHEMA);
//! assert_eq!(doc["trial"]["error"]["type"], "MissingCollectionFiles");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

use serde_json::{json, Map, Value as Json};
use sha2::{Digest, Sha256};
use smdebug_config::pyjson::PyValue;
use smdebug_config::Mode;
use smdebug_trial::{Result, Tensor, TensorFilter, TensorValue, Trial, TrialError, TrialOptions};
use std::collections::BTreeSet;

/// The schema name.
pub const SCHEMA: &str = "smdebug-trial-dump/v1";
const MODES: [Mode; 4] = [Mode::Global, Mode::Train, Mode::Eval, Mode::Predict];
const REDUCTIONS: [&str; 9] = [
    "min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2",
];

/// What the dump includes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// Values with at most this many elements are written out in full.
    pub max_inline: usize,
    /// Whether every step lists all 18 `reduction_value`s (computed when not saved).
    pub computed_reductions: bool,
    /// Whether every step records `value(global step)` (GLOBAL mode, default worker).
    pub global_lookup: bool,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            max_inline: 64,
            computed_reductions: true,
            global_lookup: true,
        }
    }
}

/// Opens the trial at `path` and dumps it; a failure to open is recorded as the `trial`
/// entry, as the Python dumper does.
pub fn dump_trial(path: &str, options: &DumpOptions) -> Json {
    dump_trial_with(path, options, TrialOptions::default())
}

/// [`dump_trial`] with explicit trial options. The whole document is built in memory; a
/// large trial is better written out as it goes with [`write_dump`].
pub fn dump_trial_with(path: &str, options: &DumpOptions, trial_options: TrialOptions) -> Json {
    let mut doc = Map::new();
    dump_parts(path, options, trial_options, &mut |key, value| {
        match key {
            Key::Top(k) => {
                doc.insert(k.into(), value);
            }
            Key::Tensor(name) => {
                let tensors = doc
                    .entry("tensors")
                    .or_insert_with(|| Json::Object(Map::new()));
                if let Json::Object(t) = tensors {
                    t.insert(name.to_owned(), value);
                }
            }
        }
        Ok::<(), std::convert::Infallible>(())
    })
    .unwrap_or_else(|e| match e {});
    Json::Object(doc)
}

/// Writes the dump of the trial at `path` to `out` as it goes, one tensor at a time, so
/// that memory holds one tensor's part of the document rather than all of it (the
/// document of a large trial is several times the size of its text). The text is the
/// JSON of [`dump_trial_with`], indented unless `compact`, keys sorted except `generator`,
/// which comes last so that its `seconds` cover the whole dump.
pub fn write_dump(
    out: &mut dyn std::io::Write,
    path: &str,
    options: &DumpOptions,
    trial_options: TrialOptions,
    compact: bool,
) -> std::io::Result<()> {
    let mut w = DocWriter {
        out,
        compact,
        top_fields: 0,
        tensor_fields: None,
    };
    w.out.write_all(b"{")?;
    dump_parts(path, options, trial_options, &mut |key, value| match key {
        Key::Top(k) => {
            w.end_tensors()?;
            w.field(0, k, &value)
        }
        Key::Tensor(name) => {
            if w.tensor_fields.is_none() {
                w.key(0, "tensors")?;
                w.out.write_all(b"{")?;
                w.tensor_fields = Some(0);
            }
            w.field(1, name, &value)
        }
    })?;
    w.end_tensors()?;
    w.out.write_all(if compact { b"}\n" } else { b"\n}\n" })
}

/// Where a part of the document goes.
enum Key<'a> {
    /// A top-level entry.
    Top(&'a str),
    /// An entry of `tensors`.
    Tensor(&'a str),
}

/// The JSON text of [`write_dump`], written part by part.
struct DocWriter<'a> {
    out: &'a mut dyn std::io::Write,
    compact: bool,
    top_fields: usize,
    /// Entries written into `tensors`, once it is open.
    tensor_fields: Option<usize>,
}

impl DocWriter<'_> {
    /// `"key": ` at `depth` (0: top level, 1: inside `tensors`), after a comma if needed.
    fn key(&mut self, depth: usize, key: &str) -> std::io::Result<()> {
        let count = match depth {
            0 => &mut self.top_fields,
            _ => self.tensor_fields.get_or_insert(0),
        };
        if *count > 0 {
            self.out.write_all(b",")?;
        }
        *count += 1;
        if !self.compact {
            write!(self.out, "\n{}", "  ".repeat(depth + 1))?;
        }
        serde_json::to_writer(&mut *self.out, key)?;
        self.out.write_all(if self.compact { b":" } else { b": " })
    }

    fn field(&mut self, depth: usize, key: &str, value: &Json) -> std::io::Result<()> {
        self.key(depth, key)?;
        if self.compact {
            return Ok(serde_json::to_writer(&mut *self.out, value)?);
        }
        // JSON strings hold no raw newline, so every newline of the pretty text starts a
        // line that takes the nesting's indentation.
        let text = serde_json::to_string_pretty(value)?;
        let indent = format!("\n{}", "  ".repeat(depth + 1));
        self.out.write_all(text.replace('\n', &indent).as_bytes())
    }

    fn end_tensors(&mut self) -> std::io::Result<()> {
        match self.tensor_fields.take() {
            Some(n) if n > 0 && !self.compact => self.out.write_all(b"\n  }"),
            Some(_) => self.out.write_all(b"}"),
            None => Ok(()),
        }
    }
}

/// Produces the document's parts in the order of [`write_dump`]; `tensors` entries one by
/// one, each dropped from memory before the next is made.
fn dump_parts<E>(
    path: &str,
    options: &DumpOptions,
    trial_options: TrialOptions,
    emit: &mut dyn FnMut(Key<'_>, Json) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let start = std::time::Instant::now();
    let options_json = json!({
        "max_inline": options.max_inline,
        "computed_reductions": options.computed_reductions,
        "global_lookup": options.global_lookup,
    });
    match Trial::open(path, trial_options) {
        Err(e) => {
            emit(Key::Top("options"), options_json)?;
            emit(Key::Top("schema"), json!(SCHEMA))?;
            emit(Key::Top("trial"), error_obj(&e))?;
        }
        Ok(trial) => {
            let d = Dumper {
                tr: &trial,
                opts: options,
            };
            let body = d.trial();
            let names = strings(body.get("tensor_names"));
            emit(Key::Top("collections"), d.collections())?;
            emit(Key::Top("options"), options_json)?;
            emit(Key::Top("schema"), json!(SCHEMA))?;
            if names.is_empty() {
                emit(Key::Top("tensors"), Json::Object(Map::new()))?;
            }
            for n in &names {
                emit(Key::Tensor(n), d.tensor(n))?;
                // Each value is dumped once: keeping a finished tensor's values cached would
                // only raise the peak memory. Files read ahead stay: the next tensors'
                // records are in them.
                d.tr.clear_values();
            }
            emit(Key::Top("trial"), body)?;
        }
    }
    emit(
        Key::Top("generator"),
        json!({
            "implementation": "smdebug-rs",
            "crate": concat!("smdebug-dump ", env!("CARGO_PKG_VERSION")),
            "seconds": (start.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        }),
    )
}

/// `{"error": {"type", "message"}}`.
pub fn error_obj(e: &TrialError) -> Json {
    json!({"error": {"type": e.kind().as_str(), "message": e.to_string()}})
}

fn or_err<T>(r: Result<T>, f: impl FnOnce(T) -> Json) -> Json {
    match r {
        Ok(v) => f(v),
        Err(e) => error_obj(&e),
    }
}

fn steps_json(steps: Vec<i64>) -> Json {
    json!(steps)
}

/// The PROBES of the schema: the steps, their gaps and beyond.
fn probes(steps: &[i64]) -> Vec<i64> {
    let Some(&max) = steps.iter().max() else {
        return vec![0, 1, 100];
    };
    let set: BTreeSet<i64> = steps.iter().copied().collect();
    let mut out = set.clone();
    out.insert(0);
    out.insert(max + 1);
    out.insert(max + 100);
    for &x in &set {
        if !set.contains(&(x + 1)) {
            out.insert(x + 1);
        }
    }
    out.into_iter().collect()
}

struct Dumper<'a> {
    tr: &'a Trial,
    opts: &'a DumpOptions,
}

impl Dumper<'_> {
    fn names(&self, filter: TensorFilter) -> Json {
        or_err(self.tr.tensor_names_filtered(&filter), |v| json!(v))
    }

    fn trial(&self) -> Json {
        let tr = self.tr;
        let mut out = Map::new();
        out.insert("name".into(), json!(tr.name()));
        // First call: refresh.
        let names = match tr.tensor_names() {
            Ok(n) => n,
            Err(e) => return error_obj(&e),
        };
        out.insert("tensor_names".into(), json!(names));
        out.insert("workers".into(), or_err(tr.workers(), |w| json!(w)));
        out.insert("num_workers".into(), json!(tr.num_workers()));
        out.insert(
            "training_ended".into(),
            or_err(tr.has_training_ended(), |b| json!(b)),
        );
        out.insert(
            "modes".into(),
            json!(tr.modes().iter().map(|m| m.name()).collect::<Vec<_>>()),
        );
        let mut steps = Map::new();
        let mut every = Map::new();
        let mut every_v: Vec<(Mode, Vec<i64>)> = Vec::new();
        let mut steps_v: Vec<(Mode, Vec<i64>)> = Vec::new();
        for m in MODES {
            let s = tr.steps(m, false).unwrap_or_default();
            steps.insert(m.name().into(), steps_json(s.clone()));
            steps_v.push((m, s));
        }
        for m in MODES {
            let s = tr.steps(m, true).unwrap_or_default();
            every.insert(m.name().into(), steps_json(s.clone()));
            every_v.push((m, s));
        }
        out.insert("steps".into(), Json::Object(steps));
        out.insert("steps_incl_incomplete".into(), Json::Object(every));
        out.insert("loaded_all_steps".into(), json!(tr.loaded_all_steps()));
        out.insert("last_complete_step".into(), json!(tr.last_complete_step()));
        let every_of = |m: Mode| -> &[i64] {
            every_v
                .iter()
                .find(|(x, _)| *x == m)
                .map(|(_, s)| s.as_slice())
                .unwrap_or(&[])
        };

        let mut global_steps = Map::new();
        for &g in every_of(Mode::Global) {
            let (mode, ms) = mode_pair(tr.mode_modestep(g));
            let names = self.names(TensorFilter {
                step: Some(g),
                ..Default::default()
            });
            global_steps.insert(
                g.to_string(),
                json!({"mode": mode, "mode_step": ms, "tensor_names": names}),
            );
        }
        out.insert("global_steps".into(), Json::Object(global_steps));

        let mut mode_steps = Map::new();
        for m in &MODES[1..] {
            let ev = every_of(*m);
            if ev.is_empty() {
                continue;
            }
            let mut per = Map::new();
            for &ms in ev {
                let names = self.names(TensorFilter {
                    step: Some(ms),
                    mode: *m,
                    ..Default::default()
                });
                per.insert(
                    ms.to_string(),
                    json!({
                        "global_step": or_err(tr.global_step(*m, ms), |g| json!(g)),
                        "tensor_names": names,
                    }),
                );
            }
            mode_steps.insert(m.name().into(), Json::Object(per));
        }
        out.insert("mode_steps".into(), Json::Object(mode_steps));
        let mut by_mode = Map::new();
        for m in &MODES[1..] {
            by_mode.insert(
                m.name().into(),
                self.names(TensorFilter {
                    mode: *m,
                    ..Default::default()
                }),
            );
        }
        out.insert("tensor_names_by_mode".into(), Json::Object(by_mode));

        let colls = tr.collections();
        let mut by_coll = Map::new();
        for c in colls.keys() {
            by_coll.insert(
                c.clone(),
                self.names(TensorFilter {
                    collection: Some(c.clone()),
                    ..Default::default()
                }),
            );
        }
        let regexes: BTreeSet<String> = colls
            .values()
            .flat_map(|c| c.include_regex().iter().cloned())
            .collect();
        let mut by_rx = Map::new();
        for rx in regexes {
            by_rx.insert(
                rx.clone(),
                self.names(TensorFilter {
                    regex: Some(vec![rx]),
                    ..Default::default()
                }),
            );
        }
        let losses = strings(by_coll.get("losses"));
        out.insert("tensor_names_by_collection".into(), Json::Object(by_coll));
        out.insert("tensor_names_by_regex".into(), Json::Object(by_rx));

        let mut hps = Map::new();
        let mut mms = Map::new();
        let mut gss = Map::new();
        for m in MODES {
            let mut states = Map::new();
            for s in probes(every_of(m)) {
                states.insert(
                    s.to_string(),
                    or_err(tr.has_passed_step(s, m), |st| json!(st.name())),
                );
                if m == Mode::Global {
                    let (mode, ms) = mode_pair(tr.mode_modestep(s));
                    mms.insert(s.to_string(), json!([mode, ms]));
                } else {
                    let g = or_err(tr.global_step(m, s), |g| json!(g));
                    gss.entry(m.name())
                        .or_insert_with(|| Json::Object(Map::new()))
                        .as_object_mut()
                        .map(|o| o.insert(s.to_string(), g));
                }
            }
            hps.insert(m.name().into(), Json::Object(states));
        }
        out.insert(
            "probes".into(),
            json!({"has_passed_step": hps, "mode_modestep": mms, "global_step": gss}),
        );

        let mut last = Map::new();
        for (m, s) in &steps_v {
            let Some(&step) = s.last() else { continue };
            let mut l = Map::new();
            for n in &losses {
                let v = tr
                    .tensor(n)
                    .and_then(|t| t.value(step, *m, None))
                    .map(|v| encode_value(&v, self.opts.max_inline));
                l.insert(n.clone(), or_err(v, |v| v));
            }
            last.insert(m.name().into(), json!({"step": step, "losses": l}));
        }
        out.insert("last_step".into(), Json::Object(last));
        Json::Object(out)
    }

    fn collections(&self) -> Json {
        let mut out = Map::new();
        for (name, c) in self.tr.collections() {
            // tensor_names are a sorted set already.
            out.insert(name, pyvalue_to_json(&c.to_json_value()));
        }
        Json::Object(out)
    }

    fn tensor(&self, name: &str) -> Json {
        let t = match self.tr.tensor(name) {
            Ok(t) => t,
            Err(e) => return error_obj(&e),
        };
        t.prefetch();
        let mut steps = Map::new();
        let mut every = Map::new();
        for m in MODES {
            steps.insert(m.name().into(), or_err(t.steps(m, false), steps_json));
            every.insert(m.name().into(), or_err(t.steps(m, true), steps_json));
        }
        let globals = t.steps(Mode::Global, true).unwrap_or_default();
        let mut at = Map::new();
        for g in globals {
            let (mode, ms) = match self.tr.mode_modestep(g) {
                Ok(Some(x)) => x,
                _ => {
                    at.insert(g.to_string(), json!({"mode": null, "mode_step": null}));
                    continue;
                }
            };
            let mut a = Map::new();
            a.insert("mode".into(), json!(mode.name()));
            a.insert("mode_step".into(), json!(ms));
            let workers = match t.workers(ms, mode) {
                Ok(mut w) => {
                    w.sort();
                    w
                }
                Err(e) => {
                    a.insert("workers".into(), error_obj(&e));
                    at.insert(g.to_string(), Json::Object(a));
                    continue;
                }
            };
            a.insert("workers".into(), json!(workers));
            if self.opts.global_lookup {
                a.insert(
                    "value_via_global_step".into(),
                    or_err(
                        t.value(g, Mode::Global, None),
                        |v| json!({"sha256": sha256(&v)}),
                    ),
                );
            }
            let mut bw = Map::new();
            for w in &workers {
                bw.insert(w.clone(), self.worker(&t, ms, mode, w));
            }
            a.insert("by_worker".into(), Json::Object(bw));
            at.insert(g.to_string(), Json::Object(a));
        }
        json!({
            "original_name": t.original_name(),
            "steps": steps,
            "steps_incl_incomplete": every,
            "at": at,
        })
    }

    fn worker(&self, t: &Tensor<'_>, ms: i64, mode: Mode, w: &str) -> Json {
        let mi = self.opts.max_inline;
        let mut out = Map::new();
        out.insert(
            "value".into(),
            or_err(t.value(ms, mode, Some(w)), |v| encode_value(&v, mi)),
        );
        out.insert(
            "shape".into(),
            or_err(t.shape(ms, mode, Some(w)), |s| json!(s)),
        );
        out.insert(
            "reduction_values".into(),
            or_err(t.reduction_values(ms, mode, Some(w)), |rv| {
                let mut o = Map::new();
                for ((op, abs), v) in rv {
                    o.insert(key(&op, abs), encode_value(&v, mi));
                }
                Json::Object(o)
            }),
        );
        if self.opts.computed_reductions {
            let mut o = Map::new();
            for op in REDUCTIONS {
                for abs in [false, true] {
                    o.insert(
                        key(op, abs),
                        or_err(t.reduction_value(ms, op, mode, Some(w), abs), |v| {
                            encode_value(&v, mi)
                        }),
                    );
                }
            }
            out.insert("reduction_value".into(), Json::Object(o));
        }
        Json::Object(out)
    }
}

fn key(op: &str, abs: bool) -> String {
    if abs {
        format!("abs_{op}")
    } else {
        op.to_owned()
    }
}

fn mode_pair(r: Result<Option<(Mode, i64)>>) -> (Json, Json) {
    match r {
        Ok(Some((m, s))) => (json!(m.name()), json!(s)),
        _ => (Json::Null, Json::Null),
    }
}

/// A collections-file value as JSON (big integers as their text).
fn pyvalue_to_json(v: &PyValue) -> Json {
    match v {
        PyValue::Null => Json::Null,
        PyValue::Bool(b) => json!(b),
        PyValue::Int(i) => json!(i),
        PyValue::BigInt(s) => s
            .parse::<serde_json::Number>()
            .map(Json::Number)
            .unwrap_or_else(|_| json!(s)),
        PyValue::Float(f) => json_float(*f),
        PyValue::Str(s) => json!(s),
        PyValue::Array(a) => Json::Array(a.iter().map(pyvalue_to_json).collect()),
        PyValue::Object(o) => Json::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), pyvalue_to_json(v)))
                .collect(),
        ),
    }
}

fn json_float(x: f64) -> Json {
    if x.is_nan() {
        json!("NaN")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(x)
    }
}

/// sha256 of the value's canonical bytes (C order, little-endian; bool 1 byte; complex as
/// (re, im); strings as u32le(len) + UTF-8 per element).
pub fn sha256(v: &TensorValue) -> String {
    hex::encode(Sha256::digest(v.to_le_bytes()))
}

/// The schema's VALUE object for a value.
pub fn encode_value(v: &TensorValue, max_inline: usize) -> Json {
    let mut out = Map::new();
    out.insert("dtype".into(), json!(v.dtype().name()));
    out.insert("shape".into(), json!(v.shape()));
    out.insert("size".into(), json!(v.len()));
    out.insert("sha256".into(), json!(sha256(v)));
    if v.len() <= max_inline {
        out.insert("data".into(), Json::Array(inline(v)));
    } else if let Some(stats) = stats(v) {
        out.insert("stats".into(), stats);
    }
    Json::Object(out)
}

fn inline(v: &TensorValue) -> Vec<Json> {
    match v {
        TensorValue::Float16(a) => a.iter().map(|x| json_float(f64::from(*x))).collect(),
        TensorValue::Float32(a) => a.iter().map(|x| json_float(f64::from(*x))).collect(),
        TensorValue::Float64(a) => a.iter().map(|x| json_float(*x)).collect(),
        TensorValue::Int8(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::Int16(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::Int32(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::Int64(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::UInt8(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::UInt16(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::UInt32(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::UInt64(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::Bool(a) => a.iter().map(|x| json!(x)).collect(),
        TensorValue::Complex64(a) => a
            .iter()
            .map(|c| json!([json_float(f64::from(c.re)), json_float(f64::from(c.im))]))
            .collect(),
        TensorValue::Complex128(a) => a
            .iter()
            .map(|c| json!([json_float(c.re), json_float(c.im)]))
            .collect(),
        TensorValue::Str(a) => a.iter().map(|s| json!(s)).collect(),
    }
}

fn float_stats(xs: impl Iterator<Item = f64>) -> Json {
    let (mut nan, mut pinf, mut ninf, mut n) = (0u64, 0u64, 0u64, 0u64);
    let (mut lo, mut hi, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for x in xs {
        if x.is_nan() {
            nan += 1;
        } else if x == f64::INFINITY {
            pinf += 1;
        } else if x == f64::NEG_INFINITY {
            ninf += 1;
        } else {
            n += 1;
            lo = lo.min(x);
            hi = hi.max(x);
            sum += x;
        }
    }
    let have = n > 0;
    json!({
        "nan": nan, "posinf": pinf, "neginf": ninf,
        "finite_min": if have { json_float(lo) } else { Json::Null },
        "finite_max": if have { json_float(hi) } else { Json::Null },
        "finite_mean": if have { json_float(sum / n as f64) } else { Json::Null },
    })
}

fn int_stats(xs: impl Iterator<Item = i128>) -> Option<Json> {
    let (mut lo, mut hi, mut sum, mut n) = (i128::MAX, i128::MIN, 0f64, 0u64);
    for x in xs {
        lo = lo.min(x);
        hi = hi.max(x);
        sum += x as f64;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    let num = |x: i128| -> Json {
        if let Ok(v) = i64::try_from(x) {
            json!(v)
        } else if let Ok(v) = u64::try_from(x) {
            json!(v)
        } else {
            json!(x.to_string())
        }
    };
    Some(json!({"min": num(lo), "max": num(hi), "mean": json_float(sum / n as f64)}))
}

fn stats(v: &TensorValue) -> Option<Json> {
    Some(match v {
        TensorValue::Float16(a) => float_stats(a.iter().map(|x| f64::from(*x))),
        TensorValue::Float32(a) => float_stats(a.iter().map(|x| f64::from(*x))),
        TensorValue::Float64(a) => float_stats(a.iter().copied()),
        TensorValue::Int8(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::Int16(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::Int32(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::Int64(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::UInt8(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::UInt16(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::UInt32(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::UInt64(a) => int_stats(a.iter().map(|&x| i128::from(x)))?,
        TensorValue::Bool(a) => {
            let t = a.iter().filter(|&&b| b).count();
            json!({"true": t, "false": a.len() - t})
        }
        TensorValue::Complex64(_) | TensorValue::Complex128(_) | TensorValue::Str(_) => {
            return None
        }
    })
}

/// The strings of a JSON array the dump built itself (anything else: none).
fn strings(v: Option<&Json>) -> Vec<String> {
    v.and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::arr1;

    #[test]
    fn probes_cover_gaps_and_beyond() {
        assert_eq!(probes(&[]), vec![0, 1, 100]);
        assert_eq!(probes(&[2, 3, 5]), vec![0, 2, 3, 4, 5, 6, 105]);
    }

    #[test]
    fn values_encode_like_the_schema() {
        let v = TensorValue::Float32(arr1(&[1.5f32, f32::NAN, f32::NEG_INFINITY]).into_dyn());
        let j = encode_value(&v, 64);
        assert_eq!(j["dtype"], "float32");
        assert_eq!(j["data"], json!([1.5, "NaN", "-Infinity"]));
        let j = encode_value(&v, 2);
        assert_eq!(j["stats"]["nan"], 1);
        assert_eq!(j["stats"]["finite_mean"], 1.5);
        // sha256 of the little-endian element bytes.
        let bytes: Vec<u8> = [1.5f32, f32::NAN, f32::NEG_INFINITY]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(j["sha256"], hex::encode(Sha256::digest(&bytes)));
    }
}
