//! Runs a suite's cases through a [`Judge`]: the policy as an engine runs it. Sequences write
//! what the API server would have stored after each step. Where the judge also has the
//! policy's gatekeeper build, every request the policy answers without mutating or asking the
//! cluster is judged by it too, and the two must reach the same verdict and message.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::expect::{differences, verdict};
use crate::review::{admission_request, review, Operation, Parts};
use crate::suite::{Case, Cluster, Expect, Judged, Requests, Step, Suite, Verdict, Write};

/// A violation the gatekeeper build reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The violation's message, as the gatekeeper build wrote it.
    pub message: String,
    /// The HTTP code the violation gives, when it gives one.
    pub code: Option<u64>,
}

/// The policy in an engine, for one suite.
pub trait Judge {
    /// Why the policy refuses `settings`, as it says it; `None` when it takes them.
    ///
    /// # Errors
    ///
    /// The engine failed.
    fn settings_error(&mut self, settings: &Value) -> Result<Option<String>, String>;

    /// The policy's answer, in the shape of Kubewarden's `ValidationResponse` (`accepted`,
    /// `message`, `code`, `warnings`, `audit_annotations`, `mutated_object`), and whether it asked
    /// the cluster (answered from `cluster`) a question an inventory cannot answer (RBAC, or any
    /// question of a replayed kwctl session).
    ///
    /// # Errors
    ///
    /// The engine failed.
    fn validate(
        &mut self,
        review: &Value,
        settings: &Value,
        cluster: &Cluster,
    ) -> Result<(Value, bool), String>;

    /// The gatekeeper build's violations for the request, `cluster`'s objects in its inventory
    /// as Kubewarden's gatekeeper mode passes them; `None` when there is no such build.
    fn violations(
        &mut self,
        review: &Value,
        settings: &Value,
        cluster: &Cluster,
    ) -> Option<Result<Vec<Violation>, String>>;

    /// Why this engine cannot run `case`, which is then skipped; `None` when it can.
    fn cannot_run(&self, _case: &Case) -> Option<String> {
        None
    }
}

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every request met its expectations.
    Passed,
    /// The policy's answers did not meet the expectations: each line a difference.
    Failed(Vec<String>),
    /// The two builds of the policy judged a request differently where docs/testing.md says
    /// they agree: taintguard's failure, not the suite's. (Where the documentation says they
    /// differ, the gatekeeper build is not compared, and the case is judged by its expectations.)
    Disagreed(Vec<String>),
    /// The case was not run: the suite's `skip` reason, or why the engine cannot run it.
    Skipped(String),
}

/// What one case of a suite came to, for the reports.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The name of the suite the case belongs to.
    pub suite: String,
    /// The suite's file.
    pub file: PathBuf,
    /// The case's name.
    pub case: String,
    /// How the case ended.
    pub outcome: Outcome,
    /// The requests the case sent (a sequence sends several).
    pub requests: usize,
    /// Requests the gatekeeper build also judged.
    pub gatekeeper_checked: usize,
    /// What the engine answered each request the case sent, in order, as [`summary`] gives it:
    /// the verdicts two engines' reports are compared by.
    pub verdicts: Vec<Value>,
}

impl CaseResult {
    /// A suite file that could not be read or run, as one failed entry.
    pub fn broken(file: PathBuf, error: String) -> CaseResult {
        CaseResult {
            suite: file.display().to_string(),
            file,
            case: "(the suite file)".to_owned(),
            outcome: Outcome::Failed(vec![error]),
            requests: 0,
            gatekeeper_checked: 0,
            verdicts: Vec::new(),
        }
    }
}

/// Runs every case of `suite` through `judge`.
pub fn run_suite(judge: &mut dyn Judge, suite: &Suite) -> Vec<CaseResult> {
    suite
        .cases
        .iter()
        .map(|case| {
            let mut run = CaseRun {
                judge: &mut *judge,
                case,
                requests: 0,
                gatekeeper_checked: 0,
                verdicts: Vec::new(),
            };
            let skip = case.skip.clone().or_else(|| run.judge.cannot_run(case));
            let outcome = match skip {
                Some(reason) => Outcome::Skipped(reason),
                None => run.outcome(),
            };
            CaseResult {
                suite: suite.name.clone(),
                file: suite.file.clone(),
                case: case.name.clone(),
                outcome,
                requests: run.requests,
                gatekeeper_checked: run.gatekeeper_checked,
                verdicts: run.verdicts,
            }
        })
        .collect()
}

struct CaseRun<'a> {
    judge: &'a mut dyn Judge,
    case: &'a Case,
    requests: usize,
    gatekeeper_checked: usize,
    verdicts: Vec<Value>,
}

