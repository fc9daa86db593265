//! A suite's cluster, answering a policy's questions as policy-server answers them from a real
//! API server: objects of any kind by name, lists of a kind (in a namespace or cluster-wide,
//! selected by label), and SubjectAccessReview answers, a question no answer names being denied
//! as RBAC denies what no role grants. The one source of these answers: the waPC host calls of
//! the workspace's `taintguard test` ([`answer`]), the gatekeeper inventory ([`inventory`]) and
//! the npm package's core `Cluster` ([`SuiteCluster`]) all read them here. (A kwctl session, the
//! other form of answers, is replayed by the engine.)

use serde_json::{json, Map, Value};
use taintguard::cluster::{
    AccessQuestion, Cluster as CoreCluster, ClusterError, Get, List, ResourceKind,
};
use taintguard::label_selector::SelectorQuery;

use crate::suite::Cluster;

/// `object` as a suite's cluster holds it: `kind` fills a missing `apiVersion` and `kind` (the
/// `nodes:` and `namespaces:` shorthands) and must agree with those given.
///
/// # Errors
///
/// A missing or non-string `apiVersion`, `kind` or `metadata.name`, or one `kind` contradicts,
/// named.
pub fn checked_object(mut object: Value, kind: Option<ResourceKind<'_>>) -> Result<Value, String> {
    let fields = object.as_object_mut().ok_or("an object is needed")?;
    if let Some(kind) = kind {
        for (field, wanted) in [("apiVersion", kind.api_version), ("kind", kind.kind)] {
            let given = fields.entry(field).or_insert_with(|| json!(wanted));
            if given != wanted {
                return Err(format!(
                    "`{field}` is {given}, where only {kind} objects go"
                ));
            }
        }
    }
    for (path, what) in [
        (&["apiVersion"][..], "`apiVersion`"),
        (&["kind"], "`kind`"),
        (&["metadata", "name"], "`metadata.name`"),
    ] {
        let found = path.iter().try_fold(&object, |v, key| v.get(key));
        if !found.is_some_and(Value::is_string) {
            return Err(format!("{what} must be given, as a string"));
        }
    }
    if !object["metadata"]["namespace"].is_null() && !object["metadata"]["namespace"].is_string() {
        return Err("`metadata.namespace` must be a string".to_owned());
    }
    Ok(object)
}

/// The kind, namespace and name of an object [`checked_object`] accepted.
fn identity(object: &Value) -> (ResourceKind<'_>, Option<&str>, &str) {
    (
        ResourceKind::new(str_at(&object["apiVersion"]), str_at(&object["kind"])),
        object["metadata"]["namespace"].as_str(),
        str_at(&object["metadata"]["name"]),
    )
}

/// `value`'s string, or empty.
fn str_at(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// The answer to the `kubewarden/kubernetes/<operation>` call with `request`.
///
/// # Errors
///
/// An operation the suite's cluster does not answer, an object it does not hold, or a selector
/// it cannot read; the host gives the policy that error, as policy-server gives an API server's.
pub fn answer(cluster: &Cluster, operation: &str, request: &Value) -> Result<Value, String> {
    let field = |key: &str| request[key].as_str();
    let kind = ResourceKind::new(str_at(&request["api_version"]), str_at(&request["kind"]));
    match operation {
        "list_resources_all" | "list_resources_by_namespace" => {
            let namespace = field("namespace");
            if operation == "list_resources_by_namespace" && namespace.is_none() {
                return Err("list_resources_by_namespace needs a `namespace`".to_owned());
            }
            let query = List {
                namespace,
                label_selector: field("label_selector"),
                ..List::all(kind)
            };
            list(cluster, &query)
        }
        "get_resource" => get(cluster, kind, field("namespace"), str_at(&request["name"])),
        "can_i" => {
            let review = &request["subject_access_review"];
            let attributes = &review["resource_attributes"];
            let user = review["user"].as_str().unwrap_or_default();
            let verb = attributes["verb"].as_str().unwrap_or_default();
            Ok(access(cluster, user, verb, attributes["name"].as_str()))
        }
        other => Err(format!(
            "the test suite's cluster does not answer kubernetes/{other}"
        )),
    }
}

/// The `List` of the objects `query` selects (whole objects: the suite's cluster does not cut
/// fields, which a host may leave undone).
fn list(cluster: &Cluster, query: &List<'_>) -> Result<Value, String> {
    let selector = SelectorQuery::parse(query.label_selector.unwrap_or_default())?;
    let items: Vec<&Value> = (cluster.objects.iter())
        .filter(|object| {
            let (kind, namespace, _) = identity(object);
            let labels = &object["metadata"]["labels"];
            kind == query.kind
                && (query.namespace.is_none() || namespace == query.namespace)
                && selector.matches_with(|key| labels.get(key).and_then(Value::as_str))
        })
        .collect();
    Ok(json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}))
}

/// The object of `kind` named `name` (in `namespace`); one the suite does not give is an error,
/// as policy-server answers a get of an object that does not exist.
fn get(
    cluster: &Cluster,
    kind: ResourceKind<'_>,
    namespace: Option<&str>,
    name: &str,
) -> Result<Value, String> {
    (cluster.objects.iter())
        .find(|object| identity(object) == (kind, namespace, name))
        .cloned()
        .ok_or_else(|| {
            let at = namespace
                .map(|ns| format!(" in namespace {ns:?}"))
                .unwrap_or_default();
            format!("Cannot find {kind} named {name:?}{at} (the test suite gives none)")
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
/// name the suite's kinds: `{"inventory": {"cluster": {<apiVersion>: {<kind>: {<name>: object}}},
/// "namespace": {<namespace>: {<apiVersion>: {<kind>: {<name>: object}}}}}}`, a kind present
/// only when the cluster has objects of it (policy-evaluator's `GatekeeperInventory`).
pub fn inventory(cluster: &Cluster) -> Value {
    let mut scoped = Map::new();
    let mut namespaced = Map::new();
    for object in &cluster.objects {
        let (kind, namespace, name) = identity(object);
        let under = match namespace {
            None => &mut scoped,
            Some(namespace) => member(&mut namespaced, namespace),
        };
        let kinds = member(under, kind.api_version);
        member(kinds, kind.kind).insert(name.to_owned(), object.clone());
    }
    json!({"inventory": {"cluster": scoped, "namespace": namespaced}})
}

/// The object member `key` of `map`, made empty if missing.
fn member<'m>(map: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    entry.as_object_mut().expect("only objects are inserted")
}

/// A suite's cluster as the core's [`CoreCluster`], for a policy built into the caller (the npm
/// package): the same answers as the waPC host calls get, with a failure the policy reports as
/// the Kubewarden build reports the host's.
pub struct SuiteCluster<'c>(pub &'c Cluster);

impl CoreCluster for SuiteCluster<'_> {
    /// A suite's cluster is as fresh as it is: the freshness asked changes nothing.
    fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
        let object = get(self.0, q.kind, q.namespace, q.name).map_err(ClusterError::Failed)?;
        Ok(object.to_string())
    }

    fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
        let list = list(self.0, q).map_err(ClusterError::Failed)?;
        Ok(list.to_string())
    }

    fn can_i(&self, question: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        let status = access(self.0, question.user, question.verb, question.name);
        Ok(status["allowed"] == true)
    }
}
