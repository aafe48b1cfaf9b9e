//! The page: HTML with inline CSS and inline SVG, no script, font or other request. Every
//! chart is bounded: a series is drawn as one `<path>` of at most two points per pixel
//! column (the minimum and maximum of the points falling there), a heatmap has at most
//! `max_heatmap²` cells, rule markers are merged per pixel column.

use crate::data::*;
use std::fmt::Write;

/// Series colours (colour-blind safe, Okabe–Ito).
const COLOURS: &[&str] = &[
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000",
];
const RULE_COLOUR: &str = "#c0392b";

/// Escapes text for HTML element content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A number for labels: short, readable at any magnitude.
fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e5).contains(&a) {
        format!("{x:.2e}")
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else {
        let s = format!("{x:.4}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_owned()
    }
}

fn bytes(n: u64) -> String {
    const U: &[&str] = &["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < U.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", U[u])
    }
}

/// Geometry of one chart.
#[derive(Clone, Copy)]
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Frame {
    const LARGE: Frame = Frame {
        w: 760.0,
        h: 240.0,
        left: 64.0,
        right: 12.0,
        top: 14.0,
        bottom: 30.0,
    };
    const SMALL: Frame = Frame {
        w: 300.0,
        h: 150.0,
        left: 58.0,
        right: 8.0,
        top: 8.0,
        bottom: 24.0,
    };
    fn pw(&self) -> f64 {
        self.w - self.left - self.right
    }
    fn ph(&self) -> f64 {
        self.h - self.top - self.bottom
    }
}

/// Maps data to pixels.
struct Scale {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    f: Frame,
}

impl Scale {
    fn new(f: Frame, (x0, x1): (f64, f64), (y0, y1): (f64, f64)) -> Scale {
        let (x0, x1) = if x1 > x0 {
            (x0, x1)
        } else {
            (x0 - 1.0, x0 + 1.0)
        };
        let (y0, y1) = crate::axis::value_range(y0, y1);
        Scale { x0, x1, y0, y1, f }
    }
    fn x(&self, v: f64) -> f64 {
        self.f.left + (v - self.x0) / (self.x1 - self.x0) * self.f.pw()
    }
    fn y(&self, v: f64) -> f64 {
        self.f.top + (1.0 - (v - self.y0) / (self.y1 - self.y0)) * self.f.ph()
    }
}

fn axes(svg: &mut String, s: &Scale, integer_x: bool) {
    let f = s.f;
    let _ = write!(
        svg,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" class="plot"/>"##,
        f.left,
        f.top,
        f.pw(),
        f.ph()
    );
    for i in 0..=4 {
        let xv = s.x0 + (s.x1 - s.x0) * f64::from(i) / 4.0;
        let label = if integer_x {
            format!("{}", xv.round() as i64)
        } else {
            num(xv)
        };
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
            s.x(xv),
            f.h - f.bottom + 14.0,
            esc(&label)
        );
        let yv = s.y0 + (s.y1 - s.y0) * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" class="gridline"/>"##,
            f.left - 4.0,
            s.y(yv) + 3.5,
            esc(&num(yv)),
            f.left,
            f.w - f.right,
            s.y(yv),
            s.y(yv)
        );
    }
}

