//! An AdmissionReview as the API server sends it to a webhook, built from the parts a user knows:
//! the operation, who asks, and the object before and after, as `kubectl get -o yaml` prints
//! them. What the API server derives (the kind and resource, the name and namespace, the
//! authenticated groups, the options' kind) is derived here the same way.

use serde_json::{json, Map, Value};

/// An admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The kind of the request's `options`, as the API server writes it.
    fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
        }
    }
}

impl TryFrom<&str> for Operation {
    type Error = String;
    fn try_from(text: &str) -> Result<Operation, String> {
        match text.to_ascii_uppercase().as_str() {
            "CREATE" => Ok(Operation::Create),
            "UPDATE" => Ok(Operation::Update),
            "DELETE" => Ok(Operation::Delete),
            _ => Err(format!(
                "unknown operation {text:?}; expected CREATE, UPDATE or DELETE"
            )),
        }
    }
}

/// Who makes the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requester {
    /// A user by name, in `groups`; the API server adds `system:authenticated`.
    User {
        /// The username.
        name: String,
        /// The groups the request names, besides those the API server adds.
        groups: Vec<String>,
    },
    /// `namespace/name`: the username `system:serviceaccount:<namespace>:<name>` in the groups
    /// the API server gives every service account.
    ServiceAccount {
        /// The service account's namespace.
        namespace: String,
        /// The service account's name within its namespace.
        name: String,
    },
    /// No requester: what Kubewarden's audit scanner sends for a stored object.
    Nobody,
}

/// What a caller calls the requester's parts, for the errors [`Requester::from_parts`] gives:
/// a suite's fields, or the command's flags.
pub struct RequesterFields {
    /// The field or flag that names the username.
    pub user: &'static str,
    /// The field or flag that lists the user's groups.
    pub groups: &'static str,
    /// The field or flag that names a service account as `namespace/name`.
    pub service_account: &'static str,
}

/// The requester's parts as a suite (and the npm package's `buildRequest`) name them.
pub const SUITE_FIELDS: RequesterFields = RequesterFields {
    user: "user",
    groups: "groups",
    service_account: "serviceAccount",
};

impl Requester {
    /// The requester a `user` (with `groups`) or a `service_account` (`namespace/name`) names;
    /// no requester when neither is given.
    ///
    /// # Errors
    ///
    /// Both given, groups without a user, or a service account that is not `namespace/name`,
    /// each naming the part as `fields` calls it.
    pub fn from_parts(
        user: Option<String>,
        groups: Vec<String>,
        service_account: Option<&str>,
        fields: &RequesterFields,
    ) -> Result<Requester, String> {
        let RequesterFields {
            user: user_field,
            groups: groups_field,
            service_account: account_field,
        } = fields;
        match (user, service_account) {
            (Some(_), Some(_)) => Err(format!(
                "give `{user_field}` or `{account_field}`, not both"
            )),
            (Some(name), None) => Ok(Requester::User { name, groups }),
            (None, _) if !groups.is_empty() => Err(format!(
                "{groups_field}: only a `{user_field}` is given groups"
            )),
            (None, Some(text)) => {
                Requester::service_account(text).map_err(|e| format!("{account_field}: {e}"))
            }
            (None, None) => Ok(Requester::Nobody),
        }
    }

    /// A service account written `namespace/name`.
    ///
    /// # Errors
    ///
    /// Text that is not `namespace/name`.
    pub fn service_account(text: &str) -> Result<Requester, String> {
        match text.split_once('/') {
            Some((namespace, name))
                if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
            {
                Ok(Requester::ServiceAccount {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                })
            }
            _ => Err(format!("service account {text:?} is not `namespace/name`")),
        }
    }

    /// The username the API server authenticates the requester as; none for no requester.
    pub fn username(&self) -> Option<String> {
        match self {
            Requester::User { name, .. } => Some(name.clone()),
            Requester::ServiceAccount { namespace, name } => {
                Some(format!("system:serviceaccount:{namespace}:{name}"))
            }
            Requester::Nobody => None,
        }
    }

    fn user_info(&self) -> Value {
        const AUTHENTICATED: &str = "system:authenticated";
        match self {
            Requester::User { name, groups } => {
                let mut groups = groups.clone();
                if !groups.iter().any(|g| g == AUTHENTICATED) {
                    groups.push(AUTHENTICATED.to_owned());
                }
                json!({"username": name, "groups": groups})
            }
            Requester::ServiceAccount { namespace, .. } => json!({
                "username": self.username(),
                "groups": [
                    "system:serviceaccounts",
                    format!("system:serviceaccounts:{namespace}"),
                    AUTHENTICATED,
                ],
            }),
            Requester::Nobody => json!({}),
        }
    }
}

