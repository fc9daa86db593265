//! A borrowed view of a Node object: the few fields the policy reads, with their places in the
//! text so that edits can be spliced in.

use serde::Deserialize;

use crate::admission::describe_error;
use crate::json::{members, JsonStr, Raw, Splice};
use crate::taint::{parse_taints, Taint};

#[derive(Deserialize)]
struct NodeDoc<'a> {
    #[serde(borrow, default)]
    metadata: Raw<'a>,
    #[serde(borrow, default)]
    spec: Raw<'a>,
}

#[derive(Deserialize, Default)]
struct MetaDoc<'a> {
    #[serde(borrow, default)]
    name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    annotations: Raw<'a>,
}

#[derive(Deserialize, Default)]
struct SpecDoc<'a> {
    #[serde(borrow, default)]
    taints: Raw<'a>,
    #[serde(borrow, default)]
    unschedulable: Raw<'a>,
}

pub struct NodeView<'a> {
    pub text: &'a str,
    pub name: Option<JsonStr<'a>>,
    metadata: Raw<'a>,
    annotations: Raw<'a>,
    spec: Raw<'a>,
    taints_raw: Raw<'a>,
    unschedulable: Raw<'a>,
    pub taints: Vec<Taint<'a>>,
}

/// The changes a policy wants made to a Node.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NodeEdits {
    /// The new `spec.taints` array text.
    pub taints: Option<String>,
    pub unschedulable: Option<bool>,
    /// `Some(Some(v))` sets the annotation, `Some(None)` removes it.
    pub annotation: Option<(String, Option<String>)>,
}

impl NodeEdits {
    pub fn is_empty(&self) -> bool {
        *self == NodeEdits::default()
    }
}

impl<'a> NodeView<'a> {
    /// Views a Node; `which` (`object`, `oldObject`) prefixes error messages.
    pub fn parse(text: &'a str, which: &str) -> Result<NodeView<'a>, String> {
        let err = |field: &str, e: serde_json::Error| {
            format!("{which}{field}: {}", describe_error(text, &e))
        };
        let doc: NodeDoc = serde_json::from_str(text).map_err(|e| err("", e))?;
        let meta: MetaDoc = match doc.metadata.value() {
            Some(m) => serde_json::from_str(m).map_err(|e| err(".metadata", e))?,
            None => MetaDoc::default(),
        };
        let spec: SpecDoc = match doc.spec.value() {
            Some(s) => serde_json::from_str(s).map_err(|e| err(".spec", e))?,
            None => SpecDoc::default(),
        };
        let taints = parse_taints(spec.taints.value()).map_err(|e| err(".spec.taints", e))?;
        Ok(NodeView {
            text,
            name: meta.name,
            metadata: doc.metadata,
            annotations: meta.annotations,
            spec: doc.spec,
            taints_raw: spec.taints,
            unschedulable: spec.unschedulable,
            taints,
        })
    }

    /// `spec.unschedulable: true`, the cordon.
    pub fn cordoned(&self) -> bool {
        self.unschedulable.value() == Some("true")
    }

    /// The string value of annotation `key`, with its raw text.
    pub fn annotation(&self, key: &str) -> Result<Option<(String, &'a str)>, String> {
        let Some(annotations) = self.annotations.value() else {
            return Ok(None);
        };
        let all = members(annotations).map_err(|e| format!("metadata.annotations: {e}"))?;
        for (k, v) in all {
            if k.as_str() == key {
                let value: JsonStr = serde_json::from_str(v.get())
                    .map_err(|e| format!("metadata.annotations.{key}: {e}"))?;
                return Ok(Some((value.0.into_owned(), v.get())));
            }
        }
        Ok(None)
    }

    /// The node's text with `edits` spliced in.
    pub fn apply(&self, edits: &NodeEdits) -> Result<String, String> {
        let mut splice = Splice::new(self.text);
        let mut root_members: Vec<(&str, String)> = Vec::new();

        let mut spec_members: Vec<(&str, String, Raw<'a>)> = Vec::new();
        if let Some(taints) = &edits.taints {
            spec_members.push(("taints", taints.clone(), self.taints_raw));
        }
        if let Some(unschedulable) = edits.unschedulable {
            spec_members.push((
                "unschedulable",
                unschedulable.to_string(),
                self.unschedulable,
            ));
        }
        if !spec_members.is_empty() {
            match self.spec.value() {
                Some(spec) => {
                    let mut inserts = Vec::new();
                    for (key, value, place) in spec_members {
                        match place.text() {
                            Some(existing) => splice.replace(existing, value),
                            None => inserts.push((key, value)),
                        }
                    }
                    if !inserts.is_empty() {
                        splice.insert_members(spec, &inserts);
                    }
                }
                None => {
                    let object = object_text(spec_members.iter().map(|(k, v, _)| (*k, v.as_str())));
                    match self.spec.text() {
                        Some(null) => splice.replace(null, object),
                        None => root_members.push(("spec", object)),
                    }
                }
            }
        }

        if let Some((key, value)) = &edits.annotation {
            let existing = self.annotation(key)?;
            match (value, existing) {
                (Some(v), Some((_, place))) => splice.replace(place, json_string(v)),
                (None, Some((_, place))) => {
                    let annotations = self.annotations.value().expect("an annotation was found");
                    splice
                        .remove_member(annotations, place)
                        .map_err(|e| e.to_string())?;
                }
                (None, None) => {}
                (Some(v), None) => {
                    let pair = [(key.as_str(), json_string(v))];
                    match (
                        self.annotations.value(),
                        self.annotations.text(),
                        self.metadata.value(),
                    ) {
                        (Some(annotations), _, _) => splice.insert_members(annotations, &pair),
                        (None, Some(null), _) => splice.replace(
                            null,
                            object_text(pair.iter().map(|(k, v)| (*k, v.as_str()))),
                        ),
                        (None, None, Some(metadata)) => splice.insert_members(
                            metadata,
                            &[(
                                "annotations",
                                object_text(pair.iter().map(|(k, v)| (*k, v.as_str()))),
                            )],
                        ),
                        (None, None, None) => {
                            let annotations =
                                object_text(pair.iter().map(|(k, v)| (*k, v.as_str())));
                            let metadata = object_text([("annotations", annotations.as_str())]);
                            match self.metadata.text() {
                                Some(null) => splice.replace(null, metadata),
                                None => root_members.push(("metadata", metadata)),
                            }
                        }
                    }
                }
            }
        }
        if !root_members.is_empty() {
            splice.insert_members(self.text, &root_members);
        }
        Ok(splice.finish())
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    crate::json::write_str(&mut out, s);
    out
}

fn object_text<'k>(members: impl IntoIterator<Item = (&'k str, &'k str)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        crate::json::write_str(&mut out, key);
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    out
}
