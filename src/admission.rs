//! A borrowed view of a Kubernetes `AdmissionRequest`: only the fields the policies read are
//! decoded; `object` and `oldObject` are read as their members, each kept as raw text for the
//! policy to view and edit (json::Object).

use serde::Deserialize;

use crate::json::{self, JsonStr, Level, Object};
use crate::principal::Principal;

/// What the request does to its object (`operation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// `CREATE`: a new object.
    Create,
    /// `UPDATE`: a change to an object; `oldObject` is the object as it was.
    Update,
    /// `DELETE`: the object's removal; `oldObject` is the object removed.
    Delete,
    /// `CONNECT`: a connection to a subresource (a Pod's `exec`, `attach`, `proxy`).
    Connect,
}

/// The kind of the request's object (`kind`), each part empty when absent.
#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind<'a> {
    /// The API group: empty for the core group (Nodes, Pods, Namespaces).
    #[serde(borrow, default)]
    pub group: JsonStr<'a>,
    /// The API version (`v1`).
    #[serde(borrow, default)]
    pub version: JsonStr<'a>,
    /// The kind (`Node`).
    #[serde(borrow, default)]
    pub kind: JsonStr<'a>,
}

/// Who sent the request (`userInfo`): what [`Principal`] reads.
#[derive(Debug, Default, Deserialize)]
pub struct UserInfo<'a> {
    /// The requester's username; empty when absent.
    #[serde(borrow, default)]
    pub username: JsonStr<'a>,
    /// The groups the requester is in.
    #[serde(borrow, default)]
    pub groups: Vec<JsonStr<'a>>,
}

/// The request's members are found by the one pass's own reader ([`Object::parse_as`]), which
/// skips what no policy reads for less than serde_json does; the few it reads are decoded with
/// serde from their text.
///
/// # Examples
///
/// ```
/// use taintguard::admission::{AdmissionRequest, Operation};
/// use taintguard::principal::Identity;
///
/// let text = r#"{"uid": "1", "kind": {"group": "", "version": "v1", "kind": "Node"},
///     "name": "worker-1", "operation": "UPDATE",
///     "userInfo": {"username": "system:node:worker-1", "groups": ["system:nodes"]},
///     "object": {"metadata": {"name": "worker-1"}}, "oldObject": null}"#;
/// let request = AdmissionRequest::parse(text).unwrap();
/// assert!(request.is_core("Node"));
/// assert_eq!(request.operation, Operation::Update);
/// assert_eq!(request.name.as_ref().unwrap().as_str(), "worker-1");
/// assert_eq!(request.principal().identity(), Identity::Node);
/// assert!(request.object.is_some() && request.old_object.is_none());
/// ```
#[derive(Debug)]
pub struct AdmissionRequest<'a> {
    /// The request's ID, which the engine's response repeats; empty when absent.
    pub uid: JsonStr<'a>,
    /// The kind of `object`.
    pub kind: GroupVersionKind<'a>,
    /// The subresource asked for (`status`); `None` for the main resource.
    pub sub_resource: Option<JsonStr<'a>>,
    /// The object's name, when the request names it.
    pub name: Option<JsonStr<'a>>,
    /// The object's namespace; `None` for an object of no namespace (a Node).
    pub namespace: Option<JsonStr<'a>>,
    /// What the request does.
    pub operation: Operation,
    /// Who sent it; [`AdmissionRequest::principal`] reads it.
    pub user_info: UserInfo<'a>,
    /// The object as the request would make it. `None` when absent or `null`.
    pub object: Option<Object<'a>>,
    /// The object as it was (`oldObject`, an UPDATE's or a DELETE's). `None` when absent or
    /// `null`.
    pub old_object: Option<Object<'a>>,
}

/// A request that could not be read: the message says which field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedRequest(pub String);

impl std::fmt::Display for MalformedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed admission request: {}", self.0)
    }
}

impl<'a> AdmissionRequest<'a> {
    /// Reads the request from `text`, an `AdmissionRequest` JSON object.
    ///
    /// # Errors
    ///
    /// `text` is no JSON object, a field the policies read is missing, given twice or of the
    /// wrong type: the message names the field (`invalid type: integer `7`, expected a string
    /// (at `userInfo.username`)`).
    pub fn parse(text: &'a str) -> Result<AdmissionRequest<'a>, MalformedRequest> {
        let members = Object::parse_as(text, Level::Request).map_err(MalformedRequest)?;
        AdmissionRequest::from_members(text, members)
    }

    /// The request from its members, read from `text` (its own text, or a document around it,
    /// which error paths are named in).
    ///
    /// # Errors
    ///
    /// As [`AdmissionRequest::parse`].
    pub fn from_members(
        text: &'a str,
        mut members: Object<'a>,
    ) -> Result<AdmissionRequest<'a>, MalformedRequest> {
        let object = members.take_object("object").map_err(MalformedRequest)?;
        let old_object = members.take_object("oldObject").map_err(MalformedRequest)?;
        let [uid, kind, sub_resource, name, namespace, operation, user_info] = members
            .fields([
                "uid",
                "kind",
                "subResource",
                "name",
                "namespace",
                "operation",
                "userInfo",
            ])
            .map_err(MalformedRequest)?;
        let required = |key: &str, member: json::Raw<'a>| {
            (member.text()).ok_or_else(|| MalformedRequest(format!("missing field `{key}`")))
        };
        Ok(AdmissionRequest {
            uid: optional(text, uid)?.unwrap_or_default(),
            kind: decoded(text, required("kind", kind)?)?,
            sub_resource: optional(text, sub_resource)?,
            name: optional(text, name)?,
            namespace: optional(text, namespace)?,
            operation: decoded(text, required("operation", operation)?)?,
            user_info: decoded(text, required("userInfo", user_info)?)?,
            object,
            old_object,
        })
    }

    /// The requester, as `userInfo` names it.
    pub fn principal(&self) -> Principal<'_> {
        Principal::new(self.user_info.username.as_str(), &self.user_info.groups)
    }

    /// True for the main resource of `kind` in the core group (not a subresource).
    pub fn is_core(&self, kind: &str) -> bool {
        self.kind.group.as_str().is_empty()
            && self.kind.kind.as_str() == kind
            && self.sub_resource.is_none()
    }
}

