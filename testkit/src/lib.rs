//! Invariants every verdict must satisfy, whatever the input, and generators of hostile but
//! structurally valid requests. Shared by the property tests (`cargo test`), the fuzz targets
//! (`fuzz/`) and the replay of fuzz regressions, so all three check the same things. A crate of
//! its own, so that nothing of it ships in the core.
//!
//! The core's unit tests use it too, through a dev-dependency cycle: they get another copy of the
//! core than this crate's, so what they call here takes and gives JSON text only.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod fixtures;
pub mod gen;
#[cfg(feature = "cel")]
pub mod match_conditions;
#[cfg(test)]
mod properties;
pub mod targets;
pub mod tree;

pub use fixtures::{bundled_requests, bundled_settings};
pub use taintguard_kinds::{assert_valid_object, k8s_openapi, valid_object, KINDS};

use taint_preservation::settings::RecordFormat;
use taint_preservation::TaintPreservation;
use taintguard::admission::AdmissionRequest;
use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Get, List, ResourceKind};
use taintguard::json::{span_in, JsonStr, Raw};
use taintguard::policy::{read_settings, run, Half, Policy};
use taintguard::taint::{SelectsTaints, Taint};
use taintguard::verdict::Verdict;
use toleration_injection::TolerationInjection;
use tree::Tree;

/// The request's `object` and `oldObject` as they are written (absent when the request does not
/// read): the core reads them as their members, and these checks compare whole objects.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ObjectTexts<'a> {
    #[serde(borrow, default)]
    object: Raw<'a>,
    #[serde(borrow, default)]
    old_object: Raw<'a>,
}

fn object_texts(request: &str) -> ObjectTexts<'_> {
    serde_json::from_str(request).unwrap_or_default()
}

/// Which invariants a failure broke, with the input that broke them.
pub type Checked = Result<(), String>;

/// Runs both policies on `request`/`settings` and checks every invariant that applies.
pub fn check_both(request: &str, settings: &str) -> Checked {
    check_taint_preservation(request, settings)?;
    check_toleration_injection(request, settings, None)
}

/// The cluster a case runs against: it answers with the case's Namespace (whatever name is
/// asked: the generator names it after the request's) and nothing else.
struct CaseCluster<'a>(Option<&'a str>);

impl Cluster for CaseCluster<'_> {
    fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
        match (q.kind == ResourceKind::NAMESPACE, self.0) {
            (true, Some(namespace)) => Ok(namespace.to_owned()),
            _ => Err(ClusterError::Unavailable(format!(
                "the case gives no {}",
                q.kind
            ))),
        }
    }

    fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
        Err(ClusterError::Unavailable(format!(
            "the case gives no {} list",
            q.kind
        )))
    }

    fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        Err(ClusterError::Unavailable("the case gives no RBAC".into()))
    }
}

/// Invariants of any policy's verdicts: a rejection says why with a 400 or 403; the validating
/// half never mutates; a mutation is valid JSON; applying the policy to its own output changes
/// nothing more.
fn check_common<P: Policy>(
    request: &str,
    settings: &str,
    cluster: &dyn Cluster,
) -> Result<Verdict, String> {
    let verdict = run::<P>(request, settings, Half::Mutating, cluster);
    let validating = run::<P>(request, settings, Half::Validating, cluster);
    for (half, v) in [("mutating", &verdict), ("validating", &validating)] {
        // 500: what the cluster answered cannot be judged (a Namespace's annotation that is not
        // a list of tolerations), as the plugin fails the request.
        let explained = matches!(v.code(), Some(400 | 403 | 500)) && v.message().is_some();
        if !v.accepted() && !explained {
            return Err(format!("{half} rejection without code or message: {v:?}"));
        }
    }
    if validating.mutated_object().is_some() {
        return Err("the validating half mutated".into());
    }
    if verdict.accepted() && !validating.accepted() && verdict.mutated_object().is_none() {
        return Err("the validating half rejects what the mutating half accepts untouched".into());
    }
    if let Some(mutated) = verdict.mutated_object() {
        if !verdict.accepted() {
            return Err("a rejection carries a mutated object".into());
        }
        // The policies refuse what policy-server cannot read (json::scan); an object serde_json
        // reads only without its 128-level limit (a tree this deep) comes back as it came.
        if let Err(e) = Tree::parse(mutated) {
            let object = object_texts(request).object.value().map(Tree::parse);
            if matches!(object, Some(Ok(_))) {
                return Err(format!("mutated object is not JSON: {e}"));
            }
        }
        still_valid(request, mutated)?;
        let again = run::<P>(
            &with_object(request, mutated)?,
            settings,
            Half::Mutating,
            cluster,
        );
        if !again.accepted() || again.mutated_object().is_some() {
            return Err(format!(
                "not idempotent: its own output {mutated} gives {again:?}"
            ));
        }
    }
    Ok(verdict)
}

