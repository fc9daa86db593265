//! A borrowed view of a Node object: the few fields the policy reads, and the Node written back
//! with the policy's edits.

use std::cell::OnceCell;

use taintguard::json::{fields_in, members, JsonStr, Object};
use taintguard::taint::{parse_taints, Taint};

/// Members are kept as their text, `null` included (`None`: absent), like
/// [`Raw`](taintguard::json::Raw).
pub struct NodeView<'a> {
    object: &'a Object<'a>,
    pub name: Option<JsonStr<'a>>,
    /// `metadata` and `spec`, read as their members in the request's pass (`None`: absent or
    /// `null`).
    metadata: Option<&'a Object<'a>>,
    spec: Option<&'a Object<'a>>,
    annotations: Option<&'a str>,
    unschedulable: Option<&'a str>,
    pub taints: Vec<Taint<'a>>,
    /// The annotations' members, read once on first use: each record the policy keeps, and the
    /// edit of them, reads the same object.
    annotation_members: OnceCell<Result<AnnotationMembers<'a>, String>>,
    /// Records that read as given, not as stored: where the seal vouches for another value
    /// (`seal.rs`). Empty unless records are sealed and one was written unjudged.
    counted: Vec<(String, Option<String>)>,
}

type AnnotationMembers<'a> = Vec<(JsonStr<'a>, &'a str)>;

/// A member's text unless it is absent or `null`.
fn non_null(text: Option<&str>) -> Option<&str> {
    text.filter(|t| *t != "null")
}

/// The changes a policy wants made to a Node.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NodeEdits {
    /// The new `spec.taints` array text.
    pub taints: Option<String>,
    pub unschedulable: Option<bool>,
    /// Annotations to set (`Some`) or remove (`None`), by key.
    pub annotations: Vec<(String, Option<String>)>,
}

impl NodeEdits {
    pub fn is_empty(&self) -> bool {
        *self == NodeEdits::default()
    }
}

