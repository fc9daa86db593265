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
//! A request is judged through one [`judging::Judging`], read once: the steps are its methods,
//! each in the module of what it judges; `Judging::judge` below runs them in order.

// The exports (`#[no_mangle]`, the OPA ones `unsafe extern "C"`) come from the adapters'
// `policy!` macros and are the adapters' code: the lint checks this crate's own source.
#![forbid(unsafe_code)]
// No function of the policy's own code over 60 lines (clippy.toml); tests may hold long tables.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

#[cfg(feature = "wasm")]
mod exports;

mod controllers;
mod cordon;
mod findings;
mod judging;
pub mod match_conditions;
mod node;
mod owners;
mod record;
mod respond;
mod seal;
pub mod settings;
pub mod stored;
mod taints;

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::cluster::{AccessQuestion, Asks, Cluster};
use taintguard::policy::{Half, Policy};
use taintguard::principal::Principal;
use taintguard::verdict::Verdict;

use findings::requested_by;
use judging::{Judgement, Judging, Permission};
use owners::OwnerRecord;
use record::RemovalRecord;
pub use settings::{Mode, Settings};
use taints::Records;

/// The taint-preservation policy, as the adapters' `policy!` macros export it: it has no state,
/// all it is told comes in the request and the settings.
pub struct TaintPreservation;

impl Policy for TaintPreservation {
    const NAME: &'static str = "taint-preservation";
    type Settings = Settings;
    /// RBAC, when the settings enable it.
    const ASKS: Asks = Asks {
        reads: &[],
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
    if NodeWrite::of(request).is_none() {
        return Verdict::accept();
    }
    judge_with_rbac(request, settings, mode, cluster).unwrap_or_else(|message| {
        Verdict::reject(400, format!("malformed Node request: {message}"))
    })
}

/// What a request the policy judges writes: a Node, or what the `status` subresource stores of
/// it. Every other request (a DELETE, a CONNECT, another subresource, another kind) is no write
/// of taints, cordons or records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeWrite {
    /// `nodes`: the whole Node.
    Node,
    /// `nodes/status`: the API server keeps the stored `spec` and stores the request's
    /// `metadata`, records included (docs/records.md).
    Status,
}

impl NodeWrite {
    /// What `request` writes, if it is a write the policy judges.
    pub(crate) fn of(request: &AdmissionRequest<'_>) -> Option<NodeWrite> {
        let node = request.kind.group.as_str().is_empty() && request.kind.kind.as_str() == "Node";
        let write = match request.sub_resource.as_ref().map(|s| s.as_str()) {
            None => NodeWrite::Node,
            Some("status") => NodeWrite::Status,
            Some(_) => return None,
        };
        match request.operation {
            Operation::Update => node.then_some(write),
            Operation::Create => (node && write == NodeWrite::Node).then_some(write),
            _ => None,
        }
    }
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
    let mut judging = Judging::read(request, settings, mode)?;
    // An UPDATE that leaves every judged taint, the cordon and every record as stored (the
    // node lifecycle controller's swaps, label writes, kubelet's and node-problem-detector's
    // status writes) is none of the policy's business: no patch, no warning, no question asked,
    // as the generated matchConditions keep it from the policy (`match_conditions`).
    if judging.changes_nothing_judged()? {
        return Ok(Verdict::accept());
    }
    judging.read_through_seal()?;
    let first = judging.judge()?;
    if !settings.rbac.enabled || first.wants == Permission::default() {
        return Ok(first.verdict);
    }
    let by_list = judging.permission;
    let asked = ask_rbac(&judging.who, settings, &first, cluster);
    let granted = Permission {
        taints: by_list.taints || asked.granted.taints,
        cordon: by_list.cordon || asked.granted.cordon,
    };
    // Only the permission changed: the request read once is judged again.
    let mut verdict = if granted == by_list {
        first.verdict
    } else {
        judging.permission = granted;
        judging.judge()?.verdict
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
            verdict.audit_annotations.push(requested_by(&judging.who));
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

impl Judging<'_> {
    /// Every step in turn, then the verdict on what they found.
    ///
    /// # Errors
    ///
    /// An annotation or taint list the views cannot read.
    fn judge(&self) -> Result<Judgement, String> {
        let owners_before = match &self.old {
            Some(old) => OwnerRecord::on(old, self.settings.taint_owners.key())?,
            None => OwnerRecord::default(),
        };
        let mut gathered = self.repairs.seed();
        let by_controller = self.controller_records(&owners_before, &mut gathered)?;
        if let Some(old) = &self.old {
            let key = self.settings.one_shot_record_annotation.as_str();
            let removals = RemovalRecord::parse(old.annotation(key)?.as_deref());
            if !self.permission.taints {
                let records = Records {
                    removals: &removals,
                    owners: &owners_before,
                    by_controller: &by_controller,
                };
                self.taint_findings(records, &mut gathered.findings);
            }
            self.one_shot_record(removals, &mut gathered)?;
        }
        self.owner_record(&owners_before, &by_controller, &mut gathered)?;
        let cordon = self.cordon(&mut gathered.findings)?;
        gathered.annotations.extend(cordon.owner_edit);
        self.seal(&mut gathered)?;
        self.respond(cordon.keep_cordoned, gathered)
    }
}

#[cfg(test)]
mod tests;