/// The `d` of one series: at most two points (min, max) per pixel column, a gap where a
/// value is missing. Returns (d, points).
fn series_path(s: &Scale, steps: &[i64], values: &[Option<f64>]) -> (String, usize) {
    let mut d = String::new();
    let mut points = 0usize;
    // Points in the current subpath: a lone point between gaps gets a small circle.
    let mut sub = 0usize;
    let mut col: Option<(i64, f64, f64, f64, f64)> = None; // (px, first_y, min, max, last)
    let mut flush = |d: &mut String, c: (i64, f64, f64, f64, f64), sub: &mut usize| {
        let (px, first, lo, hi, last) = c;
        let x = px as f64 / 2.0;
        let mut ys = vec![first];
        // Both extremes of the column, in the order the line passes them.
        if (first - lo).abs() > 0.25 || (first - hi).abs() > 0.25 {
            if (first - lo).abs() < (first - hi).abs() {
                ys.extend([lo, hi]);
            } else {
                ys.extend([hi, lo]);
            }
        }
        if (last - *ys.last().unwrap_or(&last)).abs() > 0.25 {
            ys.push(last);
        }
        for y in ys {
            let _ = write!(d, "{}{x:.1},{y:.1}", if *sub > 0 { "L" } else { "M" });
            *sub += 1;
            points += 1;
        }
    };
    let lone = |d: &mut String, sub: usize| {
        if sub == 1 {
            d.push_str("m-2,0a2,2 0 1,0 4,0a2,2 0 1,0 -4,0");
        }
    };
    for (st, v) in steps.iter().zip(values) {
        let Some(v) = v else {
            if let Some(c) = col.take() {
                flush(&mut d, c, &mut sub);
            }
            lone(&mut d, sub);
            sub = 0;
            continue;
        };
        let x = s.x(*st as f64);
        let y = s.y(*v);
        // Half-pixel columns.
        let px = (x * 2.0).round() as i64;
        match &mut col {
            Some(c) if c.0 == px => {
                c.2 = c.2.min(y);
                c.3 = c.3.max(y);
                c.4 = y;
            }
            _ => {
                if let Some(c) = col.take() {
                    flush(&mut d, c, &mut sub);
                }
                col = Some((px, y, y, y, y));
            }
        }
    }
    if let Some(c) = col.take() {
        flush(&mut d, c, &mut sub);
    }
    lone(&mut d, sub);
    (d, points)
}

/// One marker per pixel column of each rule's firing steps (the first step of the column).
fn marker_steps(s: &Scale, steps: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    let mut last_px = i64::MIN;
    let mut sorted: Vec<i64> = steps.collect();
    sorted.sort_unstable();
    sorted.dedup();
    for st in sorted {
        let px = s.x(st as f64).round() as i64;
        if px != last_px {
            out.push(st);
            last_px = px;
        }
    }
    out
}

/// A line chart of `chart`'s series; `rules` marks the first firing of each rule.
fn line_chart(chart: &Chart, f: Frame, markers: &[(&str, i64, &str)], id: &str) -> String {
    let xs = chart.series.iter().flat_map(|s| s.steps.iter().copied());
    let (xmin, xmax) = xs.fold((i64::MAX, i64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let ys = chart
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied());
    let (ymin, ymax) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| {
        (a.min(y), b.max(y))
    });
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<figure class="chart" id="{}" data-title="{}"><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" height="{}" role="img">"##,
        esc(id),
        esc(&chart.title),
        esc(&chart.title),
        f.w,
        f.h,
        f.w,
        f.h
    );
    if xmin > xmax || ymin > ymax {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="nodata" text-anchor="middle">no finite value</text></svg></figure>"##,
            f.w / 2.0,
            f.h / 2.0
        );
        return svg;
    }
    let s = Scale::new(f, (xmin as f64, xmax as f64), (ymin, ymax));
    axes(&mut svg, &s, true);
    for (rule, step, message) in markers {
        if (*step as f64) < s.x0 || (*step as f64) > s.x1 {
            continue;
        }
        let x = s.x(*step as f64);
        let _ = write!(
            svg,
            r##"<line class="rule-marker" data-rule="{}" data-step="{step}" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}"><title>{} at step {step}: {}</title></line>"##,
            esc(rule),
            f.top,
            f.h - f.bottom,
            esc(rule),
            esc(message)
        );
    }
    for (i, series) in chart.series.iter().enumerate() {
        let (d, points) = series_path(&s, &series.steps, &series.values);
        let colour = COLOURS[i % COLOURS.len()];
        let _ = write!(
            svg,
            r##"<path class="series" data-label="{}" data-points="{points}" d="{d}" stroke="{colour}"/>"##,
            esc(&series.label)
        );
    }
    if chart.series.len() > 1 || f.w >= Frame::LARGE.w {
        let mut lx = f.left + 8.0;
        for (i, series) in chart.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let _ = write!(
                svg,
                r##"<rect x="{lx:.1}" y="{:.1}" width="10" height="3" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="legend">{}</text>"##,
                f.top + 6.0,
                lx + 14.0,
                f.top + 10.0,
                esc(&series.label)
            );
            lx += 24.0 + 7.0 * series.label.len() as f64;
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

fn histogram_chart(h: &Histogram, f: Frame) -> String {
    let lo = h.edges.first().copied().unwrap_or(0.0);
    let hi = h.edges.last().copied().unwrap_or(1.0);
    let top = h.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let s = Scale::new(f, (lo, hi), (0.0, top));
    let mut svg = String::new();
    let title = format!("{} at step {}", h.tensor, h.step);
    let _ = write!(
        svg,
        r##"<figure class="chart histogram" data-title="{}"><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" height="{}" role="img">"##,
        esc(&title),
        esc(&title),
        f.w,
        f.h,
        f.w,
        f.h
    );
    axes(&mut svg, &s, false);
    let mut d = String::new();
    let base = s.y(0.0);
    for (i, c) in h.counts.iter().enumerate() {
        if *c == 0 {
            continue;
        }
        let x0 = s.x(h.edges[i]);
        let x1 = s.x(h.edges[i + 1]);
        let y = s.y(*c as f64);
        let _ = write!(
            d,
            "M{x0:.1},{base:.1}L{x0:.1},{y:.1}L{x1:.1},{y:.1}L{x1:.1},{base:.1}Z"
        );
    }
    let _ = write!(
        svg,
        r##"<path class="bars" data-points="{}" d="{d}"/>"##,
        h.counts.iter().filter(|c| **c > 0).count() * 4
    );
    if h.non_finite > 0 {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="legend">{} non-finite left out</text>"##,
            f.left + 6.0,
            f.top + 12.0,
            h.non_finite
        );
    }
    svg.push_str("</svg></figure>");
    svg
}

