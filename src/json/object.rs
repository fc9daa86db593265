//! A JSON object read as its members, in the same pass as the document around it.

use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use super::scan::{self, Malformed};
use super::{JsonStr, Raw};

/// A JSON object read as its members: each key kept as its string literal (quotes and escapes
/// as written) and each value as its raw text, in document order, but for the members the views
/// read into: `metadata` and `spec`, a spec's `template` and `jobTemplate`, and a template's
/// `metadata` and `spec` are read as objects themselves ([`Object::object`]).
///
/// The request's `object` and `oldObject` are read this way in the one pass over the request, so
/// a policy's view finds the few members it needs (a Node's taints, a pod template's
/// tolerations) without walking any part of the object again: the rest, a Node's status above
/// all, is skipped once (benchmarks/cost.md, "One pass over the object"). An edit splices the
/// text ([`Object::write`], [`Object::write_in`]): all of it but the values it replaces is kept
/// byte for byte.
#[derive(Debug, Clone)]
pub struct Object<'a> {
    members: Vec<(Key<'a>, Member<'a>)>,
    /// The object's own text, braces included: the members' texts lie in it.
    text: &'a str,
    /// At most how many levels of arrays and objects its text nests, itself the first:
    /// [`scan::SHALLOW`] for each member kept as text, unless it is deeper, which makes this
    /// `usize::MAX`, as does a member an engine's own reader read.
    nesting: usize,
}

/// A member's key: its string literal as written, and whether it has escapes. Most keys have
/// none and are compared as they are: every member of every object read is compared with the
/// names the reader and the views look for.
#[derive(Debug, Clone, Copy)]
struct Key<'a> {
    literal: &'a str,
    escaped: bool,
}

impl Key<'_> {
    /// Whether the key is the string `name`: lengths first, which tell most keys apart.
    #[inline]
    fn is(&self, name: &str) -> bool {
        if self.escaped {
            return self.decoded_is(name);
        }
        // Bytes, not `str`s: slicing a `str` checks char boundaries.
        let literal = self.literal.as_bytes();
        literal.len() == name.len() + 2 && literal[1..=name.len()] == *name.as_bytes()
    }

    /// [`Key::is`] of a key with escapes, decoded first. Out of line: inlined, serde's decoding
    /// made every comparison set up its frame, and this one runs for every member of every
    /// object read, the views' lookups included (benchmarks/cost.md, "Decision work, measured
    /// per function").
    #[cold]
    #[inline(never)]
    fn decoded_is(&self, name: &str) -> bool {
        serde_json::from_str::<JsonStr<'_>>(self.literal).is_ok_and(|k| k.as_str() == name)
    }
}

/// A member's value.
#[derive(Debug, Clone)]
enum Member<'a> {
    Raw(&'a str),
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

/// Which members of an object are read as objects: where in a Kubernetes object, or in the
/// request around it, it is.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    /// An engine's envelope around the request (Kubewarden's `{"request", "settings"}`): its
    /// `request`.
    Envelope,
    /// An `AdmissionRequest`: its `object` and `oldObject`.
    Request,
    /// The object itself: its `metadata` and `spec`.
    Top,
    /// A `spec`: its pod `template` (workloads) or `jobTemplate` (CronJobs).
    Spec,
    /// A template: its `metadata` and `spec`.
    Template,
    /// A `metadata`, a taint, any object read for its members alone: none.
    Leaf,
}

impl Level {
    /// The level of member `key` when it is read as an object here.
    #[inline(always)]
    fn opens(self, key: Key<'_>) -> Option<Level> {
        match self {
            Level::Envelope if key.is("request") => Some(Level::Request),
            Level::Request if key.is("object") || key.is("oldObject") => Some(Level::Top),
            Level::Top | Level::Template if key.is("metadata") => Some(Level::Leaf),
            Level::Top | Level::Template if key.is("spec") => Some(Level::Spec),
            Level::Spec if key.is("template") || key.is("jobTemplate") => Some(Level::Template),
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
            Some(Member::Raw(value)) => Ok(Raw(Some(value))),
            Some(Member::Object(_)) => Err(format!("`{key}` is read as an object")),
        }
    }

