//! Taint preservation: protected taints, one-shot startup taints and cordon ownership on Nodes.
//!
//! The policy compares `oldObject` (fresh from storage, even when the writer patched from a stale
//! cache) with `object` (the result of the write) and finds what the requester may not do:
//! remove or change a protected taint it did not add, re-add a one-shot startup taint, uncordon
//! a node someone else cordoned, or rewrite one of the policy's records (cordon owner, one-shot
//! removals, taint owners). In `restore` mode it splices the protected state back into `object`
//! and accepts with warnings; in `deny` mode it rejects. Either way audit annotations say what
//! the request attempted, what the policy answered and who tried.

mod controllers;
mod node;
mod owners;
mod record;
pub mod settings;
pub mod stored;

use crate::admission::{AdmissionRequest, Operation};
use crate::cluster::{AccessQuestion, Cluster};
use crate::policy::{Asks, Half, Policy};
use crate::principal::{Identity, Principal};
use crate::small_map::{SmallMap, SmallSet};
use crate::taint::Taint;
use crate::verdict::{quoted, Verdict};

use node::{NodeEdits, NodeView};
use owners::OwnerRecord;
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

/// Something the requester may not do.
#[derive(Debug)]
enum Finding<'a> {
    RemovedTaint(&'a Taint<'a>),
    ChangedTaint {
        old: &'a Taint<'a>,
        new: &'a Taint<'a>,
    },
    /// A taint whose removal the policy recorded, put back by a requester that may not: a
    /// one-shot startup taint (`owner: None`), or an owned taint its owner removed.
    Readded {
        taint: &'a Taint<'a>,
        owner: Option<String>,
    },
    Uncordon {
        owner: Option<String>,
    },
    OwnerRewritten {
        owner: Option<String>,
    },
    RecordRewritten,
    OwnersRewritten,
    /// A controller's own ownership record, changed by a requester that is neither its writer
    /// nor permitted.
    ControllerRecordRewritten {
        annotation: String,
    },
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
            Finding::RemovedTaint(t) => ["remove protected taint ", &t.describe()].concat(),
            Finding::ChangedTaint { old, new } => {
                format!(
                    "change protected taint {} to {}",
                    old.describe(),
                    new.describe()
                )
            }
            Finding::Readded { taint, owner: None } => {
                ["re-add one-shot startup taint ", &taint.describe()].concat()
            }
            Finding::Readded {
                taint,
                owner: Some(owner),
            } => [
                "re-add protected taint ",
                &taint.describe(),
                &quoted(", which its owner ", owner),
                " removed",
            ]
            .concat(),
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
            Finding::OwnersRewritten => {
                format!("rewrite the taint owner record of node {node}")
            }
            Finding::ControllerRecordRewritten { annotation } => {
                format!("rewrite the controller's taint record {annotation} of node {node}")
            }
        }
    }

    /// What the restore mode's patch does about it. Kubewarden's monitor mode drops the patch
    /// but passes warnings on, so the words say what the patch does, not what happened.
    fn remedy(&self) -> &'static str {
        match self {
            Finding::RemovedTaint(_) => "this policy's patch puts it back",
            Finding::ChangedTaint { .. } => "this policy's patch keeps the old value",
            Finding::Readded { .. } => "this policy's patch strips it",
            Finding::Uncordon { .. } => "this policy's patch keeps the node cordoned",
            Finding::OwnerRewritten { .. }
            | Finding::RecordRewritten
            | Finding::OwnersRewritten => {
                "this policy's patch keeps the record as the policy keeps it"
            }
            Finding::ControllerRecordRewritten { .. } => {
                "this policy's patch keeps the record as it was"
            }
        }
    }

    /// The audit annotation this finding is listed under. Keys and values say what the request
    /// attempted, which stays true in every mode; the `answer` key says what the policy answered.
    fn audit_key(&self) -> &'static str {
        match self {
            Finding::RemovedTaint(_)
            | Finding::ChangedTaint { .. }
            | Finding::Readded { owner: Some(_), .. } => "protected-taints",
            Finding::Readded { owner: None, .. } => "one-shot-taints",
            Finding::Uncordon { .. } => "cordon",
            Finding::OwnerRewritten { .. }
            | Finding::RecordRewritten
            | Finding::OwnersRewritten
            | Finding::ControllerRecordRewritten { .. } => "records",
        }
    }
}

