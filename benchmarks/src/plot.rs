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

/// One panel for `policy`'s generated inputs, drawn with its top-left corner at `x0`.
fn panel(out: &mut String, rows: &[&Row], policy: &str, x0: f64) {
    let w = PANEL_W - LEFT - RIGHT;
    let h = PANEL_H - TOP - BOTTOM;
    let kib = |r: &Row| r.payload_bytes as f64 / 1024.0;
    let xs = Axis::spanning(rows.iter().map(|r| kib(r)));
    let ys = Axis::spanning(
        rows.iter()
            .flat_map(|r| [r.fresh[0], r.fresh[1], r.warm[0], r.warm[1]])
            .map(|s| s.median),
    );
    let px = |v: f64| x0 + LEFT + xs.at(v, w);
    let py = |v: f64| TOP + h - ys.at(v, h);
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
    for t in xs.ticks() {
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{TOP}" x2="{x}" y2="{y}" stroke="#ddd"/><text x="{x}" y="{ty}" font-size="11" text-anchor="middle">{}</text>"##,
            label(t),
            x = px(t),
            y = TOP + h,
            ty = TOP + h + 15.0
        );
    }
    for t in ys.ticks() {
        let _ = writeln!(
            out,
            r##"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#ddd"/><text x="{tx}" y="{ty}" font-size="11" text-anchor="end">{}</text>"##,
            label(t),
            x1 = x0 + LEFT,
            x2 = x0 + LEFT + w,
            y = py(t),
            tx = x0 + LEFT - 5.0,
            ty = py(t) + 4.0
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

    // Each family once, in order of appearance: the inputs of different families interleave,
    // so `dedup` (adjacent repeats only) would draw every family several times.
    let mut families: Vec<&str> = Vec::new();
    for family in rows.iter().filter_map(|r| r.family) {
        if !families.contains(&family) {
            families.push(family);
        }
    }
    for (i, family) in families.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let mut points: Vec<&Row> = rows
            .iter()
            .copied()
            .filter(|r| r.family == Some(family))
            .collect();
        points.sort_by_key(|r| r.payload_bytes);
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
                .map(|r| format!("{:.1},{:.1}", px(kib(r)), py(value(r))))
                .collect();
            let width = if *fresh { 2.0 } else { 1.2 };
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="{width}" stroke-dasharray="{dash}"/>"#,
                path.join(" ")
            );
            for r in &points {
                let (x, y) = (px(kib(r)), py(value(r)));
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
            let lx = x0 + LEFT + (s % 2) as f64 * w / 2.0;
            let ly = TOP + h + 50.0 + (i * 2 + s / 2) as f64 * 15.0;
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
