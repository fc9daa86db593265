//! Taint preservation: protected taints, one-shot startup taints and cordon ownership on Nodes.
//!
//! The policy compares `oldObject` (fresh from storage, even when the writer patched from a stale
//! cache) with `object` (the result of the write) and finds what the requester may not do:
//! remove or change a protected taint it did not add, re-add a taint whose removal a record
//! keeps, uncordon a node someone else cordoned, or rewrite one of the records (cordon owner,
//! one-shot removals, taint owners, controllers' own). In `restore` mode it splices the protected
//! state back into `object` and accepts with warnings; in `deny` mode it rejects. Either way
//! audit annotations say what the request attempted, what the policy answered and who tried.
//!
//! A request is judged through one [`judging::Judging`]: the steps are its methods, each in the
//! module of what it judges.

// The exports (`#[no_mangle]`, the OPA ones `unsafe extern "C"`) come from the adapters'
// `policy!` macros and are the adapters' code: the lint checks this crate's own source.
#![forbid(unsafe_code)]

#[cfg(feature = "wasm")]
mod exports;

mod controllers;
mod cordon;
mod findings;
mod judging;
mod node;
mod owners;
mod record;
pub mod settings;
pub mod stored;
mod taints;

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::cluster::{AccessQuestion, Cluster};
use taintguard::policy::{Asks, Half, Policy};
use taintguard::principal::Principal;
use taintguard::verdict::Verdict;

use findings::requested_by;
use judging::Judging;
pub use settings::{Mode, Settings};

pub struct TaintPreservation;

impl Policy for TaintPreservation {
    const NAME: &'static str = "taint-preservation";
    type Settings = Settings;
    /// RBAC, when the settings enable it.
    const ASKS: Asks = Asks {
        namespaces: false,
        nodes: false,
        access: true,
    };

    /// In the validating half, what restore mode would put back is a violation; the owner
    /// record of a new cordon, which only a mutation can write, is left out.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Verdict {
        let mode = match half {
            Half::Mutating => settings.mode,
            Half::Validating => Mode::Deny,
        };
        judge_request(request, settings, mode, cluster)
    }
}

fn judge_request(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    mode: Mode,
    cluster: &dyn Cluster,
) -> Verdict {
    if !request.is_core("Node")
        || !matches!(request.operation, Operation::Create | Operation::Update)
    {
        return Verdict::accept();
    }
    judge_with_rbac(request, settings, mode, cluster).unwrap_or_else(|message| {
        Verdict::reject(400, format!("malformed Node request: {message}"))
    })
}

/// What the requester may do beyond the per-rule lists: change protected taints and the
/// policy's records (`taints`), and lift or reassign another's cordon (`cordon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Permission {
    taints: bool,
    cordon: bool,
}

/// A verdict, and which permissions would have changed it.
struct Judgement {
    verdict: Verdict,
    wants: Permission,
    node: String,
}

/// The settings lists decide first. When they do not permit what the request does and RBAC is
/// enabled, a SubjectAccessReview per verb needed decides; a failed question permits nothing
/// (docs/context.md) and says so in a warning.
fn judge_with_rbac(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    mode: Mode,
    cluster: &dyn Cluster,
) -> Result<Verdict, String> {
    let who = request.principal();
    let listed = settings.permitted.allows(&who);
    let by_list = Permission {
        taints: listed,
        cordon: listed,
    };
    let first = Judging::read(request, settings, mode, by_list)?.judge()?;
    if !settings.rbac.enabled || first.wants == Permission::default() {
        return Ok(first.verdict);
    }
    let asked = ask_rbac(&who, settings, &first, cluster);
    let granted = Permission {
        taints: by_list.taints || asked.granted.taints,
        cordon: by_list.cordon || asked.granted.cordon,
    };
    let mut verdict = if granted == by_list {
        first.verdict
    } else {
        Judging::read(request, settings, mode, granted)?
            .judge()?
            .verdict
    };
    if !asked.grants.is_empty() {
        verdict
            .audit_annotations
            .push(("permitted-by-rbac".to_owned(), asked.grants.join("; ")));
        if !verdict
            .audit_annotations
            .iter()
            .any(|(k, _)| k == "requested-by")
        {
            verdict.audit_annotations.push(requested_by(&who));
        }
    }
    verdict.warnings.extend(asked.notes);
    Ok(verdict)
}

/// What RBAC answered for the permissions a judgement wants.
struct Asked {
    granted: Permission,
    /// Warnings: each grant used, and each question that could not be asked.
    notes: Vec<String>,
    /// The grants used, for the audit annotation.
    grants: Vec<String>,
}

/// A SubjectAccessReview for each verb `first` wants, on the node it judged.
fn ask_rbac(
    who: &Principal<'_>,
    settings: &Settings,
    first: &Judgement,
    cluster: &dyn Cluster,
) -> Asked {
    let rbac = &settings.rbac;
    let mut asked = Asked {
        granted: Permission::default(),
        notes: Vec::new(),
        grants: Vec::new(),
    };
    for (wanted, verb, slot) in [
        (
            first.wants.taints,
            rbac.untaint_verb.as_str(),
            &mut asked.granted.taints,
        ),
        (
            first.wants.cordon,
            rbac.uncordon_verb.as_str(),
            &mut asked.granted.cordon,
        ),
    ] {
        if !wanted {
            continue;
        }
        let question = AccessQuestion {
            user: who.username,
            groups: who.groups,
            verb,
            group: &rbac.api_group,
            resource: &rbac.resource,
            name: Some(&first.node),
        };
        let grant = rbac.describe(verb, &first.node);
        match cluster.can_i(&question) {
            Ok(true) => {
                *slot = true;
                asked
                    .notes
                    .push(format!("{} may {grant} by RBAC", who.describe()));
                asked.grants.push(grant);
            }
            Ok(false) => {}
            Err(e) => asked.notes.push(format!(
                "RBAC could not be asked whether {} may {grant}, so only the settings lists \
                 decided: {e}",
                who.describe()
            )),
        }
    }
    asked
}

#[cfg(test)]
mod tests;
