//! A JSON object read as its members, in the same pass as the document around it.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{JsonStr, Raw};

/// A JSON object read as its members: each key kept as its string literal (quotes and escapes
/// as written) and each value as its raw text, in document order.
///
/// The request's `object` and `oldObject` are read this way in the one pass over the request, so
/// a policy's view reads the few members it needs (`metadata`, `spec`) without walking the
/// object again: the rest, a Node's status above all, is skipped once (benchmarks/cost.md). An
/// edit writes the object anew from its members ([`Object::write`]): every member it does not
/// edit keeps its text byte for byte; only the spacing between top-level members is not kept.
#[derive(Debug, Clone, Default)]
pub struct Object<'a> {
    members: Vec<(&'a RawValue, &'a RawValue)>,
}

impl<'a> Object<'a> {
    /// The member `key` as raw text (`null` kept; `None` when absent).
    ///
    /// # Errors
    ///
    /// `key` written twice. Kubernetes' decoder keeps the last one and serde's derived readers
    /// refuse the object; so does this, in serde's words.
    pub fn get(&self, key: &str) -> Result<Raw<'a>, String> {
        let mut found = None;
        for (k, value) in &self.members {
            if key_is(k.get(), key) && found.replace(value.get()).is_some() {
                return Err(format!("duplicate field `{key}`"));
            }
        }
        Ok(Raw(found))
    }

    /// The object's text with the members `edits` names set to their new JSON text: a member
    /// it has keeps its place, one it lacks is added at the end. Every other member is written
    /// as it was read.
    pub fn write(&self, edits: &[(&str, String)]) -> String {
        let length: usize = self
            .members
            .iter()
            .map(|(k, v)| k.get().len() + v.get().len() + 2)
            .sum();
        let mut out = String::with_capacity(length + 2);
        out.push('{');
        let mut member = |key: &str, value: &str| {
            if out.len() > 1 {
                out.push(',');
            }
            out.push_str(key);
            out.push(':');
            out.push_str(value);
        };
        let edit_of = |key: &str| edits.iter().find(|(name, _)| key_is(key, name));
        for (key, value) in &self.members {
            match edit_of(key.get()) {
                Some((_, new)) => member(key.get(), new),
                None => member(key.get(), value.get()),
            }
        }
        for (name, new) in edits {
            if !self.members.iter().any(|(key, _)| key_is(key.get(), name)) {
                let mut key = String::with_capacity(name.len() + 2);
                super::write_str(&mut key, name);
                member(&key, new);
            }
        }
        out.push('}');
        out
    }
}

/// Whether `key`, a JSON string literal, is the string `name`.
fn key_is(key: &str, name: &str) -> bool {
    let inner = key.get(1..key.len().saturating_sub(1)).unwrap_or_default();
    inner == name
        || (inner.contains('\\')
            && serde_json::from_str::<JsonStr<'_>>(key).is_ok_and(|k| k.as_str() == name))
}

impl<'de: 'a, 'a> Deserialize<'de> for Object<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Object<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Object { members })
            }
        }
        deserializer.deserialize_map(Members)
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
}