/// What an engine answered `review` (`response`, in the shape of Kubewarden's
/// `ValidationResponse`), as engines are compared: whether it was allowed, the code, the
/// JSONPatch of the mutation from the object sent (`null`: none) and the warnings (`[]`: none).
/// Messages are left out: where the cluster could not answer, each engine gives its own reason.
pub fn summary(review: &Value, response: &Value) -> Value {
    let patch = match &response["mutated_object"] {
        Value::Null => Value::Null,
        mutated => {
            let patch = json_patch::diff(&admission_request(review)["object"], mutated);
            serde_json::to_value(patch).unwrap_or(Value::Null)
        }
    };
    let warnings = match &response["warnings"] {
        Value::Null => json!([]),
        warnings => warnings.clone(),
    };
    json!({
        "allowed": response["accepted"],
        "code": response["code"],
        "patch": patch,
        "warnings": warnings,
    })
}

/// Why a request's run stopped the case.
enum Stop {
    Failed(Vec<String>),
    Disagreed(Vec<String>),
}

impl Stop {
    fn map(self, f: impl Fn(String) -> String) -> Stop {
        match self {
            Stop::Failed(lines) => Stop::Failed(lines.into_iter().map(f).collect()),
            Stop::Disagreed(lines) => Stop::Disagreed(lines.into_iter().map(f).collect()),
        }
    }
}

fn fail(line: String) -> Stop {
    Stop::Failed(vec![line])
}

impl CaseRun<'_> {
    fn outcome(&mut self) -> Outcome {
        match self.try_outcome() {
            Ok(()) => Outcome::Passed,
            Err(Stop::Failed(lines)) => Outcome::Failed(lines),
            Err(Stop::Disagreed(lines)) => Outcome::Disagreed(lines),
        }
    }

    fn try_outcome(&mut self) -> Result<(), Stop> {
        if let Some(message) = self
            .judge
            .settings_error(&self.case.settings)
            .map_err(fail)?
        {
            return Err(fail(format!(
                "settings: the policy refuses them: {message}"
            )));
        }
        match &self.case.requests {
            Requests::Review { review, expect } => {
                let response = self.judge_request(review, expect)?;
                let object = &admission_request(review)["object"];
                let problems = differences(expect, &response, object);
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(Stop::Failed(problems))
                }
            }
            Requests::Steps { stored, steps } => self.run_steps(stored.clone(), steps),
        }
    }

    /// A sequence's steps in order, from the object `stored` before the first: each step's
    /// request against what the API server would have stored after the one before.
    fn run_steps(&mut self, mut stored: Option<Value>, steps: &[Step]) -> Result<(), Stop> {
        let single = steps.len() == 1;
        for (i, step) in steps.iter().enumerate() {
            let at = |line: String| {
                if single {
                    line
                } else {
                    format!("step {} (\"{}\"): {line}", i + 1, step.name)
                }
            };
            let parts = step_parts(i, step, stored.as_ref()).map_err(|e| fail(at(e)))?;
            let expect = match &step.judged {
                Judged::By(expect) => expect,
                // Stored as written: nothing asks the policy.
                Judged::Not(_) => {
                    stored = parts.object;
                    continue;
                }
            };
            let request = review(&parts).map_err(|e| fail(at(e)))?;
            let response = (self.judge_request(&request, expect)).map_err(|stop| stop.map(at))?;
            let object = parts.object.unwrap_or(Value::Null);
            let problems = differences(expect, &response, &object);
            if !problems.is_empty() {
                return Err(Stop::Failed(problems.into_iter().map(at).collect()));
            }
            // What the API server stores: the policy's patch applied, nothing if refused.
            stored = match (verdict(&response), parts.operation) {
                (Verdict::Rejected, _) => stored,
                (_, Operation::Delete) => None,
                (Verdict::Mutated, _) => Some(response["mutated_object"].clone()),
                (Verdict::Accepted, _) => Some(object),
            };
        }
        Ok(())
    }

    /// The policy's answer to `review`, after the gatekeeper build, where it can, agreed, or
    /// met what `expect` says of it where the two differ by design.
    fn judge_request(&mut self, review: &Value, expect: &Expect) -> Result<Value, Stop> {
        self.requests += 1;
        let (response, asked) = self
            .judge
            .validate(review, &self.case.settings, &self.case.cluster)
            .map_err(|e| fail(format!("the policy failed: {e}")))?;
        self.verdicts.push(summary(review, &response));
        if let Some(want) = &expect.gatekeeper {
            self.gatekeeper_expected(review, want)?;
            return Ok(response);
        }
        // The gatekeeper build cannot mutate, nor ask what an inventory does not hold (RBAC, a
        // kwctl session's answers): where the policy did either, the two need not agree
        // (docs/testing.md). Namespaces and nodes it reads from the inventory, as the waPC
        // build reads them from the cluster.
        if verdict(&response) == Verdict::Mutated || asked {
            return Ok(response);
        }
        let violations = self
            .judge
            .violations(review, &self.case.settings, &self.case.cluster);
        let Some(violations) = violations else {
            return Ok(response);
        };
        self.gatekeeper_checked += 1;
        let disagreed = |line: String| {
            Stop::Disagreed(vec![
                line,
                "docs/testing.md says the waPC and gatekeeper builds judge this request alike \
                 (it lists where they differ): the fault is taintguard's, not the suite's; \
                 please report it"
                    .to_owned(),
            ])
        };
        let violations =
            violations.map_err(|e| disagreed(format!("the gatekeeper build failed: {e}")))?;
        let message = response["message"].as_str().unwrap_or_default();
        match (
            response["accepted"] == Value::Bool(true),
            violations.first(),
        ) {
            (true, None) => Ok(response),
            (false, Some(violation)) if violation.message == message => Ok(response),
            // The cluster could not answer: the reason is each engine's own (a host call's
            // error, an inventory's), so the code alone must agree.
            (false, Some(violation)) if response["code"] == 500 && violation.code == Some(500) => {
                Ok(response)
            }
            (true, Some(violation)) => Err(disagreed(format!(
                "gatekeeper build: rejected ({}) where the waPC build accepted",
                violation.message
            ))),
            (false, None) => Err(disagreed(format!(
                "gatekeeper build: allowed where the waPC build rejected ({message})"
            ))),
            (false, Some(violation)) => Err(disagreed(format!(
                "gatekeeper build: rejected with {:?}, the waPC build with {message:?}",
                violation.message
            ))),
        }
    }

    /// The gatekeeper build's answer to `review` held against `want`, the case's expectation of
    /// it where it differs from the waPC build by design; nothing to hold when there is no such
    /// build.
    fn gatekeeper_expected(&mut self, review: &Value, want: &Expect) -> Result<(), Stop> {
        let violations = self
            .judge
            .violations(review, &self.case.settings, &self.case.cluster);
        let Some(violations) = violations else {
            return Ok(());
        };
        self.gatekeeper_checked += 1;
        let violations =
            violations.map_err(|e| fail(format!("gatekeeper build: it failed: {e}")))?;
        // The violations as a response, as `differences` reads one.
        let response = match violations.first() {
            None => json!({"accepted": true}),
            Some(violation) => {
                json!({"accepted": false, "message": violation.message, "code": violation.code})
            }
        };
        let problems = differences(want, &response, &Value::Null);
        if problems.is_empty() {
            return Ok(());
        }
        let lines = problems
            .into_iter()
            .map(|line| format!("gatekeeper build: {line}"));
        Err(Stop::Failed(lines.collect()))
    }
}