fn owner_text(owner: &Option<String>) -> String {
    match owner {
        Some(owner) => quoted("cordoned by ", owner),
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
                notes.push(format!("{} may {grant} by RBAC", who.describe()));
                audit.push(grant);
            }
            Ok(false) => {}
            Err(e) => notes.push(format!(
                "RBAC could not be asked whether {} may {grant}, so only the settings lists \
                 decided: {e}",
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

/// What judging a request gathers on its way to a verdict.
#[derive(Default)]
struct Gathered<'a> {
    findings: Vec<Finding<'a>>,
    /// Record annotations to set (`Some`) or remove (`None`), by key.
    annotations: Vec<(String, Option<String>)>,
    audit: Vec<(String, String)>,
    warnings: Vec<String>,
}

fn judge(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    mode: Mode,
    permission: Permission,
) -> Result<Judgement, String> {
    let object = request.object.as_ref().ok_or("the request has no object")?;
    let new = NodeView::read(object, "object")?;
    let who = request.principal();

    let old = match request.operation {
        Operation::Update => Some(NodeView::read(
            request
                .old_object
                .as_ref()
                .ok_or("an UPDATE without oldObject cannot be judged")?,
            "oldObject",
        )?),
        _ => None,
    };
    let owners_key = settings
        .taint_owners
        .enabled
        .then_some(settings.taint_owners.annotation.as_str());
    let owners_before = match (&old, owners_key) {
        (Some(old), Some(key)) => OwnerRecord::parse(old.annotation(key)?.as_deref()),
        _ => OwnerRecord::default(),
    };

    let mut gathered = Gathered::default();
    let by_controller = match &old {
        Some(old) => {
            controller_records(settings, &who, permission.taints, old, &new, &mut gathered)?
        }
        None => SmallSet::default(),
    };
    if let Some(old) = &old {
        let record = settings.one_shot_record_annotation.as_str();
        let before = RemovalRecord::parse(old.annotation(record)?.as_deref());
        if !permission.taints {
            let records = Records {
                removals: &before,
                owners: &owners_before,
                by_controller: &by_controller,
            };
            taint_findings(settings, &who, old, &new, records, &mut gathered.findings);
        }
        one_shot_record(
            settings,
            permission.taints,
            old,
            &new,
            before,
            &mut gathered,
        )?;
    }
    if let Some(key) = owners_key {
        owner_record(
            settings,
            &who,
            permission.taints,
            (old.as_ref(), &new),
            (key, &owners_before, &by_controller),
            &mut gathered,
        )?;
    }
    let cordon = cordon_owner(
        settings,
        &who,
        permission.cordon,
        old.as_ref(),
        &new,
        &mut gathered.findings,
    )?;
    gathered.annotations.extend(cordon.owner_edit);

    let node_name = new
        .name
        .as_ref()
        .map(|n| n.to_string())
        .or_else(|| request.name.as_ref().map(|n| n.to_string()))
        .unwrap_or_else(|| "(unnamed)".to_owned());
    respond(
        settings,
        mode,
        &who,
        &new,
        node_name,
        cordon.keep_cordoned,
        gathered,
    )
}

/// The one-shot removal record: the policy owns it, so a permitted principal may edit it and
/// anyone else's edit is undone; removals seen now are added whoever made them.
fn one_shot_record<'v>(
    settings: &Settings,
    permitted: bool,
    old: &'v NodeView<'v>,
    new: &'v NodeView<'v>,
    before: RemovalRecord,
    gathered: &mut Gathered<'_>,
) -> Result<(), String> {
    let key = settings.one_shot_record_annotation.as_str();
    let written = RemovalRecord::parse(new.annotation(key)?.as_deref());
    let mut after = if permitted {
        written.clone()
    } else {
        before.clone()
    };
    let mut recorded = Vec::new();
    for taint in removed_one_shot_taints(settings, old, new) {
        if after.insert(taint) {
            recorded.push(taint.describe());
        }
    }
    if !permitted && !written.same_entries(&before) && !written.same_entries(&after) {
        gathered.findings.push(Finding::RecordRewritten);
    }
    if !after.same_entries(&written) {
        gathered
            .annotations
            .push((key.to_owned(), after.to_annotation()));
    }
    if !recorded.is_empty() {
        gathered
            .audit
            .push(("removed-one-shot-taints".to_owned(), recorded.join("; ")));
    }
    Ok(())
}

/// The taint owner record under `key`, which held `before`: the owners after the request, the
/// record's edit, and a warning for each added taint the full record could not take.
fn owner_record<'v>(
    settings: &Settings,
    who: &Principal<'_>,
    permitted: bool,
    (old, new): (Option<&'v NodeView<'v>>, &'v NodeView<'v>),
    (key, before, by_controller): (&str, &OwnerRecord, &ByController<'_>),
    gathered: &mut Gathered<'_>,
) -> Result<(), String> {
    let written = OwnerRecord::parse(new.annotation(key)?.as_deref());
    // The audit scanner's review of a stored Node (a CREATE without a requester; the API server
    // always names one) rewrites nothing: the record it carries is the one stored.
    let permitted = permitted || (old.is_none() && who.username.is_empty());
    let OwnersAfter {
        record: after,
        added,
        forgotten,
    } = owners_after(
        settings,
        who,
        permitted,
        (old, new),
        &gathered.findings,
        (before, &written),
        by_controller,
    );
    if !permitted && written != *before && written != after {
        gathered.findings.push(Finding::OwnersRewritten);
    }
    if after != written {
        gathered
            .annotations
            .push((key.to_owned(), after.to_annotation()));
    }
    let (owned, unowned): (Vec<_>, Vec<_>) = added.into_iter().partition(|(_, owned)| *owned);
    if !owned.is_empty() {
        let owned: Vec<&str> = owned.iter().map(|(t, _)| t.as_str()).collect();
        gathered
            .audit
            .push(("added-protected-taints".to_owned(), owned.join("; ")));
    }
    gathered.warnings.extend(unowned.iter().map(|(t, _)| {
        format!(
            "the taint owner record {key:?} is full, so {} is not recorded as the owner of \
             {t}: only permitted principals may remove or change it",
            who.describe()
        )
    }));
    gathered.warnings.extend(forgotten.iter().map(|t| {
        format!(
            "the taint owner record {key:?} is full, so the removal of {t} is not kept: a \
             later re-add by another writer is not stripped"
        )
    }));
    Ok(())
}

/// The verdict on what was gathered: in deny mode a refusal naming every finding; else the
/// request with the protected state and the records spliced back in, and a warning per finding.
fn respond(
    settings: &Settings,
    mode: Mode,
    who: &Principal<'_>,
    new: &NodeView<'_>,
    node_name: String,
    keep_cordoned: bool,
    gathered: Gathered<'_>,
) -> Result<Judgement, String> {
    let Gathered {
        findings,
        annotations,
        audit,
        warnings,
    } = gathered;
    let wants = Permission {
        taints: findings.iter().any(Finding::wants_untaint),
        cordon: findings.iter().any(|f| !f.wants_untaint()),
    };
    // Said in the warnings or the rejection, and in the audit annotations: written once.
    let attempted: Vec<String> = findings.iter().map(|f| f.attempted(&node_name)).collect();
    let mut verdict = if mode == Mode::Deny && !findings.is_empty() {
        Verdict::reject(
            403,
            deny_message(who, &attempted, &node_name, &settings.rbac, wants),
        )
    } else {
        let edits = NodeEdits {
            taints: restored_taints(new, &findings),
            unschedulable: keep_cordoned.then_some(true),
            annotations,
        };
        let mut verdict = if edits.is_empty() {
            Verdict::accept()
        } else {
            Verdict::mutate(new.apply(&edits)?)
        };
        // Concatenated, not `format!`ted: each warning then costs a copy, not the formatting
        // machinery and a growing buffer; the requester described once, and only when there is
        // something to warn of (benchmarks/cost.md).
        let requester = if findings.is_empty() {
            String::new()
        } else {
            who.describe()
        };
        verdict.warnings = findings
            .iter()
            .zip(&attempted)
            .map(|(f, attempted)| {
                [
                    &requester,
                    " may not ",
                    attempted,
                    "; ",
                    f.remedy(),
                    " unless the policy runs in monitor mode",
                ]
                .concat()
            })
            .collect();
        verdict
    };
    verdict.warnings.extend(warnings);
    verdict.audit_annotations = audit_annotations(&findings, attempted, audit, mode, who);
    Ok(Judgement {
        verdict,
        wants,
        node: node_name,
    })
}

/// What cordon ownership makes of a request.
struct CordonOutcome {
    /// The owner annotation's edit: its key, and the value to set (`None`: remove it).
    owner_edit: Option<(String, Option<String>)>,
    keep_cordoned: bool,
}

/// Cordon ownership: the policy owns the owner annotation and decides its final value.
fn cordon_owner(
    settings: &Settings,
    who: &Principal<'_>,
    permitted: bool,
    old: Option<&NodeView<'_>>,
    new: &NodeView<'_>,
    findings: &mut Vec<Finding<'_>>,
) -> Result<CordonOutcome, String> {
    if !settings.cordon.enabled {
        return Ok(CordonOutcome {
            owner_edit: None,
            keep_cordoned: false,
        });
    }
    let owner_key = settings.cordon.owner_annotation.as_str();
    let was = old.is_some_and(NodeView::cordoned);
    let is = new.cordoned();
    let old_owner = match old {
        Some(old) => old.annotation(owner_key)?,
        None => None,
    };
    let new_owner = new.annotation(owner_key)?;
    let mut keep_cordoned = false;
    let owner = match (was, is) {
        // A request without a requester (a background audit, docs/admission.md) names no owner.
        (false, true) if !who.username.is_empty() => Some(Some(who.username.to_owned())),
        (true, false) => {
            let lifts_own = match old_owner.as_deref() {
                Some(owner) => owner == who.username,
                None => settings.cordon.unrecorded_permitted.allows(who),
            };
            if permitted || lifts_own {
                Some(None)
            } else {
                findings.push(Finding::Uncordon {
                    owner: old_owner.clone(),
                });
                // Both attempts are named: the record is kept as well as the cordon.
                if new_owner != old_owner {
                    findings.push(Finding::OwnerRewritten {
                        owner: old_owner.clone(),
                    });
                }
                keep_cordoned = true;
                Some(old_owner)
            }
        }
        (true, true) if new_owner != old_owner && !permitted => {
            findings.push(Finding::OwnerRewritten {
                owner: old_owner.clone(),
            });
            Some(old_owner)
        }
        _ => None,
    };
    // Only write what differs from the incoming object.
    Ok(CordonOutcome {
        owner_edit: owner
            .filter(|owner| *owner != new_owner)
            .map(|owner| (owner_key.to_owned(), owner)),
        keep_cordoned,
    })
}

/// The taint owner record a request leaves, what it added, and the removals a full record
/// could not keep.
struct OwnersAfter {
    record: OwnerRecord,
    /// Each protected taint the request added, with whether the record names the requester as
    /// its owner (`false`: the record is full).
    added: Vec<(String, bool)>,
    /// Owned taints whose standing removal the full record could not keep.
    forgotten: Vec<String>,
}

/// The taint owner record this request leaves (docs/controllers.md). The record follows the
/// taints: an entry stays while its taint is carried (restored taints stay, stripped ones never
/// get one), becomes a removal when an owned taint's removal stands, and the adder of a protected
/// taint becomes its owner, the owner's own re-add after a removal included. A permitted
/// principal's edit of the record stands; anyone else's starts from the stored record.
fn owners_after(
    settings: &Settings,
    who: &Principal<'_>,
    permitted: bool,
    (old, new): (Option<&NodeView<'_>>, &NodeView<'_>),
    findings: &[Finding<'_>],
    (before, written): (&OwnerRecord, &OwnerRecord),
    by_controller: &ByController<'_>,
) -> OwnersAfter {
    let mut record = if permitted { written } else { before }.clone();
    let stripped: SmallSet<(&str, &str)> = findings
        .iter()
        .filter_map(|f| match f {
            Finding::Readded { taint, .. } => Some((taint.identity(), ())),
            _ => None,
        })
        .collect();
    let mut carried: SmallSet<(&str, &str)> = new
        .taints
        .iter()
        .map(Taint::identity)
        .filter(|id| !stripped.contains(id))
        .map(|id| (id, ()))
        .collect();
    for finding in findings {
        if let Finding::RemovedTaint(t) = finding {
            carried.insert(t.identity(), ());
        }
    }
    let old_taints = old.map(|old| old.taints.as_slice()).unwrap_or_default();
    let mut forgotten = Vec::new();
    for taint in old_taints {
        let id = taint.identity();
        if carried.contains(&id) {
            continue;
        }
        let claim = record.claim(taint).map(|c| c.removed);
        // The controller whose own record lists the taint removed it: the removal is kept in
        // its name, so that it, which re-adds the taint when its rule matches again, may.
        let by_record = claim != Some(true)
            && !who.username.is_empty()
            && by_controller.contains(&id)
            && settings.protecting_rule(taint).is_some();
        if by_record && !record.set(taint, who.username) {
            forgotten.push(taint.describe());
            continue;
        }
        if (claim == Some(false) || by_record) && !record.mark_removed(id.0, id.1) {
            forgotten.push(taint.describe());
        }
    }
    record.retain(|key, effect, claim| claim.removed || carried.contains(&(key, effect)));
    let mut added = Vec::new();
    if who.username.is_empty() {
        return OwnersAfter {
            record,
            added,
            forgotten,
        };
    }
    let had: SmallSet<(&str, &str)> = old_taints.iter().map(|t| (t.identity(), ())).collect();
    for taint in &new.taints {
        let id = taint.identity();
        if had.contains(&id) || stripped.contains(&id) || settings.protecting_rule(taint).is_none()
        {
            continue;
        }
        added.push((taint.describe(), record.set(taint, who.username)));
    }
    OwnersAfter {
        record,
        added,
        forgotten,
    }
}

/// The records a request's taint changes are judged against, as stored before it.
#[derive(Clone, Copy)]
struct Records<'r> {
    removals: &'r RemovalRecord,
    owners: &'r OwnerRecord,
    by_controller: &'r ByController<'r>,
}

/// The stored taints that controllers' own records give the requester, by identity.
type ByController<'v> = SmallSet<(&'v str, &'v str)>;

/// Controllers' own ownership records (docs/controllers.md): the stored taints they give the
/// requester, and a finding, with the stored value to keep, for each record that a requester
/// neither its writer nor permitted changed.
fn controller_records<'v>(
    settings: &Settings,
    who: &Principal<'_>,
    permitted: bool,
    old: &'v NodeView<'v>,
    new: &NodeView<'_>,
    gathered: &mut Gathered<'_>,
) -> Result<ByController<'v>, String> {
    let mut owned = ByController::default();
    for record in &settings.controller_records {
        let key = record.annotation.as_str();
        let stored = old.annotation(key)?;
        if record.owner.allows(who) {
            let listed = record.listed(stored.as_deref());
            for taint in old.taints.iter().filter(|t| listed.lists(t)) {
                owned.insert(taint.identity(), ());
            }
        } else if !permitted && new.annotation(key)? != stored {
            gathered.findings.push(Finding::ControllerRecordRewritten {
                annotation: key.to_owned(),
            });
            gathered.annotations.push((key.to_owned(), stored));
        }
    }
    Ok(owned)
}