/// A mutation of an object that decodes as its kind's Kubernetes type decodes as that type too.
/// Generated objects need not decode (hostile members, a Deployment under `v1`), and what the
/// policy was given invalid it cannot be asked to make valid.
fn still_valid(request: &str, mutated: &str) -> Checked {
    let Ok(parsed) = AdmissionRequest::parse(request) else {
        return Ok(());
    };
    let kind = parsed.kind.kind.as_str();
    match object_texts(request).object.value() {
        Some(object) if KINDS.contains(&kind) && valid_object(kind, object).is_ok() => {
            valid_object(kind, mutated).map_err(|e| format!("the mutation broke the object: {e}"))
        }
        _ => Ok(()),
    }
}

/// The request text with its `object` replaced by `object`.
pub fn with_object(request: &str, object: &str) -> Result<String, String> {
    AdmissionRequest::parse(request).map_err(|e| e.to_string())?;
    let place = object_texts(request)
        .object
        .text()
        .ok_or("mutated a request without object")?;
    let span = span_in(request, place);
    Ok([&request[..span.start], object, &request[span.end..]].concat())
}

/// The object before and after, as trees; `None` when the verdict changes nothing.
fn before_after(request: &str, verdict: &Verdict) -> Result<Option<(Tree, Tree)>, String> {
    let Some(mutated) = verdict.mutated_object() else {
        return Ok(None);
    };
    AdmissionRequest::parse(request).map_err(|e| e.to_string())?;
    let texts = object_texts(request);
    let Ok(before) = Tree::parse(texts.object.value().ok_or("no object")?) else {
        return Ok(None);
    };
    let after = Tree::parse(mutated).map_err(|e| e.to_string())?;
    Ok(Some((before, after)))
}

fn same_except(mut before: Tree, mut after: Tree, editable: &[&[&str]]) -> Checked {
    for path in editable {
        before.strip(path);
        after.strip(path);
    }
    if before != after {
        return Err(format!(
            "mutation changed more than {editable:?}:\n before {before:?}\n after  {after:?}"
        ));
    }
    Ok(())
}

/// Runs taint-preservation on `request`/`settings` and checks its invariants: those of every
/// policy, no record granting a removal, status writes granting nothing, nothing edited but
/// the taints, the cordon and the records, and protected taints surviving.
pub fn check_taint_preservation(request: &str, settings: &str) -> Checked {
    let verdict = check_common::<TaintPreservation>(request, settings, &CaseCluster(None))?;
    records_grant_no_removal(request, settings, &verdict)?;
    status_writes_grant_nothing(request, settings, &verdict)?;
    sealed_forgeries_grant_nothing(request, settings)?;
    let Ok(parsed_settings) = read_settings::<TaintPreservation>(settings) else {
        return Ok(());
    };
    let owner = parsed_settings.cordon.owner_annotation.as_str();
    if let Some((before, after)) = before_after(request, &verdict)? {
        // The records the policy keeps, and a controller's record written by another, which
        // is put back as stored.
        let annotations = [
            owner,
            &parsed_settings.one_shot_record_annotation,
            &parsed_settings.taint_owners.annotation,
        ]
        .into_iter()
        .chain(
            parsed_settings
                .controller_records
                .iter()
                .map(|r| r.annotation.as_str()),
        )
        .chain(
            parsed_settings
                .record_seal
                .on()
                .map(|s| s.annotation.as_str()),
        );
        let paths: Vec<[&str; 3]> = annotations
            .map(|a| ["metadata", "annotations", a])
            .collect();
        let editable: Vec<&[&str]> = [&["spec", "taints"][..], &["spec", "unschedulable"]]
            .into_iter()
            .chain(paths.iter().map(|path| &path[..]))
            .collect();
        same_except(before, after, &editable)?;
    }
    protected_taints_survive(request, &verdict, &parsed_settings)
}