impl<'a> NodeView<'a> {
    /// Views a Node, read as its members in the request's pass; `which` (`object`,
    /// `oldObject`) prefixes error messages.
    pub fn read(object: &'a Object<'a>, which: &str) -> Result<NodeView<'a>, String> {
        let metadata = object
            .object("metadata")
            .map_err(|e| format!("{which}: {e}"))?;
        let spec = object.object("spec").map_err(|e| format!("{which}: {e}"))?;
        // Each object's members found in one walk of it.
        let [name, annotations] = fields_in(metadata, ["name", "annotations"])
            .map_err(|e| format!("{which}.metadata: {e}"))?;
        let [taints, unschedulable] = fields_in(spec, ["taints", "unschedulable"])
            .map_err(|e| format!("{which}.spec: {e}"))?;
        let name = name
            .read_str()
            .map_err(|e| format!("{which}.metadata.name: {e}"))?;
        // Each taint is read from its own text, so serde's position is in that taint, not in
        // the list: the message says what is wrong without a path.
        let taints = parse_taints(taints.value()).map_err(|e| {
            format!(
                "{which}.spec.taints: {}",
                taintguard::json::error::message(&e)
            )
        })?;
        Ok(NodeView {
            object,
            name,
            metadata,
            spec,
            annotations: annotations.text(),
            unschedulable: unschedulable.text(),
            taints,
            annotation_members: OnceCell::new(),
            counted: Vec::new(),
        })
    }

    /// Reads `old`'s spec in place of this view's own: what the API server stores for a write
    /// of the `status` subresource, whatever spec its body carried.
    pub fn keep_spec_of(&mut self, old: &NodeView<'a>) {
        self.spec = old.spec;
        self.unschedulable = old.unschedulable;
        self.taints.clone_from(&old.taints);
    }

    /// `spec.unschedulable: true`, the cordon.
    pub fn cordoned(&self) -> bool {
        non_null(self.unschedulable) == Some("true")
    }

    /// The members of `metadata.annotations`; none when it is absent or `null`.
    fn annotation_members(&self) -> Result<&[(JsonStr<'a>, &'a str)], String> {
        let read = || match non_null(self.annotations) {
            Some(annotations) => {
                members(annotations).map_err(|e| format!("metadata.annotations: {e}"))
            }
            None => Ok(Vec::new()),
        };
        self.annotation_members
            .get_or_init(read)
            .as_deref()
            .map_err(Clone::clone)
    }

    /// Reads annotation `key` as `value`, whatever the node stores: what counts of a record the
    /// seal does not vouch for.
    pub fn count_as(&mut self, key: &str, value: Option<String>) {
        self.counted.push((key.to_owned(), value));
    }

    /// The string value of annotation `key`, as it counts.
    pub fn annotation(&self, key: &str) -> Result<Option<String>, String> {
        if let Some((_, value)) = self.counted.iter().find(|(k, _)| k == key) {
            return Ok(value.clone());
        }
        self.stored_annotation(key)
    }

    /// The string value of annotation `key`, as the node stores it.
    pub fn stored_annotation(&self, key: &str) -> Result<Option<String>, String> {
        for (k, v) in self.annotation_members()? {
            if k.as_str() == key {
                let value =
                    JsonStr::read(v).map_err(|e| format!("metadata.annotations.{key}: {e}"))?;
                return Ok(Some(value.0.into_owned()));
            }
        }
        Ok(None)
    }

    /// How many levels of arrays and objects the node's text nests, as its reader counted them
    /// ([`Object::nesting`]).
    pub fn nesting(&self) -> usize {
        self.object.nesting()
    }

    /// The node's text with `edits` made: written into `spec` and `metadata`, or as new
    /// members where the node has none.
    pub fn apply(&self, edits: &NodeEdits) -> Result<String, String> {
        let mut members: Vec<(&str, String)> = Vec::new();

        let mut spec_members: Vec<(&str, String)> = Vec::new();
        if let Some(taints) = &edits.taints {
            spec_members.push(("taints", taints.clone()));
        }
        if let Some(unschedulable) = edits.unschedulable {
            spec_members.push(("unschedulable", unschedulable.to_string()));
        }
        if !spec_members.is_empty() {
            let spec = match self.spec {
                Some(spec) => spec.write(&spec_members),
                None => object_text(spec_members.iter().map(|(k, v)| (*k, v.as_str()))),
            };
            members.push(("spec", spec));
        }

        if let Some(annotations) = self.edited_annotations(&edits.annotations)? {
            let metadata = match self.metadata {
                Some(metadata) => metadata.write(&[("annotations", annotations)]),
                None => object_text([("annotations", annotations.as_str())]),
            };
            members.push(("metadata", metadata));
        }
        Ok(self.object.write(&members))
    }
}

impl<'a> NodeView<'a> {
    /// The `metadata.annotations` object with `edits` made, or `None` when they change nothing.
    /// The object is written anew (two edits may touch neighbouring members); the members it
    /// keeps keep their value text.
    fn edited_annotations(
        &self,
        edits: &[(String, Option<String>)],
    ) -> Result<Option<String>, String> {
        if edits.is_empty() {
            return Ok(None);
        }
        let mut kept: Vec<(&str, String)> = self
            .annotation_members()?
            .iter()
            .map(|(k, v)| (k.as_str(), (*v).to_owned()))
            .collect();
        // Callers edit only what differs, so any edit of a present key, or any value set, is a
        // change. A duplicated key is written once.
        let mut changed = false;
        for (key, value) in edits {
            let first = kept.iter().position(|(k, _)| k == key);
            if let Some(i) = first {
                kept.retain(|(k, _)| k != key);
                if let Some(v) = value {
                    kept.insert(i, (key, json_string(v)));
                }
                changed = true;
            } else if let Some(v) = value {
                kept.push((key, json_string(v)));
                changed = true;
            }
        }
        Ok(changed.then(|| object_text(kept.iter().map(|(k, v)| (*k, v.as_str())))))
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    taintguard::json::write_str(&mut out, s);
    out
}

fn object_text<'k>(members: impl IntoIterator<Item = (&'k str, &'k str)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        taintguard::json::write_str(&mut out, key);
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}
