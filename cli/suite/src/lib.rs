//! taintguard's test suites, independent of any engine: the file format ([`suite`], read from
//! [`files`]), AdmissionReviews built from the parts a user knows ([`review`], with objects as
//! `kubectl get -o yaml` prints them: [`object`]), a suite's cluster ([`cluster`]), the run of a
//! suite's cases and sequences through a [`run::Judge`] ([`run`]) against their expectations
//! ([`expect`]) and the reports ([`report`]). It knows no engine and no policy: `taintguard
//! what-if` (cli/what-if) builds on it.
//!
//! The `taintguard` command (cli/command) judges in the hosts Kubewarden runs; the npm package
//! (abi/js) in its own build. Both call [`test`].

#![forbid(unsafe_code)]
// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

pub mod cluster;
pub mod expect;
pub mod files;
pub mod object;
pub mod report;
pub mod review;
pub mod run;
pub mod suite;

use std::path::PathBuf;

use files::Files;
use report::{json, junit, text_line, Totals};
use run::{run_suite, CaseResult, Judge};
use suite::Suite;

/// How `taintguard test` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// A line per case, the differences under a failure, and the counts.
    Text,
    /// A JUnit XML report.
    Junit,
    /// A JSON report: every case with its outcome and each request's verdict (allowed, code,
    /// patch, warnings), for comparing engines.
    Json,
}

/// What `taintguard test` prints and whether every case passed.
pub struct Tested {
    /// The report, in the format asked for.
    pub output: String,
    /// The counts of passed, failed and skipped cases; every case passed when `failed` is 0.
    pub totals: Totals,
}

/// Gives the judge for a suite: the policy it names, in the caller's engine.
pub type JudgeFor<'a> = dyn FnMut(&Suite) -> Result<Box<dyn Judge + 'a>, String> + 'a;

/// `taintguard test`: every suite under `paths` (default `.`), each through the judge
/// `judge_for` gives for it. A suite file that cannot be read, or whose policy cannot be
/// loaded, is a failed entry of its own, never left out.
///
/// # Errors
///
/// A path that cannot be read, or no suite found: nothing was tested.
pub fn test(
    files: &dyn Files,
    paths: &[PathBuf],
    output: Output,
    judge_for: &mut JudgeFor<'_>,
) -> Result<Tested, String> {
    let default = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let found = suite::find(files, paths)?;
    if found.is_empty() {
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "no test suite (a YAML file with `kind: {}`) under {}",
            suite::KIND,
            names.join(", ")
        ));
    }
    let mut results = Vec::new();
    let mut text = String::new();
    for file in found {
        let ran = suite::load(files, &file)
            .and_then(|suite| Ok(run_suite(judge_for(&suite)?.as_mut(), &suite)));
        let file_results = ran.unwrap_or_else(|e| vec![CaseResult::broken(file.clone(), e)]);
        for result in &file_results {
            text.push_str(&text_line(result));
            text.push('\n');
        }
        results.extend(file_results);
    }
    let totals = Totals::of(&results);
    let output = match output {
        Output::Text => format!("{text}{totals}\n"),
        Output::Junit => junit(&results),
        Output::Json => json(&results),
    };
    Ok(Tested { output, totals })
}