/// Restore mode: a protected taint of `oldObject` is in the admitted object, with its value,
/// unless the requester may remove it. Deny mode may reject instead.
fn protected_taints_survive(
    request: &str,
    verdict: &Verdict,
    settings: &taint_preservation::Settings,
) -> Checked {
    let Ok(parsed) = AdmissionRequest::parse(request) else {
        return Ok(());
    };
    if !verdict.accepted()
        || !parsed.is_core("Node")
        || parsed.operation != taintguard::admission::Operation::Update
    {
        return Ok(());
    }
    let who = parsed.principal();
    if settings.permitted.allows(&who) {
        return Ok(());
    }
    let texts = object_texts(request);
    let admitted = verdict.mutated_object().or(texts.object.value());
    let (Some(old), Some(new)) = (taints_of(texts.old_object.value()), taints_of(admitted)) else {
        return Ok(());
    };
    let ownership = Ownership::of(texts.old_object.value(), settings, &who);
    for (i, (key, effect, value)) in old.iter().enumerate() {
        let taint = Taint {
            key: JsonStr(key.as_str().into()),
            value: JsonStr(value.as_str().into()),
            effect: JsonStr(effect.as_str().into()),
            raw: "",
        };
        // Kubernetes refuses duplicate (key, effect) pairs; the policy judges the first.
        let duplicate = old[..i].iter().any(|(k, e, _)| k == key && e == effect);
        let protected = protected_for(settings, &who, &taint, key) && !ownership.owns(key, effect);
        if !duplicate && protected && !new.contains(&(key.clone(), effect.clone(), value.clone())) {
            return Err(format!(
                "protected taint {key}={value}:{effect} of oldObject lost for {:?}",
                who.username
            ));
        }
    }
    Ok(())
}

/// Whether the settings protect `taint` (its key `key`) from `who`: a protected taint's rule
/// does not permit `who`, and the taint is neither unprotected nor a one-shot taint.
fn protected_for(
    settings: &taint_preservation::Settings,
    who: &taintguard::principal::Principal<'_>,
    taint: &Taint<'_>,
    key: &str,
) -> bool {
    settings
        .protected_taints
        .iter()
        .find(|r| r.matches(taint))
        .is_some_and(|r| !r.permitted.allows(who))
        && !settings.unprotected_taints.iter().any(|s| s.matches(taint))
        && !settings
            .one_shot_taints
            .iter()
            .any(|r| r.matches(taint) && !r.except.iter().any(|g| g.matches(key)))
}

/// What the stored Node's records say `who` owns, read independently of the policy.
struct Ownership<'a> {
    who: &'a taintguard::principal::Principal<'a>,
    settings: &'a taint_preservation::Settings,
    /// The stored owner record, read here on its own: the requester's own taints may go.
    owners: std::collections::BTreeMap<String, serde_json::Value>,
    /// The taints the controllers' records whose writers include `who` list.
    listed: Vec<(String, Option<String>)>,
    /// Who the record, read as the policy reads it, names the owner of each stored taint
    /// (key, effect, owner): a controller's record grants none of another principal's
    /// (docs/records.md).
    recorded: Vec<(String, String, String)>,
}

