//! The cluster as a Gatekeeper-style engine hands it to a policy: objects replicated into the
//! data document, `data.inventory.cluster[<groupVersion>][<kind>][<name>]` for cluster-scoped
//! ones (docs/context.md). Gatekeeper fills it from its sync configuration; Kubewarden's
//! gatekeeper execution mode from the policy's `contextAwareResources` (policy-evaluator's
//! `GatekeeperInventory`, which lists a kind only when the cluster has objects of it).
//!
//! An inventory holds objects, not answers: no SubjectAccessReview can be judged from it. What
//! it lacks (a kind the engine was not asked to replicate, or is still replicating; a data
//! document that cannot be read) is [`ClusterError::Unavailable`], whose reason names the
//! configuration that replicates it; a name its kind does not hold is [`ClusterError::Failed`],
//! as a GET of an object that does not exist fails. Policies never read an Unavailable inventory
//! as an empty cluster where the answer decides a refusal: toleration-injection refuses the Pod
//! whose Namespace it cannot read (500), as the waPC build does.

use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Freshness};
use taintguard::json::{member_at, members};
use taintguard::label_selector::{parse_labels, SelectorQuery};

/// The `inventory.cluster` member of an engine's data document, read only as far as a question
/// needs.
pub struct Inventory<'d> {
    /// The text of `data.inventory.cluster`, or why the data holds none (an engine that
    /// replicates nothing, OPA mode's data, which is the settings, or data that cannot be read).
    cluster: Result<&'d str, String>,
}

/// What replicates `kind` into the inventory, for the reason an inventory lacks it.
fn sync_hint(kind: &str) -> String {
    format!(
        "Gatekeeper replicates it with a `Config` (config.gatekeeper.sh/v1alpha1) whose \
         spec.sync.syncOnly lists {{group: \"\", version: v1, kind: {kind}}}; Kubewarden's \
         gatekeeper mode with v1/{kind} in the policy's contextAwareResources (metadata.yml); \
         right after a restart the engine may still be syncing (docs/context.md)"
    )
}

impl<'d> Inventory<'d> {
    /// The inventory in `data`, the data document's text. A document without one, or one that
    /// cannot be read, holds nothing, and says why.
    pub fn from_data(data: Option<&'d str>) -> Inventory<'d> {
        let cluster = match data {
            None => Err("the engine passed no data document".to_owned()),
            Some(data) => match member_at(data, &["inventory", "cluster"]) {
                Err(e) => Err(format!(
                    "the engine's data document cannot be read as an inventory: {e}"
                )),
                Ok(found) => found.value().ok_or_else(|| {
                    "the engine's data document has no inventory (data.inventory.cluster)"
                        .to_owned()
                }),
            },
        };
        Inventory { cluster }
    }

    /// The objects of `kind` (in group version `v1`), by name, as the text of an object.
    fn kind(&self, kind: &str) -> Result<&'d str, ClusterError> {
        let cluster = (self.cluster.as_ref())
            .map_err(|why| ClusterError::Unavailable(format!("{why}: {}", sync_hint(kind))))?;
        let held = member_at(cluster, &["v1", kind]).map_err(|e| {
            ClusterError::Unavailable(format!(
                "the engine's inventory cannot be read: {e}: {}",
                sync_hint(kind)
            ))
        })?;
        held.value().ok_or_else(|| no_objects(kind))
    }
}

/// The reason an inventory holds no objects of `kind` at all.
fn no_objects(kind: &str) -> ClusterError {
    ClusterError::Unavailable(format!(
        "the engine's inventory (data.inventory) holds no v1 {kind} objects: {}",
        sync_hint(kind)
    ))
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
            // `{}`: a kind listed with no objects is as good as none (every cluster has
            // Namespaces), checked only here, off the path of a Namespace found.
            None if namespaces.strip_prefix('{').map(str::trim_start) == Some("}") => {
                Err(no_objects("Namespace"))
            }
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
        // What the engine did not replicate, or data that cannot be read: Unavailable, with the
        // reason and the configuration that replicates the kind (the data, why, and whether the
        // Nodes are Unavailable too: Nodes listed as `{}` are an empty list, Namespaces are none).
        let cases: [(Option<&str>, &str, bool); 9] = [
            (None, "no data document", true),
            (Some("{}"), "has no inventory", true),
            (Some(r#"{"inventory": {}}"#), "has no inventory", true),
            (Some("["), "cannot be read as an inventory", true),
            (
                Some(r#"{"inventory": "x"}"#),
                "cannot be read as an inventory",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": []}}"#),
                "inventory cannot be read",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": {}}}"#),
                "holds no v1 Namespace",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": {"v1": {"Node": {}}}}}"#),
                "holds no v1 Namespace",
                false,
            ),
            (
                Some(r#"{"inventory": {"cluster": {"v1": {"Namespace": { }, "Node": {}}}}}"#),
                "holds no v1 Namespace",
                false,
            ),
        ];
        for (data, why, no_nodes) in cases {
            let empty = Inventory::from_data(data);
            let error = empty.get_namespace("team-a", Freshness::Cached);
            let Err(ClusterError::Unavailable(m)) = error else {
                panic!("{data:?}: {error:?}");
            };
            for wanted in [
                why,
                "`Config`",
                "kind: Namespace}",
                "v1/Namespace in the policy's contextAwareResources",
            ] {
                assert!(m.contains(wanted), "{data:?}: {wanted:?} in {m}");
            }
            let nodes = empty.list_nodes(None);
            match no_nodes {
                true => assert!(
                    matches!(&nodes, Err(ClusterError::Unavailable(m)) if m.contains("kind: Node}")),
                    "{data:?}: {nodes:?}"
                ),
                false => assert_eq!(nodes.as_deref(), Ok(r#"{"items":[]}"#), "{data:?}"),
            }
        }
    }
}
