//! `taintguard what-if` over Nodes: which protected taints have an owner, and for those without
//! one, who last wrote `spec.taints` and what would let that writer keep managing the taint
//! (README, "Installing on a running cluster"). A taint counts as protected when the policy
//! module itself restores or refuses its removal by a principal nothing permits; its owner is
//! read from the records as the policy reads them (`taint_preservation::stored`).

use serde_json::{json, Value};
use taint_preservation::stored::{record_with_owners, taint_owners, Owner};
use taint_preservation::{Settings, TaintPreservation};
use taintguard::principal::Principal;

use crate::expect::verdict;
use crate::review::{review, Operation, Parts, Requester};
use crate::run::Judge;
use crate::suite::{Cluster, Verdict};

/// The principal the protection probe removes each taint as: one no settings permit.
const PROBE: &str = "taintguard-what-if/probe";

/// A manager of `spec.taints` in a Node's `managedFields`.
struct Manager {
    name: String,
    operation: String,
    time: String,
}

/// Who a field manager's requests come from, where its default install says so.
enum Writer {
    Person,
    ServiceAccount(String),
    Unknown,
}

/// Field manager names of the components docs/controllers.md lists, to their default identity.
/// kubectl names its manager `kubectl`, `kubectl-taint`, `kubectl-edit`, ... after the command.
fn writer(manager: &str) -> Writer {
    match manager {
        m if m == "kubectl" || m.starts_with("kubectl-") => Writer::Person,
        "nfd-master" => Writer::ServiceAccount("node-feature-discovery/nfd-master".to_owned()),
        "kured" => Writer::ServiceAccount("kube-system/kured".to_owned()),
        "cluster-autoscaler" => Writer::ServiceAccount("kube-system/cluster-autoscaler".to_owned()),
        _ => Writer::Unknown,
    }
}

/// The managers of the field at `path` of a Node's `managedFields` (`["f:spec", "f:taints"]`:
/// an atomic list has one manager at a time per operation kind).
fn field_managers(node: &Value, path: &[&str]) -> Vec<Manager> {
    let fields = node["metadata"]["managedFields"].as_array();
    fields
        .into_iter()
        .flatten()
        .filter(|m| {
            (path.iter())
                .try_fold(&m["fieldsV1"], |at, step| at.get(step))
                .is_some()
        })
        .map(|m| Manager {
            name: m["manager"].as_str().unwrap_or("?").to_owned(),
            operation: m["operation"].as_str().unwrap_or("?").to_owned(),
            time: m["time"].as_str().unwrap_or("?").to_owned(),
        })
        .collect()
}

/// The lines about each controller record `node` carries: who last wrote it (`managedFields`),
/// whether the settings name that writer, and the `controllerRecords` entry that would. A writer
/// no entry names has its record writes undone once the policy runs (docs/controllers.md, "A
/// writer the settings do not name").
fn record_writers(node: &Value, settings: &Settings) -> Result<String, String> {
    let mut out = String::new();
    for record in settings.controller_records.iter() {
        let key = record.annotation.as_str();
        if node["metadata"]["annotations"][key].as_str().is_none() {
            continue;
        }
        // The entry with `account` added to its writers, as the settings would hold it.
        let naming = |account: &str| -> Result<String, String> {
            let mut entry = serde_json::to_value(record).map_err(|e| e.to_string())?;
            let accounts = &mut entry["owner"]["serviceAccounts"];
            match accounts.as_array_mut() {
                Some(list) => list.push(json!(account)),
                None => *accounts = json!([account]),
            }
            Ok(entry.to_string())
        };
        let field = format!("f:{key}");
        let managers = field_managers(node, &["f:metadata", "f:annotations", &field]);
        if managers.is_empty() {
            out.push_str(&format!(
                "  record   {key}: no field manager: nothing names its writer
"
            ));
        }
        for m in managers {
            out.push_str(&format!(
                "  record   {key}: written by {:?} ({}, {})",
                m.name, m.operation, m.time
            ));
            match writer(&m.name) {
                Writer::ServiceAccount(account) => {
                    // A service account always has a username.
                    let username =
                        (Requester::service_account(&account)?.username()).unwrap_or_default();
                    if record.owner.allows(&Principal::new(&username, &[])) {
                        out.push_str(&format!(
                            ": by default the service account {account}, which controllerRecords \
                             names\n           if it runs as another (another namespace or Helm \
                             release), name that one: {}\n",
                            naming("<namespace>/<name>")?
                        ));
                    } else {
                        out.push_str(&format!(
                            ": by default the service account {account}, which controllerRecords \
                             does not name, so its record writes would be undone: {}\n",
                            naming(&account)?
                        ));
                    }
                }
                Writer::Person => out.push_str(
                    ": a person with kubectl; only the writers controllerRecords names and \
                     permitted principals may change it\n",
                ),
                Writer::Unknown => out.push_str(&format!(
                    ": if that writer keeps this record, name its service account: {}\n",
                    naming("<namespace>/<name>")?
                )),
            }
        }
    }
    Ok(out)
}

