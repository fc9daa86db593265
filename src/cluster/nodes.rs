//! Nodes as the cluster lists them: what the policies read of each, borrowed from the list's text.

use serde::Deserialize;

use super::list::{list_items, unreadable_list};
use super::{ClusterError, ResourceKind};
use crate::json::{JsonStr, Raw};
use crate::taint::{parse_taints, Taint};

/// The fields the policies read of a listed Node, asked of the host as field masks: a Node's
/// image list and status are most of its text, and a list of thousands would carry them all.
pub const NODE_FIELDS: &[&str] = &["metadata.name", "metadata.labels", "spec.taints"];

/// One node as the cluster lists it: what the policies read of it, borrowed from the list's
/// text. The host selects nodes by label, so labels are not read here. Its taints are read as a
/// request's are.
#[derive(Debug, Clone)]
pub struct ClusterNode<'a> {
    /// The node's name.
    pub name: JsonStr<'a>,
    /// Its `spec.taints`.
    pub taints: Vec<Taint<'a>>,
}

#[derive(Deserialize)]
struct NodeText<'a> {
    #[serde(borrow, default)]
    metadata: Option<MetadataText<'a>>,
    #[serde(borrow, default)]
    spec: Option<SpecText<'a>>,
}

#[derive(Deserialize)]
struct MetadataText<'a> {
    #[serde(borrow, default)]
    name: JsonStr<'a>,
}

#[derive(Deserialize)]
struct SpecText<'a> {
    #[serde(borrow, default)]
    taints: Raw<'a>,
}

/// The nodes of a Kubernetes `List` of Nodes ([`list_items`]); `null` items is an empty list.
/// An answer that is not such a list is an error: a policy must not read "no nodes" into an
/// answer it cannot read.
pub fn nodes_of_list(text: &str) -> Result<Vec<ClusterNode<'_>>, ClusterError> {
    let nodes: Vec<NodeText> = list_items(text, ResourceKind::NODE)?;
    (nodes.into_iter())
        .map(|node| {
            let taints = node.spec.as_ref().and_then(|s| s.taints.value());
            Ok(ClusterNode {
                name: node.metadata.map(|m| m.name).unwrap_or_default(),
                taints: parse_taints(taints).map_err(|e| unreadable_list(ResourceKind::NODE, e))?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_are_read_or_refused() {
        let cases = [
            (r#"{"items": null}"#, Ok(0)),
            (
                r#"{"apiVersion": "v1", "kind": "List", "items": []}"#,
                Ok(0),
            ),
            (
                r#"{"items": [{"metadata": {"name": "n1", "labels": {"pool": "gpu"}},
                               "spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                                   {"key": "b", "value": "v", "effect": "NoExecute"}]}},
                              {"metadata": {"name": "n2"}}]}"#,
                Ok(2),
            ),
            ("[]", Err("cannot be read")),
            ("{}", Err("missing field `items`")),
            (
                r#"{"items": [{"spec": {"taints": [{"key": "a", "effect": 7}]}}]}"#,
                Err("cannot be read: invalid type: integer `7`, expected a string"),
            ),
            ("not json", Err("cannot be read")),
        ];
        for (text, want) in cases {
            match (nodes_of_list(text), want) {
                (Ok(nodes), Ok(n)) => assert_eq!(nodes.len(), n, "{text}"),
                (Err(ClusterError::Failed(e)), Err(fragment)) => {
                    assert!(e.contains(fragment), "{text}: {e}")
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        let nodes = nodes_of_list(cases[2].0).unwrap();
        assert_eq!(nodes[0].name.as_str(), "n1");
        assert_eq!(nodes[0].taints[1].describe(), "b=v:NoExecute");
        assert!(nodes[1].taints.is_empty());
    }
}