/// Protected taints removed or changed by a requester whom neither the rule nor the owner record
/// permits, and taints re-added after a recorded removal. A one-shot taint added by an UPDATE is
/// a re-add when only registration sets it, or when the removal record holds it. An owned
/// protected taint whose removal the owner record keeps may come back from its owner, from a
/// principal its rule permits, or from a person (a person never writes from a controller's stale
/// cache, so their re-add is deliberate); from anyone else it is a stale re-add.
fn taint_findings<'a>(
    settings: &Settings,
    who: &Principal<'_>,
    old: &'a NodeView<'a>,
    new: &'a NodeView<'a>,
    records: Records<'_>,
    findings: &mut Vec<Finding<'a>>,
) {
    // The record never names the empty username (`OwnerRecord::parse`), so a request without a
    // requester owns nothing.
    let owned = |t: &Taint<'_>| {
        records.owners.owner(t) == Some(who.username)
            || records.by_controller.contains(&t.identity())
    };
    // Indexed by identity: a Node of etcd's 1.5 MiB limit holds ~25,000 taints, and pairwise
    // comparison took seconds, past the policy timeout.
    let mut new_by_identity: SmallMap<(&str, &str), &'a Taint<'a>> = SmallMap::default();
    for t in &new.taints {
        new_by_identity.entry(t.identity(), t);
    }
    let mut seen = SmallSet::default();
    for old_taint in &old.taints {
        // Kubernetes refuses duplicate (key, effect) pairs; judge the first if one slips through.
        if !seen.insert(old_taint.identity(), ()) {
            continue;
        }
        let Some(rule) = settings.protecting_rule(old_taint) else {
            continue;
        };
        if rule.permitted.allows(who) || owned(old_taint) {
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
    let person = who.identity() == Identity::Person;
    for taint in &new.taints {
        if seen.contains(&taint.identity()) {
            continue;
        }
        let owner = match settings.one_shot_rule(taint) {
            Some(rule) if rule.only_at_registration || records.removals.contains(taint) => None,
            Some(_) => continue,
            None => match records.owners.removed_by(taint) {
                Some(owner) if owner != who.username && !person => {
                    // No longer protected, or its rule permits the requester: it may come back.
                    let rule = settings.protecting_rule(taint);
                    if rule.is_none_or(|r| r.permitted.allows(who)) {
                        continue;
                    }
                    Some(owner.to_owned())
                }
                _ => continue,
            },
        };
        findings.push(Finding::Readded { taint, owner });
    }
}

/// The one-shot taints of `old` that `new` no longer has, whose removal the record keeps. Those
/// only registration sets need no record: any later addition of theirs is a re-add.
fn removed_one_shot_taints<'a>(
    settings: &Settings,
    old: &'a NodeView<'a>,
    new: &NodeView<'_>,
) -> Vec<&'a Taint<'a>> {
    let kept: SmallSet<(&str, &str)> = new.taints.iter().map(|t| (t.identity(), ())).collect();
    old.taints
        .iter()
        .filter(|t| !kept.contains(&t.identity()))
        .filter(|t| {
            settings
                .one_shot_rule(t)
                .is_some_and(|r| !r.only_at_registration)
        })
        .collect()
}

