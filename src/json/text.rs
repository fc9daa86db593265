use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A JSON string that borrows from the document unless it contains escapes.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct JsonStr<'a>(pub Cow<'a, str>);

impl<'a> JsonStr<'a> {
    /// `s`, already a string's text with no escapes (a plain string's characters), borrowed.
    pub fn borrowed(s: &'a str) -> Self {
        JsonStr(Cow::Borrowed(s))
    }

    /// The string, borrowed or decoded.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The string the JSON text `text` holds: borrowed as it is when written plainly, decoded
    /// here when its escapes are of one character (`decoded_str`), else decoded by serde
    /// (benchmarks/cost.md, "Decision work, measured per function").
    ///
    /// # Errors
    ///
    /// serde_json's, when `text` is no JSON string.
    pub fn read(text: &'a str) -> Result<JsonStr<'a>, serde_json::Error> {
        match super::flat::decoded_str(text) {
            Some(decoded) => Ok(JsonStr(decoded)),
            None => serde_json::from_str(text),
        }
    }
}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = JsonStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(JsonStr(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

/// A member that may be absent, kept as raw text when present, `null` included.
///
/// `Option<&RawValue>` turns `null` into `None`, which loses the place of the member: a later
/// insertion would then write the key a second time. `Raw` keeps the `null` text so that an edit
/// replaces it instead.
///
/// The text is that of a `&RawValue`: a value serde_json accepted.
#[derive(Clone, Copy, Default, Debug)]
pub struct Raw<'a>(pub Option<&'a str>);

impl<'a> Raw<'a> {
    /// The member's text, `null` included; `None` when the key is absent.
    pub fn text(&self) -> Option<&'a str> {
        self.0
    }

    /// The member's text unless it is absent or `null`.
    pub fn value(&self) -> Option<&'a str> {
        self.text().filter(|t| *t != "null")
    }

    /// The member read as a `T`, `T::default()` when it is absent or `null`.
    ///
    /// # Errors
    ///
    /// What serde_json found, with the path in the member where it found it
    /// ([`super::error::describe`]).
    pub fn read<T: Deserialize<'a> + Default>(&self) -> Result<T, String> {
        match self.value() {
            Some(text) => serde_json::from_str(text).map_err(|e| super::error::describe(text, &e)),
            None => Ok(T::default()),
        }
    }

    /// [`Raw::read`] of an `Option<JsonStr>` (a name, a namespace), without serde where the
    /// string's escapes are plain ([`JsonStr::read`]): serde's reader costs a name more
    /// (benchmarks/cost.md, "Few tolerations").
    ///
    /// # Errors
    ///
    /// As [`Raw::read`].
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::json::Raw;
    ///
    /// assert_eq!(Raw(Some(r#""web-1""#)).read_str().unwrap().unwrap().as_str(), "web-1");
    /// assert!(Raw(Some("null")).read_str().unwrap().is_none());
    /// let serde = Raw(Some("7")).read::<Option<taintguard::json::JsonStr>>();
    /// assert_eq!(Raw(Some("7")).read_str().unwrap_err(), serde.unwrap_err());
    /// ```
    pub fn read_str(&self) -> Result<Option<JsonStr<'a>>, String> {
        let read = |text| JsonStr::read(text).map_err(|e| super::error::describe(text, &e));
        self.value().map(read).transpose()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| Raw(Some(raw.get())))
    }
}

/// The members of a JSON object, in document order, with their values as raw text. Keys
/// without escapes, all that Kubernetes writes, are read by the request's scanner
/// (`flat::plain_keyed_members`); any other object by serde, which also words the errors.
pub fn members(object: &str) -> Result<Vec<(JsonStr<'_>, &str)>, serde_json::Error> {
    match super::flat::plain_keyed_members(object) {
        Some(members) => Ok(members),
        None => serde_members(object),
    }
}

/// [`members`] read by serde.
pub(super) fn serde_members(object: &str) -> Result<Vec<(JsonStr<'_>, &str)>, serde_json::Error> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(JsonStr<'de>, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(object);
    let members = de.deserialize_map(Members)?;
    // One object and nothing after it, as `serde_json::from_str` and the scanner read it.
    de.end()?;
    Ok((members.into_iter())
        .map(|(key, value)| (key, value.get()))
        .collect())
}

/// The member `key` of the JSON object `object`, as raw text (`null` kept; the first, if given
/// twice); other members are skipped without being decoded. Keys without escapes, all that
/// Kubernetes writes, are read by the request's scanner; any other object by serde, which also
/// words the errors.
pub fn field<'a>(object: &'a str, key: &str) -> Result<Raw<'a>, serde_json::Error> {
    match super::flat::plain_field(object, key) {
        Some(found) => Ok(found),
        None => serde_field(object, key),
    }
}

