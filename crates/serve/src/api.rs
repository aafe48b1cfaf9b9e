//! The JSON API and the event stream. Every handler reads; none writes. A run is named by
//! its opaque id only; whatever a run's trial does (corrupt records, a panic in the reader),
//! its answer carries the error and the server goes on.

use crate::downsample::downsample;
use crate::poll::{panic_text, trial_options};
use crate::runs::{lock, Cached, Following, Run, RunSummary};
use crate::Shared;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use smdebug_fleet::FiringRecord;
use smdebug_report::data::{Chart, ReportData};
use smdebug_report::{NoProgress, ReportOptions};
use smdebug_trial::Mode;
use std::convert::Infallible;
use std::sync::Arc;

/// Default width (in buckets) curves are thinned to when a page does not say.
const DEFAULT_WIDTH: usize = 1200;
/// Most steps listed per tensor for the histogram slider.
const SLIDER_STEPS: usize = 2000;

type ApiResult = Result<Response, ApiError>;

/// A refused request: its status and why, sent as `{"error": …}`.
#[derive(Debug)]
pub(crate) struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn not_found(what: &str) -> ApiError {
    ApiError(StatusCode::NOT_FOUND, format!("no {what}"))
}

fn unprocessable(error: String) -> ApiError {
    ApiError(StatusCode::UNPROCESSABLE_ENTITY, error)
}

fn run_of(shared: &Shared, id: &str) -> Result<Arc<Run>, ApiError> {
    shared.runs.get(id).ok_or_else(|| not_found("such run"))
}

/// Runs `f` on a blocking thread; a panic in it is an error answer, not the server's end.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => Err(format!(
            "reading the run panicked: {}",
            panic_text(&*e.into_panic())
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// `GET /api/runs`: every run with its status and verdicts.
pub(crate) async fn runs(State(shared): State<Arc<Shared>>) -> Json<serde_json::Value> {
    let runs: Vec<RunSummary> = shared.runs.all().iter().map(|r| r.summary()).collect();
    Json(json!({
        "paths": shared.options.paths,
        "rules": shared.runs.rules,
        "runs": runs,
        "discovery_error": lock(&shared.discovery_error).clone(),
        "rules_error": lock(&shared.rules_error).clone(),
    }))
}

/// The width query parameter.
#[derive(Debug, Deserialize)]
pub(crate) struct WidthQuery {
    width: Option<usize>,
}

fn width(w: Option<usize>) -> usize {
    w.unwrap_or(DEFAULT_WIDTH).clamp(10, 20_000)
}

/// The report's data of a run, from its cache while the run has no new step.
fn report_data(shared: &Shared, run: &Run) -> Result<Arc<ReportData>, String> {
    cached(&run.detail, run, || {
        let trial = run.trial().ok_or_else(|| not_open(run))?;
        let options = ReportOptions {
            max_embedded: usize::MAX,
            histogram_tensors_max: 0,
            threads: 2,
            ..ReportOptions::default()
        };
        smdebug_report::collect_trial(
            &trial,
            &trial_options(shared, &run.name),
            &options,
            &NoProgress,
        )
        .map_err(|e| e.to_string())
    })
}

fn not_open(run: &Run) -> String {
    let s = run.summary();
    s.error.unwrap_or_else(|| {
        "the trial has no collections files yet: its job has not started writing".into()
    })
}

/// `make()` unless the cache holds what it made at the run's current steps.
fn cached<T>(
    cache: &Cached<T>,
    run: &Run,
    make: impl FnOnce() -> Result<T, String>,
) -> Result<Arc<T>, String> {
    let stamp = run.stamp();
    if let Some((s, v)) = lock(cache).as_ref() {
        if *s == stamp {
            return Ok(Arc::clone(v));
        }
    }
    let v = Arc::new(make()?);
    *lock(cache) = Some((stamp, Arc::clone(&v)));
    Ok(v)
}

/// A chart with every series thinned to `width` buckets.
fn thin(chart: &Chart, width: usize) -> Chart {
    let mut c = chart.clone();
    for s in &mut c.series {
        let keep = downsample(&s.steps, &s.values, width);
        if keep.len() == s.steps.len() {
            continue;
        }
        s.steps = keep.iter().map(|&i| s.steps[i]).collect();
        if !s.mode_steps.is_empty() {
            s.mode_steps = keep.iter().map(|&i| s.mode_steps[i]).collect();
        }
        s.values = keep.iter().map(|&i| s.values[i]).collect();
        s.sampled = true;
    }
    c
}