/// A field written the common way, read without serde's derive: the request's strings hold
/// no escapes and its `kind` is three of them (benchmarks/cost.md, "Decision work, measured
/// per function").
trait Plain<'a>: Sized {
    /// The value of `member` when it is written plainly; `None` for serde to read.
    fn plain(member: &'a str) -> Option<Self>;
}

impl<'a> Plain<'a> for JsonStr<'a> {
    fn plain(member: &'a str) -> Option<Self> {
        json::flat::plain_str(member).map(JsonStr::borrowed)
    }
}

impl<'a> Plain<'a> for GroupVersionKind<'a> {
    fn plain(member: &'a str) -> Option<Self> {
        let [group, version, kind] =
            json::flat::plain_strings(member, ["group", "version", "kind"])?;
        let field = |s: Option<&'a str>| s.map(JsonStr::borrowed).unwrap_or_default();
        Some(GroupVersionKind {
            group: field(group),
            version: field(version),
            kind: field(kind),
        })
    }
}

impl Plain<'_> for Operation {
    fn plain(member: &str) -> Option<Self> {
        match json::flat::plain_str(member)? {
            "CREATE" => Some(Operation::Create),
            "UPDATE" => Some(Operation::Update),
            "DELETE" => Some(Operation::Delete),
            "CONNECT" => Some(Operation::Connect),
            _ => None,
        }
    }
}

impl<'a> Plain<'a> for UserInfo<'a> {
    fn plain(member: &'a str) -> Option<Self> {
        let (username, groups) = json::flat::plain_string_and_list(member, "username", "groups")?;
        Some(UserInfo {
            username: username.map(JsonStr::borrowed).unwrap_or_default(),
            groups: groups.unwrap_or_default(),
        })
    }
}

/// `member` of `text` decoded as a `T`; errors name its path in `text`.
fn decoded<'a, T: Deserialize<'a> + Plain<'a>>(
    text: &'a str,
    member: &'a str,
) -> Result<T, MalformedRequest> {
    if let Some(value) = T::plain(member) {
        return Ok(value);
    }
    serde_json::from_str(member)
        .map_err(|e| MalformedRequest(json::error::describe_in(text, member, &e)))
}

/// An optional member: `None` when absent or `null`.
fn optional<'a, T: Deserialize<'a> + Plain<'a>>(
    text: &'a str,
    member: json::Raw<'a>,
) -> Result<Option<T>, MalformedRequest> {
    member
        .value()
        .map(|member| decoded(text, member))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_requests_name_the_field() {
        let cases = [
            (
                r#"{"kind":{"kind":"Node"},"userInfo":{}}"#,
                "missing field `operation`",
            ),
            (
                r#"{"kind":{"kind":"Node"},"operation":"PATCH","userInfo":{}}"#,
                "unknown variant `PATCH`",
            ),
            (
                r#"{"kind":{"kind":"Node"},"operation":"UPDATE","userInfo":{"username":7}}"#,
                "invalid type: integer `7`, expected a string (at `userInfo.username`)",
            ),
            (r#"[1,2]"#, "invalid type"),
            (r#"{"kind":"#, "EOF while parsing"),
        ];
        for (text, want) in cases {
            let err = AdmissionRequest::parse(text).unwrap_err();
            assert!(err.to_string().contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn reads_only_what_it_needs() {
        let text = r#"{"uid":"1","kind":{"group":"","version":"v1","kind":"Node"},"resource":{"resource":"nodes"},
            "operation":"UPDATE","userInfo":{"username":"alice","groups":["a","b"],"extra":{"x":["y"]}},
            "object":{"metadata":{}},"oldObject":null,"dryRun":false,"options":{"kind":"UpdateOptions"}}"#;
        let req = AdmissionRequest::parse(text).unwrap();
        assert!(req.is_core("Node"));
        assert_eq!(req.operation, Operation::Update);
        assert_eq!(req.principal().groups.len(), 2);
        let object = req.object.as_ref().unwrap();
        assert!(object.object("metadata").unwrap().is_some());
        assert_eq!(object.write(&[]), r#"{"metadata":{}}"#);
        assert!(req.old_object.is_none());
    }
}