impl<'a> Ownership<'a> {
    /// The records of the stored Node `old` (its text) as they concern `who`.
    fn of(
        old: Option<&str>,
        settings: &'a taint_preservation::Settings,
        who: &'a taintguard::principal::Principal<'a>,
    ) -> Ownership<'a> {
        let owners = settings
            .taint_owners
            .enabled
            .then(|| Tree::parse(old?).ok())
            .flatten()
            .and_then(|old| {
                match old.at(&["metadata", "annotations", &settings.taint_owners.annotation]) {
                    Some(Tree::String(text)) => serde_json::from_str::<
                        std::collections::BTreeMap<String, serde_json::Value>,
                    >(text)
                    .ok(),
                    _ => None,
                }
            })
            .unwrap_or_default();
        let old_tree = old.and_then(|t| Tree::parse(t).ok());
        let listed = controller_listed(old_tree.as_ref(), settings, who);
        let recorded: Vec<(String, String, String)> = old
            .and_then(|node| taint_preservation::stored::taint_owners(node, settings).ok())
            .into_iter()
            .flatten()
            .filter_map(|t| match t.owner {
                taint_preservation::stored::Owner::Recorded(owner) => {
                    Some((t.key, t.effect, owner))
                }
                _ => None,
            })
            .collect();
        Ownership {
            who,
            settings,
            owners,
            listed,
            recorded,
        }
    }

    /// Whether `owner` and `who` write the records of one controller.
    fn same_controller(&self, owner: &str) -> bool {
        let other = taintguard::principal::Principal::new(owner, &[]);
        (self.settings.controller_records.iter())
            .any(|r| r.owner.allows(self.who) && r.owner.allows(&other))
    }

    /// Whether `who` may remove the taint (`key`, `effect`) as its own.
    fn owns(&self, key: &str, effect: &str) -> bool {
        let who = self.who;
        // The adder of a live entry, or the owner of a removal entry.
        let entry = self.owners.get(&format!("{key}:{effect}"));
        let owner = !who.username.is_empty()
            && entry.and_then(|e| e.as_str().or_else(|| e.get("owner")?.as_str()))
                == Some(who.username);
        let another = (self.recorded.iter())
            .find(|(k, e, _)| k == key && e == effect)
            .is_some_and(|(_, _, o)| o != who.username && !self.same_controller(o));
        owner
            || (!another
                && self
                    .listed
                    .iter()
                    .any(|(k, e)| k == key && e.as_ref().is_none_or(|e| e == effect)))
    }
}

/// The taints (key, and effect where the record names one) the stored controllers' records
/// whose writers include `who` list: that controller's own, which it may remove. Read leniently
/// (any comma-separated `key[=value]:Effect`, spaces around it trimmed; any JSON list of
/// strings), so that the policy's stricter reading can only grant less.
fn controller_listed(
    old: Option<&Tree>,
    settings: &taint_preservation::Settings,
    who: &taintguard::principal::Principal<'_>,
) -> Vec<(String, Option<String>)> {
    let mut listed = Vec::new();
    for record in settings
        .controller_records
        .iter()
        .filter(|r| r.owner.allows(who))
    {
        let annotation = ["metadata", "annotations", record.annotation.as_str()];
        let Some(Tree::String(text)) = old.and_then(|old| old.at(&annotation)) else {
            continue;
        };
        match record.format {
            RecordFormat::Keys => {
                let keys = serde_json::from_str::<Vec<String>>(text).unwrap_or_default();
                listed.extend(keys.into_iter().map(|k| (k, None)));
            }
            RecordFormat::Taints => listed.extend(text.split(',').filter_map(|item| {
                let (key_value, effect) = item.trim().rsplit_once(':')?;
                let key = key_value.split_once('=').map_or(key_value, |(k, _)| k);
                Some((key.to_owned(), Some(effect.to_owned())))
            })),
        }
    }
    listed
}

/// (key, effect, value) of each `spec.taints` entry of a Node text; absent fields are empty.
fn taints_of(node: Option<&str>) -> Option<Vec<(String, String, String)>> {
    let node = Tree::parse(node?).ok()?;
    let Some(Tree::Array(entries)) = node.at(&["spec", "taints"]) else {
        return Some(Vec::new());
    };
    let text = |entry: &Tree, field: &str| match entry.get(field) {
        Some(Tree::String(s)) => s.clone(),
        _ => String::new(),
    };
    Some(
        entries
            .iter()
            .map(|e| (text(e, "key"), text(e, "effect"), text(e, "value")))
            .collect(),
    )
}

/// The taints of `oldObject` (key and effect) the verdict's object no longer has; none when
/// the request is refused.
fn removed_taints(request: &str, verdict: &Verdict) -> Vec<(String, String)> {
    let texts = object_texts(request);
    let admitted = verdict.mutated_object().or(texts.object.value());
    match (
        verdict.accepted(),
        taints_of(texts.old_object.value()),
        taints_of(admitted),
    ) {
        (true, Some(old), Some(new)) => (old.into_iter())
            .filter(|(k, e, _)| !new.iter().any(|(k2, e2, _)| k2 == k && e2 == e))
            .map(|(k, e, _)| (k, e))
            .collect(),
        _ => Vec::new(),
    }
}

