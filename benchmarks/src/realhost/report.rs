//! The real-host section of `benchmarks/results.md`: targets checked on the saturated points
//! against each case's answer anchor, beside the anchor of its verdict, then every point's
//! throughput and p99 for the policy, the null module, the baseline and both anchors, and for
//! the cases that read their Namespace, the API server's GETs of Namespaces per 1,000 requests.

use std::fmt::Write;

use wasm_tests::examples::Expect;

use super::target::{self, ANSWER_TARGET};
use super::{
    CaseResult, Measured, Outcome, Run, ANCHOR, ANSWER, BASELINE, CONNECTIONS, MODULES, POLICY,
};

/// The heading that starts the section; `--real-host` rewrites from it to the next `## `.
pub const HEADING: &str = "## Real host: policy-server over loopback";

pub(super) fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn range(values: &[f64]) -> (f64, f64) {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max)
}

/// A progress line: median req/s and p99 of each module, and the ratio.
pub fn line(m: &Measured) -> String {
    let mut out = String::new();
    for (module, series) in MODULES.iter().zip(&m.series) {
        let _ = write!(
            out,
            "{module} {:.0} req/s p99 {:.1} ms   ",
            median(&series.requests_per_second),
            median(&series.p99) / 1000.0
        );
    }
    let _ = write!(
        out,
        "policy/null {:.2}x policy/answer {:.2}x policy/anchor {:.2}x, CPU per request answer/policy {:.2}x",
        median(&m.ratios(POLICY)),
        median(&m.ratios_to(POLICY, ANSWER)),
        median(&m.ratios_to(POLICY, ANCHOR)),
        median(&m.cpu_ratios_to(POLICY, ANSWER))
    );
    if !m.series[POLICY].namespace_gets_per_1000.is_empty() {
        let gets = |module: usize| median(&m.series[module].namespace_gets_per_1000);
        let _ = write!(
            out,
            ", Namespace GETs per 1,000 requests policy {:.1} anchor {:.1} answer {:.1}",
            gets(POLICY),
            gets(ANCHOR),
            gets(ANSWER)
        );
    }
    out
}

fn verdict(expect: Expect) -> &'static str {
    match expect {
        Expect::Accepted => "accepted",
        Expect::Mutated => "mutated",
        Expect::Rejected => "rejected",
    }
}

fn saturated(case: &CaseResult) -> &Measured {
    let most = CONNECTIONS[CONNECTIONS.len() - 1];
    case.points
        .iter()
        .find(|m| m.connections == most)
        .expect("every case is measured at every concurrency")
}

/// Whether a ratio holds its bound: by its median, or only by its best round (then the gap is
/// within this run's noise), or not at all.
fn mark(ratios: &[f64], bound: f64) -> &'static str {
    if median(ratios) >= bound {
        "met"
    } else if range(ratios).1 >= bound {
        "met by its best round only (noise)"
    } else {
        "**not met**"
    }
}

/// A ratio's median with its rounds' range.
fn with_range(ratios: &[f64]) -> String {
    let (min, max) = range(ratios);
    format!("{:.2}x ({min:.2}-{max:.2})", median(ratios))
}

/// A count per 1,000 requests: its median with its rounds' range.
fn per_1000(values: &[f64]) -> String {
    let (min, max) = range(values);
    format!("{:.1} ({min:.1}-{max:.1})", median(values))
}

