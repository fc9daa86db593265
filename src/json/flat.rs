//! The string members of a small flat object, read without serde: a taint's `key`, `value` and
//! `effect`.

use super::scan;

/// The members `names` of the JSON object `text` when each is absent or a string without
/// escapes: their strings, borrowed (`None` for one that is absent). `None` for any other text,
/// a name given twice included, which the caller's serde reader then reads, or refuses in its
/// words; other members may hold anything, and are skipped.
///
/// Reading a taint's three fields with serde's derive cost 2.1k guest instructions a taint (a
/// call per token, each key matched by the derive), a tenth of a Node status update's; this
/// takes a quarter of that (benchmarks/cost.md, "Decision work, measured per function"). A
/// differential test holds it to serde_json: where it answers, serde reads the same strings.
///
/// # Examples
///
/// ```
/// use taintguard::json::plain_strings;
///
/// let taint = r#"{"key": "gpu", "effect": "NoSchedule", "timeAdded": null}"#;
/// let [key, value, effect] = plain_strings(taint, ["key", "value", "effect"]).unwrap();
/// assert_eq!((key, value, effect), (Some("gpu"), None, Some("NoSchedule")));
/// assert!(plain_strings(r#"{"key": "a\"b"}"#, ["key"]).is_none());
/// ```
pub fn plain_strings<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<&'a str>; N]> {
    let bytes = text.as_bytes();
    let mut found = [None; N];
    let mut at = scan::whitespace_end(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = scan::whitespace_end(bytes, at + 1);
    if bytes.get(at) != Some(&b'}') {
        loop {
            let key = plain_string(bytes, at)?;
            at = scan::whitespace_end(bytes, key.end + 1);
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at = scan::whitespace_end(bytes, at + 1);
            let end = match names
                .iter()
                .position(|name| name.as_bytes() == &bytes[key.clone()])
            {
                Some(i) if found[i].is_none() => {
                    let value = plain_string(bytes, at)?;
                    found[i] = Some(&text[value.clone()]);
                    value.end + 1
                }
                Some(_) => return None,
                None => scan::value_end(bytes, at).ok()?,
            };
            at = scan::whitespace_end(bytes, end);
            match bytes.get(at) {
                Some(b',') => at = scan::whitespace_end(bytes, at + 1),
                Some(b'}') => break,
                _ => return None,
            }
        }
    }
    (scan::whitespace_end(bytes, at + 1) == bytes.len()).then_some(found)
}

/// Where the string at `at` holds its characters, between its quotes, when it is a string
/// without escapes; its closing quote is at the range's end.
fn plain_string(bytes: &[u8], at: usize) -> Option<std::ops::Range<usize>> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    match scan::escaped_string_end(bytes, at + 1) {
        Ok((end, false)) => Some(at + 1..end - 1),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::JsonStr;

    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(borrow)]
        key: Option<JsonStr<'a>>,
        #[serde(borrow)]
        value: Option<JsonStr<'a>>,
        #[serde(borrow)]
        effect: Option<JsonStr<'a>>,
    }

    /// Wherever it answers, serde's derive reads the same strings; where serde reads plain
    /// strings and nothing else is odd, it answers.
    #[test]
    fn reads_what_serde_reads() {
        let doc = r#"{"effect":"NoSchedule", "key" : "example.com/gpu","timeAdded":"2025-04-10T08:00:03Z","x":[1,{"key":2}],"value":""}"#;
        let mut texts = crate::json::scan::cut_and_damaged(doc);
        texts.extend(
            [
                "{}",
                " { } ",
                r#"{"key":"a","key":"b"}"#,
                r#"{"key":"a\u0041"}"#,
                r#"{"k\u0065y":"a"}"#,
                r#"{"key":null}"#,
                r#"{"key":1}"#,
                r#"{"key":"a"} x"#,
                "[]",
            ]
            .map(String::from),
        );
        for text in texts {
            let serde = serde_json::from_str::<Fields>(&text)
                .ok()
                .map(|f| [f.key, f.value, f.effect].map(|s| s.map(|s| s.as_str().to_owned())));
            let read = plain_strings(&text, ["key", "value", "effect"])
                .map(|found| found.map(|s| s.map(str::to_owned)));
            if read.is_some() {
                assert_eq!(read, serde, "{text}");
            }
            let plain = !text.contains('\\') && !text.contains("null") && !text.contains(":1");
            if serde.is_some() && plain && !text.contains("\"key\":\"a\",\"key\"") {
                assert!(read.is_some(), "{text}");
            }
        }
    }
}
