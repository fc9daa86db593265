use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// A JSON string that borrows from the document unless it contains escapes.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct JsonStr<'a>(pub Cow<'a, str>);

impl<'a> JsonStr<'a> {
    pub fn borrowed(s: &'a str) -> Self {
        JsonStr(Cow::Borrowed(s))
    }

    pub fn as_str(&self) -> &str {
        &self.0
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
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| Raw(Some(raw.get())))
    }
}

/// The members of a JSON object, in document order, with their values as raw text.
pub fn members(object: &str) -> Result<Vec<(JsonStr<'_>, &RawValue)>, serde_json::Error> {
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
    de.deserialize_map(Members)
}

/// The member `key` of the JSON object `object`, as raw text (`null` kept); other members are
/// skipped without being decoded.
pub fn field<'a>(object: &'a str, key: &str) -> Result<Raw<'a>, serde_json::Error> {
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

/// Appends `s` to `out` as a JSON string literal.
pub fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    // Runs without anything to escape are copied whole; what needs escaping is ASCII, so every
    // cut falls on a character boundary.
    while let Some(i) = next_escape(&bytes[start..]) {
        let i = start + i;
        out.push_str(&s[start..i]);
        match bytes[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The first byte JSON must escape (`"`, `\\`, a control character), eight bytes at a time:
/// messages, warnings and tolerations are written through [`write_str`] on every request.
fn next_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero, or below `n` (n <= 0x80): its high bit in the result.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGHS;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let hits = below(x, 0x20)
            | below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1);
        if hits != 0 {
            // The lowest flagged byte is exact: borrows only run towards higher bytes.
            return Some(at + (hits.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

/// Appends `s` to `out` as `format!("{s:?}")` writes it, without the formatting machinery for
/// the common case: printable ASCII, which `Debug` only escapes at `"` and `\\`.
pub fn write_debug_str(out: &mut String, s: &str) {
    if s.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        out.reserve(s.len() + 2);
        out.push('"');
        for part in s.split_inclusive(['"', '\\']) {
            match part.strip_suffix(['"', '\\']) {
                Some(head) => {
                    out.push_str(head);
                    out.push('\\');
                    out.push_str(&part[head.len()..]);
                }
                None => out.push_str(part),
            }
        }
        out.push('"');
    } else {
        use std::fmt::Write;
        let _ = write!(out, "{s:?}");
    }
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
            "",
        ] {
            let mut out = String::new();
            write_str(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap(), "for {s:?}");
        }
    }

    /// Every byte value at every offset of a word, and strings of every length up to three
    /// words, escape as serde_json escapes them.
    #[test]
    fn write_str_finds_every_escape_at_every_offset() {
        for len in 0..24 {
            for at in 0..len {
                for b in 0u8..0x80 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    // Multi-byte characters around, whose bytes are all high.
                    let s = format!("é{}ü", std::str::from_utf8(&bytes).unwrap());
                    let mut out = String::new();
                    write_str(&mut out, &s);
                    assert_eq!(out, serde_json::to_string(&s).unwrap(), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn write_debug_str_writes_what_debug_writes() {
        for s in [
            "plain",
            "q\"uo\\te",
            "\"",
            "\\\\",
            "",
            "tab\t",
            "ünï",
            "it's",
            "{x}",
        ] {
            let mut out = String::from(">");
            write_debug_str(&mut out, s);
            assert_eq!(out, format!(">{s:?}"), "for {s:?}");
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
        assert_eq!(m[2].1.get(), r#"{"x":null}"#);
    }
}