    /// The members `names` as raw text, as [`Object::get`] finds each, in one pass over the
    /// members: the request's seven fields are found in one walk of its members instead of
    /// seven (benchmarks/cost.md, "The request's own reader").
    ///
    /// # Errors
    ///
    /// As [`Object::get`], for the first name in error.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::json::Object;
    ///
    /// let taint = Object::parse(r#"{"key": "k", "effect": "NoSchedule", "x": 1}"#).unwrap();
    /// let [key, value, effect] = taint.fields(["key", "value", "effect"]).unwrap();
    /// assert_eq!((key.text(), value.text(), effect.text()), (Some(r#""k""#), None, Some(r#""NoSchedule""#)));
    /// ```
    pub fn fields<const N: usize>(&self, names: [&str; N]) -> Result<[Raw<'a>; N], String> {
        let mut found = [Raw(None); N];
        for (key, member) in &self.members {
            let Some(i) = names.iter().position(|name| key.is(name)) else {
                continue;
            };
            let name = names[i];
            if found[i].0.is_some() {
                return Err(format!("duplicate field `{name}`"));
            }
            found[i] = match member {
                Member::Raw(raw) => Raw(Some(raw)),
                Member::Object(_) => return Err(format!("`{name}` is read as an object")),
            };
        }
        Ok(found)
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
            Some(Member::Raw("null")) => Ok(None),
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
        let (_, member) = (self.members.iter().rev()).find(|(key, _)| key.is(name))?;
        match member {
            Member::Object(object) => object.follow(rest),
            Member::Raw(raw) => Some(Reached::Raw(raw, rest.len())),
        }
    }

    /// At most how many levels of arrays and objects the object's text nests, itself the first,
    /// as its reader told: each member kept as text nests at most `scan::SHALLOW` levels
    /// unless it nests deeper, which makes this `usize::MAX`, as does a member an engine's own
    /// reader read ([`Object::parse_reading`]). A mutation written from the object nests no
    /// deeper than this or than what it writes in, which engines then read back without a walk
    /// of its text (see [`super::nested_past`]).
    pub fn nesting(&self) -> usize {
        self.nesting
    }

    fn member(&self, key: &str) -> Result<Option<&Member<'a>>, String> {
        Ok(self.position(key)?.map(|i| &self.members[i].1))
    }

    /// Where the member `key` is among the members; an error when it is written twice.
    fn position(&self, key: &str) -> Result<Option<usize>, String> {
        let mut found = None;
        for (i, (k, _)) in self.members.iter().enumerate() {
            if k.is(key) && found.replace(i).is_some() {
                return Err(format!("duplicate field `{key}`"));
            }
        }
        Ok(found)
    }

    /// The object's text as it was read, braces included.
    pub fn text(&self) -> &'a str {
        self.text
    }

    /// The object's text with the members `edits` names set to their new JSON text: a member
    /// it has keeps its place, one it lacks is added at the end. Every other member is written
    /// as it was read.
    pub fn write(&self, edits: &[(&str, String)]) -> String {
        self.write_in(self, edits).unwrap_or_default()
    }

    /// The object's text with `target`, this object or one read within it ([`Object::follow`],
    /// [`Object::object`]), written with `edits` as [`Object::write`] writes them; `None` when
    /// `target` is neither.
    ///
    /// The text is spliced: copied as it was read, byte for byte and spacing included, up to
    /// each value an edit replaces and past it, and up to the end of the target's last member,
    /// where the members an edit adds go. Written member by member, with a run of untouched
    /// members per copy, the four objects on the way to a pod template's tolerations cost a
    /// copy per run (benchmarks/cost.md, "Splicing the mutated object").
    pub fn write_in(&self, target: &Object<'a>, edits: &[(&str, String)]) -> Option<String> {
        let (outer, inner) = (self.text.as_ptr() as usize, target.text.as_ptr() as usize);
        let within = outer <= inner && inner + target.text.len() <= outer + self.text.len();
        if !within {
            return None;
        }
        let at = |part: &str| super::span_in(self.text, part);
        let added: usize = edits.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
        let mut out = String::with_capacity(self.text.len() + added);
        let mut copied = 0;
        for (key, value) in &target.members {
            let Some((_, new)) = edits.iter().find(|(name, _)| key.is(name)) else {
                continue;
            };
            let replaced = at(value.text());
            out.push_str(&self.text[copied..replaced.start]);
            out.push_str(new);
            copied = replaced.end;
        }
        // Past the last member's value, or just inside the braces of an object without any.
        let end = match target.members.last() {
            Some((_, value)) => at(value.text()).end,
            None => at(target.text).start + 1,
        };
        out.push_str(&self.text[copied..end]);
        let mut first = target.members.is_empty();
        for (name, new) in edits {
            if !target.members.iter().any(|(key, _)| key.is(name)) {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                super::write_str(&mut out, name);
                out.push(':');
                out.push_str(new);
            }
        }
        out.push_str(&self.text[end..]);
        Some(out)
    }
}

