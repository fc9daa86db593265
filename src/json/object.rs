//! A JSON object read as its members, in the same pass as the document around it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{JsonStr, Raw};

/// A JSON object read as its members: each key kept as its string literal (quotes and escapes
/// as written) and each value as its raw text, in document order, but for the members the views
/// read into: `metadata` and `spec`, a spec's `template` and `jobTemplate`, and a template's
/// `metadata` and `spec` are read as objects themselves ([`Object::object`]).
///
/// The request's `object` and `oldObject` are read this way in the one pass over the request, so
/// a policy's view finds the few members it needs (a Node's taints, a pod template's
/// tolerations) without walking any part of the object again: the rest, a Node's status above
/// all, is skipped once (benchmarks/cost.md). An edit writes the objects on the way to it anew
/// from their members ([`Object::write`], [`Object::write_at`]): every member it does not edit
/// keeps its text byte for byte; only the spacing between the members of those objects is not
/// kept.
#[derive(Debug, Clone, Default)]
pub struct Object<'a> {
    members: Vec<(&'a RawValue, Member<'a>)>,
}

/// A member's value.
#[derive(Debug, Clone)]
enum Member<'a> {
    Raw(&'a RawValue),
    /// One of the members views read into, itself read as its members.
    Object(Object<'a>),
}

/// Where [`Object::follow`] got to.
#[derive(Debug)]
pub enum Reached<'o, 'a> {
    /// A member read as an object (or the object itself, for no names).
    Object(&'o Object<'a>),
    /// A member kept as raw text: its text, and how many of the names are left to follow
    /// inside it.
    Raw(&'a str, usize),
}

/// Which members of an object are read as objects: where in a Kubernetes object it is.
#[derive(Debug, Clone, Copy)]
enum Level {
    /// The object itself: its `metadata` and `spec`.
    Top,
    /// A `spec`: its pod `template` (workloads) or `jobTemplate` (CronJobs).
    Spec,
    /// A template: its `metadata` and `spec`.
    Template,
    /// A `metadata`: none.
    Leaf,
}

impl Level {
    /// The level of member `key` when it is read as an object here.
    fn opens(self, key: &str) -> Option<Level> {
        match self {
            Level::Top | Level::Template if key_is(key, "metadata") => Some(Level::Leaf),
            Level::Top | Level::Template if key_is(key, "spec") => Some(Level::Spec),
            Level::Spec if key_is(key, "template") || key_is(key, "jobTemplate") => {
                Some(Level::Template)
            }
            _ => None,
        }
    }
}

impl<'a> Object<'a> {
    /// The member `key` as raw text (`null` kept; `None` when absent).
    ///
    /// # Errors
    ///
    /// `key` written twice. Kubernetes' decoder keeps the last one and serde's derived readers
    /// refuse the object; so does this, in serde's words. A member read as an object
    /// ([`Object::object`]) has no raw text here: asking for it is an error too.
    pub fn get(&self, key: &str) -> Result<Raw<'a>, String> {
        match self.member(key)? {
            None => Ok(Raw(None)),
            Some(Member::Raw(value)) => Ok(Raw(Some(value.get()))),
            Some(Member::Object(_)) => Err(format!("`{key}` is read as an object")),
        }
    }

    /// The member `key` read as an object in the request's pass; `None` when it is absent or
    /// `null`.
    ///
    /// # Errors
    ///
    /// `key` written twice, or `key` is no member read as an object (see [`Object`]).
    pub fn object(&self, key: &str) -> Result<Option<&Object<'a>>, String> {
        match self.member(key)? {
            None => Ok(None),
            Some(Member::Raw(value)) if value.get() == "null" => Ok(None),
            Some(Member::Object(object)) => Ok(Some(object)),
            Some(Member::Raw(_)) => Err(format!("`{key}` is not read as an object")),
        }
    }

    /// Follows `names` from member to member, as far as members read as objects go; `None`
    /// when a name is not there. Where a key is written twice, the last member counts, as in a
    /// `serde_json::Value` and in what the API server stores: a JSONPath of member names then
    /// finds what it would find in the whole object parsed, reading only the member it reaches.
    pub fn follow(&self, names: &[&str]) -> Option<Reached<'_, 'a>> {
        let Some((name, rest)) = names.split_first() else {
            return Some(Reached::Object(self));
        };
        let (_, member) = (self.members.iter().rev()).find(|(key, _)| key_is(key.get(), name))?;
        match member {
            Member::Object(object) => object.follow(rest),
            Member::Raw(raw) => Some(Reached::Raw(raw.get(), rest.len())),
        }
    }

    fn member(&self, key: &str) -> Result<Option<&Member<'a>>, String> {
        let mut found = None;
        for (k, value) in &self.members {
            if key_is(k.get(), key) && found.replace(value).is_some() {
                return Err(format!("duplicate field `{key}`"));
            }
        }
        Ok(found)
    }

    /// The object's text with the members `edits` names set to their new JSON text: a member
    /// it has keeps its place, one it lacks is added at the end. Every other member is written
    /// as it was read.
    pub fn write(&self, edits: &[(&str, String)]) -> String {
        let mut out = String::with_capacity(self.length() + 2);
        self.write_into(&mut out, edits);
        out
    }

    /// The object's text with the object at `path` (members read as objects, `spec` then
    /// `template`...) written with `edits`; `None` when one on the way is absent or `null`.
    pub fn write_at(&self, path: &[&str], edits: &[(&str, String)]) -> Option<String> {
        match path {
            [] => Some(self.write(edits)),
            [key, rest @ ..] => {
                let inner = self.object(key).ok()??.write_at(rest, edits)?;
                Some(self.write(&[(key, inner)]))
            }
        }
    }

    /// About how long the object's text is, to size what it is written into.
    fn length(&self) -> usize {
        (self.members.iter())
            .map(|(k, v)| {
                k.get().len()
                    + 2
                    + match v {
                        Member::Raw(raw) => raw.get().len(),
                        Member::Object(object) => object.length() + 2,
                    }
            })
            .sum()
    }

    fn write_into(&self, out: &mut String, edits: &[(&str, String)]) {
        out.push('{');
        let opened = out.len();
        let member = |out: &mut String, key: &str| {
            if out.len() > opened {
                out.push(',');
            }
            out.push_str(key);
            out.push(':');
        };
        let edit_of = |key: &str| edits.iter().find(|(name, _)| key_is(key, name));
        for (key, value) in &self.members {
            member(out, key.get());
            match (edit_of(key.get()), value) {
                (Some((_, new)), _) => out.push_str(new),
                (None, Member::Raw(raw)) => out.push_str(raw.get()),
                (None, Member::Object(object)) => object.write_into(out, &[]),
            }
        }
        for (name, new) in edits {
            if !self.members.iter().any(|(key, _)| key_is(key.get(), name)) {
                if out.len() > opened {
                    out.push(',');
                }
                super::write_str(out, name);
                out.push(':');
                out.push_str(new);
            }
        }
        out.push('}');
    }
}