/// The request parts of step `i`, the object `stored` before it: its operation (an UPDATE once
/// something is stored, else a CREATE, unless the step names one), and its write applied to
/// what is stored.
fn step_parts(i: usize, step: &Step, stored: Option<&Value>) -> Result<Parts, String> {
    let operation = step.operation.unwrap_or(if stored.is_some() {
        Operation::Update
    } else {
        Operation::Create
    });
    let object = match &step.write {
        None => None,
        Some(write) => Some(written(write, stored)?),
    };
    Ok(Parts {
        operation,
        requester: step.requester.clone(),
        object,
        old_object: match operation {
            Operation::Create => None,
            _ => stored.cloned(),
        },
        sub_resource: step.sub_resource.clone(),
        patch: matches!(step.write, Some(Write::MergePatch(_) | Write::JsonPatch(_))),
        uid: format!("taintguard-test-{}", i + 1),
    })
}

/// The object a write sends: the object itself, or the patch applied to what is stored.
fn written(write: &Write, stored: Option<&Value>) -> Result<Value, String> {
    let stored = || {
        stored
            .cloned()
            .ok_or("a patch needs a stored object: give the case an `oldObject`".to_owned())
    };
    match write {
        Write::Object(object) => Ok(object.clone()),
        Write::MergePatch(patch) => {
            let mut object = stored()?;
            json_patch::merge(&mut object, patch);
            Ok(object)
        }
        Write::JsonPatch(patch) => {
            let mut object = stored()?;
            json_patch::patch(&mut object, patch)
                .map_err(|e| format!("jsonPatch does not apply to the stored object: {e}"))?;
            Ok(object)
        }
    }
}
