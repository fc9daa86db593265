//! Taint preservation: protected taints, one-shot startup taints and cordon ownership on Nodes.
//!
//! The policy compares `oldObject` (fresh from storage, even when the writer patched from a stale
//! cache) with `object` (the result of the write) and finds what the requester may not do:
//! remove or change a protected taint, re-add a one-shot startup taint, uncordon a node someone
//! else cordoned, or rewrite one of the policy's records (cordon owner, one-shot removals). In
//! `restore` mode it splices the protected state back into `object` and accepts with warnings;
//! in `deny` mode it rejects. Either way audit annotations say what happened and who tried.

mod node;
mod record;
pub mod settings;

use std::collections::{HashMap, HashSet};

use crate::admission::{AdmissionRequest, Operation};
use crate::cluster::{AccessQuestion, Cluster};
use crate::policy::{Asks, Policy};
use crate::principal::Principal;
use crate::taint::Taint;
use crate::verdict::Verdict;

use node::{NodeEdits, NodeView};
use record::RemovalRecord;
pub use settings::{Mode, Settings};

pub struct TaintPreservation;

impl Policy for TaintPreservation {
    const NAME: &'static str = "taint-preservation";
    type Settings = Settings;
    /// RBAC, when the settings enable it.
    const ASKS: Asks = Asks {
        nodes: false,
        access: true,
    };

    fn settings(text: &str) -> Result<Settings, crate::settings::SettingsError> {
        Settings::from_text(text)
    }

    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        cluster: &dyn Cluster,
    ) -> Verdict {
        run(request, settings, settings.mode, cluster)
    }

    /// What restore mode would put back is a violation; the owner record of a new cordon, which
    /// only a mutation can write, is left out.
    fn evaluate_validating(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        cluster: &dyn Cluster,
    ) -> Verdict {
        run(request, settings, Mode::Deny, cluster).without_mutation()
    }
}

fn run(
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
        Verdict::reject(
            400,
            format!(
                "{}: malformed Node request: {message}",
                TaintPreservation::NAME
            ),
        )
    })
}

/// Something the requester may not do.
#[derive(Debug)]
enum Finding<'a> {
    RemovedTaint(&'a Taint<'a>),
    ChangedTaint {
        old: &'a Taint<'a>,
        new: &'a Taint<'a>,
    },
    ReaddedOneShot(&'a Taint<'a>),
    Uncordon {
        owner: Option<String>,
    },
    OwnerRewritten {
        owner: Option<String>,
    },
    RecordRewritten,
}

impl Finding<'_> {
    /// Whether the `untaint` permission covers this (else it is about a cordon).
    fn wants_untaint(&self) -> bool {
        !matches!(
            self,
            Finding::Uncordon { .. } | Finding::OwnerRewritten { .. }
        )
    }

    /// What was attempted, as the end of "may not …".
    fn attempted(&self, node: &str) -> String {
        match self {
            Finding::RemovedTaint(t) => format!("remove protected taint {}", t.describe()),
            Finding::ChangedTaint { old, new } => {
                format!(
                    "change protected taint {} to {}",
                    old.describe(),
                    new.describe()
                )
            }
            Finding::ReaddedOneShot(t) => format!("re-add one-shot startup taint {}", t.describe()),
            Finding::Uncordon { owner } => format!("uncordon node {node} ({})", owner_text(owner)),
            Finding::OwnerRewritten { owner } => {
                format!(
                    "rewrite the cordon owner record of node {node} ({})",
                    owner_text(owner)
                )
            }
            Finding::RecordRewritten => {
                format!("rewrite the one-shot taint removal record of node {node}")
            }
        }
    }

    /// What restore mode did about it.
    fn restored(&self, node: &str) -> String {
        match self {
            Finding::RemovedTaint(t) => format!("kept protected taint {}", t.describe()),
            Finding::ChangedTaint { old, .. } => {
                format!("kept protected taint {} unchanged", old.describe())
            }
            Finding::ReaddedOneShot(t) => {
                format!("stripped re-added one-shot startup taint {}", t.describe())
            }
            Finding::Uncordon { owner } => {
                format!("kept node {node} cordoned ({})", owner_text(owner))
            }
            Finding::OwnerRewritten { owner } => {
                format!(
                    "kept the cordon owner record of node {node} ({})",
                    owner_text(owner)
                )
            }
            Finding::RecordRewritten => {
                format!("kept the one-shot taint removal record of node {node}")
            }
        }
    }

    /// The audit annotation a restore of this finding is listed under.
    fn audit_key(&self) -> &'static str {
        match self {
            Finding::RemovedTaint(_) | Finding::ChangedTaint { .. } => "kept-taints",
            Finding::ReaddedOneShot(_) => "stripped-taints",
            Finding::Uncordon { .. } => "kept-cordon",
            Finding::OwnerRewritten { .. } | Finding::RecordRewritten => "kept-records",
        }
    }
}