/// A record no permitted writer wrote never grants a removal: what a request removes, it
/// removes as well with its own writes of the records (the owner record, the one-shot record,
/// the controllers' records) undone. The stored records are the ones that speak.
fn records_grant_no_removal(request: &str, settings: &str, verdict: &Verdict) -> Checked {
    // The records are undone in a re-serialised request, which says something else where a
    // member name repeats (serde_json keeps the last); the API server never sends one.
    if Tree::parse(request).map_or(true, |tree| tree.repeats_a_name()) {
        return Ok(());
    }
    let Ok(mut parsed) = serde_json::from_str::<serde_json::Value>(request) else {
        return Ok(());
    };
    let written = parsed.to_string();
    let Some(old) = parsed.get("oldObject").cloned() else {
        return Ok(());
    };
    let Some(object) = parsed.get_mut("object") else {
        return Ok(());
    };
    gen::keep_records(&old, object);
    let unwritten = parsed.to_string();
    if unwritten == written {
        return Ok(());
    }
    let without =
        run::<TaintPreservation>(&unwritten, settings, Half::Mutating, &CaseCluster(None));
    let granted: Vec<_> = removed_taints(request, verdict)
        .into_iter()
        .filter(|taint| !removed_taints(&unwritten, &without).contains(taint))
        .collect();
    if granted.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the requester's own record writes granted the removal of {granted:?}: without them {without:?}"
        ))
    }
}

/// A record written through `nodes/status` by a requester that may not write it grants nothing
/// on the next write (docs/records.md): the Node the API server stores after the status write
/// (its `metadata` as admitted, the stored `spec`), then written by the same requester without
/// any taint and uncordoned, loses no taint and no cordon it would keep had the status write
/// left every record as stored. Permitted principals and controllers' record writers may write
/// records, so their status writes are not checked here.
fn status_writes_grant_nothing(request: &str, settings: &str, verdict: &Verdict) -> Checked {
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(request) else {
        return Ok(());
    };
    let (Some(old), Some(object)) = (parsed.get("oldObject"), parsed.get("object")) else {
        return Ok(());
    };
    let Ok(policy_settings) = read_settings::<TaintPreservation>(settings) else {
        return Ok(());
    };
    let Ok(admission) = AdmissionRequest::parse(request) else {
        return Ok(());
    };
    let who = admission.principal();
    let writes_records = policy_settings.permitted.allows(&who)
        || (policy_settings.controller_records.iter()).any(|r| r.owner.allows(&who));
    if parsed["subResource"] != "status"
        || parsed["operation"] != "UPDATE"
        || !verdict.accepted()
        || writes_records
        || !object.is_object()
        || !old.is_object()
    {
        return Ok(());
    }
    let admitted = match verdict.mutated_object() {
        Some(text) => serde_json::from_str(text).map_err(|e| e.to_string())?,
        None => object.clone(),
    };
    let stored = |metadata_of: &serde_json::Value| {
        let mut node = metadata_of.clone();
        node["spec"] = old["spec"].clone();
        node
    };
    let owner = policy_settings.cordon.owner_annotation.as_str();
    let as_stored = records_as_stored(old, &admitted, owner);
    let next = |node| next_write(&parsed, settings, node);
    let (after_forgery, kept_cordon, forged) = next(stored(&admitted));
    let (as_before, would_keep_cordon, _) = next(stored(&as_stored));
    let granted: Vec<_> = (after_forgery.iter())
        .filter(|taint| !as_before.contains(taint))
        .collect();
    if !granted.is_empty() || (would_keep_cordon && !kept_cordon) {
        return Err(format!(
            "a status write's records granted the next write {granted:?} (cordon kept: \
             {kept_cordon}, else {would_keep_cordon}): {forged:?}"
        ));
    }
    Ok(())
}

/// `admitted` with every record and the cordon owner record (`owner`) as `old` stores them.
fn records_as_stored(
    old: &serde_json::Value,
    admitted: &serde_json::Value,
    owner: &str,
) -> serde_json::Value {
    let mut as_stored = admitted.clone();
    gen::keep_records(old, &mut as_stored);
    gen::keep_annotations(old, &mut as_stored, [owner]);
    as_stored
}