/// One line per case, saturated: the policy against its answer anchor (the target, in req/s
/// and policy-server CPU per request), and against the anchor of its verdict and null. The
/// JSONPath case is held to 0.95x here too: its own target allows its condition's cost, a few
/// microseconds, which its twin's medians cannot measure under this noise (one run put it at
/// 32 µs); the instruction counts hold it to its own ([`super::instructions::table`]).
pub fn targets(run: &Run) -> String {
    let mut out = String::from(
        "| input | verdict | policy ÷ answer: median (rounds' range) | target | policy-server CPU per request, answer ÷ policy (range) | anchor | policy ÷ anchor (range) | answer ÷ anchor | policy ÷ null |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for case in &run.cases {
        let point = saturated(case);
        let ratios = point.ratios_to(POLICY, ANSWER);
        let cpu = point.cpu_ratios_to(POLICY, ANSWER);
        let stated = target::stated(case.policy, &case.name);
        let goal = stated.unwrap_or(ANSWER_TARGET);
        let own = if target::twin_of(case.policy, &case.name).is_some() {
            " (its own target, with its condition's cost, is held in instructions)"
        } else if stated.is_some() {
            " (its own: its measured ratio in instructions)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {} {} | {} | {} | ≥ {goal:.2}x{own}: {} | {}: {} | {} | {} | {:.2}x | {:.2}x |",
            case.policy,
            case.name,
            verdict(case.expect),
            with_range(&ratios),
            mark(&ratios, goal),
            with_range(&cpu),
            mark(&cpu, goal),
            case.anchor,
            with_range(&point.ratios_to(POLICY, ANCHOR)),
            median(&point.ratios_to(ANSWER, ANCHOR)),
            median(&point.ratios(POLICY)),
        );
    }
    out
}

/// What the section measures and how: the modules each case runs in and the load.
fn intro(run: &Run) -> String {
    format!("{}{}", cases_and_modules(run), load_and_cpu(run))
}

/// The policy-server run, the five modules each input is sent to, and the checks before any load.
fn cases_and_modules(run: &Run) -> String {
    format!(
        "{} with `{}` (workers and timeout protection at their defaults: one worker per core, \
         {} cores here; log level warn, as at info it writes a line per request). Each input is POSTed as an AdmissionReview to \
         `/validate/<id>` of five modules loaded side by side with the same settings: the \
         policy (`dist/<policy>.wasm`), **null** (`benchmarks/null-policy`: accepts without \
         reading the request, so its throughput is what policy-server itself allows), \
         **baseline** (the parse-only module above) and the **anchor** of the policy's verdict: \
         **walk** (`benchmarks/walk-policy`: reads the whole request into \
         `serde::de::IgnoredAny`, builds nothing, accepts) for an accepted or rejected request, \
         **mutate** (`benchmarks/mutate-policy`: finds `request.object` as a borrowed slice, \
         inserts one member and returns it as `mutated_object`, which policy-server diffs into a \
         JSONPatch) for a mutation. The anchor is the least the verdict costs. Beside it, each \
         case's **answer** anchor (`benchmarks/answer-policy`, built for that case): it reads the \
         whole request and the settings document into `IgnoredAny`, building nothing, and \
         returns the policy's own answer to the case byte for byte (written beforehand by the \
         waPC host policy-server runs, and embedded), so policy-server does exactly the same \
         work around both and policy ÷ answer is the cost of the policy's decision alone: the \
         target, ≥ 0.95x saturated, is held there (the hostpath helper Pod's is its measured \
         0.93x, stated beside it: cost.md, \"The limit of tuning\"; the case with a JSONPath condition states \
         its own in the instruction counts below: the same with what its condition costs allowed \
         on top, measured against its twin, the same request judged by the same rule without \
         the condition; a few microseconds, below the noise of these medians). A case whose policy \
         reads the request's Namespace from the cluster (PodTolerationRestriction's annotations) \
         runs with policy-server reaching a kube-apiserver 1.20 on loopback that holds it (etcd \
         beside it: the end-to-end suite's control plane, with the admin's kubeconfig), and its \
         anchors ask for the Namespace first as the policy does (`get_resource`) and read the \
         answer through, so the host's answer is on both sides of the ratio. By default \
         (`namespaceReads: cached`, `disable_cache: false`) the policy reads policy-server's \
         five-second cache, which asks the API server once per 5 s whatever the rate, and its \
         anchor is **mutate-namespace**, asking the same way; the **fresh reads** case \
         (`namespaceReads: fresh`, `disable_cache: true`), the same request and Namespace, reads \
         the Namespace from the API server for every Pod, and its anchor is \
         **mutate-namespace-fresh**, asking the same way, so the API server's round trip is on \
         both sides of its ratio. Around each of their points the API server's GETs of Namespaces \
         are counted (below). Every answer is \
         checked once before any load (the policy's verdict is the example's, the mutate \
         anchor's a mutation, the answer anchor's AdmissionReview the policy's, member for \
         member, the others' an acceptance), so no figure is of an error path.\n\n",
        run.version,
        run.args.join(" "),
        run.cores,
    )
}

