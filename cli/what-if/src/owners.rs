//! `taintguard what-if` over Nodes: which protected taints have an owner, and for those without
//! one, who last wrote `spec.taints` and what would let that writer keep managing the taint
//! (README, "Installing on a running cluster"). A taint counts as protected when the policy
//! module itself restores or refuses its removal by a principal nothing permits; its owner is
//! read from the records as the policy reads them (`taint_preservation::stored`).

use serde_json::{json, Value};
use taint_preservation::settings::ControllerRecord;
use taint_preservation::stored::{record_with_owners, taint_owners, Owner, StoredTaint};
use taint_preservation::{Settings, TaintPreservation};
use taintguard::glob;
use taintguard::principal::Principal;

use taintguard_suite::expect::verdict;
use taintguard_suite::review::{review, Operation, Parts, Requester};
use taintguard_suite::run::Judge;
use taintguard_suite::suite::{Cluster, Verdict};

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
            out.push_str(&record_writer(record, &m.name)?);
        }
    }
    Ok(out)
}

/// The rest of a record writer's line: who the manager `manager` runs as by default, and what
/// `record`'s entry would have to name for its record writes to stand.
fn record_writer(record: &ControllerRecord, manager: &str) -> Result<String, String> {
    Ok(match writer(manager) {
        Writer::ServiceAccount(account) => {
            // A service account always has a username.
            let username = (Requester::service_account(&account)?.username()).unwrap_or_default();
            if record.owner.allows(&Principal::new(&username, &[])) {
                format!(
                    ": by default the service account {account}, which controllerRecords \
                     names\n           if it runs as another (another namespace or Helm \
                     release), name that one: {}\n",
                    naming(record, "<namespace>/<name>")?
                )
            } else {
                format!(
                    ": by default the service account {account}, which controllerRecords \
                     does not name, so its record writes would be undone: {}\n",
                    naming(record, &account)?
                )
            }
        }
        Writer::Person => ": a person with kubectl; only the writers controllerRecords names and \
                           permitted principals may change it\n"
            .to_owned(),
        Writer::Unknown => format!(
            ": if that writer keeps this record, name its service account: {}\n",
            naming(record, "<namespace>/<name>")?
        ),
    })
}

/// `record`'s entry with `account` added to its writers, as the settings would hold it: a glob
/// that names that account alone.
fn naming(record: &ControllerRecord, account: &str) -> Result<String, String> {
    let mut entry = serde_json::to_value(record).map_err(|e| e.to_string())?;
    let accounts = &mut entry["owner"]["serviceAccounts"];
    let account = glob::escape(account);
    match accounts.as_array_mut() {
        Some(list) => list.push(json!(account)),
        None => *accounts = json!([account]),
    }
    Ok(entry.to_string())
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
    let mut report = Report {
        probe: Probe { judge, settings },
        settings: parsed,
        owned: 0,
        unowned: 0,
        recorded_nodes: 0,
        rules: Vec::new(),
        node_record: Vec::new(),
    };
    let mut out = String::new();
    for node in nodes.iter().filter(|o| o["kind"] == "Node") {
        out.push_str(&report.node(node)?);
    }
    Ok(report.summary(out))
}

/// The report under way: the module probed, its settings as the policy reads them, and what
/// the Nodes so far add up to.
struct Report<'j> {
    probe: Probe<'j>,
    settings: Settings,
    /// Protected taints with an owner.
    owned: usize,
    /// Protected taints without one.
    unowned: usize,
    /// Nodes carrying a controller record.
    recorded_nodes: usize,
    /// The `protectedTaints` rules suggested, each once.
    rules: Vec<Value>,
    /// The owner record entries suggested for the Node being reported: `key`, `effect`,
    /// username.
    node_record: Vec<(String, String, String)>,
}

