//! Runs a suite's cases in the hosts: the waPC module as policy-server runs it (a fresh instance
//! per request), and, for every request the policy answers without mutating or asking the
//! cluster, the gatekeeper build too, which must then reach the same verdict and message.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use taintguard_host::gatekeeper::GatekeeperPolicy;
use taintguard_host::wapc::{admission_request, WapcPolicy};

use crate::cluster;
use crate::expect::{differences, verdict};
use crate::review::{review, Operation, Parts};
use crate::suite::{Case, Requests, Suite, Verdict, Write};

/// How a case ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The policy's answers did not meet the expectations: each line a difference.
    Failed(Vec<String>),
    /// The two builds of the policy disagreed: taintguard's failure, not the suite's.
    Disagreed(Vec<String>),
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct CaseResult {
    pub suite: String,
    pub file: PathBuf,
    pub case: String,
    pub outcome: Outcome,
    /// The requests the case sent (a sequence sends several).
    pub requests: usize,
    /// Requests the gatekeeper build also judged.
    pub gatekeeper_checked: usize,
}

/// Compiled modules, each compiled once per run.
#[derive(Default)]
pub struct Modules {
    wapc: HashMap<PathBuf, WapcPolicy>,
    gatekeeper: HashMap<PathBuf, GatekeeperPolicy>,
}

impl Modules {
    fn wapc(&mut self, path: &Path) -> Result<&WapcPolicy, String> {
        if !self.wapc.contains_key(path) {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let policy =
                WapcPolicy::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            self.wapc.insert(path.to_owned(), policy);
        }
        Ok(&self.wapc[path])
    }

    fn gatekeeper(&mut self, path: &Path) -> Result<&GatekeeperPolicy, String> {
        if !self.gatekeeper.contains_key(path) {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let policy = GatekeeperPolicy::from_bytes(&bytes)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            self.gatekeeper.insert(path.to_owned(), policy);
        }
        Ok(&self.gatekeeper[path])
    }
}

/// Runs every case of `suite`.
///
/// # Errors
///
/// A module that cannot be read or compiled: no case of the suite can run.
pub fn run_suite(modules: &mut Modules, suite: &Suite) -> Result<Vec<CaseResult>, String> {
    modules.wapc(&suite.policy)?;
    if let Some(path) = &suite.gatekeeper {
        modules.gatekeeper(path)?;
    }
    let wapc = &modules.wapc[&suite.policy];
    let gatekeeper = suite.gatekeeper.as_ref().map(|p| &modules.gatekeeper[p]);
    Ok(suite
        .cases
        .iter()
        .map(|case| {
            let mut run = CaseRun {
                wapc,
                gatekeeper,
                case,
                requests: 0,
                gatekeeper_checked: 0,
            };
            let outcome = match &case.skip {
                Some(reason) => Outcome::Skipped(reason.clone()),
                None => run.outcome(),
            };
            CaseResult {
                suite: suite.name.clone(),
                file: suite.file.clone(),
                case: case.name.clone(),
                outcome,
                requests: run.requests,
                gatekeeper_checked: run.gatekeeper_checked,
            }
        })
        .collect())
}

struct CaseRun<'a> {
    wapc: &'a WapcPolicy,
    gatekeeper: Option<&'a GatekeeperPolicy>,
    case: &'a Case,
    requests: usize,
    gatekeeper_checked: usize,
}

