//! The results as markdown: the real-host section (`realhost/report.rs`), then the in-process
//! diagnostics: per-input ratios against the baseline, absolute figures, and module sizes.

use std::fmt::Write;

use crate::direct::{MemoryUse, Operators};
use crate::measure::{ModuleSize, Stat};

/// Per request (fresh instance + validate) may cost at most this many baselines: a diagnostic
/// bound, checked beside the real-host targets.
pub const FRESH_TARGET: f64 = 1.2;
/// Every artifact must be smaller than this.
pub const SIZE_TARGET: usize = 400 * 1000;

pub struct Row {
    /// The artifact measured: `<policy>` (waPC) or `<policy>.gatekeeper`.
    pub policy: String,
    pub family: Option<&'static str>,
    pub name: String,
    pub payload_bytes: usize,
    pub fresh: [Stat; 2],
    pub instantiate: [Stat; 2],
    pub warm: [Stat; 2],
    pub memory: [MemoryUse; 2],
    pub operators: [Operators; 2],
}

impl Row {
    pub fn fresh_ratio(&self) -> f64 {
        self.fresh[0].median / self.fresh[1].median
    }
    pub fn warm_ratio(&self) -> f64 {
        self.warm[0].median / self.warm[1].median
    }
    pub fn operators_fresh_ratio(&self) -> f64 {
        self.operators[0].per_request as f64 / self.operators[1].per_request as f64
    }
    pub fn operators_warm_ratio(&self) -> f64 {
        self.operators[0].warm as f64 / self.operators[1].warm as f64
    }
}

pub struct Run {
    pub command: String,
    pub fresh_rounds: usize,
    pub warm_rounds: usize,
    pub rows: Vec<Row>,
    /// Every module measured, the baselines included.
    pub sizes: Vec<ModuleSize>,
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

/// One line per artifact: worst ratios and whether each target holds.
pub fn summary(run: &Run) -> String {
    let mut out = String::new();
    out.push_str("| artifact | module size | worst per-request ratio | worst warm ratio |\n|---|---|---|---|\n");
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
            .find(|m| m.module == policy)
            .map_or(0, |m| m.bytes);
        let _ = writeln!(
            out,
            "| {policy} | {} KiB ({}) | {fresh:.2}x ({}; {fresh_at}) | {warm:.2}x ({warm_at}) |",
            kib(size),
            mark(size < SIZE_TARGET),
            mark(fresh <= FRESH_TARGET),
        );
    }
    out
}

/// The whole results file: `real_host` is the real-host section (`realhost::report::section`).
pub fn markdown(run: &Run, real_host: &str) -> String {
    let mut out = String::new();
    targets(&mut out, run);
    out.push_str(real_host);
    diagnostics_intro(&mut out, run);
    out.push_str("## Summary of the diagnostics\n\n");
    out.push_str(&summary(run));
    module_sizes(&mut out, run);
    let mut policies: Vec<&str> = run.rows.iter().map(|r| r.policy.as_str()).collect();
    policies.dedup();
    for policy in policies {
        policy_table(&mut out, run, policy);
    }
    out
}

/// The title, how to regenerate the file, and the targets the sections are held to.
fn targets(out: &mut String, run: &Run) {
    let _ = writeln!(
        out,
        "# Evaluation cost\n\n\
         Regenerate with `{}`. `--real-host` re-measures only the real-host section and rewrites \
         it here; `--quick` (shorter runs) and `--only TEXT` (the inputs whose policy and name \
         contain `TEXT`) print without rewriting anything.\n\n\
         Targets, in policy-server under saturation (the first section): every case keeps \
         ≥ {:.2}x the throughput of its answer anchor (reads the request and settings, builds \
         nothing, returns the policy's own answer): the least this answer costs, measured in the \
         same run, beside the walk-only and mutate-only anchors (the least each verdict costs); \
         the case judged by a rule with a JSONPath condition states its own target, the same \
         with what its condition costs allowed on top (`benchmarks/src/realhost/target.rs`). \
         Every artifact is < 400 KB. Everything after the first section is a diagnostic: the modules in the \
         in-process hosts, a fresh instance per request and warm, against a parse-only \
         baseline (per request ≤ {FRESH_TARGET}x is still checked there).\n",
        run.command,
        crate::realhost::target::ANSWER_TARGET,
    );
}

