//! The real-host section of `benchmarks/results.md`: targets checked on the saturated points,
//! then every point's throughput and p99 for the policy, the null module and the baseline.

use std::fmt::Write;

use wasm_tests::examples::Expect;

use super::{CaseResult, Measured, Outcome, Run, CONNECTIONS, MODULES};

/// The heading that starts the section; `--real-host` rewrites from it to the next `## `.
pub const HEADING: &str = "## Real host: policy-server over loopback";

/// Saturated, taint-preservation's accepted updates keep at least this share of the null
/// module's throughput.
pub const ACCEPTED_TARGET: f64 = 0.8;

/// Saturated policy ÷ null ratios of the mutating cases with the modules as they were before
/// the core's readers were reduced to serde views (one `--real-host` run of those modules on this
/// otherwise idle 2-core machine, just before the same run of the simplified ones). A mutation
/// makes policy-server parse and diff the returned object, which the null module never makes it
/// do, so these sit below the accepted updates' target.
pub const MUTATION_FLOORS: [(&str, f64); 5] = [
    ("Node stale write, 10 taints, 50 images", 0.69),
    ("incident-1-stale-taint-patch [default]", 0.74),
    ("incident-3-readd-uninitialized [default]", 0.74),
    ("hostpath-helper-pod [hostpath-provisioner]", 0.71),
    ("flannel-v0.24.4-daemonset [default]", 0.77),
];

fn median(values: &[f64]) -> f64 {
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
    let _ = write!(out, "policy/null {:.2}x", median(&m.ratios(1)));
    out
}

fn verdict(expect: Expect) -> &'static str {
    match expect {
        Expect::Accepted => "accepted",
        Expect::Mutated => "mutated",
        Expect::Rejected => "rejected",
    }
}

/// The target of a case, if it has one: the bound and what it is.
fn target(case: &CaseResult) -> Option<(f64, &'static str)> {
    match (case.policy, case.expect) {
        ("taint-preservation", Expect::Accepted) => Some((ACCEPTED_TARGET, "≥ 0.80x null")),
        (_, Expect::Mutated) => MUTATION_FLOORS
            .iter()
            .find(|(name, _)| *name == case.name)
            .map(|&(_, floor)| (floor, "≥ floor")),
        _ => None,
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

/// One line per case with a target, for the summary and the report to the terminal.
pub fn targets(run: &Run) -> String {
    let mut out = String::from(
        "| input | verdict | target, saturated | policy ÷ null: median (rounds' range) | |\n\
         |---|---|---|---|---|\n",
    );
    for case in &run.cases {
        let ratios = saturated(case).ratios(1);
        let (min, max) = range(&ratios);
        let (bound, text) = match target(case) {
            Some((bound, text)) => (
                format!("{text} ({bound:.2}x)"),
                mark(&ratios, bound).to_owned(),
            ),
            None => ("none (diagnostic)".to_owned(), String::new()),
        };
        let _ = writeln!(
            out,
            "| {} {} | {} | {bound} | {:.2}x ({min:.2}-{max:.2}) | {text} |",
            case.policy,
            case.name,
            verdict(case.expect),
            median(&ratios),
        );
    }
    out
}

fn intro(run: &Run) -> String {
    let t = run.timing;
    format!(
        "{} with `{}` (workers and timeout protection at their defaults: one worker per core, \
         {} cores here; log level warn, as at info it writes a line per request). Each input is POSTed as an AdmissionReview to \
         `/validate/<id>` of three policies loaded side by side with the same settings: the \
         policy (`dist/<policy>.wasm`), **null** (`benchmarks/null-policy`: accepts without \
         reading the request, so its throughput is what policy-server itself allows) and \
         **baseline** (the parse-only module above). Every answer is checked once before any \
         load (the policy's verdict is the example's, null's and baseline's an acceptance), so \
         no figure is of an error path.\n\n\
         Load: `wrk` with one thread and a fixed number of connections ({} = low, {} = \
         saturated), {} s per point after a {} s warm-up of each module; {} rounds, each running \
         null, policy, baseline in turn on the same input, so that drift hits all three alike. \
         A ratio is the median over rounds of the module's req/s ÷ null's req/s in the same \
         round; the range shows the noise. p99 is the median of the rounds' p99. The machine \
         is shared with other builds: read the ratios, not the absolutes.\n",
        run.version,
        run.args.join(" "),
        run.cores,
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
    out.push_str(
        "\n### Throughput and latency\n\n\
         | input | verdict | body KiB | connections | req/s policy / null / baseline | policy ÷ null (range) | baseline ÷ null | p99 ms policy / null / baseline |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for case in &run.cases {
        for m in &case.points {
            let [null, policy, baseline] = &m.series;
            let ratios = m.ratios(1);
            let (min, max) = range(&ratios);
            let rps = |s: &super::Series| median(&s.requests_per_second);
            let p99 = |s: &super::Series| median(&s.p99) / 1000.0;
            let _ = writeln!(
                out,
                "| {} {} | {} | {:.1} | {} | {:.0} / {:.0} / {:.0} | {:.2}x ({min:.2}-{max:.2}) | {:.2}x | {:.2} / {:.2} / {:.2} |",
                case.policy,
                case.name,
                verdict(case.expect),
                case.body_bytes as f64 / 1024.0,
                m.connections,
                rps(policy),
                rps(null),
                rps(baseline),
                median(&ratios),
                median(&m.ratios(2)),
                p99(policy),
                p99(null),
                p99(baseline),
            );
        }
    }
    out
}

/// `results` with its real-host section replaced by `section` (appended if it has none).
pub fn replace_section(results: &str, section: &str) -> String {
    let Some(start) = results.find(HEADING) else {
        return format!("{}\n\n{section}", results.trim_end());
    };
    let rest = &results[start + HEADING.len()..];
    let end = rest
        .find("\n## ")
        .map_or(results.len(), |i| start + HEADING.len() + i + 1);
    format!("{}{section}\n{}", &results[..start], &results[end..])
}

#[cfg(test)]
mod tests {
    use super::{median, replace_section, HEADING};

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
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