impl<'a> Member<'a> {
    /// The member's value as it was read.
    fn text(&self) -> &'a str {
        match self {
            Member::Raw(raw) => raw,
            Member::Object(object) => object.text,
        }
    }
}

/// The members `names` of `object`, as [`Object::fields`] finds them; all absent when `object`
/// is.
///
/// # Errors
///
/// As [`Object::fields`].
pub fn fields_in<'a, const N: usize>(
    object: Option<&Object<'a>>,
    names: [&str; N],
) -> Result<[Raw<'a>; N], String> {
    object.map_or(Ok([Raw(None); N]), |object| object.fields(names))
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

/// Offered each member of an object (its key's literal, and the text from its value on): how
/// long the value it read in place is, or `None` to leave it to the reader.
pub trait MemberReader<'a>: FnMut(&str, &'a str) -> Option<usize> {}

impl<'a, F: FnMut(&str, &'a str) -> Option<usize>> MemberReader<'a> for F {}

/// Reads the object that begins at `at` (its `{`), the members `level` opens as objects too;
/// the offset past its `}`. `own`, if any, is offered this object's members first, not those of
/// the objects in it. A generic, not a `dyn`, and none for the objects inside: in a module
/// instantiated per request, a function pointer's first call costs the host a table
/// initialisation (benchmarks/cost.md, "Function tables and one buffer").
fn read<'a, R: MemberReader<'a>>(
    text: &'a str,
    at: usize,
    level: Level,
    mut own: Option<&mut R>,
) -> Result<(Object<'a>, usize), Unread> {
    let bytes = text.as_bytes();
    let mut members = Vec::with_capacity(16);
    let (mut deepest, mut deep) = (0, false);
    let end = scan::each_member(bytes, at, |key, escaped, at| {
        let key = Key {
            literal: &text[key],
            escaped,
        };
        let (value, end, nesting) = match level.opens(key) {
            _ if let Some(read) = own.as_mut().and_then(|own| own(key.literal, &text[at..])) => {
                let value = text.get(at..at + read).ok_or(Unread::Malformed(at))?;
                (Member::Raw(value), at + read, usize::MAX)
            }
            Some(inner) if bytes.get(at) == Some(&b'{') => {
                let (object, end) = read::<R>(text, at, inner, None)?;
                let nesting = object.nesting;
                (Member::Object(object), end, nesting)
            }
            Some(_) if text[at..].starts_with("null") => {
                (Member::Raw(&text[at..at + 4]), at + 4, 0)
            }
            opened => {
                let end = scan::value_end_deep(bytes, at, &mut deep)?;
                if opened.is_some() {
                    return Err(Unread::NotAnObject(at, end));
                }
                (Member::Raw(&text[at..end]), end, scan::SHALLOW)
            }
        };
        deepest = deepest.max(nesting);
        members.push((key, value));
        Ok(end)
    })?;
    let object = Object {
        members,
        text: &text[at..end],
        nesting: if deep {
            usize::MAX
        } else {
            deepest.saturating_add(1)
        },
    };
    Ok((object, end))
}

/// Why [`read`] stopped.
enum Unread {
    /// The text stops being JSON at this offset.
    Malformed(usize),
    /// The value at this range, which the level reads as an object, is none.
    NotAnObject(usize, usize),
}

