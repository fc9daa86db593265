//! Latency against payload size as a hand-written SVG (log-log), one panel per policy: no
//! plotting crate, no fonts to find.

use std::fmt::Write;

use crate::report::Row;

// Wide enough that the longest legend entry ("Deployment, JSONPath rule: per request, baseline")
// fits its half of the panel.
const PANEL_W: f64 = 720.0;
const PANEL_H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 150.0;
const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

struct Axis {
    lo: f64,
    hi: f64,
}

impl Axis {
    /// A log10 axis spanning `values`, widened to whole 1-2-5 steps.
    fn spanning(values: impl Iterator<Item = f64>) -> Axis {
        let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        Axis {
            lo: (lo * 0.8).log10(),
            hi: (hi * 1.25).log10(),
        }
    }

    fn at(&self, value: f64, length: f64) -> f64 {
        (value.log10() - self.lo) / (self.hi - self.lo) * length
    }

    /// 1, 2 and 5 times each power of ten inside the axis.
    fn ticks(&self) -> Vec<f64> {
        let mut ticks = Vec::new();
        for exponent in self.lo.floor() as i32..=self.hi.ceil() as i32 {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(exponent);
                if (self.lo..=self.hi).contains(&v.log10()) {
                    ticks.push(v);
                }
            }
        }
        ticks
    }
}

fn label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Where a panel draws: its top-left corner, the size of its plot and the log axes that map
/// payload sizes and medians into it.
struct Frame {
    /// The panel's left edge.
    x0: f64,
    /// The plot's width, inside the panel's margins.
    w: f64,
    /// The plot's height, inside the panel's margins.
    h: f64,
    /// Payload in KiB.
    xs: Axis,
    /// Median µs.
    ys: Axis,
}

impl Frame {
    /// The frame of the panel at `x0` whose axes span `rows`' payloads and medians.
    fn new(rows: &[&Row], x0: f64) -> Frame {
        Frame {
            x0,
            w: PANEL_W - LEFT - RIGHT,
            h: PANEL_H - TOP - BOTTOM,
            xs: Axis::spanning(rows.iter().map(|r| kib(r))),
            ys: Axis::spanning(
                rows.iter()
                    .flat_map(|r| [r.fresh[0], r.fresh[1], r.warm[0], r.warm[1]])
                    .map(|s| s.median),
            ),
        }
    }

    fn px(&self, v: f64) -> f64 {
        self.x0 + LEFT + self.xs.at(v, self.w)
    }

    fn py(&self, v: f64) -> f64 {
        TOP + self.h - self.ys.at(v, self.h)
    }
}

/// A row's payload in KiB, the x axis's unit.
fn kib(r: &Row) -> f64 {
    r.payload_bytes as f64 / 1024.0
}

/// One panel for `policy`'s generated inputs, drawn with its top-left corner at `x0`.
fn panel(out: &mut String, rows: &[&Row], policy: &str, x0: f64) {
    let frame = Frame::new(rows, x0);
    axes(out, &frame, policy);
    for (i, family) in families(rows).iter().enumerate() {
        let mut points: Vec<&Row> = rows
            .iter()
            .copied()
            .filter(|r| r.family == Some(family))
            .collect();
        points.sort_by_key(|r| r.payload_bytes);
        family_series(out, &frame, &points, (i, family));
    }
}

/// The panel's title, plot border, grid lines with their tick labels and axis titles.
fn axes(out: &mut String, frame: &Frame, policy: &str) {
    let Frame { x0, w, h, .. } = *frame;
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle" font-weight="bold">{policy}</text>"#,
        x0 + LEFT + w / 2.0
    );
    let _ = writeln!(
        out,
        r##"<rect x="{}" y="{TOP}" width="{w}" height="{h}" fill="none" stroke="#444"/>"##,
        x0 + LEFT
    );
    for t in frame.xs.ticks() {
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{TOP}" x2="{x}" y2="{y}" stroke="#ddd"/><text x="{x}" y="{ty}" font-size="11" text-anchor="middle">{}</text>"##,
            label(t),
            x = frame.px(t),
            y = TOP + h,
            ty = TOP + h + 15.0
        );
    }
    for t in frame.ys.ticks() {
        let _ = writeln!(
            out,
            r##"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#ddd"/><text x="{tx}" y="{ty}" font-size="11" text-anchor="end">{}</text>"##,
            label(t),
            x1 = x0 + LEFT,
            x2 = x0 + LEFT + w,
            y = frame.py(t),
            tx = x0 + LEFT - 5.0,
            ty = frame.py(t) + 4.0
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">payload (KiB, log)</text>"#,
        x0 + LEFT + w / 2.0,
        TOP + h + 32.0
    );
    let _ = writeln!(
        out,
        r#"<text x="{x}" y="{y}" font-size="12" text-anchor="middle" transform="rotate(-90 {x} {y})">median µs (log)</text>"#,
        x = x0 + 18.0,
        y = TOP + h / 2.0
    );
}