fn owner_text(owner: &Option<String>) -> String {
    match owner {
        Some(owner) => format!("cordoned by {owner:?}"),
        None => "no cordon owner recorded".to_owned(),
    }
}

/// What the requester may do beyond the per-rule lists: change protected taints and the
/// one-shot record (`taints`), and lift or reassign another's cordon (`cordon`).
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
    let first = judge(request, settings, mode, by_list)?;
    let rbac = &settings.rbac;
    if !rbac.enabled || first.wants == Permission::default() {
        return Ok(first.verdict);
    }
    let mut granted = by_list;
    let mut notes = Vec::new();
    let mut audit = Vec::new();
    for (wanted, verb, slot) in [
        (
            first.wants.taints,
            rbac.untaint_verb.as_str(),
            &mut granted.taints,
        ),
        (
            first.wants.cordon,
            rbac.uncordon_verb.as_str(),
            &mut granted.cordon,
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
                notes.push(format!(
                    "{}: {} may {grant} by RBAC",
                    TaintPreservation::NAME,
                    who.describe()
                ));
                audit.push(grant);
            }
            Ok(false) => {}
            Err(e) => notes.push(format!(
                "{}: RBAC could not be asked whether {} may {grant}, so only the settings lists \
                 decided: {e}",
                TaintPreservation::NAME,
                who.describe()
            )),
        }
    }
    let mut verdict = if granted == by_list {
        first.verdict
    } else {
        judge(request, settings, mode, granted)?.verdict
    };
    if !audit.is_empty() {
        verdict
            .audit_annotations
            .push(("permitted-by-rbac".to_owned(), audit.join("; ")));
        if !verdict
            .audit_annotations
            .iter()
            .any(|(k, _)| k == "requested-by")
        {
            verdict.audit_annotations.push(requested_by(&who));
        }
    }
    verdict.warnings.extend(notes);
    Ok(verdict)
}