impl From<Malformed> for Unread {
    fn from(Malformed(at): Malformed) -> Unread {
        Unread::Malformed(at)
    }
}

impl<'a> Object<'a> {
    /// Reads `text`, a Kubernetes object, as its members.
    ///
    /// # Errors
    ///
    /// `text` is no JSON object, or one of the members read as objects (see [`Object`]) is
    /// neither an object nor `null`: serde_json's words, with the path of the value
    /// (`invalid type: integer `5`, expected an object (at `metadata`)`).
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::json::Object;
    ///
    /// let node = Object::parse(r#"{"metadata": {"name": "n1"}, "status": {}}"#).unwrap();
    /// assert_eq!(node.object("metadata").unwrap().unwrap().get("name").unwrap().value(), Some(r#""n1""#));
    /// let err = Object::parse(r#"{"metadata": 5}"#).unwrap_err();
    /// assert_eq!(err, "invalid type: integer `5`, expected an object (at `metadata`)");
    /// ```
    pub fn parse(text: &'a str) -> Result<Object<'a>, String> {
        Object::parse_as(text, Level::Top)
    }

    /// [`Object::parse`], with `level` saying which members are read as objects.
    ///
    /// # Errors
    ///
    /// As [`Object::parse`].
    pub fn parse_as(text: &'a str, level: Level) -> Result<Object<'a>, String> {
        Object::parse_read_by(text, level, None::<&mut fn(&str, &str) -> Option<usize>>)
    }

    /// [`Object::parse_as`], with `own` offered each member of the object itself first: an
    /// engine's envelope hands its settings to serde where they begin, instead of their text
    /// being found first and read after (a second pass over a rule's settings:
    /// benchmarks/cost.md, "The request's own reader").
    ///
    /// # Errors
    ///
    /// As [`Object::parse`].
    pub fn parse_reading(
        text: &'a str,
        level: Level,
        own: &mut impl MemberReader<'a>,
    ) -> Result<Object<'a>, String> {
        Object::parse_read_by(text, level, Some(own))
    }

    fn parse_read_by<R: MemberReader<'a>>(
        text: &'a str,
        level: Level,
        own: Option<&mut R>,
    ) -> Result<Object<'a>, String> {
        let bytes = text.as_bytes();
        let start = scan::whitespace_end(bytes, 0);
        let read = match bytes.get(start) {
            Some(b'{') => read(text, start, level, own),
            _ => scan::value_end(bytes, start)
                .map_err(Unread::from)
                .and_then(|end| Err(Unread::NotAnObject(start, end))),
        };
        match read {
            Ok((object, end)) if scan::whitespace_end(bytes, end) == bytes.len() => Ok(object),
            Ok((_, end)) => Err(unread(text, Unread::Malformed(end))),
            Err(why) => Err(unread(text, why)),
        }
    }

    /// The member `key` read as an object, taken out of this one; `None` when absent or
    /// `null`. Its text stays, as a member kept as raw text, so that this object's text and
    /// its members still agree ([`Object::write_in`] splices the one by the others).
    ///
    /// # Errors
    ///
    /// As [`Object::object`].
    pub fn take_object(&mut self, key: &str) -> Result<Option<Object<'a>>, String> {
        let Some(i) = self.position(key)? else {
            return Ok(None);
        };
        let member = &mut self.members[i].1;
        match member {
            Member::Raw("null") => Ok(None),
            Member::Raw(_) => Err(format!("`{key}` is not read as an object")),
            Member::Object(object) => {
                let text = object.text;
                match std::mem::replace(member, Member::Raw(text)) {
                    Member::Object(object) => Ok(Some(object)),
                    Member::Raw(_) => Ok(None),
                }
            }
        }
    }
}