/// The parts of a review.
#[derive(Debug, Clone)]
pub struct Parts {
    /// The request's operation.
    pub operation: Operation,
    /// Who makes the request.
    pub requester: Requester,
    /// The object written: required but for DELETE.
    pub object: Option<Value>,
    /// The object stored before: required for UPDATE and DELETE, refused for CREATE.
    pub old_object: Option<Value>,
    /// `status` for a write to a status subresource.
    pub sub_resource: Option<String>,
    /// The UPDATE was a PATCH (`kubectl patch`, a strategic merge or JSON patch, server-side
    /// apply): the API server then sends `PatchOptions`.
    pub patch: bool,
    /// The request's `uid`, which the response must echo.
    pub uid: String,
}

/// The AdmissionReview (`admission.k8s.io/v1`) the API server would send for `parts`.
///
/// # Errors
///
/// An object missing for the operation, objects of two kinds or names, or an object without
/// `apiVersion` and `kind`.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use taintguard_suite::review::{review, Operation, Parts, Requester};
///
/// let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
/// let parts = Parts {
///     operation: Operation::Update,
///     requester: Requester::service_account("kube-system/node-controller").unwrap(),
///     object: Some(node.clone()),
///     old_object: Some(node),
///     sub_resource: None,
///     patch: true,
///     uid: "1".to_owned(),
/// };
/// let review = review(&parts).unwrap();
/// assert_eq!(review["request"]["resource"]["resource"], "nodes");
/// assert_eq!(
///     review["request"]["userInfo"]["username"],
///     "system:serviceaccount:kube-system:node-controller"
/// );
/// ```
pub fn review(parts: &Parts) -> Result<Value, String> {
    let operation = parts.operation;
    if parts.patch && operation != Operation::Update {
        return Err("only an UPDATE is a patch".to_owned());
    }
    let (object, old_object) = operation_objects(parts)?;
    let described = object.or(old_object).expect("one object at least");
    let (group, version, kind) = group_version_kind(described)?;
    if let (Some(object), Some(old)) = (object, old_object) {
        let same = |field: &str| object["metadata"][field] == old["metadata"][field];
        if group_version_kind(old)? != (group, version, kind) || !same("name") || !same("namespace")
        {
            return Err(
                "the object and the old object must be the same kind, name and namespace"
                    .to_owned(),
            );
        }
    }
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource(kind)});
    let mut request = Map::new();
    request.insert("uid".into(), json!(parts.uid));
    request.insert("kind".into(), gvk.clone());
    request.insert("resource".into(), gvr.clone());
    if let Some(sub_resource) = &parts.sub_resource {
        request.insert("subResource".into(), json!(sub_resource));
    }
    request.insert("requestKind".into(), gvk);
    request.insert("requestResource".into(), gvr);
    if let Some(sub_resource) = &parts.sub_resource {
        request.insert("requestSubResource".into(), json!(sub_resource));
    }
    name_from(&mut request, described);
    request.insert("operation".into(), json!(operation.as_str()));
    request.insert("userInfo".into(), parts.requester.user_info());
    request.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    request.insert(
        "oldObject".into(),
        old_object.cloned().unwrap_or(Value::Null),
    );
    request.insert("dryRun".into(), json!(false));
    let options_kind = match operation {
        Operation::Update if parts.patch => "PatchOptions",
        _ => operation.options_kind(),
    };
    request.insert(
        "options".into(),
        json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}),
    );
    Ok(envelope(request))
}

/// The object and the old object of `parts`, when its operation takes each that it has: a CREATE
/// the object alone, an UPDATE both, a DELETE the old object alone.
fn operation_objects(parts: &Parts) -> Result<(Option<&Value>, Option<&Value>), String> {
    let operation = parts.operation;
    Ok(match (operation, &parts.object, &parts.old_object) {
        (Operation::Create, Some(object), None) => (Some(object), None),
        (Operation::Create, _, Some(_)) => return Err("CREATE takes no old object".to_owned()),
        (Operation::Update, Some(object), Some(old)) => (Some(object), Some(old)),
        (Operation::Delete, None, Some(old)) => (None, Some(old)),
        (Operation::Delete, Some(_), _) => {
            return Err("DELETE takes no object, only the old object it deletes".to_owned())
        }
        (Operation::Update | Operation::Delete, _, None) => {
            return Err(format!("{} needs the old object", operation.as_str()))
        }
        (_, None, _) => return Err(format!("{} needs the object", operation.as_str())),
    })
}

/// The AdmissionReview Kubewarden's audit scanner sends for a stored `object`: a CREATE by no
/// requester whose uid is the object's, whose resource is the kind's name and which has no
/// options (docs/admission.md). With a `requester`, it asks what that requester's CREATE would
/// get instead; `uid` stands in for an object without one.
///
/// # Errors
///
/// An object without `apiVersion` and `kind`.
pub fn audit_review(object: &Value, requester: &Requester, uid: &str) -> Result<Value, String> {
    let (group, version, kind) = group_version_kind(object)?;
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let metadata = &object["metadata"];
    let mut request = Map::new();
    request.insert("uid".into(), json!(metadata["uid"].as_str().unwrap_or(uid)));
    request.insert("kind".into(), gvk.clone());
    request.insert(
        "resource".into(),
        json!({"group": group, "version": version, "resource": kind}),
    );
    request.insert("requestKind".into(), gvk);
    name_from(&mut request, object);
    request.insert("operation".into(), json!("CREATE"));
    request.insert("userInfo".into(), requester.user_info());
    request.insert("object".into(), object.clone());
    Ok(envelope(request))
}