/// Why a request's run stopped the case.
enum Stop {
    Failed(Vec<String>),
    Disagreed(Vec<String>),
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
        let fail = |line: String| Stop::Failed(vec![line]);
        let settings_answer = self
            .wapc
            .validate_settings(&self.case.settings)
            .map_err(fail)?;
        if settings_answer["valid"] != Value::Bool(true) {
            return Err(fail(format!(
                "settings: the policy refuses them: {}",
                settings_answer["message"].as_str().unwrap_or_default()
            )));
        }
        match &self.case.requests {
            Requests::Review(review) => {
                let expect = self.case.expect.as_ref().expect("a review's case expects");
                let response = self.judge(review)?;
                let object = &admission_request(review)["object"];
                let problems = differences(expect, &response, object);
                if problems.is_empty() {
                    Ok(())
                } else {
                    Err(Stop::Failed(problems))
                }
            }
            Requests::Steps { stored, steps } => {
                let mut stored = stored.clone();
                let single = steps.len() == 1;
                for (i, step) in steps.iter().enumerate() {
                    let at = |line: String| {
                        if single {
                            line
                        } else {
                            format!("step {} (\"{}\"): {line}", i + 1, step.name)
                        }
                    };
                    let operation = step.operation.unwrap_or(if stored.is_some() {
                        Operation::Update
                    } else {
                        Operation::Create
                    });
                    let object = match &step.write {
                        None => None,
                        Some(write) => {
                            Some(written(write, stored.as_ref()).map_err(|e| fail(at(e)))?)
                        }
                    };
                    let parts = Parts {
                        operation,
                        requester: step.requester.clone(),
                        object: object.clone(),
                        old_object: match operation {
                            Operation::Create => None,
                            _ => stored.clone(),
                        },
                        sub_resource: step.sub_resource.clone(),
                        patch: matches!(
                            step.write,
                            Some(Write::MergePatch(_) | Write::JsonPatch(_))
                        ),
                        uid: format!("taintguard-test-{}", i + 1),
                    };
                    let request = review(&parts).map_err(|e| fail(at(e)))?;
                    let response = self.judge(&request).map_err(|stop| match stop {
                        Stop::Failed(lines) => Stop::Failed(lines.into_iter().map(at).collect()),
                        Stop::Disagreed(lines) => {
                            Stop::Disagreed(lines.into_iter().map(at).collect())
                        }
                    })?;
                    let object = object.unwrap_or(Value::Null);
                    let problems = differences(&step.expect, &response, &object);
                    if !problems.is_empty() {
                        return Err(Stop::Failed(problems.into_iter().map(at).collect()));
                    }
                    // What the API server stores: the policy's patch applied, nothing if refused.
                    stored = match (verdict(&response), operation) {
                        (Verdict::Rejected, _) => stored,
                        (_, Operation::Delete) => None,
                        (Verdict::Mutated, _) => Some(response["mutated_object"].clone()),
                        (Verdict::Accepted, _) => Some(object),
                    };
                }
                Ok(())
            }
        }
    }

    /// The waPC answer to `review`, after the gatekeeper build, where it can, agreed.
    fn judge(&mut self, review: &Value) -> Result<Value, Stop> {
        self.requests += 1;
        let answers = cluster::answers(&self.case.cluster).map_err(|e| Stop::Failed(vec![e]))?;
        let response = self
            .wapc
            .validate_with(review, &self.case.settings, &answers)
            .map_err(|e| Stop::Failed(vec![format!("the waPC module failed: {e}")]))?;
        let Some(gatekeeper) = self.gatekeeper else {
            return Ok(response);
        };
        // The gatekeeper build cannot mutate or ask the cluster: where the waPC build did
        // either, the two need not agree (docs/testing.md).
        if verdict(&response) == Verdict::Mutated || !answers.asked().is_empty() {
            return Ok(response);
        }
        self.gatekeeper_checked += 1;
        let disagreed = |line: String| {
            Stop::Disagreed(vec![
                line,
                "the waPC and gatekeeper builds of one policy must judge alike; this is \
                 taintguard's bug, not the suite's: please report it"
                    .to_owned(),
            ])
        };
        let violations = gatekeeper
            .violations(review, &self.case.settings)
            .map_err(|e| disagreed(format!("the gatekeeper build failed: {e}")))?;
        let wapc_message = response["message"].as_str().unwrap_or_default();
        match (
            response["accepted"] == Value::Bool(true),
            violations.first(),
        ) {
            (true, None) => Ok(response),
            (false, Some(violation)) if violation.message == wapc_message => Ok(response),
            (true, Some(violation)) => Err(disagreed(format!(
                "gatekeeper build: rejected ({}) where the waPC build accepted",
                violation.message
            ))),
            (false, None) => Err(disagreed(format!(
                "gatekeeper build: allowed where the waPC build rejected ({wapc_message})"
            ))),
            (false, Some(violation)) => Err(disagreed(format!(
                "gatekeeper build: rejected with {:?}, the waPC build with {wapc_message:?}",
                violation.message
            ))),
        }
    }
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
