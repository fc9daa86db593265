//! JSON read into a tree that keeps key order and duplicate keys, so that "everything else is
//! kept" can be checked structurally: `serde_json::Value` sorts keys and would hide a reordering.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their members' order and duplicates.
#[derive(Debug, Clone, PartialEq)]
pub enum Tree {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(serde_json::Number),
    /// A string, unescaped.
    String(String),
    /// An array, in order.
    Array(Vec<Tree>),
    /// Members in document order, duplicates kept.
    Object(Vec<(String, Tree)>),
}

impl Tree {
    /// Reads `text` as JSON.
    ///
    /// # Errors
    ///
    /// `text` is not JSON.
    pub fn parse(text: &str) -> Result<Tree, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Whether an object anywhere in the tree names a member twice (serde_json keeps the last,
    /// this tree both, `get` the first).
    pub fn repeats_a_name(&self) -> bool {
        match self {
            Tree::Object(members) => members.iter().enumerate().any(|(i, (key, value))| {
                members[..i].iter().any(|(k, _)| k == key) || value.repeats_a_name()
            }),
            Tree::Array(items) => items.iter().any(Tree::repeats_a_name),
            _ => false,
        }
    }

    /// The first member named `key` of an object; `None` for a missing member or a non-object.
    pub fn get(&self, key: &str) -> Option<&Tree> {
        match self {
            Tree::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at `path`, a member name per level; `None` when a step is missing.
    pub fn at(&self, path: &[&str]) -> Option<&Tree> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    /// Removes the member at `path`, then every object on the path that is left empty (or was
    /// `null`): a policy that creates `spec` or `metadata.annotations` to hold an edit changes
    /// nothing else.
    pub fn strip(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            return;
        };
        let Tree::Object(members) = self else {
            return;
        };
        if rest.is_empty() {
            members.retain(|(k, _)| k != first);
            return;
        }
        for (_, child) in members.iter_mut().filter(|(k, _)| k == first) {
            child.strip(rest);
        }
        members.retain(|(k, v)| {
            k != first || !matches!(v, Tree::Null) && *v != Tree::Object(Vec::new())
        });
    }
}

impl<'de> Deserialize<'de> for Tree {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tree, D::Error> {
        struct TreeVisitor;
        impl<'de> Visitor<'de> for TreeVisitor {
            type Value = Tree;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Tree, E> {
                Ok(Tree::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Tree, E> {
                Ok(Tree::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Tree, E> {
                Ok(Tree::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Tree, E> {
                Ok(Tree::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Tree, E> {
                Ok(serde_json::Number::from_f64(v).map_or(Tree::Null, Tree::Number))
            }
            fn visit_str<E>(self, v: &str) -> Result<Tree, E> {
                Ok(Tree::String(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Tree::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    members.push(entry);
                }
                Ok(Tree::Object(members))
            }
        }
        deserializer.deserialize_any(TreeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_strips_emptied_parents() {
        let a = Tree::parse(r#"{"b":1,"a":{"x":[1,{"y":null}]},"spec":{"taints":[]}}"#).unwrap();
        let b = Tree::parse(r#"{"a":{"x":[1,{"y":null}]},"b":1}"#).unwrap();
        assert_ne!(a, b, "key order matters");
        let mut stripped = a.clone();
        stripped.strip(&["spec", "taints"]);
        assert_eq!(
            stripped,
            Tree::parse(r#"{"b":1,"a":{"x":[1,{"y":null}]}}"#).unwrap()
        );
    }
}