/// The member `key` of `object`; absent when `object` is (a `metadata` or `spec` the object
/// lacks, or `null`, has no members).
///
/// # Errors
///
/// As [`Object::get`].
pub fn get_in<'a>(object: Option<&Object<'a>>, key: &str) -> Result<Raw<'a>, String> {
    object.map_or(Ok(Raw(None)), |object| object.get(key))
}

/// Whether `key`, a JSON string literal, is the string `name`.
fn key_is(key: &str, name: &str) -> bool {
    let inner = key.get(1..key.len().saturating_sub(1)).unwrap_or_default();
    let (a, b) = (inner.as_bytes(), name.as_bytes());
    // The two agree up to the key's first escape if they are to be equal: most keys differ
    // from the name at their first byte, and are told apart there without a scan for escapes
    // (every member of every object the views read is compared so, benchmarks/cost.md).
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if same == a.len() && same == b.len() {
        return true;
    }
    a.get(same) == Some(&b'\\')
        && serde_json::from_str::<JsonStr<'_>>(key).is_ok_and(|k| k.as_str() == name)
}

impl<'de: 'a, 'a> Deserialize<'de> for Object<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Members(Level::Top))
    }
}

/// Reads an object's members, those `Level` opens as objects.
struct Members(Level);

impl<'de> Visitor<'de> for Members {
    type Value = Object<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key::<&'de RawValue>()? {
            let value = match self.0.opens(key.get()) {
                Some(level) => map.next_value_seed(Opened(level))?,
                None => Member::Raw(map.next_value()?),
            };
            members.push((key, value));
        }
        Ok(Object { members })
    }
}