/// The load each point is measured under, how ratios are read, and policy-server's CPU time.
fn load_and_cpu(run: &Run) -> String {
    let t = run.timing;
    format!(
        "Load: `wrk` with one thread and a fixed number of connections ({} = low, {} = \
         saturated), {} s per point after a {} s warm-up of each module; {} rounds, each running \
         null, policy, baseline, anchor, answer in turn on the same input, so that drift hits all \
         five alike. \
         A ratio is the median over rounds of the module's req/s ÷ null's req/s in the same \
         round; the range shows the noise. p99 is the median of the rounds' p99. The machine \
         is shared with other builds: read the ratios, not the absolutes.\n\n\
         wrk runs on the same cores as policy-server, so its own cost per request, alike for \
         every module, pulls the req/s ratios towards 1. Beside them, policy-server's **CPU \
         time per request** (user and kernel, all its threads, from `/proc/<pid>/stat`, over \
         each point's requests): what a policy-server on cores of its own is bound by, the \
         kernel's work for it included (sockets, the instances' memory), which instruction \
         counts leave out. It moves with the machine's load as req/s do (a CPU second buys \
         less work while other work shares its caches). Its ratio is the answer anchor's CPU \
         per request ÷ the policy's, so that, like the req/s ratio, 1 is the anchor's cost and \
         lower is costlier.\n",
        CONNECTIONS[0],
        CONNECTIONS[CONNECTIONS.len() - 1],
        t.seconds,
        t.warm_up_seconds,
        t.rounds,
    )
}

/// The whole section, from [`HEADING`] on.
pub fn section(outcome: &Outcome) -> String {
    let run = match outcome {
        Outcome::NotRun(why) => return format!("{HEADING}\n\nNot run: {why}.\n"),
        Outcome::Ran(run) => run,
    };
    let mut out = format!("{HEADING}\n\n{}\n", intro(run));
    out.push_str("### Targets\n\n");
    out.push_str(&targets(run));
    for (case, why) in &run.not_run {
        let _ = writeln!(out, "\nNot run: {case}: {why}.");
    }
    out.push_str(
        "\n### Throughput and latency\n\n\
         | input | verdict | body KiB | connections | req/s policy / null / baseline / anchor / answer | policy ÷ null (range) | policy ÷ answer (range) | policy ÷ anchor (range) | answer ÷ null | anchor ÷ null | baseline ÷ null | p99 ms policy / null / baseline / anchor / answer | CPU µs per request policy / null / anchor / answer |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for case in &run.cases {
        for m in &case.points {
            let [null, policy, baseline, anchor_series, answer] = &m.series;
            let rps = |s: &super::Series| median(&s.requests_per_second);
            let p99 = |s: &super::Series| median(&s.p99) / 1000.0;
            let cpu = |s: &super::Series| median(&s.cpu_per_request);
            let _ = writeln!(
                out,
                "| {} {} | {} | {:.1} | {} | {:.0} / {:.0} / {:.0} / {:.0} / {:.0} | {} | {} | {} | {:.2}x | {:.2}x | {:.2}x | {:.2} / {:.2} / {:.2} / {:.2} / {:.2} | {:.0} / {:.0} / {:.0} / {:.0} |",
                case.policy,
                case.name,
                verdict(case.expect),
                case.body_bytes as f64 / 1024.0,
                m.connections,
                rps(policy),
                rps(null),
                rps(baseline),
                rps(anchor_series),
                rps(answer),
                with_range(&m.ratios(POLICY)),
                with_range(&m.ratios_to(POLICY, ANSWER)),
                with_range(&m.ratios_to(POLICY, ANCHOR)),
                median(&m.ratios(ANSWER)),
                median(&m.ratios(ANCHOR)),
                median(&m.ratios(BASELINE)),
                p99(policy),
                p99(null),
                p99(baseline),
                p99(anchor_series),
                p99(answer),
                cpu(policy),
                cpu(null),
                cpu(anchor_series),
                cpu(answer),
            );
        }
    }
    out.push_str(&namespace_reads(run));
    out.push_str(&felt(run));
    out.push_str(&at_the_apiserver(&run.apiserver));
    out
}

