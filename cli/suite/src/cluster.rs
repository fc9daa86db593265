//! A suite's cluster, answering a policy's questions as policy-server answers them from a real
//! API server: the nodes a label selector selects, a Namespace by name, and SubjectAccessReview
//! answers, a question no answer names being denied as RBAC denies what no role grants. The one
//! source of these answers: the waPC host calls of the workspace's `taintguard test` ([`answer`])
//! and the npm package's core `Cluster` (`SuiteCluster`) both read them here. (A kwctl session,
//! the other form of answers, is replayed by the engine.)

use serde_json::{json, Value};
use taintguard::cluster::{AccessQuestion, Cluster as CoreCluster, ClusterError, Freshness};
use taintguard::label_selector::SelectorQuery;

use crate::suite::Cluster;

/// The answer to the `kubewarden/kubernetes/<operation>` call with `request`.
///
/// # Errors
///
/// An operation or a list the suite's cluster does not answer, or a selector it cannot read;
/// the host gives the policy that error, as policy-server gives an API server's.
pub fn answer(cluster: &Cluster, operation: &str, request: &Value) -> Result<Value, String> {
    match operation {
        "list_resources_all" => list(cluster, request),
        "can_i" => {
            let review = &request["subject_access_review"];
            let attributes = &review["resource_attributes"];
            let user = review["user"].as_str().unwrap_or_default();
            let verb = attributes["verb"].as_str().unwrap_or_default();
            Ok(access(cluster, user, verb, attributes["name"].as_str()))
        }
        "get_resource" => {
            let (api_version, kind) = (&request["api_version"], &request["kind"]);
            if api_version != "v1" || kind != "Namespace" {
                return Err(format!(
                    "the test suite's cluster gets only v1 Namespaces, not {api_version} {kind}"
                ));
            }
            namespace(cluster, request["name"].as_str().unwrap_or_default())
        }
        other => Err(format!(
            "the test suite's cluster does not answer kubernetes/{other}"
        )),
    }
}

fn list(cluster: &Cluster, request: &Value) -> Result<Value, String> {
    let (api_version, kind) = (&request["api_version"], &request["kind"]);
    if api_version != "v1" || kind != "Node" {
        return Err(format!(
            "the test suite's cluster lists only v1 Nodes, not {api_version} {kind}"
        ));
    }
    nodes(
        cluster,
        request["label_selector"].as_str().unwrap_or_default(),
    )
}

/// The `List` of the nodes `selector` (the API's selector string; empty: every node) selects.
fn nodes(cluster: &Cluster, selector: &str) -> Result<Value, String> {
    let query = SelectorQuery::parse(selector)?;
    let items: Vec<&Value> = cluster
        .nodes
        .iter()
        .filter(|node| {
            let labels = &node["metadata"]["labels"];
            query.matches_with(|key| labels.get(key).and_then(Value::as_str))
        })
        .collect();
    Ok(json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}))
}

/// A Namespace by name; a name the suite does not give is an error, as policy-server answers a
/// get of an object that does not exist.
fn namespace(cluster: &Cluster, name: &str) -> Result<Value, String> {
    cluster
        .namespaces
        .iter()
        .find(|namespace| namespace["metadata"]["name"] == name)
        .cloned()
        .ok_or_else(|| {
            format!("Cannot find v1/Namespace named {name:?} (the test suite gives none)")
        })
}

/// The SubjectAccessReview status for `user` doing `verb` on `name`.
fn access(cluster: &Cluster, user: &str, verb: &str, name: Option<&str>) -> Value {
    let answer = cluster.can_i.iter().find(|answer| {
        answer.username == user
            && answer.verb == verb
            && answer
                .name
                .as_deref()
                .is_none_or(|wanted| name == Some(wanted))
    });
    match answer {
        Some(answer) => json!({"allowed": answer.allowed}),
        None => json!({"allowed": false, "reason": "no canI answer of the test suite grants it"}),
    }
}

/// The data document Kubewarden's gatekeeper mode passes a policy whose `contextAwareResources`
/// name Nodes and Namespaces: `{"inventory": {"cluster": {"v1": {<kind>: {<name>: object}}},
/// "namespace": {}}}`, a kind present only when the cluster has objects of it (policy-evaluator's
/// `GatekeeperInventory`).
pub fn inventory(cluster: &Cluster) -> Value {
    let by_name = |objects: &[Value]| -> serde_json::Map<String, Value> {
        (objects.iter())
            .map(|o| {
                (
                    o["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    o.clone(),
                )
            })
            .collect()
    };
    let mut v1 = serde_json::Map::new();
    for (kind, objects) in [("Namespace", &cluster.namespaces), ("Node", &cluster.nodes)] {
        if !objects.is_empty() {
            v1.insert(kind.to_owned(), Value::Object(by_name(objects)));
        }
    }
    let mut resources = serde_json::Map::new();
    if !v1.is_empty() {
        resources.insert("v1".to_owned(), Value::Object(v1));
    }
    json!({"inventory": {"cluster": resources, "namespace": {}}})
}

/// A suite's cluster as the core's [`CoreCluster`], for a policy built into the caller (the npm
/// package): the same answers as the waPC host calls get, with a failure the policy reports as
/// the Kubewarden build reports the host's.
pub struct SuiteCluster<'c>(pub &'c Cluster);

impl CoreCluster for SuiteCluster<'_> {
    fn list_nodes(&self, label_selector: Option<&str>) -> Result<String, ClusterError> {
        let list =
            nodes(self.0, label_selector.unwrap_or_default()).map_err(ClusterError::Failed)?;
        Ok(list.to_string())
    }

    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        let status = access(self.0, question.user, question.verb, question.name);
        Ok(status["allowed"] == true)
    }

    /// A suite's cluster is as fresh as it is: `freshness` changes nothing.
    fn get_namespace(&self, name: &str, _: Freshness) -> Result<String, ClusterError> {
        let namespace = namespace(self.0, name).map_err(ClusterError::Failed)?;
        Ok(namespace.to_string())
    }
}