/// A member read as an object, or `null`. Anything else is refused: `metadata`, `spec` and a
/// pod template are objects in every kind the policies judge.
struct Opened(Level);

impl<'de> DeserializeSeed<'de> for Opened {
    type Value = Member<'de>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Member<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Opened {
    type Value = Member<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Member<'de>, A::Error> {
        Members(self.0).visit_map(map).map(Member::Object)
    }
    fn visit_unit<E: Error>(self) -> Result<Member<'de>, E> {
        Ok(Member::Raw(RawValue::NULL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_members_and_writes_them_back() {
        /// Members set by an edit: (key, new JSON text).
        type Edits = &'static [(&'static str, &'static str)];
        // (object, edits, written)
        let cases: [(&str, Edits, &str); 6] = [
            (
                r#"{ "a" : [1, 2] , "b":{"x" :1}}"#,
                &[],
                r#"{"a":[1, 2],"b":{"x" :1}}"#,
            ),
            (
                r#"{"a":1,"b":2}"#,
                &[("b", "[]"), ("c", "null")],
                r#"{"a":1,"b":[],"c":null}"#,
            ),
            (r#"{"\u0061":1}"#, &[("a", "2")], r#"{"\u0061":2}"#),
            (r#"{"q\"":1}"#, &[("q\"", "3")], r#"{"q\"":3}"#),
            ("{}", &[], "{}"),
            ("{}", &[("spec", "{}")], r#"{"spec":{}}"#),
        ];
        for (text, edits, want) in cases {
            let object: Object = serde_json::from_str(text).unwrap();
            let edits: Vec<(&str, String)> =
                edits.iter().map(|(k, v)| (*k, v.to_string())).collect();
            let written = object.write(&edits);
            assert_eq!(written, want, "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(&written).is_ok());
        }
    }

    #[test]
    fn finds_members_by_their_decoded_key_and_refuses_a_key_twice() {
        let object: Object = serde_json::from_str(r#"{"a":1,"\u0062":null,"c":{}}"#).unwrap();
        assert_eq!(object.get("a").unwrap().text(), Some("1"));
        assert_eq!(object.get("b").unwrap().text(), Some("null"));
        assert_eq!(object.get("z").unwrap().text(), None);
        let twice: Object = serde_json::from_str(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(twice.get("a").unwrap_err(), "duplicate field `a`");
        let err = serde_json::from_str::<Object>(r#""x""#).unwrap_err();
        assert!(err
            .to_string()
            .starts_with(r#"invalid type: string "x", expected an object"#));
    }

    /// The members views read into are read as objects, at their places in a Kubernetes
    /// object, and written back member for member.
    #[test]
    fn reads_the_views_members_as_objects_and_writes_at_a_path() {
        // (object, path, edits, written)
        type Case = (&'static str, &'static [&'static str], &'static str);
        let cases: [Case; 6] = [
            (
                r#"{"metadata":{"name":"n"},"spec":{"taints":[1]},"status":{"spec":{}}}"#,
                &["spec"],
                r#"{"metadata":{"name":"n"},"spec":{"taints":[1],"x":true},"status":{"spec":{}}}"#,
            ),
            (
                r#"{"spec":{"template":{"metadata":{},"spec":{ "a" : 1 }}}}"#,
                &["spec", "template", "spec"],
                r#"{"spec":{"template":{"metadata":{},"spec":{"a":1,"x":true}}}}"#,
            ),
            (
                r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"x":false}}}}}}"#,
                &["spec", "jobTemplate", "spec", "template", "spec"],
                r#"{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"x":true}}}}}}"#,
            ),
            (r#"{"spec":{}}"#, &["spec"], r#"{"spec":{"x":true}}"#),
            (r#"{"spec":null}"#, &["spec"], ""),
            (r#"{"metadata":{}}"#, &["spec"], ""),
        ];
        for (text, path, want) in cases {
            let object: Object = serde_json::from_str(text).unwrap();
            let written = object.write_at(path, &[("x", "true".into())]);
            assert_eq!(
                written.as_deref(),
                (!want.is_empty()).then_some(want),
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(&object.write(&[])).unwrap(),
                serde_json::from_str::<serde_json::Value>(text).unwrap(),
                "{text}"
            );
        }
        // Only where a view reads: `status.spec` and `metadata.spec` stay raw.
        let node: Object =
            serde_json::from_str(r#"{"status":{"spec":1},"metadata":{"spec":2}}"#).unwrap();
        assert_eq!(node.get("status").unwrap().text(), Some(r#"{"spec":1}"#));
        let metadata = node.object("metadata").unwrap().unwrap();
        assert_eq!(metadata.get("spec").unwrap().text(), Some("2"));
        assert!(node.get("metadata").is_err());
        assert!(node.object("status").is_err());
    }

    #[test]
    fn a_member_read_as_an_object_is_an_object_or_null() {
        for (text, path) in [
            (r#"{"spec":"x"}"#, "spec"),
            (r#"{"metadata":[]}"#, "metadata"),
            (r#"{"spec":{"template":7}}"#, "spec.template"),
        ] {
            let err = crate::admission::AdmissionRequest::parse(&format!(
                r#"{{"kind":{{"kind":"Pod"}},"operation":"CREATE","userInfo":{{}},"object":{text}}}"#
            ))
            .unwrap_err();
            assert!(
                err.to_string().contains("expected an object")
                    && err.to_string().contains(&format!("object.{path}")),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn follows_names_to_the_last_member_of_each() {
        let object: Object = serde_json::from_str(
            r#"{"spec":{"template":{"spec":{"a":{"b":1},"a":{"b":2}}}},"status":{"x":1},"spec":null}"#,
        )
        .unwrap();
        // `spec` twice: the last, `null`, counts.
        assert!(matches!(
            object.follow(&["spec"]),
            Some(Reached::Raw("null", 0))
        ));
        let object: Object = serde_json::from_str(
            r#"{"spec":{"template":{"spec":{"a":{"b":1},"a":{"b":2}}}},"status":{"x":1}}"#,
        )
        .unwrap();
        /// (names, where they lead: raw text and names left, or `("", 0)` for an object)
        type Case = (&'static [&'static str], Option<(&'static str, usize)>);
        let cases: [Case; 5] = [
            (
                &["spec", "template", "spec", "a", "b"],
                Some((r#"{"b":2}"#, 1)),
            ),
            (&["status", "x"], Some((r#"{"x":1}"#, 1))),
            (&["spec", "template", "spec", "z"], None),
            (&["nothing"], None),
            (&["spec", "template"], Some(("", 0))),
        ];
        for (names, want) in cases {
            let got = match object.follow(names) {
                None => None,
                Some(Reached::Raw(text, left)) => Some((text, left)),
                Some(Reached::Object(_)) => Some(("", 0)),
            };
            assert_eq!(got, want, "{names:?}");
        }
    }
}