/// Each webhook's latency as the API server timed it, the policy's beside the null module's on
/// the same requests, and the slowest bucket beside the timeout.
fn at_the_apiserver(outcome: &super::apiserver::Outcome) -> String {
    let mut out = String::from("\n### At the API server\n\n");
    let (apiserver, seconds, measured) = match outcome {
        super::apiserver::Outcome::NotRun(why) => return format!("{out}Not run: {why}.\n"),
        super::apiserver::Outcome::Ran {
            apiserver,
            seconds,
            measured,
        } => (apiserver, seconds, measured),
    };
    let _ = writeln!(
        out,
        "{apiserver} on loopback calls policy-server (the same binary, TLS, default workers and \
         log level, as the end-to-end suite runs it) for each stream of writes `wrk` sends it \
         over {} connections for {seconds} s after a warm-up: the policy's webhook (its \
         manifest's `failurePolicy` and `timeoutSeconds`) and the null module's, both mutating, \
         on the same requests. Latency is the API server's own \
         `apiserver_admission_webhook_admission_duration_seconds` per webhook (TLS, encoding, \
         policy-server and the module), read before and after the stream: the mean, and the \
         least bucket bound every call fell under (the histogram's buckets are the API \
         server's: 5 ms, 25 ms, 100 ms, 500 ms, 1 s, 2.5 s, ...). 1.20 has no \
         `matchConditions`, so every write of the stream is sent: on 1.28 and later the label \
         stream never reaches the policy (docs/availability.md).\n\n\
         | stream | writes | req/s | request mean ms (API server) / p99 ms (client) | webhook mean ms policy / null | policy − null ms | every call under: policy / null | failure setting |\n\
         |---|---|---|---|---|---|---|---|",
        super::apiserver::CONNECTIONS,
    );
    let bound = |seconds: f64| {
        if seconds.is_finite() {
            format!("{:.0} ms", seconds * 1000.0)
        } else {
            "no bound".to_owned()
        }
    };
    for m in measured {
        let _ = writeln!(
            out,
            "| {} ({}) | {:.0} | {:.0} | {:.2} / {:.2} | {:.2} / {:.2} | {:+.2} | {} / {} | `{}`, {} s |",
            m.stream,
            m.policy,
            m.requests,
            m.requests_per_second,
            m.request.mean_ms(),
            m.p99_ms,
            m.policy_webhook.mean_ms(),
            m.null_webhook.mean_ms(),
            m.policy_webhook.mean_ms() - m.null_webhook.mean_ms(),
            bound(m.policy_webhook.slowest_bound()),
            bound(m.null_webhook.slowest_bound()),
            m.failure_policy,
            m.timeout_seconds,
        );
    }
    out
}

/// For each case that reads its Namespace, at each concurrency: the API server's GETs of
/// Namespaces per 1,000 requests each module admitted. Empty when no such case ran.
fn namespace_reads(run: &Run) -> String {
    let cases: Vec<&CaseResult> = run
        .cases
        .iter()
        .filter(|case| {
            let gets = |m: &Measured| !m.series[POLICY].namespace_gets_per_1000.is_empty();
            case.points.iter().any(gets)
        })
        .collect();
    if cases.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n### The API server's reads\n\n\
         For the cases that read their Namespace: the GETs of Namespaces the kube-apiserver \
         answered during each point (the sum of its `apiserver_request_total` for verb GET, \
         resource `namespaces`, code 200, read before and after the point), per 1,000 requests \
         the module admitted in the point: median over rounds (range). It counts whoever sent \
         them, so the null module's column, which asks nothing, shows what else read Namespaces \
         meanwhile. Reading through policy-server's cache costs one GET per 5 s per \
         policy-server whatever the rate, so per 1,000 Pods it falls as the rate rises (the cache \
         is one per process, shared by every module loaded: a point may find it filled by the \
         module before it and ask nothing); fresh reads cost one per Pod, 1,000 (a few more where \
         the requests in flight when wrk stops, up to one per connection, asked too).\n\n\
         | input | anchor | connections | GETs per 1,000 requests: policy | anchor | answer | null |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for case in cases {
        for m in &case.points {
            let gets = |module: usize| per_1000(&m.series[module].namespace_gets_per_1000);
            let _ = writeln!(
                out,
                "| {} {} | {} | {} | {} | {} | {} | {} |",
                case.policy,
                case.name,
                case.anchor,
                m.connections,
                gets(POLICY),
                gets(ANCHOR),
                gets(ANSWER),
                gets(0),
            );
        }
    }
    out
}