fn thin_all(charts: &[Chart], width: usize) -> Vec<Chart> {
    charts.iter().map(|c| thin(c, width)).collect()
}

/// `GET /api/runs/{id}`: the run's curves (thinned to `?width=`), norms, update ratios,
/// activations, completeness, health findings of the reader and its rule firings.
pub(crate) async fn run(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(q): Query<WidthQuery>,
) -> ApiResult {
    let run = run_of(&shared, &id)?;
    let width = width(q.width);
    let r = Arc::clone(&run);
    let data = blocking(move || report_data(&shared, &r)).await;
    let st = lock(&run.state);
    let mut out = json!({
        "summary": st.summary,
        "firings": st.firings,
    });
    drop(st);
    match data {
        Ok(d) => {
            let thinned = ReportData {
                scalars: thin_all(&d.scalars, width),
                gradient_norms: thin_all(&d.gradient_norms, width),
                weight_norms: thin_all(&d.weight_norms, width),
                update_ratios: thin_all(&d.update_ratios, width),
                activations: thin_all(&d.activations, width),
                ..(*d).clone()
            };
            out["data"] = serde_json::to_value(thinned).unwrap_or_default();
        }
        Err(e) => out["error"] = json!(e),
    }
    Ok(Json(out).into_response())
}

/// `GET /api/runs/{id}/health`: the first non-finite value and what grew before it
/// (`smdebug health`), read once per new step.
pub(crate) async fn health(State(shared): State<Arc<Shared>>, Path(id): Path<String>) -> ApiResult {
    let run = run_of(&shared, &id)?;
    let r = Arc::clone(&run);
    let report = blocking(move || {
        cached(&r.health, &r, || {
            let trial = r.trial().ok_or_else(|| not_open(&r))?;
            let report =
                smdebug_diagnose::health(&trial, &Default::default()).map_err(|e| e.to_string())?;
            serde_json::to_value(report).map_err(|e| e.to_string())
        })
    })
    .await;
    match report {
        Ok(v) => Ok(Json(json!({ "health": *v })).into_response()),
        Err(e) => Ok(Json(json!({ "error": e })).into_response()),
    }
}

/// One tensor for the histogram slider.
#[derive(Debug, Serialize)]
struct TensorSteps {
    name: String,
    /// Its global steps (an even sample of at most 2000).
    steps: Vec<i64>,
}