/// How the in-process hosts run each artifact and its baseline, and what each column means.
fn diagnostics_intro(out: &mut String, run: &Run) {
    let _ = writeln!(
        out,
        "\n## Diagnostics: in-process hosts against a parse-only baseline\n\n\
         Each artifact runs the way its real host runs it, with the module \
         compiled once:\n\n\
         - `<policy>` (`dist/<policy>.wasm`, waPC) in the host policy-server 1.35 links (`wapc` \
         2.1.0 on `wasmtime-provider` 2.19.0); **per request** is a fresh instance (`_start`, \
         `wapc_init`), one `validate`, and dropping the instance, as policy-server serves a \
         request;\n\
         - `<policy>.gatekeeper` (`dist/<policy>.gatekeeper.wasm`, OPA ABI) in Kubewarden's \
         gatekeeper mode: an emulation of burrego on wasmtime 44.0.0 \
         (`benchmarks/src/opa.rs`, following the call sequence in \
         `docs/abi.md`, \"burrego's call sequence\"; burrego itself is not run). **Per request** is \
         a new burrego evaluator (store, 5-page host memory, linker, instantiation, \
         `builtins`/`entrypoints`, the empty data document pushed), one evaluation of entrypoint \
         0 with input `{{\"parameters\": settings, \"review\": request}}` and data `{{}}` \
         (`opa_heap_ptr_set`, `opa_malloc` + write + `opa_json_parse` for data and input, the \
         `opa_eval_ctx_*` calls, `eval`, `opa_json_dump`, the result read and parsed), and \
         dropping it, as policy-server does for every request;\n\
         - **warm** is one evaluation on an instance that already served requests, as `kwctl \
         bench` measures ({} rounds; per request {} rounds);\n\
         - **instantiate** is the fresh-instance part of per request;\n\
         - **memory** is the instance's linear memory after init and after the evaluation (it \
         never shrinks: the high-water mark);\n\
         - **operators** are the wasm operators the module executes, counted by wasmtime's fuel \
         on a second, metering engine (never timed): per request from instantiation to the first \
         answer (`_start`, `wapc_init` and `validate`; for the gatekeeper artifacts burrego's \
         set-up calls and the first evaluation), warm for one evaluation after three. Unlike \
         times they are exact and repeatable, so they show what a change did without the \
         machine's noise; but they are not time and are held to no target: a `local.get` the \
         compiler turns into nothing counts as much as a call into the allocator, and the \
         host's work (instantiation, copying the static data, page faults) is left out.\n\n\
         Each artifact has a baseline built the same way that parses its whole input into a \
         `serde_json::Value` and accepts: `baseline` (`benchmarks/baseline-policy`, waPC) for \
         `<policy>`, `baseline.gatekeeper` (`benchmarks/baseline-gatekeeper`, on the same OPA \
         adapter and the core's runner as the gatekeeper artifacts, which views the request as \
         for every policy while the baseline parses settings, object and old object into \
         `Value`s, answering `[{{\"result\": []}}]`) for \
         `<policy>.gatekeeper`. Each artifact is interleaved with its baseline on the same input; \
         ratios are artifact median / baseline median in this run. Every evaluation's answer is \
         checked against the first one, and each gatekeeper answer against the waPC build's \
         deny-mode verdict on the same input (violations iff rejected, same message and code), so \
         no figure is of an error path. Times are microseconds on a shared, noisy machine: read \
         the ratios, not the absolutes.\n",
        run.warm_rounds, run.fresh_rounds
    );
}

/// The table of every module's size and static data.
fn module_sizes(out: &mut String, run: &Run) {
    out.push_str(
        "\n## Module sizes\n\nStatic data is what instantiation copies into the instance's \
         memory. A waPC module defines its memory, which wasmtime maps copy-on-write from the \
         compiled module; a gatekeeper module imports the memory its host creates, so every \
         instantiation writes the data into fresh pages.\n\n\
         | module | bytes | KiB | static data KiB |\n|---|---|---|---|\n",
    );
    for m in &run.sizes {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} |",
            m.module,
            m.bytes,
            kib(m.bytes),
            m.static_data as f64 / 1024.0
        );
    }
}

/// `policy`'s section: one line per input with its figures and its baseline's.
fn policy_table(out: &mut String, run: &Run, policy: &str) {
    let _ = writeln!(
        out,
        "\n## {policy}\n\n\
         | input | payload KiB | per request µs median / p99 (baseline) | ratio | instantiate µs (baseline) | warm µs median / p99 (baseline) | ratio | memory KiB after init → validate (baseline) | operators per request / warm, thousands (baseline) | ratios |\n\
         |---|---|---|---|---|---|---|---|---|---|"
    );
    for row in run.rows.iter().filter(|r| r.policy == policy) {
        let [f, fb] = row.fresh;
        let [i, ib] = row.instantiate;
        let [w, wb] = row.warm;
        let [m, mb] = row.memory;
        let [o, ob] = row.operators;
        let k = |n: u64| n as f64 / 1000.0;
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.0} / {:.0} ({:.0} / {:.0}) | {:.2}x | {:.0} ({:.0}) | {:.1} / {:.1} ({:.1} / {:.1}) | {:.2}x | {} → {} ({} → {}) | {:.1} / {:.1} ({:.1} / {:.1}) | {:.2}x / {:.2}x |",
            row.name,
            row.payload_bytes as f64 / 1024.0,
            f.median, f.p99, fb.median, fb.p99,
            row.fresh_ratio(),
            i.median, ib.median,
            w.median, w.p99, wb.median, wb.p99,
            row.warm_ratio(),
            kib(m.after_init), kib(m.after_validate),
            kib(mb.after_init), kib(mb.after_validate),
            k(o.per_request), k(o.warm), k(ob.per_request), k(ob.warm),
            row.operators_fresh_ratio(), row.operators_warm_ratio(),
        );
    }
}