// Called twice when RBAC grants something: one copy in the module, not one per call site.
#[inline(never)]
fn judge(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    mode: Mode,
    permission: Permission,
) -> Result<Judgement, String> {
    let object = request.object.value().ok_or("the request has no object")?;
    let new = NodeView::parse(object, "object")?;
    let who = request.principal();
    let owner_key = settings.cordon.owner_annotation.as_str();

    let old = match request.operation {
        Operation::Update => Some(NodeView::parse(
            request
                .old_object
                .value()
                .ok_or("an UPDATE without oldObject cannot be judged")?,
            "oldObject",
        )?),
        _ => None,
    };

    let mut findings = Vec::new();
    let mut annotations = Vec::new();
    let mut recorded = Vec::new();
    if let Some(old) = &old {
        let key = settings.one_shot_record.as_str();
        let before = RemovalRecord::parse(old.annotation(key)?.as_deref());
        let written = RemovalRecord::parse(new.annotation(key)?.as_deref());
        taint_findings(
            settings,
            &who,
            permission.taints,
            old,
            &new,
            &before,
            &mut findings,
        );
        // The policy owns the record: a permitted principal may edit it, anyone else's edit is
        // undone. Removals seen now are added whoever made them.
        let mut after = if permission.taints {
            written.clone()
        } else {
            before.clone()
        };
        for taint in removed_one_shot_taints(settings, old, &new) {
            if after.insert(taint) {
                recorded.push(taint.describe());
            }
        }
        if !permission.taints && !written.same_entries(&before) && !written.same_entries(&after) {
            findings.push(Finding::RecordRewritten);
        }
        if !after.same_entries(&written) {
            annotations.push((key.to_owned(), after.to_annotation()));
        }
    }

    // Cordon ownership: the policy owns the owner annotation and decides its final value.
    let mut annotation: Option<Option<String>> = None;
    let mut keep_cordoned = false;
    if settings.cordon.enabled {
        let was = old.as_ref().is_some_and(NodeView::cordoned);
        let is = new.cordoned();
        let old_owner = match &old {
            Some(old) => old.annotation(owner_key)?,
            None => None,
        };
        let new_owner = new.annotation(owner_key)?;
        match (was, is) {
            // A request without a requester (a background audit, docs/admission.md) names no owner.
            (false, true) if !who.username.is_empty() => {
                annotation = Some(Some(who.username.to_owned()))
            }
            (true, false) => {
                if permission.cordon || old_owner.as_deref() == Some(who.username) {
                    annotation = Some(None);
                } else {
                    findings.push(Finding::Uncordon {
                        owner: old_owner.clone(),
                    });
                    keep_cordoned = true;
                    annotation = Some(old_owner);
                }
            }
            (true, true) if new_owner != old_owner && !permission.cordon => {
                findings.push(Finding::OwnerRewritten {
                    owner: old_owner.clone(),
                });
                annotation = Some(old_owner);
            }
            _ => {}
        }
        // Only write what differs from the incoming object.
        if let Some(owner) = annotation.filter(|owner| *owner != new_owner) {
            annotations.push((owner_key.to_owned(), owner));
        }
    }

    let node_name = new
        .name
        .as_ref()
        .map(|n| n.to_string())
        .or_else(|| request.name.as_ref().map(|n| n.to_string()))
        .unwrap_or_else(|| "(unnamed)".to_owned());

    let wants = Permission {
        taints: findings.iter().any(Finding::wants_untaint),
        cordon: findings.iter().any(|f| !f.wants_untaint()),
    };
    if mode == Mode::Deny && !findings.is_empty() {
        let mut verdict = Verdict::reject(
            403,
            deny_message(&who, &findings, &node_name, &settings.rbac, wants),
        );
        let refused: Vec<String> = findings.iter().map(|f| f.attempted(&node_name)).collect();
        verdict.audit_annotations = vec![
            ("refused".to_owned(), refused.join("; ")),
            requested_by(&who),
        ];
        return Ok(Judgement {
            verdict,
            wants,
            node: node_name,
        });
    }

    let edits = NodeEdits {
        taints: restored_taints(&new, &findings),
        unschedulable: keep_cordoned.then_some(true),
        annotations,
    };
    let mut verdict = if edits.is_empty() {
        Verdict::accept()
    } else {
        Verdict::mutate(new.apply(&edits)?)
    };
    verdict.audit_annotations = restore_audit(&findings, &node_name, &recorded, &who);
    verdict.warnings = findings
        .iter()
        .map(|f| {
            format!(
                "{}: {} that {} may not change",
                TaintPreservation::NAME,
                f.restored(&node_name),
                who.describe()
            )
        })
        .collect();
    Ok(Judgement {
        verdict,
        wants,
        node: node_name,
    })
}

/// Protected taints removed or changed, and one-shot taints re-added, by a requester not
/// permitted to. A one-shot taint added by an UPDATE is a re-add when only registration sets it,
/// or when `recorded` holds its removal.
fn taint_findings<'a>(
    settings: &Settings,
    who: &Principal<'_>,
    permitted: bool,
    old: &'a NodeView<'a>,
    new: &'a NodeView<'a>,
    recorded: &RemovalRecord,
    findings: &mut Vec<Finding<'a>>,
) {
    if permitted {
        return;
    }
    let one_shot = |t: &Taint<'_>| settings.one_shot.iter().any(|r| r.selector.matches(t));
    // Indexed by identity: a Node of etcd's 1.5 MiB limit holds ~25,000 taints, and pairwise
    // comparison took seconds, past the policy timeout.
    let mut new_by_identity: HashMap<(&str, &str), &'a Taint<'a>> = HashMap::new();
    for t in &new.taints {
        new_by_identity.entry(t.identity()).or_insert(t);
    }
    let mut seen = HashSet::new();
    for old_taint in &old.taints {
        // Kubernetes refuses duplicate (key, effect) pairs; judge the first if one slips through.
        if !seen.insert(old_taint.identity()) || one_shot(old_taint) {
            continue;
        }
        if settings.unprotected.iter().any(|s| s.matches(old_taint)) {
            continue;
        }
        let Some(rule) = settings
            .protected
            .iter()
            .find(|r| r.selector.matches(old_taint))
        else {
            continue;
        };
        if rule.permitted.allows(who) {
            continue;
        }
        match new_by_identity.get(&old_taint.identity()).copied() {
            None => findings.push(Finding::RemovedTaint(old_taint)),
            Some(new_taint) if new_taint.value != old_taint.value => {
                findings.push(Finding::ChangedTaint {
                    old: old_taint,
                    new: new_taint,
                })
            }
            Some(_) => {}
        }
    }
    for new_taint in &new.taints {
        if seen.contains(&new_taint.identity()) {
            continue;
        }
        let rule = settings
            .one_shot
            .iter()
            .find(|r| r.selector.matches(new_taint));
        if rule.is_some_and(|r| r.only_at_registration || recorded.contains(new_taint)) {
            findings.push(Finding::ReaddedOneShot(new_taint));
        }
    }
}