/// `GET /api/runs/{id}/tensors`: every tensor and its steps.
pub(crate) async fn tensors(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> ApiResult {
    let run = run_of(&shared, &id)?;
    let r = Arc::clone(&run);
    let list = blocking(move || {
        let trial = r.trial().ok_or_else(|| not_open(&r))?;
        let names = trial.tensor_names().map_err(|e| e.to_string())?;
        let mut out = Vec::with_capacity(names.len());
        for name in names {
            let steps = trial
                .tensor(&name)
                .and_then(|t| t.steps(Mode::Global, false))
                .map_err(|e| e.to_string())?;
            let steps = if steps.len() > SLIDER_STEPS {
                (0..SLIDER_STEPS)
                    .map(|i| steps[i * (steps.len() - 1) / (SLIDER_STEPS - 1)])
                    .collect()
            } else {
                steps
            };
            out.push(TensorSteps { name, steps });
        }
        Ok(out)
    })
    .await;
    match list {
        Ok(v) => Ok(Json(json!({ "tensors": v })).into_response()),
        Err(e) => Ok(Json(json!({ "error": e })).into_response()),
    }
}

/// The histogram query.
#[derive(Debug, Deserialize)]
pub(crate) struct HistogramQuery {
    tensor: String,
    step: i64,
    mode: Option<String>,
    bins: Option<usize>,
}

/// `GET /api/runs/{id}/histogram?tensor=…&step=…[&mode=…][&bins=…]`: counted here, so a
/// page never receives the tensor.
pub(crate) async fn histogram(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    Query(q): Query<HistogramQuery>,
) -> ApiResult {
    let run = run_of(&shared, &id)?;
    let mode: Mode = match q.mode.as_deref().unwrap_or("GLOBAL").parse() {
        Ok(m) => m,
        Err(_) => return Err(unprocessable(format!("no mode {:?}", q.mode))),
    };
    let bins = q.bins.unwrap_or(30).clamp(1, 1000);
    let r = Arc::clone(&run);
    let h = blocking(move || {
        let trial = r.trial().ok_or_else(|| not_open(&r))?;
        smdebug_report::histogram_at(&trial, &q.tensor, q.step, mode, bins)
            .map_err(|e| e.to_string())
    })
    .await;
    match h {
        Ok(Some(h)) => Ok(Json(json!({ "histogram": h })).into_response()),
        Ok(None) => Err(unprocessable("the value has no finite real element".into())),
        Err(e) => Err(unprocessable(e)),
    }
}

/// The compare query: runs by id, comma-separated, and the chart to overlay.
#[derive(Debug, Deserialize)]
pub(crate) struct CompareQuery {
    runs: String,
    chart: Option<String>,
    kind: Option<String>,
    width: Option<usize>,
}

/// `GET /api/compare?runs=ID,ID[&kind=scalars|gradient_norms|weight_norms|update_ratios][&chart=TITLE]`:
/// the chart of that title from each run (the charts each run has, when no title is given).
pub(crate) async fn compare(
    State(shared): State<Arc<Shared>>,
    Query(q): Query<CompareQuery>,
) -> ApiResult {
    let mut chosen = Vec::new();
    for id in q.runs.split(',').filter(|s| !s.is_empty()) {
        chosen.push(run_of(&shared, id)?);
    }
    if chosen.is_empty() {
        return Err(unprocessable("no run chosen (?runs=ID,ID)".into()));
    }
    let kind = q.kind.clone().unwrap_or_else(|| "scalars".into());
    if !["scalars", "gradient_norms", "weight_norms", "update_ratios"].contains(&kind.as_str()) {
        return Err(unprocessable(format!("no chart kind {kind:?}")));
    }
    let width = width(q.width);
    let mut out = Vec::new();
    for run in chosen {
        let s = Arc::clone(&shared);
        let r = Arc::clone(&run);
        let data = blocking(move || report_data(&s, &r)).await;
        let mut entry = json!({ "id": run.id, "name": run.name });
        match data {
            Ok(d) => {
                let charts = match kind.as_str() {
                    "scalars" => &d.scalars,
                    "gradient_norms" => &d.gradient_norms,
                    "weight_norms" => &d.weight_norms,
                    _ => &d.update_ratios,
                };
                entry["charts"] = json!(charts.iter().map(|c| &c.title).collect::<Vec<_>>());
                if let Some(title) = &q.chart {
                    entry["chart"] = json!(charts
                        .iter()
                        .find(|c| &c.title == title)
                        .map(|c| thin(c, width)));
                }
            }
            Err(e) => entry["error"] = json!(e),
        }
        out.push(entry);
    }
    Ok(Json(json!({ "kind": kind, "chart": q.chart, "runs": out })).into_response())
}

/// The event stream's query: the run a run page follows.
#[derive(Debug, Deserialize)]
pub(crate) struct EventsQuery {
    run: Option<String>,
}

/// `GET /api/events[?run=ID]`: server-sent events (`run`, `points`, `firing`); with a run,
/// only its events, and its new points are read while the stream is open.
pub(crate) async fn events(
    State(shared): State<Arc<Shared>>,
    Query(q): Query<EventsQuery>,
) -> Result<Sse<impl futures::Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let follow = match &q.run {
        Some(id) => Some(Following::new(run_of(&shared, id)?)),
        None => None,
    };
    let rx = shared.events.subscribe();
    let shutdown = shared.shutdown.subscribe();
    let hello = Event::default()
        .event("hello")
        .data(json!({ "run": follow.as_ref().map(|f| f.0.summary()) }).to_string());
    let state = (rx, shutdown, follow, Some(hello));
    let stream =
        futures::stream::unfold(state, |(mut rx, mut shutdown, follow, hello)| async move {
            if let Some(h) = hello {
                return Some((Ok(h), (rx, shutdown, follow, None)));
            }
            loop {
                let received = tokio::select! {
                    r = rx.recv() => r,
                    _ = shutdown.changed() => return None,
                };
                match received {
                    Ok(ev) => {
                        if follow.as_ref().is_some_and(|f| f.0.id != ev.run_id()) {
                            continue;
                        }
                        let data = serde_json::to_string(&*ev).unwrap_or_default();
                        let e = Event::default().event(ev.kind()).data(data);
                        return Some((Ok(e), (rx, shutdown, follow, None)));
                    }
                    // Too slow a reader missed events: it reloads what it shows.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let e = Event::default().event("resync").data("{}");
                        return Some((Ok(e), (rx, shutdown, follow, None)));
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// The firings of a run, for tests and tools (`GET /api/runs/{id}/firings`).
pub(crate) async fn firings(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> ApiResult {
    let run = run_of(&shared, &id)?;
    let f: Vec<FiringRecord> = lock(&run.state).firings.clone();
    Ok(Json(json!({ "firings": f })).into_response())
}
