//! The cluster as a Gatekeeper-style engine hands it to a policy: objects replicated into the
//! data document, `data.inventory.cluster[<groupVersion>][<kind>][<name>]` for cluster-scoped
//! ones and `data.inventory.namespace[<namespace>][<groupVersion>][<kind>][<name>]` for
//! namespaced ones (docs/context.md). Gatekeeper fills it from its sync configuration; Kubewarden's
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

use taintguard::cluster::{AccessQuestion, Cluster, ClusterError, Get, List, ResourceKind};
use taintguard::json::{member_at, members};
use taintguard::label_selector::{parse_labels, SelectorQuery};
use taintguard::NoCluster;

/// What an inventory answers a question that is not about its objects: nothing, and why.
pub const NO_ANSWERS: NoCluster = NoCluster(
    "a Gatekeeper-style engine's inventory holds objects, not SubjectAccessReview answers \
     (docs/context.md)",
);

/// The `inventory` member of an engine's data document, read only as far as a question needs.
pub struct Inventory<'d> {
    /// The text of `data.inventory`, or why the data holds none (an engine that replicates
    /// nothing, OPA mode's data, which is the settings, or data that cannot be read).
    inventory: Result<&'d str, String>,
}

/// What replicates `kind` into the inventory, for the reason an inventory lacks it.
fn sync_hint(kind: ResourceKind<'_>) -> String {
    let (group, version) = kind
        .api_version
        .split_once('/')
        .unwrap_or(("", kind.api_version));
    format!(
        "Gatekeeper replicates it with a `Config` (config.gatekeeper.sh/v1alpha1) whose \
         spec.sync.syncOnly lists {{group: {group:?}, version: {version}, kind: {}}}; \
         Kubewarden's gatekeeper mode with {kind} in the policy's contextAwareResources \
         (metadata.yml); right after a restart the engine may still be syncing \
         (docs/context.md)",
        kind.kind
    )
}

/// The reason an inventory holds no objects of `kind` at all.
fn no_objects(kind: ResourceKind<'_>) -> ClusterError {
    ClusterError::Unavailable(format!(
        "the engine's inventory (data.inventory) holds no {kind} objects: {}",
        sync_hint(kind)
    ))
}

/// The reason an inventory that cannot be read holds nothing of `kind`.
fn inventory_unreadable(kind: ResourceKind<'_>, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Unavailable(format!(
        "the engine's inventory cannot be read: {e}: {}",
        sync_hint(kind)
    ))
}

fn unreadable(kind: ResourceKind<'_>, e: impl std::fmt::Display) -> ClusterError {
    ClusterError::Failed(format!(
        "the inventory's {kind} objects cannot be read: {e}"
    ))
}

/// Whether `objects` (a kind's objects by name) is `{}`.
fn is_empty(objects: &str) -> bool {
    objects.strip_prefix('{').map(str::trim_start) == Some("}")
}