/// Each family once, in order of appearance: the inputs of different families interleave,
/// so `dedup` (adjacent repeats only) would draw every family several times.
fn families<'a>(rows: &[&'a Row]) -> Vec<&'a str> {
    let mut families: Vec<&str> = Vec::new();
    for family in rows.iter().filter_map(|r| r.family) {
        if !families.contains(&family) {
            families.push(family);
        }
    }
    families
}

/// The four series of the `i`th family (`points`, by payload): per request and warm, each
/// with its baseline dashed, as lines with markers and a legend entry each.
fn family_series(out: &mut String, frame: &Frame, points: &[&Row], (i, family): (usize, &str)) {
    let color = COLORS[i % COLORS.len()];
    let series = [
        ("per request", 0, true, ""),
        ("per request, baseline", 1, true, "6 4"),
        ("warm", 0, false, ""),
        ("warm, baseline", 1, false, "6 4"),
    ];
    for (s, (what, which, fresh, dash)) in series.iter().enumerate() {
        let value = |r: &Row| {
            if *fresh {
                r.fresh[*which].median
            } else {
                r.warm[*which].median
            }
        };
        let path: Vec<String> = points
            .iter()
            .map(|r| format!("{:.1},{:.1}", frame.px(kib(r)), frame.py(value(r))))
            .collect();
        let width = if *fresh { 2.0 } else { 1.2 };
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}"/>"#,
            path.join(" ")
        );
        for r in points {
            let (x, y) = (frame.px(kib(r)), frame.py(value(r)));
            let _ = if *fresh {
                writeln!(
                    out,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{color}"/>"#
                )
            } else {
                writeln!(
                    out,
                    r#"<rect x="{:.1}" y="{:.1}" width="5" height="5" fill="{color}"/>"#,
                    x - 2.5,
                    y - 2.5
                )
            };
        }
        // Legend: one line per family and series, under the plot.
        let lx = frame.x0 + LEFT + (s % 2) as f64 * frame.w / 2.0;
        let ly = TOP + frame.h + 50.0 + (i * 2 + s / 2) as f64 * 15.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" y1="{y}" x2="{}" y2="{y}" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}"/><text x="{}" y="{}" font-size="11">{family}: {what}</text>"#,
            lx + 22.0,
            lx + 27.0,
            ly + 4.0,
            y = ly,
        );
    }
}

/// Panels side by side per row: the waPC artifacts on the first row, the gatekeeper ones under
/// them, so each artifact sits above its other build.
const COLUMNS: usize = 2;

pub fn svg(rows: &[Row]) -> String {
    let mut policies: Vec<&str> = rows
        .iter()
        .filter(|r| r.family.is_some())
        .map(|r| r.policy.as_str())
        .collect();
    policies.dedup();
    let columns = policies.len().clamp(1, COLUMNS);
    let lines = policies.len().div_ceil(COLUMNS).max(1);
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
"#,
        PANEL_W * columns as f64,
        (PANEL_H + 40.0) * lines as f64
    );
    for (i, policy) in policies.iter().enumerate() {
        let panel_rows: Vec<&Row> = rows
            .iter()
            .filter(|r| r.policy == *policy && r.family.is_some())
            .collect();
        let y0 = (i / COLUMNS) as f64 * (PANEL_H + 40.0);
        let _ = writeln!(out, r#"<g transform="translate(0 {y0})">"#);
        panel(
            &mut out,
            &panel_rows,
            policy,
            (i % COLUMNS) as f64 * PANEL_W,
        );
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}