/// serde_json's words for why `text` could not be read, with the path of the value. The
/// scanner accepts what serde_json does, so serde_json finds the same fault; its message is the
/// one users of the earlier readers saw, and only a refused request pays for it.
fn unread(text: &str, why: Unread) -> String {
    let (error, path) = match why {
        Unread::Malformed(at) => match serde_json::from_str::<IgnoredAny>(text) {
            Err(e) => return super::error::describe(text, &e),
            // What serde_json refuses only where it decodes a string, as policy-server does
            // (super::scan): half a surrogate pair.
            Ok(_) => (
                format!("unpaired surrogate in a \\u escape at byte {at}"),
                super::walk::path_at(text, at),
            ),
        },
        Unread::NotAnObject(start, end) => (
            match serde_json::from_str::<AnObject>(&text[start..end]) {
                Err(e) => super::error::message(&e),
                Ok(_) => "expected an object".to_owned(),
            },
            super::walk::path_at(text, end),
        ),
    };
    super::error::with_path(error, &path)
}

/// What serde_json says of a value that is no object.
struct AnObject;

impl<'de> Deserialize<'de> for AnObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(AnObject)
    }
}

impl<'de> Visitor<'de> for AnObject {
    type Value = AnObject;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnObject, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(AnObject)
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
        let cases: [(&str, Edits, &str); 7] = [
            (
                r#"{ "a" : [1, 2] , "b":{"x" :1}}"#,
                &[],
                r#"{ "a" : [1, 2] , "b":{"x" :1}}"#,
            ),
            (
                r#"{ "a" : [1, 2] , "b":{"x" :1} }"#,
                &[("a", "3"), ("c", "4")],
                r#"{ "a" : 3 , "b":{"x" :1},"c":4 }"#,
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
            let object = Object::parse(text).unwrap();
            let edits: Vec<(&str, String)> =
                edits.iter().map(|(k, v)| (*k, v.to_string())).collect();
            let written = object.write(&edits);
            assert_eq!(written, want, "{text}");
            assert!(serde_json::from_str::<serde_json::Value>(&written).is_ok());
        }
        // A member taken out leaves its text, as a member kept as text.
        let mut request =
            Object::parse_as(r#"{"a":1, "object":{"k":1} ,"b":2,"c":3}"#, Level::Request).unwrap();
        assert!(request.take_object("object").unwrap().is_some());
        assert_eq!(request.get("object").unwrap().text(), Some(r#"{"k":1}"#));
        assert_eq!(
            request.write(&[("c", "4".into())]),
            r#"{"a":1, "object":{"k":1} ,"b":2,"c":4}"#
        );
    }

    #[test]
    fn finds_members_by_their_decoded_key_and_refuses_a_key_twice() {
        let object = Object::parse(r#"{"a":1,"\u0062":null,"c":{}}"#).unwrap();
        assert_eq!(object.get("a").unwrap().text(), Some("1"));
        assert_eq!(object.get("b").unwrap().text(), Some("null"));
        assert_eq!(object.get("z").unwrap().text(), None);
        let twice = Object::parse(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(twice.get("a").unwrap_err(), "duplicate field `a`");
        let err = Object::parse(r#""x""#).unwrap_err();
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
                r#"{"spec":{"template":{"metadata":{},"spec":{ "a" : 1,"x":true }}}}"#,
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
            let object = Object::parse(text).unwrap();
            let written = match object.follow(path) {
                Some(Reached::Object(target)) => object.write_in(target, &[("x", "true".into())]),
                _ => None,
            };
            assert_eq!(
                written.as_deref(),
                (!want.is_empty()).then_some(want),
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(object.text()).unwrap(),
                serde_json::from_str::<serde_json::Value>(text).unwrap(),
                "{text}"
            );
        }
        // An object read from another text is not one to write in.
        let (text, other_text) = (String::from("{}"), String::from("{}"));
        let (object, other) = (
            Object::parse(&text).unwrap(),
            Object::parse(&other_text).unwrap(),
        );
        assert_eq!(object.write_in(&other, &[("x", "1".into())]), None);
        // Only where a view reads: `status.spec` and `metadata.spec` stay raw.
        let node = Object::parse(r#"{"status":{"spec":1},"metadata":{"spec":2}}"#).unwrap();
        assert_eq!(node.get("status").unwrap().text(), Some(r#"{"spec":1}"#));
        let metadata = node.object("metadata").unwrap().unwrap();
        assert_eq!(metadata.get("spec").unwrap().text(), Some("2"));
        assert!(node.get("metadata").is_err());
        assert!(node.object("status").is_err());
    }

    /// The reader's own loop over members accepts what serde_json accepts as an object: every
    /// cut of a request and every byte of it replaced by each byte that means something in JSON.
    #[test]
    fn reads_as_objects_what_serde_json_reads_as_objects() {
        let doc = r#"{"request":{"uid":"1","kind":{"kind":"Pod"},"object":{"metadata":{"name":"p\"1\u0041"},"spec":{"template":{"spec":{"a":[1,-2.5e3,true,null]}}}}},"settings":{"rules":[]}}"#;
        let serde_reads = |text: &str| {
            serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| value.is_object())
        };
        let texts = crate::json::scan::cut_and_damaged(doc);
        for text in texts {
            let read = Object::parse_as(&text, Level::Leaf);
            assert_eq!(read.is_ok(), serde_reads(&text), "{text}: {read:?}");
            if serde_reads(&text) && Object::parse_as(&text, Level::Envelope).is_err() {
                // Only a member the envelope's levels read as an object can refuse it.
                let err = Object::parse_as(&text, Level::Envelope).unwrap_err();
                assert!(err.contains("expected an object"), "{text}: {err}");
            }
        }
    }

    /// What serde_json refuses only where it decodes a string is refused, and said where; a
    /// number beyond f64's range is read as serde_json skips it (super::scan).
    #[test]
    fn refuses_half_a_surrogate_pair() {
        for (text, said) in [
            (
                r#"{"kind":{"resourc\ud800e":1}}"#,
                "unpaired surrogate in a \\u escape at byte 17 (at `kind.`)",
            ),
            (
                r#"{"a":["\udc00"]}"#,
                "unpaired surrogate in a \\u escape at byte 7 (at `a[0]`)",
            ),
        ] {
            assert_eq!(Object::parse(text).unwrap_err(), said, "{text}");
        }
        assert!(Object::parse(r#"{"a":"\ud83d\ude00","b":1e308,"c":-1e400}"#).is_ok());
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

    /// The nesting an object tells bounds its text's, and a mutation written from it; a member
    /// nesting past the scanner's word makes it unknown.
    #[test]
    fn tells_at_most_how_deep_it_nests() {
        let deep = format!(
            "{}{}",
            "[".repeat(scan::SHALLOW + 1),
            "]".repeat(scan::SHALLOW + 1)
        );
        let shallow = format!("{}{}", "[".repeat(scan::SHALLOW), "]".repeat(scan::SHALLOW));
        // (text, the bound it tells)
        let cases = [
            ("{}".to_owned(), Some(1)),
            (r#"{"a":1}"#.to_owned(), Some(1 + scan::SHALLOW)),
            (r#"{"spec":{"template":{"spec":{}}}}"#.to_owned(), Some(4)),
            (
                r#"{"spec":null,"metadata":{"a":[]}}"#.to_owned(),
                Some(2 + scan::SHALLOW),
            ),
            (
                format!(r#"{{"status":{shallow}}}"#),
                Some(1 + scan::SHALLOW),
            ),
            (format!(r#"{{"status":{deep}}}"#), None),
            (format!(r#"{{"spec":{{"x":{deep}}}}}"#), None),
        ];
        for (text, bound) in cases {
            let object = Object::parse(&text).unwrap();
            let told = (object.nesting() != usize::MAX).then_some(object.nesting());
            assert_eq!(told, bound, "{text}");
            if let Some(n) = told {
                assert!(super::super::nested_past(&text, n).is_none(), "{text}");
            }
        }
    }

    #[test]
    fn follows_names_to_the_last_member_of_each() {
        let object = Object::parse(
            r#"{"spec":{"template":{"spec":{"a":{"b":1},"a":{"b":2}}}},"status":{"x":1},"spec":null}"#,
        )
        .unwrap();
        // `spec` twice: the last, `null`, counts.
        assert!(matches!(
            object.follow(&["spec"]),
            Some(Reached::Raw("null", 0))
        ));
        let object = Object::parse(
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