impl Report<'_> {
    /// The section on one Node: its protected taints and controller records, and the owner
    /// record that would name the owners found for it; empty when it has none of them.
    fn node(&mut self, node: &Value) -> Result<String, String> {
        let name = node["metadata"]["name"].as_str().unwrap_or("?");
        let text = node.to_string();
        let mut lines = String::new();
        let taints =
            taint_owners(&text, &self.settings).map_err(|e| format!("Node {name}: {e}"))?;
        for taint in taints {
            lines.push_str(&self.taint(node, &taint)?);
        }
        let record = std::mem::take(&mut self.node_record);
        let records = record_writers(node, &self.settings)?;
        if !records.is_empty() {
            self.recorded_nodes += 1;
            lines.push_str(&records);
        }
        if lines.is_empty() {
            return Ok(lines);
        }
        let mut out = format!("Node {name}\n{lines}");
        let owners: Vec<(&str, &str, &str)> = record
            .iter()
            .map(|(k, e, o): &(String, String, String)| (k.as_str(), e.as_str(), o.as_str()))
            .collect();
        if let Some(value) = (!owners.is_empty())
            .then(|| record_with_owners(&text, &self.settings, &owners))
            .transpose()?
            .flatten()
        {
            out.push_str(&format!(
                "  or, as a permitted principal, record those owners:\n    kubectl annotate node {name} --overwrite {}='{value}'\n",
                self.settings.taint_owners.annotation.as_str()
            ));
        }
        Ok(out)
    }

    /// The line of one of `node`'s taints, counted, when the module protects it (nothing when it
    /// lets a principal no settings permit remove it).
    fn taint(&mut self, node: &Value, taint: &StoredTaint) -> Result<String, String> {
        let identity = (taint.key.as_str(), taint.effect.as_str());
        if (self.probe).removal_stands(node, identity, Requester::service_account(PROBE)?)? {
            return Ok(String::new());
        }
        match &taint.owner {
            Owner::Recorded(owner) => {
                self.owned += 1;
                Ok(format!(
                    "  owned    {}: {owner:?} (the policy's record)\n",
                    taint.text
                ))
            }
            Owner::Controller(annotation) => {
                self.owned += 1;
                Ok(format!(
                    "  owned    {}: the writer of {annotation}\n",
                    taint.text
                ))
            }
            Owner::Unknown => {
                self.unowned += 1;
                self.unowned_lines(node, taint)
            }
        }
    }

    /// The lines of one protected taint without an owner: who manages `spec.taints`, and,
    /// unless the module already lets that writer remove it, what would (a rule's `permitted`,
    /// and the owner record's entry).
    fn unowned_lines(&mut self, node: &Value, taint: &StoredTaint) -> Result<String, String> {
        let (key, effect) = (taint.key.as_str(), taint.effect.as_str());
        let managers = field_managers(node, &["f:spec", "f:taints"]);
        let mut out = format!(
            "  unowned  {}: only permitted principals may remove or change it\n",
            taint.text
        );
        if managers.is_empty() {
            out.push_str(
                "           spec.taints has no field manager: nothing suggests its writer\n",
            );
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
                    out.push_str(if self.probe.removal_stands(node, (key, effect), person)? {
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
                    out.push_str(self.service_account_writer(node, (key, effect), &account)?);
                }
            }
        }
        Ok(out)
    }

    /// The rest of the line of a service account that manages an unowned taint `key:effect`:
    /// whether the settings permit it to remove the taint, and if not the rule that would (added
    /// to the report's, once) and its owner record entry.
    fn service_account_writer(
        &mut self,
        node: &Value,
        (key, effect): (&str, &str),
        account: &str,
    ) -> Result<&'static str, String> {
        let who = Requester::service_account(account)?;
        // A service account always has a username.
        let username = who.username().unwrap_or_default();
        if self.probe.removal_stands(node, (key, effect), who)? {
            return Ok(", which the settings permit to remove it\n");
        }
        // A glob that names that account alone.
        let rule = json!({"key": key, "effects": [effect],
                          "permitted": {"serviceAccounts": [glob::escape(account)]}});
        if !self.rules.contains(&rule) {
            self.rules.push(rule);
        }
        (self.node_record).push((key.to_owned(), effect.to_owned(), username));
        Ok("\n")
    }

    /// The whole report: the Nodes' sections `out`, the rules that would let the writers found
    /// keep managing their taints, and the count of protected taints; `None` when no Node had
    /// anything to report.
    fn summary(self, mut out: String) -> Option<String> {
        if self.owned + self.unowned + self.recorded_nodes == 0 {
            return None;
        }
        if !self.rules.is_empty() {
            out.push_str(&format!(
                "settings that let those writers keep managing their taints (before the rule that \
                 protects them, `{{\"key\": \"*\"}}` by default):\n  \"protectedTaints\": {}\n",
                Value::Array(self.rules)
            ));
        }
        out.push_str(&format!(
            "{} protected taints: {} owned, {} without an owner\n",
            self.owned + self.unowned,
            self.owned,
            self.unowned
        ));
        Some(out)
    }
}