/// Whether `wanted` holds for the member `key` (as [`field`] finds it) of some item of the
/// JSON array `array`, asked of each item in order until it does, in one pass: the items after
/// that one are not read, nor checked (a Pod's spec was checked with its request). A Pod's
/// containers' resources: a Pod that requests CPU or memory has mostly said so in its first.
///
/// # Errors
///
/// `array` is not a JSON array of objects (serde_json's words), or `wanted`'s error.
///
/// # Examples
///
/// ```
/// use taintguard::json::any_item_field;
///
/// let containers = r#"[{"name": "a"}, {"resources": {"limits": {}}}, "never read"]"#;
/// let mut asked = Vec::new();
/// let found = any_item_field(containers, "resources", |resources| {
///     asked.push(resources.text());
///     Ok(resources.text().is_some())
/// });
/// assert_eq!(found, Ok(true));
/// assert_eq!(asked, [None, Some(r#"{"limits": {}}"#)]);
/// assert!(any_item_field("[1]", "resources", |_| Ok(false)).is_err());
/// ```
pub fn any_item_field<'a>(
    array: &'a str,
    key: &str,
    mut wanted: impl FnMut(Raw<'a>) -> Result<bool, String>,
) -> Result<bool, String> {
    if let Some(answer) = super::flat::plain_any_item_field(array, key, &mut wanted) {
        return answer;
    }
    let items =
        serde_json::from_str::<Vec<&RawValue>>(array).map_err(|e| super::error::message(&e))?;
    for item in items {
        let found = serde_field(item.get(), key).map_err(|e| super::error::message(&e))?;
        if wanted(found)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The member at `path` of the JSON object `object`, each name but the last naming an object
/// in the one before (absent when one on the way is absent or `null`), read up to that member
/// and no further: for a document its writer wrote whole, a host's answer, of which one member
/// is wanted near its start. What follows it is not checked, nor whether a key on the way comes
/// twice (the first counts, as in [`field`]). A Namespace from policy-server holds its
/// annotations first and its managed fields after them (benchmarks/cost.md,
/// "PodTolerationRestriction's reads").
///
/// # Errors
///
/// The text up to the member is not JSON, or a value on the way is no object: serde_json's
/// words, as [`field`] gives them.
///
/// # Examples
///
/// ```
/// use taintguard::json::member_at;
///
/// let namespace = r#"{"metadata": {"annotations": {"a": "b"}, "name": "n"}, "status": {}}"#;
/// let found = member_at(namespace, &["metadata", "annotations"]).unwrap();
/// assert_eq!(found.text(), Some(r#"{"a": "b"}"#));
/// assert_eq!(member_at(namespace, &["metadata", "labels"]).unwrap().text(), None);
/// assert_eq!(member_at(r#"{"metadata": null}"#, &["metadata", "labels"]).unwrap().text(), None);
/// assert!(member_at(r#"{"metadata": 7}"#, &["metadata", "labels"]).is_err());
/// ```
pub fn member_at<'a>(object: &'a str, path: &[&str]) -> Result<Raw<'a>, String> {
    if let Some(found) = super::flat::plain_member_at(object, path) {
        return Ok(found);
    }
    // The scanner refused the text on the way: serde reads each step, and words the errors.
    let mut found = Raw(Some(object));
    for name in path {
        let Some(object) = found.value() else {
            return Ok(Raw(None));
        };
        found = serde_field(object, name).map_err(|e| super::error::message(&e))?;
    }
    Ok(found)
}

/// [`field`] read by serde.
pub(super) fn serde_field<'a>(object: &'a str, key: &str) -> Result<Raw<'a>, serde_json::Error> {
    struct Find<'k>(&'k str);
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Raw<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut found = Raw(None);
            while let Some(k) = map.next_key::<JsonStr<'de>>()? {
                let value: &'de RawValue = map.next_value()?;
                if found.0.is_none() && k.as_str() == self.0 {
                    found = Raw(Some(value.get()));
                }
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(object);
    de.deserialize_map(Find(key))
}