/// Start-up, memory and fixed-rate latency, each beside the null module's from the same run.
fn felt(run: &Run) -> String {
    let mut out = String::from("\n### What a platform team feels\n\n");
    let (policies, null) = (&run.startup.policies, &run.startup.null);
    let seconds = |values: &[f64]| {
        let (min, max) = range(values);
        format!("{:.2} s ({min:.2}-{max:.2})", median(values))
    };
    let _ = writeln!(
        out,
        "**Start-up**: policy-server from its start to its readiness probe answering, with both \
         policies (`dist/*.wasm`, default settings, copied from `file://` and precompiled anew: \
         an empty download folder every time) and with the null module in the place of each \
         (same ids, same settings), alternating, {} rounds, with nothing else loaded: median \
         (range).\n\n\
         | configuration | start-up | ÷ null modules' |\n|---|---|---|\n\
         | taint-preservation and toleration-injection | {} | {:.2}x |\n\
         | two null modules | {} | 1.00x |\n",
        policies.len(),
        seconds(policies),
        median(policies) / median(null),
        seconds(null),
    );
    let _ = writeln!(
        out,
        "**Memory and latency**, per case: policy-server's peak resident memory (`VmHWM`, reset \
         before each point) while saturated by each module, median over rounds, the server with \
         every module of the run loaded (the reset leaves the resident memory as it is, so what \
         earlier points left allocated counts for whichever module runs next: differences of a \
         few MiB are not the module's); and p99 latency at a fixed moderate rate, half the \
         policy's saturated req/s, sent open loop over {} keep-alive connections (each \
         request's latency counted from when it was due, so waits behind a slow one count), \
         {} s per module after a second of warm-up, the null module and then the policy at the \
         same rate.\n\n\
         | input | peak memory MiB, saturated: policy / null / answer | policy − null | rate req/s | p99 ms at that rate: policy / null | policy − null |\n\
         |---|---|---|---|---|---|",
        super::felt::CONNECTIONS,
        2 * run.timing.seconds,
    );
    for case in &run.cases {
        let point = saturated(case);
        let memory = |module: usize| median(&point.series[module].peak_memory_kib) / 1024.0;
        let fixed = &case.fixed_rate;
        let _ = writeln!(
            out,
            "| {} {} | {:.0} / {:.0} / {:.0} | {:+.1} | {:.0} | {:.2} / {:.2} | {:+.2} |",
            case.policy,
            case.name,
            memory(POLICY),
            memory(0),
            memory(ANSWER),
            memory(POLICY) - memory(0),
            fixed.rate,
            fixed.policy / 1000.0,
            fixed.null / 1000.0,
            (fixed.policy - fixed.null) / 1000.0,
        );
    }
    out
}

/// Where the section starting at `heading` lies in `results`: from the heading to the next
/// `## ` heading or the end.
fn section_range(results: &str, heading: &str) -> Option<std::ops::Range<usize>> {
    let start = results.find(heading)?;
    let rest = &results[start + heading.len()..];
    let end = rest
        .find("\n## ")
        .map_or(results.len(), |i| start + heading.len() + i + 1);
    Some(start..end)
}