/// The policy module and its settings, asked what would become of a taint's removal.
struct Probe<'j> {
    judge: &'j mut dyn Judge,
    settings: &'j Value,
}

impl Probe<'_> {
    /// Whether the module lets `who` remove `key:effect` from `node` untouched, rather than
    /// restore it or refuse.
    fn removal_stands(
        &mut self,
        node: &Value,
        (key, effect): (&str, &str),
        who: Requester,
    ) -> Result<bool, String> {
        let mut without = node.clone();
        if let Some(taints) = without["spec"]["taints"].as_array_mut() {
            taints.retain(|t| !(t["key"] == key && t["effect"] == effect));
        }
        let parts = Parts {
            operation: Operation::Update,
            requester: who,
            object: Some(without),
            old_object: Some(node.clone()),
            sub_resource: None,
            patch: true,
            uid: "taintguard-what-if-probe".to_owned(),
        };
        let review = review(&parts)?;
        let (response, _) = self
            .judge
            .validate(&review, self.settings, &Cluster::default())?;
        Ok(verdict(&response) == Verdict::Accepted)
    }
}

/// The report of the protected taints of `nodes` (Node objects; others are skipped) and their
/// owners; `None` when the settings are not taint-preservation's or no node carries a taint the
/// module protects.
///
/// # Errors
///
/// A Node the policy cannot read, or a module that fails.
pub fn report(
    judge: &mut dyn Judge,
    settings: &Value,
    nodes: &[Value],
) -> Result<Option<String>, String> {
    let Ok(parsed) = taintguard::read_settings::<TaintPreservation>(&settings.to_string()) else {
        return Ok(None);
    };
    let mut probe = Probe { judge, settings };
    let mut out = String::new();
    // Owned taints, taints without an owner, Nodes carrying a controller record.
    let mut counts = [0usize; 3];
    let mut rules = Vec::new();
    for node in nodes.iter().filter(|o| o["kind"] == "Node") {
        let name = node["metadata"]["name"].as_str().unwrap_or("?");
        let text = node.to_string();
        let mut lines = String::new();
        let mut record = Vec::new();
        for taint in taint_owners(&text, &parsed).map_err(|e| format!("Node {name}: {e}"))? {
            let identity = (taint.key.as_str(), taint.effect.as_str());
            if probe.removal_stands(node, identity, Requester::service_account(PROBE)?)? {
                continue;
            }
            match &taint.owner {
                Owner::Recorded(owner) => {
                    counts[0] += 1;
                    lines.push_str(&format!(
                        "  owned    {}: {owner:?} (the policy's record)\n",
                        taint.text
                    ));
                }
                Owner::Controller(annotation) => {
                    counts[0] += 1;
                    lines.push_str(&format!(
                        "  owned    {}: the writer of {annotation}\n",
                        taint.text
                    ));
                }
                Owner::Unknown => {
                    counts[1] += 1;
                    let suggested = Suggested {
                        record: &mut record,
                        rules: &mut rules,
                    };
                    lines.push_str(&unowned(
                        &mut probe,
                        node,
                        &taint.text,
                        identity,
                        suggested,
                    )?);
                }
            }
        }
        let records = record_writers(node, &parsed)?;
        if !records.is_empty() {
            counts[2] += 1;
            lines.push_str(&records);
        }
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!("Node {name}\n{lines}"));
        let owners: Vec<(&str, &str, &str)> = record
            .iter()
            .map(|(k, e, o): &(String, String, String)| (k.as_str(), e.as_str(), o.as_str()))
            .collect();
        if let Some(value) = (!owners.is_empty())
            .then(|| record_with_owners(&text, &parsed, &owners))
            .transpose()?
            .flatten()
        {
            out.push_str(&format!(
                "  or, as a permitted principal, record those owners:\n    kubectl annotate node {name} --overwrite {}='{value}'\n",
                parsed.taint_owners.annotation.as_str()
            ));
        }
    }
    if counts == [0, 0, 0] {
        return Ok(None);
    }
    if !rules.is_empty() {
        out.push_str(&format!(
            "settings that let those writers keep managing their taints (before the rule that \
             protects them, `{{\"key\": \"*\"}}` by default):\n  \"protectedTaints\": {}\n",
            Value::Array(rules)
        ));
    }
    out.push_str(&format!(
        "{} protected taints: {} owned, {} without an owner\n",
        counts[0] + counts[1],
        counts[0],
        counts[1]
    ));
    Ok(Some(out))
}