/// The one-shot taints of `old` that `new` no longer has, whose removal the record keeps. Those
/// only registration sets need no record: any later addition of theirs is a re-add.
fn removed_one_shot_taints<'a>(
    settings: &Settings,
    old: &'a NodeView<'a>,
    new: &NodeView<'_>,
) -> Vec<&'a Taint<'a>> {
    let kept: HashSet<(&str, &str)> = new.taints.iter().map(Taint::identity).collect();
    old.taints
        .iter()
        .filter(|t| !kept.contains(&t.identity()))
        .filter(|t| {
            settings
                .one_shot
                .iter()
                .find(|r| r.selector.matches(t))
                .is_some_and(|r| !r.only_at_registration)
        })
        .collect()
}

fn requested_by(who: &Principal<'_>) -> (String, String) {
    ("requested-by".to_owned(), who.username.to_owned())
}

/// Audit annotations of an accepted request: what was restored, under one key per kind of
/// restore, which removals were recorded, and who asked.
fn restore_audit(
    findings: &[Finding<'_>],
    node: &str,
    recorded: &[String],
    who: &Principal<'_>,
) -> Vec<(String, String)> {
    let mut audit: Vec<(String, String)> = Vec::new();
    for finding in findings {
        let text = finding.restored(node);
        match audit.iter_mut().find(|(k, _)| k == finding.audit_key()) {
            Some((_, value)) => {
                value.push_str("; ");
                value.push_str(&text);
            }
            None => audit.push((finding.audit_key().to_owned(), text)),
        }
    }
    if !recorded.is_empty() {
        audit.push(("recorded-taint-removals".to_owned(), recorded.join("; ")));
    }
    if !audit.is_empty() {
        audit.push(requested_by(who));
    }
    audit
}

/// The `spec.taints` text with protected taints put back and re-added one-shot taints
/// stripped; `None` when the findings do not touch taints. Entries are copied verbatim.
fn restored_taints(new: &NodeView<'_>, findings: &[Finding<'_>]) -> Option<String> {
    let touches = findings.iter().any(|f| {
        matches!(
            f,
            Finding::RemovedTaint(_) | Finding::ChangedTaint { .. } | Finding::ReaddedOneShot(_)
        )
    });
    if !touches {
        return None;
    }
    // What replaces each entry of `new` that a finding is about, keyed by the entry's address.
    let mut replaced: HashMap<*const Taint<'_>, Option<&str>> = HashMap::new();
    for finding in findings {
        match finding {
            Finding::ChangedTaint { old, new } => {
                replaced.insert(*new as *const Taint<'_>, Some(old.raw));
            }
            Finding::ReaddedOneShot(t) => {
                replaced.insert(*t as *const Taint<'_>, None);
            }
            _ => {}
        }
    }
    let mut entries: Vec<&str> = Vec::with_capacity(new.taints.len() + findings.len());
    for taint in &new.taints {
        match replaced.get(&(taint as *const Taint<'_>)) {
            Some(entry) => entries.extend(*entry),
            None => entries.push(taint.raw),
        }
    }
    for finding in findings {
        if let Finding::RemovedTaint(old) = finding {
            entries.push(old.raw);
        }
    }
    Some(format!("[{}]", entries.join(",")))
}

fn deny_message(
    who: &Principal<'_>,
    findings: &[Finding<'_>],
    node: &str,
    rbac: &settings::Rbac,
    wants: Permission,
) -> String {
    let attempted: Vec<String> = findings.iter().map(|f| f.attempted(node)).collect();
    let mut message = format!(
        "{}: {} may not {}. Have a permitted principal make this change (by default any person, or a \
         member of system:masters), or add the requester to the policy settings `permitted` (or to the \
         `permitted` list of the matching `protectedTaints` rule)",
        TaintPreservation::NAME,
        who.describe(),
        attempted.join("; ")
    );
    if rbac.enabled {
        let verbs: Vec<String> = [
            (wants.taints, rbac.untaint_verb.as_str()),
            (wants.cordon, rbac.uncordon_verb.as_str()),
        ]
        .iter()
        .filter(|(wanted, _)| *wanted)
        .map(|(_, verb)| rbac.describe(verb, node))
        .collect();
        message.push_str(", or grant the requester by RBAC: ");
        message.push_str(&verbs.join(" and "));
    }
    message.push('.');
    message
}

#[cfg(test)]
mod tests;