/// Where records are sealed, a record written around the policy grants nothing
/// (docs/records.md, "Sealed records"): `request` judged against its stored Node with every
/// record forged into a deed naming the requester (owner of every taint, owner of the cordon),
/// under the seal of the records as stored and with the request leaving them as stored, removes
/// no taint and lifts no cordon that it does not with the records as sealed.
fn sealed_forgeries_grant_nothing(request: &str, settings: &str) -> Checked {
    let Ok(policy_settings) = read_settings::<TaintPreservation>(settings) else {
        return Ok(());
    };
    let Some(seal) = policy_settings.record_seal.on() else {
        return Ok(());
    };
    // Re-serialised, a request whose member names repeat says something else (serde_json keeps
    // the last); the API server never sends one.
    if Tree::parse(request).map_or(true, |tree| tree.repeats_a_name()) {
        return Ok(());
    }
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(request) else {
        return Ok(());
    };
    let (Some(old), Some(object)) = (parsed.get("oldObject"), parsed.get("object")) else {
        return Ok(());
    };
    let stored_seal =
        (old.pointer("/metadata/annotations")).and_then(|a| a.get(seal.annotation.as_str()));
    let Ok(Some(valid)) = taint_preservation::stored::seal(&old.to_string(), &policy_settings)
    else {
        return Ok(());
    };
    // A status write stores no taint and no cordon (the stored spec is kept): the records it
    // writes are `status_writes_grant_nothing`'s.
    if parsed["operation"] != "UPDATE"
        || parsed.get("subResource").is_some()
        || !old.is_object()
        || !object.is_object()
        || stored_seal != Some(&serde_json::json!(valid))
    {
        return Ok(());
    }
    let requester = parsed["userInfo"]["username"].as_str().unwrap_or_default();
    let mut forged_old = old.clone();
    let owner = policy_settings.cordon.owner_annotation.as_str();
    gen::deed(&mut forged_old, requester, owner);
    let kept = [owner, seal.annotation.as_str()];
    let judged = |stored: &serde_json::Value| judged_against(&parsed, stored, settings, &kept);
    let (sealed_removes, sealed_uncordons) = judged(old);
    let (forged_removes, forged_uncordons) = judged(&forged_old);
    let granted: Vec<_> = (forged_removes.iter())
        .filter(|taint| !sealed_removes.contains(taint))
        .collect();
    if !granted.is_empty() || (forged_uncordons && !sealed_uncordons) {
        return Err(format!(
            "records forged under the seal granted {granted:?} (uncordoned: {forged_uncordons}, \
             sealed: {sealed_uncordons})"
        ));
    }
    Ok(())
}

/// `request` judged against `stored` as its stored Node, written with `stored`'s records and its
/// annotations `kept` (the cordon owner record, the seal) as stored: the taints it removes, and
/// whether it lifts `stored`'s cordon.
fn judged_against(
    request: &serde_json::Value,
    stored: &serde_json::Value,
    settings: &str,
    kept: &[&str],
) -> (Vec<(String, String)>, bool) {
    let mut next = request.clone();
    gen::keep_records(stored, &mut next["object"]);
    gen::keep_annotations(stored, &mut next["object"], kept.iter().copied());
    next["oldObject"] = stored.clone();
    let text = next.to_string();
    let verdict = run::<TaintPreservation>(&text, settings, Half::Mutating, &CaseCluster(None));
    let admitted = match verdict.mutated_object() {
        Some(t) => serde_json::from_str::<serde_json::Value>(t).ok(),
        None => Some(next["object"].clone()),
    };
    let uncordoned = verdict.accepted()
        && stored["spec"]["unschedulable"] == true
        && admitted.is_some_and(|n| n["spec"]["unschedulable"] != true);
    (removed_taints(&text, &verdict), uncordoned)
}

/// The next write of `request`'s requester to the stored `node`: every taint removed and the
/// cordon lifted, through the main resource. The taints it loses, whether it stays cordoned,
/// and the verdict.
fn next_write(
    request: &serde_json::Value,
    settings: &str,
    node: serde_json::Value,
) -> (Vec<(String, String)>, bool, Verdict) {
    let mut written = node.clone();
    written["spec"]["taints"] = serde_json::json!([]);
    written["spec"]["unschedulable"] = serde_json::Value::Null;
    let mut next = request.clone();
    next.as_object_mut().map(|r| r.remove("subResource"));
    next["oldObject"] = node;
    next["object"] = written;
    let text = next.to_string();
    let verdict = run::<TaintPreservation>(&text, settings, Half::Mutating, &CaseCluster(None));
    let cordoned = verdict.accepted()
        && (verdict.mutated_object())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .is_some_and(|n| n["spec"]["unschedulable"] == true);
    (removed_taints(&text, &verdict), cordoned, verdict)
}