impl<'d> Inventory<'d> {
    /// The inventory in `data`, the data document's text. A document without one, or one that
    /// cannot be read, holds nothing, and says why.
    pub fn from_data(data: Option<&'d str>) -> Inventory<'d> {
        let inventory = match data {
            None => Err("the engine passed no data document".to_owned()),
            Some(data) => match member_at(data, &["inventory"]) {
                Err(e) => Err(format!(
                    "the engine's data document cannot be read as an inventory: {e}"
                )),
                Ok(found) => found
                    .value()
                    .filter(|inventory| !is_empty(inventory))
                    .ok_or_else(|| {
                        "the engine's data document has no inventory (data.inventory)".to_owned()
                    }),
            },
        };
        Inventory { inventory }
    }

    /// The member at `path` of the inventory: `None` when absent, an error when the inventory
    /// is missing or cannot be read, which names what replicates `kind`.
    fn at(&self, path: &[&str], kind: ResourceKind<'_>) -> Result<Option<&'d str>, ClusterError> {
        let inventory = (self.inventory.as_ref())
            .map_err(|why| ClusterError::Unavailable(format!("{why}: {}", sync_hint(kind))))?;
        let found = member_at(inventory, path).map_err(|e| inventory_unreadable(kind, e))?;
        Ok(found.value())
    }

    /// The objects of `kind` by name: the cluster-scoped ones (`namespace` `None`) or those of
    /// one namespace.
    fn objects(
        &self,
        kind: ResourceKind<'_>,
        namespace: Option<&str>,
    ) -> Result<Option<&'d str>, ClusterError> {
        let (api_version, name) = (kind.api_version, kind.kind);
        match namespace {
            None => self.at(&["cluster", api_version, name], kind),
            Some(namespace) => self.at(&["namespace", namespace, api_version, name], kind),
        }
    }

    /// The sets of `kind`'s objects by name the inventory holds: the cluster-scoped one and each
    /// namespace's (`namespace` `Some`: only that one's). The kind held nowhere is
    /// [`no_objects`]: the engine was not asked to replicate it, or is still at it.
    fn sets(
        &self,
        kind: ResourceKind<'_>,
        namespace: Option<&str>,
    ) -> Result<Vec<&'d str>, ClusterError> {
        let mut sets: Vec<&'d str> = self.objects(kind, None)?.into_iter().collect();
        let mut in_namespace = None;
        let namespaces = self.at(&["namespace"], kind)?.unwrap_or("{}");
        // Each namespace's objects read from its own text, in the one pass over the namespaces.
        for (name, held) in members(namespaces).map_err(|e| unreadable(kind, e))? {
            let objects = member_at(held, &[kind.api_version, kind.kind])
                .map_err(|e| inventory_unreadable(kind, e))?
                .value();
            if Some(name.as_str()) == namespace {
                in_namespace = objects;
            }
            sets.extend(objects);
        }
        if sets.is_empty() {
            return Err(no_objects(kind));
        }
        match namespace {
            None => Ok(sets),
            Some(_) => Ok(in_namespace.into_iter().collect()),
        }
    }
}

impl Cluster for Inventory<'_> {
    /// The inventory is as old as the engine's replication: the freshness asked cannot ask for
    /// newer. An object its kind's objects do not hold is `Failed`, as a GET of one that does
    /// not exist fails; a kind the inventory holds nothing of is `Unavailable`.
    fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
        if let Some(objects) = self.objects(q.kind, q.namespace)? {
            let found = member_at(objects, &[q.name]).map_err(|e| unreadable(q.kind, e))?;
            if let Some(object) = found.value() {
                return Ok(object.to_owned());
            }
        }
        // Off the path of an object found: a kind held nowhere, or only as `{}`, cannot say an
        // object does not exist (every cluster has Namespaces).
        if self.sets(q.kind, None)?.into_iter().all(is_empty) {
            return Err(no_objects(q.kind));
        }
        let at = (q.namespace)
            .map(|ns| format!(" in namespace {ns:?}"))
            .unwrap_or_default();
        Err(ClusterError::Failed(format!(
            "the engine's inventory holds no {} {:?}{at}",
            q.kind, q.name
        )))
    }

    /// The inventory's objects of the kind that the query's namespace and label selector
    /// select, as a `List`'s text (whole objects: an inventory cannot cut fields).
    fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
        let selector = SelectorQuery::parse(q.label_selector.unwrap_or_default())
            .map_err(ClusterError::Failed)?;
        let mut list = String::from(r#"{"items":["#);
        let mut first = true;
        for objects in self.sets(q.kind, q.namespace)? {
            for (_, object) in members(objects).map_err(|e| unreadable(q.kind, e))? {
                let labels = (member_at(object, &["metadata", "labels"]))
                    .map_err(|e| unreadable(q.kind, e))?;
                let labels = parse_labels(labels.value()).map_err(|e| unreadable(q.kind, e))?;
                if !selector.matches(&labels) {
                    continue;
                }
                if !first {
                    list.push(',');
                }
                first = false;
                list.push_str(object);
            }
        }
        list.push_str("]}");
        Ok(list)
    }

    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        NO_ANSWERS.can_i(question)
    }
}