/// Appends `s` to `out` as a JSON string literal, byte for byte as serde_json writes it:
/// `"`, `\\` and control characters escaped (`\n` and its kin short, the rest as `\u00XX`),
/// everything else, non-ASCII included, as it is.
///
/// # Examples
///
/// ```
/// let mut out = String::new();
/// taintguard::json::write_str(&mut out, "rule \"a\"\n");
/// assert_eq!(out, r#""rule \"a\"\n""#);
/// ```
pub fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut at = 0;
    loop {
        // Sixteen bytes a turn (`plain_run_end`): warnings and messages are most of what a
        // response escapes, and nearly all have a quote or two in 150-300 bytes
        // (benchmarks/cost.md, "The timeout's checks").
        let plain = super::scan::plain_run_end(bytes, at);
        out.push_str(&s[at..plain]);
        let Some(&byte) = bytes.get(plain) else {
            break;
        };
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        // Every byte that is escaped is ASCII, so the next one starts a character.
        at = plain + 1;
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_str_escapes_like_serde_json() {
        for s in [
            "plain",
            "quote\"back\\slash",
            "ctl\u{1}\n\t\r",
            "ünï\u{7f}",
            "\u{1f} ~",
            "",
            "eight by\"tes and more after a quote in the second word",
            "\u{7}\u{8}\u{b}\u{c}\u{1b}é\u{7f}\u{80}\u{10ffff}\\\\",
        ] {
            let mut out = String::new();
            write_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "for {s:?}");
        }
    }

    /// The word-at-a-time scan finds every byte that needs escaping, at every place in a word
    /// and in the bytes after the last whole word, and misses none beside another.
    #[test]
    fn write_str_escapes_every_byte_anywhere_like_serde_json() {
        for byte in 0..0x80u8 {
            for at in 0..19 {
                // After a stop, the bytes its borrow marks in a word too: `#` after `"`, `]`
                // after `\`, a space after a control character.
                for next in ["", "\"", "é", "\u{1}", "#", "]", " "] {
                    let s = format!(
                        "{}{}{next}{}",
                        "a".repeat(at),
                        char::from(byte),
                        "z".repeat(18 - at)
                    );
                    let mut out = String::new();
                    write_str(&mut out, &s);
                    assert_eq!(out, serde_json::to_string(&s).unwrap(), "for {s:?}");
                }
            }
        }
    }

    #[test]
    fn raw_keeps_null_and_absence_apart() {
        #[derive(serde::Deserialize)]
        struct Doc<'a> {
            #[serde(borrow, default)]
            a: Raw<'a>,
            #[serde(borrow, default)]
            b: Raw<'a>,
        }
        let doc: Doc = serde_json::from_str(r#"{"a": null}"#).unwrap();
        assert_eq!(doc.a.text(), Some("null"));
        assert_eq!(doc.a.value(), None);
        assert_eq!(doc.b.text(), None);
    }

    #[test]
    fn field_finds_one_member() {
        let doc = r#"{"a":{"deep":[1]},"b":null,"c":"x"}"#;
        assert_eq!(field(doc, "a").unwrap().text(), Some(r#"{"deep":[1]}"#));
        assert_eq!(field(doc, "b").unwrap().text(), Some("null"));
        assert_eq!(field(doc, "z").unwrap().text(), None);
        assert!(field("[1]", "a").is_err());
    }

    #[test]
    fn members_borrow_in_order() {
        let m = members(r#"{"z":1,"a\u0041":[2],"m":{"x":null}}"#).unwrap();
        let keys: Vec<_> = m.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["z", "aA", "m"]);
        assert_eq!(m[2].1, r#"{"x":null}"#);
        let plain = members(r#" {"z": 1 ,"a":[2], "m":{"x":null}} "#).unwrap();
        let plain: Vec<_> = plain.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(plain, [("z", "1"), ("a", "[2]"), ("m", r#"{"x":null}"#)]);
        // Anything after the object is not JSON, whichever reader reads it.
        for trailing in [r#"{"a":1} garbage"#, r#"{"\u0061":1} {}"#, r#"{"a":1},"#] {
            assert!(members(trailing).is_err(), "{trailing}");
        }
    }

    /// The scanner's members are serde's wherever it answers; it answers for keys without
    /// escapes.
    #[test]
    fn members_are_serdes() {
        let doc = r#"{"a":"x","b" : [1, {"c":null}],"d":"\u0041","a":2}"#;
        assert!(crate::json::flat::plain_keyed_members(doc).is_some());
        assert!(crate::json::flat::plain_keyed_members(r#"{"\u0061":1}"#).is_none());
        for text in crate::json::scan::cut_and_damaged(doc) {
            let serde = serde_members(&text).ok();
            let scanned = crate::json::flat::plain_keyed_members(&text);
            if let Some(scanned) = &scanned {
                let serde = serde.as_ref().expect("serde reads what the scanner reads");
                assert_eq!(scanned, serde, "{text}");
            }
        }
    }
}