/// Names the request after `object`, as the API server does: its `name` and `namespace`.
fn name_from(request: &mut Map<String, Value>, object: &Value) {
    let metadata = &object["metadata"];
    for field in ["name", "namespace"] {
        if let Some(value) = metadata[field].as_str() {
            request.insert(field.into(), json!(value));
        }
    }
}

/// `request` in its `admission.k8s.io/v1` AdmissionReview.
fn envelope(request: Map<String, Value>) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// The request inside an AdmissionReview, or the value itself when it is a bare AdmissionRequest
/// (kwctl accepts both).
pub fn admission_request(value: &Value) -> &Value {
    if value.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        &value["request"]
    } else {
        value
    }
}

/// `(group, version, kind)` of an object, from its `apiVersion` (`apps/v1`, or `v1` for the
/// core group) and `kind`.
fn group_version_kind(object: &Value) -> Result<(&str, &str, &str), String> {
    let api_version = object["apiVersion"]
        .as_str()
        .ok_or("the object has no `apiVersion` (write it as `kubectl get -o yaml` prints it)")?;
    let kind = object["kind"]
        .as_str()
        .ok_or("the object has no `kind` (write it as `kubectl get -o yaml` prints it)")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok((group, version, kind))
}

/// The resource of a kind: its lower-case plural, as the API server names the kinds these
/// policies judge.
fn resource(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if lower.ends_with('s') {
        format!("{lower}es")
    } else if let Some(stem) = lower.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{lower}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    }

    fn parts(operation: Operation, object: Option<Value>, old: Option<Value>) -> Parts {
        Parts {
            operation,
            requester: Requester::Nobody,
            object,
            old_object: old,
            sub_resource: None,
            patch: false,
            uid: "u".to_owned(),
        }
    }

    #[test]
    fn objects_the_operation_needs() {
        let cases = [
            (Operation::Create, Some(node("a")), None, Ok("Node")),
            (
                Operation::Create,
                None,
                None,
                Err("CREATE needs the object"),
            ),
            (
                Operation::Create,
                Some(node("a")),
                Some(node("a")),
                Err("CREATE takes no old object"),
            ),
            (
                Operation::Update,
                Some(node("a")),
                Some(node("a")),
                Ok("Node"),
            ),
            (
                Operation::Update,
                Some(node("a")),
                None,
                Err("UPDATE needs the old object"),
            ),
            (
                Operation::Update,
                Some(node("a")),
                Some(node("b")),
                Err("must be the same kind, name"),
            ),
            (Operation::Delete, None, Some(node("a")), Ok("Node")),
            (
                Operation::Delete,
                Some(node("a")),
                Some(node("a")),
                Err("DELETE takes no object"),
            ),
            (
                Operation::Create,
                Some(json!({"kind": "Node"})),
                None,
                Err("no `apiVersion`"),
            ),
        ];
        for (operation, object, old, want) in cases {
            let got = review(&parts(operation, object, old));
            match (got, want) {
                (Ok(review), Ok(kind)) => assert_eq!(review["request"]["kind"]["kind"], kind),
                (Err(e), Err(fragment)) => assert!(e.contains(fragment), "{e}"),
                (got, want) => panic!("{operation:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn derived_fields() {
        let daemon_set = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "flannel", "namespace": "kube-flannel"}});
        let review = review(&Parts {
            requester: Requester::User {
                name: "alice".to_owned(),
                groups: vec!["ops".to_owned()],
            },
            ..parts(Operation::Create, Some(daemon_set), None)
        })
        .unwrap();
        let request = &review["request"];
        assert_eq!(
            request["kind"],
            json!({"group": "apps", "version": "v1", "kind": "DaemonSet"})
        );
        assert_eq!(request["resource"]["resource"], "daemonsets");
        assert_eq!(request["namespace"], "kube-flannel");
        assert_eq!(request["oldObject"], Value::Null);
        assert_eq!(
            request["userInfo"]["groups"],
            json!(["ops", "system:authenticated"])
        );
        assert_eq!(request["options"]["kind"], "CreateOptions");
        for (kind, plural) in [
            ("Node", "nodes"),
            ("Pod", "pods"),
            ("NetworkPolicy", "networkpolicies"),
            ("Ingress", "ingresses"),
            ("CronJob", "cronjobs"),
        ] {
            assert_eq!(resource(kind), plural);
        }
        assert_eq!(Requester::Nobody.user_info(), json!({}));
        assert!(Requester::service_account("a").is_err());
        assert_eq!(Operation::try_from("update"), Ok(Operation::Update));
    }
}