/// What the report suggests: owner record entries of one node (`key`, `effect`, username) and
/// `protectedTaints` rules.
struct Suggested<'s> {
    record: &'s mut Vec<(String, String, String)>,
    rules: &'s mut Vec<Value>,
}

/// The lines of one protected taint without an owner: who manages `spec.taints`, and, unless the
/// module already lets that writer remove it, what would (a rule's `permitted`, and the owner
/// record's entry).
fn unowned(
    probe: &mut Probe<'_>,
    node: &Value,
    text: &str,
    (key, effect): (&str, &str),
    suggested: Suggested<'_>,
) -> Result<String, String> {
    let managers = field_managers(node, &["f:spec", "f:taints"]);
    let mut out = format!("  unowned  {text}: only permitted principals may remove or change it\n");
    if managers.is_empty() {
        out.push_str("           spec.taints has no field manager: nothing suggests its writer\n");
    }
    for m in managers {
        out.push_str(&format!(
            "           spec.taints is managed by {:?} ({}, {})",
            m.name, m.operation, m.time
        ));
        match writer(&m.name) {
            Writer::Person => {
                let person = Requester::User {
                    name: "taintguard-what-if-person".to_owned(),
                    groups: Vec::new(),
                };
                out.push_str(if probe.removal_stands(node, (key, effect), person)? {
                    ": a person with kubectl, whom the settings permit to remove it\n"
                } else {
                    ": a person with kubectl, whom the settings do not permit: name them in `permitted`\n"
                });
            }
            Writer::Unknown => {
                let rule = json!({"key": key, "effects": [effect],
                                  "permitted": {"serviceAccounts": ["<namespace>/<name>"]}});
                out.push_str(&format!(
                    ": if that writer manages this taint, permit its service account: {rule}\n"
                ));
            }
            Writer::ServiceAccount(account) => {
                out.push_str(&format!(": by default the service account {account}"));
                let who = Requester::service_account(&account)?;
                // A service account always has a username.
                let username = who.username().unwrap_or_default();
                if probe.removal_stands(node, (key, effect), who)? {
                    out.push_str(", which the settings permit to remove it\n");
                    continue;
                }
                out.push('\n');
                let rule = json!({"key": key, "effects": [effect],
                                  "permitted": {"serviceAccounts": [account]}});
                if !suggested.rules.contains(&rule) {
                    suggested.rules.push(rule);
                }
                suggested
                    .record
                    .push((key.to_owned(), effect.to_owned(), username));
            }
        }
    }
    Ok(out)
}
