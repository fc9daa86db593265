//! The cluster as a Gatekeeper-style engine hands it to a policy: objects replicated into the
//! data document, `data.inventory.cluster[<groupVersion>][<kind>][<name>]` for cluster-scoped
//! ones (docs/context.md). Gatekeeper fills it from its sync configuration; Kubewarden's
//! gatekeeper execution mode from the policy's `contextAwareResources` (policy-evaluator's
//! `GatekeeperInventory`, which lists a kind only when the cluster has objects of it).
//!
//! An inventory holds objects, not answers: no SubjectAccessReview can be judged from it. What
//! it lacks (a kind the engine was not asked to replicate) is [`ClusterError::Unavailable`], and
//! the policy behaves as where no cluster can be asked; a name its kind does not hold is
//! [`ClusterError::Failed`], as a GET of an object that does not exist fails.

use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness};
use taintguard::json::{member_at, members};
use taintguard::label_selector::{parse_labels, SelectorQuery};

/// The `inventory.cluster` member of an engine's data document, read only as far as a question
/// needs.
pub struct Inventory<'d> {
    /// The text of `data.inventory.cluster`; `None` when the data has none (an engine that
    /// replicates nothing, or OPA mode's data, which is the settings).
    cluster: Option<&'d str>,
}

impl<'d> Inventory<'d> {
    /// The inventory in `data`, the data document's text. A document without one, or one that
    /// is not JSON, holds nothing: the policy is then judged as without a cluster.
    pub fn from_data(data: Option<&'d str>) -> Inventory<'d> {
        let cluster = data
            .and_then(|data| member_at(data, &["inventory", "cluster"]).ok())
            .and_then(|found| found.value());
        Inventory { cluster }
    }

    /// The objects of `kind` (in group version `v1`), by name, as the text of an object.
    fn kind(&self, kind: &str) -> Result<&'d str, ClusterError> {
        let held = self
            .cluster
            .and_then(|cluster| member_at(cluster, &["v1", kind]).ok())
            .and_then(|found| found.value());
        held.ok_or_else(|| {
            ClusterError::Unavailable(format!(
                "the engine's inventory (data.inventory) holds no v1 {kind} objects: name \
                 {kind} in the policy's contextAwareResources (Kubewarden) or sync it \
                 (Gatekeeper's Config)"
            ))
        })
    }
}

fn unreadable(kind: &str, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Failed(format!(
        "the inventory's v1 {kind} objects cannot be read: {e}"
    ))
}

impl Cluster for Inventory<'_> {
    /// The inventory's Nodes that `label_selector` selects, as a `List`'s text.
    fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError> {
        let nodes = self.kind("Node")?;
        let query = SelectorQuery::parse(label_selector.unwrap_or_default())
            .map_err(ClusterError::Failed)?;
        let mut list = String::from(r#"{"items":["#);
        let mut first = true;
        for (_, node) in members(nodes).map_err(|e| unreadable("Node", e))? {
            let labels =
                member_at(node, &["metadata", "labels"]).map_err(|e| unreadable("Node", e))?;
            let labels = parse_labels(labels.value()).map_err(|e| unreadable("Node", e))?;
            if !query.matches(&labels) {
                continue;
            }
            if !first {
                list.push(',');
            }
            first = false;
            list.push_str(node);
        }
        list.push_str("]}");
        Ok(list)
    }

    fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        Err(ClusterError::Unavailable(
            "a Gatekeeper-style engine's inventory holds objects, not SubjectAccessReview answers \
             (docs/context.md)"
                .to_owned(),
        ))
    }

    /// The inventory is as old as the engine's replication: `freshness` cannot ask for newer.
    fn get_namespace(&self, name: &str, _: Freshness) -> Result<String, ClusterError> {
        let namespaces = self.kind("Namespace")?;
        let found = member_at(namespaces, &[name]).map_err(|e| unreadable("Namespace", e))?;
        match found.value() {
            Some(namespace) => Ok(namespace.to_owned()),
            None => Err(ClusterError::Failed(format!(
                "the engine's inventory holds no Namespace {name:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: &str = r#"{"inventory": {"cluster": {"v1": {
        "Namespace": {"team-a": {"metadata": {"name": "team-a", "annotations": {"a": "b"}}}},
        "Node": {
            "gpu-1": {"metadata": {"name": "gpu-1", "labels": {"pool": "gpu"}}, "spec": {"taints": []}},
            "cpu-1": {"metadata": {"name": "cpu-1", "labels": {"pool": "cpu"}}}
        }}}, "namespace": {}}}"#;

    #[test]
    fn answers_from_the_inventory_or_says_what_it_lacks() {
        let inventory = Inventory::from_data(Some(DATA));
        let namespace = inventory
            .get_namespace("team-a", Freshness::Cached)
            .unwrap();
        assert!(
            namespace.contains(r#""annotations": {"a": "b"}"#),
            "{namespace}"
        );
        assert!(matches!(
            inventory.get_namespace("team-b", Freshness::Fresh),
            Err(ClusterError::Failed(m)) if m.contains(r#"no Namespace "team-b""#)
        ));
        let nodes = |selector| {
            let list = inventory.list_nodes(selector).unwrap();
            let list: serde_json::Value = serde_json::from_str(&list).unwrap();
            let names: Vec<String> = (list["items"].as_array().unwrap().iter())
                .map(|n| n["metadata"]["name"].as_str().unwrap().to_owned())
                .collect();
            names
        };
        assert_eq!(nodes(None), ["gpu-1", "cpu-1"]);
        assert_eq!(nodes(Some("pool=gpu")), ["gpu-1"]);
        assert_eq!(nodes(Some("pool notin (gpu,cpu)")), Vec::<String>::new());
        let question = AccessQuestion {
            user: "u",
            groups: &[],
            verb: "untaint",
            group: "taintguard.io",
            resource: "nodes",
            name: None,
        };
        assert!(matches!(
            inventory.can_i(&question),
            Err(ClusterError::Unavailable(_))
        ));
        // What the engine did not replicate: the policy is judged as without a cluster.
        for data in [
            None,
            Some("{}"),
            Some(r#"{"inventory": {"cluster": {}}}"#),
            Some("["),
        ] {
            let empty = Inventory::from_data(data);
            assert!(matches!(
                empty.get_namespace("team-a", Freshness::Cached),
                Err(ClusterError::Unavailable(m)) if m.contains("contextAwareResources")
            ));
            assert!(matches!(
                empty.list_nodes(None),
                Err(ClusterError::Unavailable(_))
            ));
        }
    }
}