/// The section of `results` starting at `heading`, if it has one.
pub fn section_of<'a>(results: &'a str, heading: &str) -> Option<&'a str> {
    section_range(results, heading).map(|range| results[range].trim_end())
}

/// `results` with the section starting at the first line of `section` replaced by `section`
/// (appended if it has none).
pub fn replace_section(results: &str, section: &str) -> String {
    let heading = section.lines().next().unwrap_or_default();
    let Some(range) = section_range(results, heading) else {
        return format!("{}\n\n{section}", results.trim_end());
    };
    format!(
        "{}{section}\n{}",
        &results[..range.start],
        &results[range.end..]
    )
}

#[cfg(test)]
mod tests {
    use wasm_tests::examples::Expect;

    use super::super::{felt, CaseResult, FixedRate, Measured, Run, Series, QUICK};
    use super::{median, namespace_reads, replace_section, section_of, HEADING};

    /// One line per point of each case that read its Namespace, the modules' GETs per 1,000
    /// requests as median (range) over rounds; no table when no case read one.
    #[test]
    fn the_api_servers_reads_are_given_for_the_cases_that_read_their_namespace() {
        let case = |name: &str, anchor, gets: [&[f64]; 5]| CaseResult {
            policy: "toleration-injection",
            name: name.to_owned(),
            expect: Expect::Mutated,
            anchor,
            body_bytes: 0,
            points: vec![Measured {
                connections: 8,
                series: gets.map(|gets| Series {
                    namespace_gets_per_1000: gets.to_vec(),
                    ..Series::default()
                }),
            }],
            fixed_rate: FixedRate {
                rate: 0.0,
                policy: 0.0,
                null: 0.0,
            },
        };
        let run = |cases| Run {
            version: String::new(),
            args: Vec::new(),
            cores: 2,
            timing: QUICK,
            cases,
            not_run: Vec::new(),
            startup: felt::Startup {
                policies: Vec::new(),
                null: Vec::new(),
            },
            apiserver: super::super::apiserver::Outcome::NotRun("not in this test".to_owned()),
        };
        let plain = || case("plain", "mutate", [&[]; 5]);
        let fresh = case(
            "fresh",
            "mutate-namespace-fresh",
            [
                &[0.0, 0.0, 0.0],
                &[1000.0, 1000.5, 999.0],
                &[0.0; 3],
                &[1000.0; 3],
                &[0.25, 0.5, 0.0],
            ],
        );
        let table = namespace_reads(&run(vec![plain(), fresh]));
        let rows: Vec<&str> = table
            .lines()
            .filter(|l| l.starts_with("| toleration"))
            .collect();
        assert_eq!(
            rows,
            ["| toleration-injection fresh | mutate-namespace-fresh | 8 | 1000.0 (999.0-1000.5) \
              | 1000.0 (1000.0-1000.0) | 0.2 (0.0-0.5) | 0.0 (0.0-0.0) |"]
        );
        assert_eq!(namespace_reads(&run(vec![plain()])), "");
    }

    #[test]
    fn the_section_is_replaced_up_to_the_next_heading() {
        let old = format!("# T\n\nintro\n\n{HEADING}\n\nold figures\n\n## Diagnostics\n\nrest\n");
        let new = replace_section(&old, &format!("{HEADING}\n\nnew figures\n"));
        assert_eq!(
            new,
            format!("# T\n\nintro\n\n{HEADING}\n\nnew figures\n\n## Diagnostics\n\nrest\n")
        );
    }

    #[test]
    fn a_results_file_without_the_section_gets_it_appended() {
        let new = replace_section("# T\n\nintro\n", &format!("{HEADING}\n\nfigures\n"));
        assert_eq!(new, format!("# T\n\nintro\n\n{HEADING}\n\nfigures\n"));
    }

    #[test]
    fn a_section_is_found_by_its_heading() {
        let results = format!("# T\n\n{HEADING}\n\nfigures\n\n## Next\n\nrest\n");
        assert_eq!(
            section_of(&results, HEADING),
            Some(format!("{HEADING}\n\nfigures").as_str())
        );
        assert_eq!(section_of(&results, "## Missing"), None);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