fn heatmap(c: &Completeness) -> String {
    let rows = c.fraction.len().max(1);
    let cols = c.column_steps.len().max(1);
    let left = 150.0;
    let cell_w = (600.0 / cols as f64).clamp(2.0, 40.0);
    let cell_h = (360.0 / rows as f64).clamp(4.0, 18.0);
    let w = left + cell_w * cols as f64 + 10.0;
    let h = 20.0 + cell_h * rows as f64 + 24.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<figure class="chart heatmap" id="completeness-heatmap"><figcaption>index files per worker and step (green: all there)</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w:.0} {h:.0}" width="{w:.0}" height="{h:.0}" role="img">"##
    );
    for (r, line) in c.fraction.iter().enumerate() {
        let y = 10.0 + cell_h * r as f64;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            left - 4.0,
            y + cell_h * 0.75,
            esc(&c.row_labels[r])
        );
        for (k, frac) in line.iter().enumerate() {
            let x = left + cell_w * k as f64;
            // Red (nothing) to green (complete).
            let red = (220.0 * (1.0 - frac)) as u8 + 20;
            let green = (160.0 * frac) as u8 + 60;
            let _ = write!(
                svg,
                r##"<rect class="cell" data-fraction="{frac:.3}" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="rgb({red},{green},80)"><title>{} from step {}: {:.0}%</title></rect>"##,
                cell_w.max(1.0) - 0.5,
                cell_h - 1.0,
                esc(&c.row_labels[r]),
                c.column_steps[k],
                frac * 100.0
            );
        }
    }
    for k in [0, cols / 2, cols - 1] {
        if let Some(step) = c.column_steps.get(k) {
            let _ = write!(
                svg,
                r##"<text x="{:.1}" y="{:.1}" class="tick">step {step}</text>"##,
                left + cell_w * k as f64,
                h - 8.0
            );
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// The rule timeline: one row per rule over the trial's steps, a marker per firing step
/// (merged per pixel column).
fn rule_timeline(data: &ReportData) -> String {
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for m in &data.summary.modes {
        if let (Some(a), Some(b)) = (m.first, m.last) {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    for r in &data.rules {
        for f in &r.firings {
            lo = lo.min(f.step);
            hi = hi.max(f.step);
        }
    }
    if lo > hi {
        (lo, hi) = (0, 1);
    }
    let rows = data.rules.len().max(1) as f64;
    let f = Frame {
        w: 760.0,
        h: 40.0 + 22.0 * rows,
        left: 190.0,
        right: 12.0,
        top: 8.0,
        bottom: 28.0,
    };
    let s = Scale::new(f, (lo as f64, hi as f64), (0.0, 1.0));
    let mut svg = String::new();
    let _ = write!(
        svg,
        r##"<figure class="chart" id="rule-timeline"><figcaption>rule firings over global steps</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="{}" height="{}" role="img">"##,
        f.w, f.h, f.w, f.h
    );
    let _ = write!(
        svg,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" class="plot"/>"##,
        f.left,
        f.top,
        f.pw(),
        f.ph()
    );
    for i in 0..=4 {
        let xv = s.x0 + (s.x1 - s.x0) * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
            s.x(xv),
            f.h - f.bottom + 14.0,
            xv.round() as i64
        );
    }
    for (i, r) in data.rules.iter().enumerate() {
        let y = f.top + 22.0 * i as f64 + 12.0;
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{} ({})</text>"##,
            f.left - 6.0,
            y + 4.0,
            esc(&r.rule),
            r.fired
        );
        for step in marker_steps(&s, r.firings.iter().map(|f| f.step)) {
            let x = s.x(step as f64);
            let msg = r
                .firings
                .iter()
                .find(|f| f.step == step)
                .map(|f| f.message.as_str())
                .unwrap_or("");
            let _ = write!(
                svg,
                r##"<line class="rule-marker" data-rule="{}" data-step="{step}" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="{RULE_COLOUR}"><title>{} at step {step}: {}</title></line>"##,
                esc(&r.rule),
                y - 7.0,
                y + 7.0,
                esc(&r.rule),
                esc(msg)
            );
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

fn section(html: &mut String, id: &str, title: &str, body: &str) {
    let _ = write!(
        html,
        r##"<section id="{id}"><h2>{}</h2>{body}</section>"##,
        esc(title)
    );
}

fn empty(why: &str) -> String {
    format!(r##"<p class="empty">{}</p>"##, esc(why))
}

fn grid(charts: &[Chart], id: &str, why_empty: &str, markers: &[(&str, i64, &str)]) -> String {
    if charts.is_empty() {
        return empty(why_empty);
    }
    let mut o = String::from(r##"<div class="grid">"##);
    for (i, c) in charts.iter().enumerate() {
        o.push_str(&line_chart(c, Frame::SMALL, markers, &format!("{id}-{i}")));
    }
    o.push_str("</div>");
    o
}

/// The JSON embedded in the page: `</` cannot end the script element early.
fn embedded_json(data: &ReportData) -> String {
    serde_json::to_string(data)
        .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
        .replace("</", "<\\/")
}

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1280px;color:#222;background:#fff;padding:0 16px}h1{font-size:1.5em;margin-bottom:4px}h2{font-size:1.15em;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}table{border-collapse:collapse;font-size:.9em}td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}.grid{display:flex;flex-wrap:wrap;gap:6px}figure{margin:4px}figcaption{font-size:.8em;color:#444;max-width:300px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}svg .plot{fill:#fafafa;stroke:#bbb}svg .gridline{stroke:#eee}svg .tick{font-size:10px;fill:#555}svg .legend{font-size:11px;fill:#333}svg .series{fill:none;stroke-width:1.5;stroke-linecap:round;stroke-linejoin:round}svg .bars{fill:#56b4e9;stroke:#0072b2;stroke-width:.5}svg .rule-marker{stroke:#c0392b;stroke-width:1.5;stroke-dasharray:3 2}svg .nodata{font-size:12px;fill:#999}.empty{color:#777;font-style:italic}.fired{color:#c0392b;font-weight:bold}.ok{color:#2e7d32}.err{color:#8a6d3b}.muted{color:#777;font-size:.85em}";

/// The whole page.
pub fn html(data: &ReportData) -> String {
    let sm = &data.summary;
    let mut h = String::with_capacity(64 * 1024);
    let _ = write!(
        h,
        r##"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"><meta name="viewport" content="width=device-width,initial-scale=1"><title>smdebug report: {}</title><style>{CSS}</style></head><body><h1>smdebug report</h1><p class="muted">{}</p>"##,
        esc(&sm.trial),
        esc(&sm.trial)
    );

    // Summary.
    let mut body = String::from("<table>");
    let mut row = |k: &str, v: String| {
        let _ = write!(body, "<tr><th>{}</th><td>{v}</td></tr>", esc(k));
    };
    let workers = if sm.workers.len() <= 8 {
        sm.workers.join(", ")
    } else {
        format!(
            "{}, … {}",
            sm.workers[..4].join(", "),
            sm.workers[sm.workers.len() - 1]
        )
    };
    row(
        "workers",
        format!(
            r##"<span id="summary-workers">{}</span> ({})"##,
            sm.workers.len(),
            esc(&workers)
        ),
    );
    let modes: Vec<String> = sm
        .modes
        .iter()
        .map(|m| match (m.first, m.last) {
            (Some(a), Some(b)) => format!("{}: {} steps ({a}–{b})", m.mode, m.steps),
            _ => format!("{}: none", m.mode),
        })
        .collect();
    row("modes", esc(&modes.join("; ")));
    row("global steps", sm.global_steps.to_string());
    if let Some((a, b)) = sm.step_range {
        row("step range", format!("{a} ≤ step &lt; {b}"));
    }
    row("tensors", sm.tensors.to_string());
    let colls: Vec<String> = sm
        .collections
        .iter()
        .map(|(n, c)| format!("{n} ({c})"))
        .collect();
    row("collections", esc(&colls.join(", ")));
    row("size", bytes(sm.size_bytes));
    row(
        "training ended",
        if sm.training_ended {
            "yes"
        } else {
            "no (end marker missing)"
        }
        .into(),
    );
    body.push_str("</table>");
    if !data.omitted.is_empty() {
        let _ = write!(
            body,
            r##"<p class="muted">bounded: {}</p>"##,
            esc(&data.omitted.join("; "))
        );
    }
    section(&mut h, "summary", "Summary", &body);

    // Markers of each rule's first firing, on the loss charts.
    let firsts: Vec<(&str, i64, &str)> = data
        .rules
        .iter()
        .filter_map(|r| {
            r.firings
                .iter()
                .min_by_key(|f| f.step)
                .map(|f| (r.rule.as_str(), f.step, f.message.as_str()))
        })
        .collect();
    let body = if data.scalars.is_empty() {
        empty("no loss or scalar tensor in this trial")
    } else {
        let mut o = String::new();
        for (i, c) in data.scalars.iter().enumerate() {
            o.push_str(&line_chart(
                c,
                Frame::LARGE,
                &firsts,
                &format!("scalars-{i}"),
            ));
        }
        o
    };
    section(&mut h, "scalars", "Loss and scalars", &body);
    section(
        &mut h,
        "gradient-norms",
        "Gradient norms per layer (L2 of all elements)",
        &grid(
            &data.gradient_norms,
            "gradient-norms",
            "no gradients in this trial",
            &[],
        ),
    );
    section(
        &mut h,
        "weight-norms",
        "Weight norms per layer (L2 of all elements)",
        &grid(
            &data.weight_norms,
            "weight-norms",
            "no weights in this trial",
            &[],
        ),
    );
    section(
        &mut h,
        "update-ratio",
        "Weight update ratio ‖Δw‖ / ‖w‖",
        &grid(
            &data.update_ratios,
            "update-ratio",
            "no raw weights at two saved steps",
            &[],
        ),
    );
    section(
        &mut h,
        "activations",
        "Activations: dead (ReLU) / saturated (tanh, sigmoid) fraction of units",
        &grid(
            &data.activations,
            "activations",
            "no activation collection (relu_output, relu_input, tanh_input, sigmoid_input) in this trial",
            &[],
        ),
    );
    let body = if data.histograms.is_empty() {
        empty("no raw tensor values to draw histograms of")
    } else {
        let mut o = String::from(r##"<div class="grid">"##);
        for hg in &data.histograms {
            o.push_str(&histogram_chart(hg, Frame::SMALL));
        }
        o.push_str("</div>");
        o
    };
    section(&mut h, "histograms", "Histograms", &body);
    let body = match &data.completeness {
        None => empty("single-worker trial"),
        Some(c) => {
            let mut o = heatmap(c);
            if c.missing_count == 0 {
                o.push_str(r##"<p class="ok">every worker wrote every step</p>"##);
            } else {
                let listed: Vec<String> = c
                    .missing
                    .iter()
                    .map(|(w, s)| format!("{w} at step {s}"))
                    .collect();
                let _ = write!(
                    o,
                    r##"<p class="fired">{} (worker, step) pairs missing: {}{}</p>"##,
                    c.missing_count,
                    esc(&listed.join(", ")),
                    if (c.missing_count as usize) > listed.len() {
                        ", …"
                    } else {
                        ""
                    }
                );
            }
            o
        }
    };
    section(&mut h, "completeness", "Worker × step completeness", &body);

    let body = if data.rules.is_empty() {
        empty("no rule was run (--rules)")
    } else {
        let mut o = rule_timeline(data);
        o.push_str("<table><tr><th>rule</th><th>verdict</th><th>first</th><th>last</th><th>first message</th></tr>");
        for r in &data.rules {
            let first = r.firings.iter().map(|f| f.step).min();
            let last = r.firings.iter().map(|f| f.step).max();
            let (class, verdict) = match (&r.error, r.fired) {
                (Some(e), _) => ("err", format!("not evaluated: {e}")),
                (None, 0) => (
                    "ok",
                    format!("did not fire ({} steps evaluated)", r.steps_evaluated),
                ),
                (None, n) => ("fired", format!("fired {n} time(s)")),
            };
            let msg = r
                .firings
                .iter()
                .min_by_key(|f| f.step)
                .map(|f| {
                    format!(
                        "{}{}",
                        f.tensor
                            .as_deref()
                            .map(|t| format!("{t}: "))
                            .unwrap_or_default(),
                        f.message
                    )
                })
                .unwrap_or_default();
            let _ = write!(
                o,
                r##"<tr class="verdict" data-rule="{}" data-fired="{}"><td>{}</td><td class="{class}">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
                esc(&r.rule),
                r.fired,
                esc(&r.rule),
                esc(&verdict),
                first.map(|s| s.to_string()).unwrap_or_default(),
                last.map(|s| s.to_string()).unwrap_or_default(),
                esc(&msg)
            );
        }
        o.push_str("</table>");
        o
    };
    section(&mut h, "rules", "Rule verdicts", &body);

    let body = if data.health.is_empty() {
        r##"<p class="ok">no non-finite value in what was read, and no rule set anything aside</p>"##.to_owned()
    } else {
        let mut o = String::from(
            "<table><tr><th>step</th><th>tensor</th><th>found by</th><th>finding</th></tr>",
        );
        for f in data.health.iter().take(200) {
            let _ = write!(
                o,
                r##"<tr class="finding"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>"##,
                f.step,
                esc(f.tensor.as_deref().unwrap_or("-")),
                esc(&f.source),
                esc(&f.message)
            );
        }
        if data.health.len() > 200 {
            let _ = write!(
                o,
                "<tr><td colspan=\"4\">… {} more</td></tr>",
                data.health.len() - 200
            );
        }
        o.push_str("</table>");
        o
    };
    section(&mut h, "health", "Health findings", &body);
    let _ = write!(
        h,
        r##"<script type="application/json" id="smdebug-report-data">{}</script></body></html>"##,
        embedded_json(data)
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_series_is_bounded_by_pixel_columns() {
        let steps: Vec<i64> = (0..100_000).collect();
        let values: Vec<Option<f64>> = steps.iter().map(|s| Some((*s as f64).sin())).collect();
        let s = Scale::new(Frame::LARGE, (0.0, 99_999.0), (-1.0, 1.0));
        let (d, points) = series_path(&s, &steps, &values);
        // At most 4 points per half-pixel column.
        assert!(
            points <= 4 * 2 * (Frame::LARGE.pw() as usize + 2),
            "{points}"
        );
        assert!(d.starts_with('M'));
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