fn requested_by(who: &Principal<'_>) -> (String, String) {
    ("requested-by".to_owned(), who.username.to_owned())
}

/// The response's audit annotations: what the request attempted that the requester may not
/// do, under one key per kind, the policy's `answer`, what the policy's records learn, and who
/// asked. Every value says what the request did or what the answer is, so it stays true in
/// Kubewarden's monitor mode, which passes audit annotations on and drops the answer.
fn audit_annotations(
    findings: &[Finding<'_>],
    attempted: Vec<String>,
    records: Vec<(String, String)>,
    mode: Mode,
    who: &Principal<'_>,
) -> Vec<(String, String)> {
    let mut audit: Vec<(String, String)> = Vec::new();
    for (finding, text) in findings.iter().zip(attempted) {
        match audit.iter_mut().find(|(k, _)| k == finding.audit_key()) {
            Some((_, value)) => {
                value.push_str("; ");
                value.push_str(&text);
            }
            None => audit.push((finding.audit_key().to_owned(), text)),
        }
    }
    if !findings.is_empty() {
        let answer = match mode {
            Mode::Restore => {
                "restore: a patch that keeps the protected state (monitor mode drops it)"
            }
            Mode::Deny => "deny: rejected with code 403 (monitor mode lets the request through)",
        };
        audit.push(("answer".to_owned(), answer.to_owned()));
    }
    audit.extend(records);
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
            Finding::RemovedTaint(_) | Finding::ChangedTaint { .. } | Finding::Readded { .. }
        )
    });
    if !touches {
        return None;
    }
    // What replaces each entry of `new` that a finding is about, keyed by the entry's address.
    let mut replaced: SmallMap<*const Taint<'_>, Option<&str>> = SmallMap::default();
    for finding in findings {
        match finding {
            Finding::ChangedTaint { old, new } => {
                replaced.insert(*new as *const Taint<'_>, Some(old.raw));
            }
            Finding::Readded { taint, .. } => {
                replaced.insert(*taint as *const Taint<'_>, None);
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
    attempted: &[String],
    node: &str,
    rbac: &settings::Rbac,
    wants: Permission,
) -> String {
    let mut message = format!(
        "{} may not {}. Have a permitted principal make this change (by default any person, or a \
         member of system:masters), or add the requester to the policy settings `permitted` (or to the \
         `permitted` list of the matching `protectedTaints` rule)",
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
