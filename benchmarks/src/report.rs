//! The results as markdown: per-input ratios against the baseline, absolute figures, and module
//! sizes, with the targets of issue 7 checked.

use std::fmt::Write;

use crate::direct::MemoryUse;
use crate::measure::Stat;

/// Per request (fresh instance + validate) may cost at most this many baselines.
pub const FRESH_TARGET: f64 = 1.2;
/// A warm `validate` may cost at most this many baselines.
pub const WARM_TARGET: f64 = 1.0;
/// Every artifact must be smaller than this.
pub const SIZE_TARGET: usize = 400 * 1000;

pub struct Row {
    pub policy: String,
    pub family: Option<&'static str>,
    pub name: String,
    pub payload_bytes: usize,
    pub fresh: [Stat; 2],
    pub instantiate: [Stat; 2],
    pub warm: [Stat; 2],
    pub memory: [MemoryUse; 2],
}

impl Row {
    pub fn fresh_ratio(&self) -> f64 {
        self.fresh[0].median / self.fresh[1].median
    }
    pub fn warm_ratio(&self) -> f64 {
        self.warm[0].median / self.warm[1].median
    }
}

pub struct Run {
    pub command: String,
    pub fresh_rounds: usize,
    pub warm_rounds: usize,
    pub rows: Vec<Row>,
    /// (module, bytes), the baseline included.
    pub sizes: Vec<(String, usize)>,
}

fn kib(bytes: usize) -> String {
    format!("{:.0}", bytes as f64 / 1024.0)
}

fn mark(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**not met**"
    }
}

/// One line per policy: worst ratios and whether each target holds.
pub fn summary(run: &Run) -> String {
    let mut out = String::new();
    out.push_str("| policy | module size | worst per-request ratio | worst warm ratio |\n|---|---|---|---|\n");
    let mut policies: Vec<&str> = run.rows.iter().map(|r| r.policy.as_str()).collect();
    policies.dedup();
    for policy in policies {
        let rows: Vec<&Row> = run.rows.iter().filter(|r| r.policy == policy).collect();
        let worst = |f: fn(&Row) -> f64| {
            rows.iter()
                .map(|r| (f(r), r.name.as_str()))
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .expect("every policy has inputs")
        };
        let (fresh, fresh_at) = worst(Row::fresh_ratio);
        let (warm, warm_at) = worst(Row::warm_ratio);
        let size = run
            .sizes
            .iter()
            .find(|(m, _)| m == policy)
            .map_or(0, |(_, s)| *s);
        let _ = writeln!(
            out,
            "| {policy} | {} KiB ({}) | {fresh:.2}x ({}; {fresh_at}) | {warm:.2}x ({}; {warm_at}) |",
            kib(size),
            mark(size < SIZE_TARGET),
            mark(fresh <= FRESH_TARGET),
            mark(warm <= WARM_TARGET),
        );
    }
    out
}

pub fn markdown(run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Evaluation cost against a parse-only baseline\n\n\
         Regenerate with `{}`. Each policy runs in the host policy-server 1.31 links (`wapc` 2.1.0 on \
         `wasmtime-provider` 2.13.0): the module is compiled once, and\n\n\
         - **per request** is a fresh instance (`_start`, `wapc_init`), one `validate`, and dropping \
         the instance, as policy-server serves a request ({} rounds);\n\
         - **warm** is one `validate` on an instance that already served requests, as `kwctl bench` \
         measures ({} rounds);\n\
         - **instantiate** is the fresh-instance part of per request;\n\
         - **memory** is the instance's linear memory after `validate` (it never shrinks: the \
         high-water mark).\n\n\
         The baseline (`benchmarks/baseline-policy`) is a waPC module built the same way that parses \
         the whole payload into a `serde_json::Value` and accepts. Each policy is interleaved with \
         the baseline on the same payload; ratios are policy median / baseline median in this run. \
         Times are microseconds on a shared, noisy machine: read the ratios, not the absolutes.\n\n\
         Targets: per request ≤ {FRESH_TARGET}x, warm ≤ {WARM_TARGET}x, every artifact < 400 KB.\n",
        run.command, run.fresh_rounds, run.warm_rounds
    );
    out.push_str("## Summary\n\n");
    out.push_str(&summary(run));
    out.push_str("\n## Module sizes\n\n| module | bytes | KiB |\n|---|---|---|\n");
    for (module, size) in &run.sizes {
        let _ = writeln!(out, "| {module} | {size} | {} |", kib(*size));
    }
    let mut policies: Vec<&str> = run.rows.iter().map(|r| r.policy.as_str()).collect();
    policies.dedup();
    for policy in policies {
        let _ = writeln!(
            out,
            "\n## {policy}\n\n\
             | input | payload KiB | per request µs median / p99 (baseline) | ratio | instantiate µs (baseline) | warm µs median / p99 (baseline) | ratio | memory KiB after init → validate (baseline) |\n\
             |---|---|---|---|---|---|---|---|"
        );
        for row in run.rows.iter().filter(|r| r.policy == policy) {
            let [f, fb] = row.fresh;
            let [i, ib] = row.instantiate;
            let [w, wb] = row.warm;
            let [m, mb] = row.memory;
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.0} / {:.0} ({:.0} / {:.0}) | {:.2}x | {:.0} ({:.0}) | {:.1} / {:.1} ({:.1} / {:.1}) | {:.2}x | {} → {} ({} → {}) |",
                row.name,
                row.payload_bytes as f64 / 1024.0,
                f.median, f.p99, fb.median, fb.p99,
                row.fresh_ratio(),
                i.median, ib.median,
                w.median, w.p99, wb.median, wb.p99,
                row.warm_ratio(),
                kib(m.after_init), kib(m.after_validate),
                kib(mb.after_init), kib(mb.after_validate),
            );
        }
    }
    out
}
