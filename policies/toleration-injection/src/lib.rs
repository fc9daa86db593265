//! Toleration injection: scoped add-if-missing tolerations for Pods and every pod template,
//! alias groups (control-plane / master), and restriction of dangerous tolerations.
//!
//! The rules' tolerations are only ever appended, never rewritten, and only when nothing the
//! workload already tolerates covers them: coverage is judged the way the scheduler matches, not
//! by equality. PodTolerationRestriction's merge on a Pod CREATE also replaces what its additions
//! cover, as the plugin does (docs/pod-toleration-restriction.md, "Merging"). Workloads are
//! handled at CREATE and UPDATE. A Pod gets its tolerations at CREATE;
//! a Pod UPDATE may only add tolerations (Kubernetes' pod update validation), and the scheduler
//! and the taint manager honour the added ones, so restrictions judge what an UPDATE adds
//! (docs/admission.md).
//!
//! A workload request is judged through one [`judging::Judging`], built once: the steps are its
//! methods, each in the module of what it does; `judge_request` and `judge_pod_update` below
//! read as their table of contents.

// The exports (`#[no_mangle]`, the OPA ones `unsafe extern "C"`) come from the adapters'
// `policy!` macros and are the adapters' code: the lint checks this crate's own source.
#![forbid(unsafe_code)]
// No function of the policy's own code over 60 lines (clippy.toml); tests may hold long tables.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

#[cfg(feature = "wasm")]
mod exports;

mod conditions;
mod drop_in;
mod from_nodes;
mod injection;
mod judging;
mod match_conditions;
mod pod_toleration_restriction;
mod restriction;
pub mod settings;
mod subject;
mod tolerated;
mod unmutated;
mod verdicts;
mod workload;

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::cluster::{Asks, Cluster, Read, ReadBy, ResourceKind};
use taintguard::policy::{Half, Policy};
use taintguard::toleration::Toleration;
use taintguard::verdict::Verdict;

use judging::{Engine, Judging};
use pod_toleration_restriction::{judge_namespace, Outcome};
use restriction::refusal;
pub use settings::Settings;
use verdicts::malformed;
use workload::{Kind, Workload};

/// The toleration-injection policy, as the adapters' `policy!` macros export it: it has no
/// state, all it is told comes in the request and the settings.
pub struct TolerationInjection;

impl Policy for TolerationInjection {
    const NAME: &'static str = verdicts::POLICY_NAME;
    type Settings = Settings;
    /// The nodes' taints, for `nodeTaints` rules; a Pod's Namespace, for
    /// `podTolerationRestriction`.
    const ASKS: Asks = Asks {
        reads: &[
            Read {
                kind: ResourceKind::NAMESPACE,
                by: &[ReadBy::Get],
            },
            Read {
                kind: ResourceKind::NODE,
                by: &[ReadBy::ListAll],
            },
        ],
        access: false,
    };

    /// Engines that cannot mutate only get the restrictions: computing the tolerations the
    /// mutating half would add, and the object with them, would be thrown away.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Verdict {
        judge_request(request, settings, Engine { half, cluster })
    }
}

/// A Namespace's PodTolerationRestriction annotations, or a workload's CREATE or UPDATE; other
/// requests pass.
fn judge_request(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    engine: Engine<'_>,
) -> Verdict {
    if request.kind.kind.as_str() == "Namespace" && request.kind.group.as_str().is_empty() {
        return judge_namespace(request, &settings.pod_toleration_restriction);
    }
    let Some(kind) = Kind::of(request) else {
        return Verdict::accept();
    };
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    let Some(object) = &request.object else {
        return malformed("the request has no object");
    };
    let workload = match Workload::read(object, kind, "object") {
        Ok(workload) => workload,
        Err(message) => return malformed(&message),
    };
    if kind == Kind::Pod && request.operation == Operation::Update {
        return judge_pod_update(request, settings, &workload, engine);
    }
    let judging = match Judging::read(request, settings, &workload, engine) {
        Ok(judging) => judging,
        Err(rejection) => return rejection,
    };
    let plugin = match judging.allowed() {
        Ok(plugin) => plugin,
        Err(refusal) => return refusal,
    };
    // Decided here, where the half is the engine adapter's constant, so that a build that
    // cannot mutate links no injection (the gatekeeper module was 24 KB larger with the branch
    // inside `Judging`, benchmarks/cost.md).
    match engine.half {
        Half::Validating => judging.unmutated(&plugin),
        Half::Mutating => judging.inject(&plugin),
    }
}

/// A Pod UPDATE: nothing is injected; restrictions judge the tolerations it adds, and
/// PodTolerationRestriction holds the Pod to its whitelist again. Tolerations the Pod already
/// had stay allowed, `tolerationSeconds` aside, which Kubernetes lets an UPDATE change on an
/// existing toleration. With neither to judge, the Pod passes unread.
fn judge_pod_update(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    workload: &Workload<'_>,
    engine: Engine<'_>,
) -> Verdict {
    let Some(old) = &request.old_object else {
        return malformed("a Pod UPDATE without oldObject cannot be judged");
    };
    let before = match Workload::read(old, Kind::Pod, "oldObject") {
        Ok(before) => before.tolerations,
        Err(message) => return malformed(&message),
    };
    let added = |t: &&Toleration<'_>| !before.iter().any(|b| b.same_but_seconds(t));
    let restricted =
        !settings.restrictions.is_empty() && workload.tolerations.iter().any(|t| added(&t));
    if !restricted && !settings.pod_toleration_restriction.enabled {
        return Verdict::accept();
    }
    let judging = match Judging::read(request, settings, workload, engine) {
        Ok(judging) => judging,
        Err(rejection) => return rejection,
    };
    let violations = judging.violations(added);
    if !violations.is_empty() {
        return refusal(&judging.subject, &violations, true);
    }
    let plugin = match judging.plugin_outcome(false) {
        Ok(plugin) => plugin,
        Err(refusal) => return refusal,
    };
    match engine.half {
        Half::Validating => Verdict::accept(),
        Half::Mutating => judging.plugin_mutation(&plugin),
    }
}

impl Judging<'_> {
    /// A workload CREATE (or an UPDATE of a pod template): restrictions first, then the
    /// PodTolerationRestriction whitelist; what the plugin makes of a Pod it allows, which the
    /// mutating half adds to, before the matching rules' tolerations.
    fn allowed(&self) -> Result<Outcome, Verdict> {
        let violations = self.violations(|_| true);
        if !violations.is_empty() {
            return Err(refusal(&self.subject, &violations, false));
        }
        self.plugin_outcome(true)
    }
}

#[cfg(test)]
mod tests;
