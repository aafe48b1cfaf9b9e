//! `smdebug plot`: one statistic of the tensors a regex matches, over steps, as a PNG or an
//! SVG drawn by plotters. Text is drawn with DejaVu Sans compiled into the binary (the
//! `dejavu` crate, through plotters' `ab_glyph` feature), so no font library or system
//! font is needed.

use crate::collect::values_f64;
use crate::{ReportError, Result, StepRange};
use plotters::prelude::*;
use regex::Regex;
use smdebug_config::Mode;
use smdebug_trial::{Trial, TrialOptions};
use std::path::Path;
use std::sync::Once;

/// Most tensors drawn on one plot.
pub const MAX_LINES: usize = 10;

/// What to plot.
#[derive(Debug, Clone)]
pub struct PlotOptions {
    /// Tensors whose name this regex matches (`re.search`).
    pub tensor: Regex,
    /// `value` (a one-element tensor's value) or a reduction: `min max mean std variance
    /// sum prod l1 l2` (saved, else computed from the raw value).
    pub stat: String,
    /// The mode whose steps are drawn (GLOBAL: every step).
    pub mode: Mode,
    /// Only these global steps (mode steps for a mode other than GLOBAL).
    pub steps: StepRange,
    /// Pixel size.
    pub size: (u32, u32),
}

/// The statistics `--stat` accepts.
pub const STATS: &[&str] = &[
    "value", "min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2",
];

/// The message of [`ReportError::NothingToPlot`]: what matched, and what to pick instead.
pub(crate) fn nothing_to_plot(
    regex: &str,
    stat: &str,
    matched: usize,
    multi_element: usize,
) -> String {
    if matched == 0 {
        return format!("no tensor matches {regex:?}");
    }
    if stat == "value" && multi_element > 0 {
        return format!(
            "{matched} tensor(s) match {regex:?}, but {multi_element} hold more than one element \
             and `--stat value` draws one-element tensors only: pick a statistic with \
             --stat ({})",
            STATS
                .iter()
                .filter(|s| **s != "value")
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    format!(
        "{matched} tensor(s) match {regex:?}, but none has a finite {stat} at the chosen mode \
         and steps"
    )
}

/// One plotted line: the tensor and its (step, value) points.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The tensor.
    pub tensor: String,
    /// Steps and finite values.
    pub points: Vec<(i64, f64)>,
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is a compiled-in constant that parses; a failure would only lose text.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Reads the lines [`plot`] draws.
pub fn lines(trial: &Trial, options: &PlotOptions) -> Result<Vec<Line>> {
    if !STATS.contains(&options.stat.as_str()) {
        return Err(ReportError::Plot(format!(
            "unknown statistic {:?}; one of {}",
            options.stat,
            STATS.join(", ")
        )));
    }
    let mut out = Vec::new();
    let (mut matched, mut multi_element) = (0, 0);
    for name in trial.tensor_names()? {
        if !options.tensor.is_match(&name) {
            continue;
        }
        if out.len() == MAX_LINES {
            break;
        }
        matched += 1;
        let mut several = false;
        let t = trial.tensor(&name)?;
        let mut points = Vec::new();
        for s in t.steps(options.mode, false)? {
            if !options.steps.contains(s) {
                continue;
            }
            let v = if options.stat == "value" {
                match t.value(s, options.mode, None) {
                    Ok(v) => {
                        let x = values_f64(&v);
                        several |= x.as_ref().is_some_and(|x| x.len() > 1);
                        x.filter(|x| x.len() == 1).map(|x| x[0])
                    }
                    Err(_) => None,
                }
            } else {
                t.reduction_value(s, &options.stat, options.mode, None, false)
                    .ok()
                    .and_then(|v| values_f64(&v))
                    .and_then(|x| x.first().copied())
            };
            if let Some(v) = v.filter(|v| v.is_finite()) {
                points.push((s, v));
            }
        }
        multi_element += usize::from(several);
        if !points.is_empty() {
            out.push(Line {
                tensor: name,
                points,
            });
        }
    }
    if out.is_empty() {
        return Err(ReportError::NothingToPlot {
            regex: options.tensor.as_str().to_owned(),
            stat: options.stat.clone(),
            matched,
            multi_element,
        });
    }
    Ok(out)
}

/// Plots the trial at `path` into `out` (`.png` or `.svg`); returns the lines drawn.
pub fn plot(
    path: &str,
    trial_options: &TrialOptions,
    options: &PlotOptions,
    out: &Path,
) -> Result<Vec<Line>> {
    let trial = Trial::open(path, trial_options.clone())?;
    let lines = lines(&trial, options)?;
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let caption = format!(
        "{} of {} ({})",
        options.stat,
        options.tensor.as_str(),
        options.mode
    );
    match ext.as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(out, options.size).into_drawing_area();
            draw(&root, &lines, &caption)?;
            root.present()
                .map_err(|e| ReportError::Plot(e.to_string()))?;
        }
        Some("svg") => {
            let root = SVGBackend::new(out, options.size).into_drawing_area();
            draw(&root, &lines, &caption)?;
            root.present()
                .map_err(|e| ReportError::Plot(e.to_string()))?;
        }
        _ => {
            return Err(ReportError::Plot(format!(
                "{}: the output must end in .png or .svg",
                out.display()
            )))
        }
    }
    Ok(lines)
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    lines: &[Line],
    caption: &str,
) -> Result<()> {
    register_font();
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| ReportError::Plot(e.to_string());
    root.fill(&WHITE).map_err(err)?;
    let (mut x0, mut x1) = (i64::MAX, i64::MIN);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for l in lines {
        for &(s, v) in &l.points {
            x0 = x0.min(s);
            x1 = x1.max(s);
            y0 = y0.min(v);
            y1 = y1.max(v);
        }
    }
    if x1 <= x0 {
        x1 = x0 + 1;
    }
    let (y0, y1) = crate::axis::value_range(y0, y1);
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("step")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, l) in lines.iter().enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                l.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(err)?
            .label(l.tensor.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    Ok(())
}
