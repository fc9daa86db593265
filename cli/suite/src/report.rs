//! What `taintguard test` prints: a line per case (with its differences under a failure) and a
//! closing count, a JUnit XML report for CI systems, or a JSON report with every request's
//! verdict, by which two engines' runs are compared.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::run::{CaseResult, Outcome};

/// The counts of a run.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Cases whose requests met their expectations.
    pub passed: usize,
    /// Cases that failed their expectations, or whose two builds disagreed.
    pub failed: usize,
    /// Cases skipped, by the suite or because the engine cannot run them.
    pub skipped: usize,
}

impl Totals {
    /// The counts of `results`.
    pub fn of<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Totals {
        let mut totals = Totals::default();
        for result in results {
            match result.outcome {
                Outcome::Passed => totals.passed += 1,
                Outcome::Failed(_) | Outcome::Disagreed(_) => totals.failed += 1,
                Outcome::Skipped(_) => totals.skipped += 1,
            }
        }
        totals
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// One case's line, and its differences indented below it.
pub fn text_line(result: &CaseResult) -> String {
    let name = format!("{} / {}", result.suite, result.case);
    let checked = match (result.requests, result.gatekeeper_checked) {
        (_, 0) => String::new(),
        (n, g) if n == g => " (waPC + gatekeeper)".to_owned(),
        (n, g) => format!(" (waPC; gatekeeper on {g} of {n})"),
    };
    let (mark, lines): (&str, &[String]) = match &result.outcome {
        Outcome::Passed => ("pass", &[]),
        Outcome::Failed(lines) => ("FAIL", lines),
        Outcome::Disagreed(lines) => ("FAIL [builds disagree]", lines),
        Outcome::Skipped(reason) => return format!("skip  {name}: {reason}"),
    };
    let mut out = format!("{mark}  {name}{checked}");
    for line in lines {
        let _ = write!(out, "\n        {line}");
    }
    out
}

/// A JSON report: the counts, and each case with its outcome (`pass`, `fail`, `disagree`,
/// `skip`), the lines under it, and what the engine answered each request it sent
/// ([`crate::run::summary`]).
pub fn json(results: &[CaseResult]) -> String {
    let totals = Totals::of(results);
    let cases: Vec<Value> = results
        .iter()
        .map(|result| {
            let (outcome, lines): (&str, &[String]) = match &result.outcome {
                Outcome::Passed => ("pass", &[]),
                Outcome::Failed(lines) => ("fail", lines),
                Outcome::Disagreed(lines) => ("disagree", lines),
                Outcome::Skipped(reason) => ("skip", std::slice::from_ref(reason)),
            };
            json!({
                "suite": result.suite,
                "file": result.file.display().to_string(),
                "case": result.case,
                "outcome": outcome,
                "lines": lines,
                "gatekeeperChecked": result.gatekeeper_checked,
                "verdicts": result.verdicts,
            })
        })
        .collect();
    let report = json!({
        "passed": totals.passed,
        "failed": totals.failed,
        "skipped": totals.skipped,
        "cases": cases,
    });
    format!("{report:#}\n")
}

/// A JUnit XML report: a test suite per suite file, a test case per case.
pub fn junit(results: &[CaseResult]) -> String {
    let totals = Totals::of(results);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"taintguard test\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
        results.len(),
        totals.failed,
        totals.skipped
    );
    let mut files: Vec<&std::path::Path> = results.iter().map(|r| r.file.as_path()).collect();
    files.dedup();
    for file in files {
        let cases: Vec<&CaseResult> = results.iter().filter(|r| r.file == file).collect();
        let Some(first) = cases.first() else { continue };
        let totals = Totals::of(cases.iter().copied());
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" file=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
            escape(&first.suite),
            escape(&file.display().to_string()),
            cases.len(),
            totals.failed,
            totals.skipped
        );
        for case in cases {
            let _ = write!(
                out,
                "    <testcase name=\"{}\" classname=\"{}\"",
                escape(&case.case),
                escape(&case.suite)
            );
            match &case.outcome {
                Outcome::Passed => out.push_str("/>\n"),
                Outcome::Skipped(reason) => {
                    let _ = writeln!(
                        out,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(reason)
                    );
                }
                Outcome::Failed(lines) | Outcome::Disagreed(lines) => {
                    let kind = match case.outcome {
                        Outcome::Disagreed(_) => "taintguard-builds-disagree",
                        _ => "expectation",
                    };
                    let _ = writeln!(
                        out,
                        ">\n      <failure type=\"{kind}\" message=\"{}\">{}</failure>\n    </testcase>",
                        escape(lines.first().map(String::as_str).unwrap_or_default()),
                        escape(&lines.join("\n"))
                    );
                }
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}