/// Runs toleration-injection on `request`/`settings`, the cluster answering the Pod's
/// `namespace` (`None`: it cannot be asked), and checks its invariants: those of every policy,
/// both halves judging alike, and tolerations only appended, never rewritten or duplicated.
pub fn check_toleration_injection(
    request: &str,
    settings: &str,
    namespace: Option<&str>,
) -> Checked {
    let cluster = CaseCluster(namespace);
    let verdict = check_common::<TolerationInjection>(request, settings, &cluster)?;
    // Injection repairs nothing, so an engine that cannot mutate judges exactly alike.
    let validating = run::<TolerationInjection>(request, settings, Half::Validating, &cluster);
    let judged = |v: &Verdict| (v.accepted(), v.code(), v.message().map(str::to_owned));
    // Without the Namespace both halves refuse the Pod (500), as a Gatekeeper-style engine
    // holding no Namespaces does (docs/context.md); with it, they judge alike.
    if namespace.is_some() && judged(&validating) != judged(&verdict) {
        return Err(format!(
            "the validating half judges {validating:?}, the mutating half {verdict:?}"
        ));
    }
    let Some((before, after)) = before_after(request, &verdict)? else {
        return Ok(());
    };
    let parsed = AdmissionRequest::parse(request).map_err(|e| e.to_string())?;
    let spec: &[&str] = match parsed.kind.kind.as_str() {
        "Pod" => &["spec"],
        "CronJob" => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => &["spec", "template", "spec"],
    };
    let path: Vec<&str> = spec.iter().copied().chain(["tolerations"]).collect();
    let list = |tree: &Tree| match tree.at(&path) {
        Some(Tree::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let (old, new) = (list(&before), list(&after));
    // The Pod's own tolerations kept, in order, then the additions. On a Pod CREATE,
    // PodTolerationRestriction's merge drops one of its own that an addition covers.
    let merged =
        parsed.operation == taintguard::admission::Operation::Create && namespace.is_some();
    let (kept, dropped): (Vec<&Tree>, Vec<&Tree>) = old.iter().partition(|t| new.contains(t));
    let kept_in_order = new.len() > kept.len() && new[..kept.len()].iter().eq(kept.iter().copied());
    let kept = kept.len();
    let added = &new[kept.min(new.len())..];
    if !kept_in_order || (!merged && !dropped.is_empty()) {
        return Err(format!("tolerations not appended: {old:?} -> {new:?}"));
    }
    if let Some(lost) = dropped
        .iter()
        .find(|t| !added.iter().any(|a| plugin_covers(a, t)))
    {
        return Err(format!(
            "dropped {lost:?}, which no addition covers: {old:?} -> {new:?}"
        ));
    }
    for (i, added) in new.iter().enumerate().skip(kept) {
        if new[..i].contains(added) {
            return Err(format!("duplicated toleration {added:?}"));
        }
    }
    same_except(before, after, &[&path])
}

/// Whether the toleration `a` covers `b` as PodTolerationRestriction's merge decides
/// (docs/pod-toleration-restriction.md, "How tolerations are compared"), written here apart from
/// the policy's own code: equal; or `a`'s key is `b`'s (or `a` is `Exists` with no key), its
/// effect `b`'s or empty, a `NoExecute` `a` with seconds bounds `b`'s, and then `Exists` covers
/// anything and `Equal` (or no operator) an `Equal` toleration of the same value.
fn plugin_covers(a: &Tree, b: &Tree) -> bool {
    let text = |t: &Tree, field: &str| match t.get(field) {
        Some(Tree::String(s)) => s.clone(),
        _ => String::new(),
    };
    let seconds = |t: &Tree| match t.get("tolerationSeconds") {
        Some(Tree::Number(n)) => n.as_i64(),
        _ => None,
    };
    if a == b {
        return true;
    }
    let (operator, effect) = (text(a, "operator"), text(a, "effect"));
    let key =
        text(a, "key") == text(b, "key") || (text(a, "key").is_empty() && operator == "Exists");
    let effect_covered = effect.is_empty() || effect == text(b, "effect");
    let time = effect != "NoExecute"
        || seconds(a).is_none_or(|limit| seconds(b).is_some_and(|s| s <= limit));
    let value = match operator.as_str() {
        "Exists" => true,
        "Equal" | "" => text(b, "operator") == "Equal" && text(b, "value") == text(a, "value"),
        _ => false,
    };
    key && effect_covered && time && value
}