#[cfg(test)]
mod tests {
    use taintguard::cluster::Freshness;

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
            Err(ClusterError::Failed(m)) if m.contains(r#"no v1/Namespace "team-b""#)
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
                "inventory cannot be read",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": []}}"#),
                "inventory cannot be read",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": {}}}"#),
                "holds no v1/Namespace",
                true,
            ),
            (
                Some(r#"{"inventory": {"cluster": {"v1": {"Node": {}}}}}"#),
                "holds no v1/Namespace",
                false,
            ),
            (
                Some(r#"{"inventory": {"cluster": {"v1": {"Namespace": { }, "Node": {}}}}}"#),
                "holds no v1/Namespace",
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

    /// Namespaced objects are read from `data.inventory.namespace`: got by namespace and name,
    /// listed in one namespace or across all, selected by label; a kind held nowhere is
    /// Unavailable, naming its group and version for Gatekeeper's sync.
    #[test]
    fn namespaced_objects_come_from_their_namespace() {
        let data = r#"{"inventory": {"cluster": {}, "namespace": {
            "team-a": {"v1": {"ConfigMap": {
                "limits": {"metadata": {"name": "limits", "namespace": "team-a", "labels": {"tier": "gold"}}},
                "other": {"metadata": {"name": "other", "namespace": "team-a"}}}}},
            "team-b": {"v1": {"ConfigMap": {
                "limits": {"metadata": {"name": "limits", "namespace": "team-b"}}}}},
            "team-c": {"apps/v1": {"Deployment": {}}}}}}"#;
        let inventory = Inventory::from_data(Some(data));
        let config_map = ResourceKind::new("v1", "ConfigMap");
        let get = |namespace, name| {
            inventory.get(&Get {
                kind: config_map,
                namespace,
                name,
                freshness: Freshness::Fresh,
            })
        };
        assert!(get(Some("team-a"), "limits").unwrap().contains("gold"));
        assert!(get(Some("team-b"), "limits").unwrap().contains("team-b"));
        for (namespace, name) in [
            (Some("team-c"), "limits"),
            (Some("team-a"), "x"),
            (None, "limits"),
        ] {
            assert!(
                matches!(get(namespace, name), Err(ClusterError::Failed(m)) if m.contains("holds no v1/ConfigMap")),
                "{namespace:?} {name}"
            );
        }
        let names = |namespace, label_selector| {
            let list = inventory
                .list(&List {
                    namespace,
                    label_selector,
                    ..List::all(config_map)
                })
                .unwrap();
            let list: serde_json::Value = serde_json::from_str(&list).unwrap();
            (list["items"].as_array().unwrap().iter())
                .map(|o| {
                    format!(
                        "{}/{}",
                        o["metadata"]["namespace"].as_str().unwrap(),
                        o["metadata"]["name"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(None, None),
            ["team-a/limits", "team-a/other", "team-b/limits"]
        );
        assert_eq!(names(Some("team-a"), Some("tier=gold")), ["team-a/limits"]);
        assert_eq!(names(Some("team-c"), None), Vec::<String>::new());
        let secret = ResourceKind::new("v1", "Secret");
        let deployment = ResourceKind::new("apps/v1", "Deployment");
        let unavailable = |kind, hint: &str| match inventory.list(&List::all(kind)) {
            Err(ClusterError::Unavailable(m)) => assert!(m.contains(hint), "{m}"),
            other => panic!("{kind}: {other:?}"),
        };
        unavailable(secret, r#"{group: "", version: v1, kind: Secret}"#);
        assert!(inventory.list(&List::all(deployment)).is_ok());
        let get_deployment = inventory.get(&Get {
            kind: deployment,
            namespace: Some("team-c"),
            name: "web",
            freshness: Freshness::Cached,
        });
        assert!(
            matches!(&get_deployment, Err(ClusterError::Unavailable(m)) if m.contains(r#"{group: "apps", version: v1, kind: Deployment}"#)),
            "{get_deployment:?}"
        );
    }
}
