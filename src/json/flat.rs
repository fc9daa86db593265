//! JSON written plainly, read without serde: strings without escapes and objects whose keys
//! have none (a taint's fields, the request's strings, annotations and labels). Any other text
//! goes to serde, which also words the errors.

use std::borrow::Cow;

use super::{scan, JsonStr, Raw};

/// The members `names` of the JSON object `text` when each is absent or a string without
/// escapes: their strings, borrowed (`None` for one that is absent). `None` for any other text,
/// a name given twice included, which the caller's serde reader then reads, or refuses in its
/// words; other members may hold anything, and are skipped.
///
/// serde's derive read a taint's three fields with a call per token, each key matched by the
/// derive; this reads them for less (benchmarks/cost.md, "Decision work, measured per function"). A
/// differential test holds it to serde_json: where it answers, serde reads the same strings.
pub fn plain_strings<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<&'a str>; N]> {
    let bytes = text.as_bytes();
    let start = scan::whitespace_end(bytes, 0);
    let ((found, _), end) = plain_object_at::<N, OTHERS_SKIPPED>(text, start, names, None)?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some(found)
}

/// The strings [`plain_items_with_integer`] found in an item, and its integer.
pub type PlainFields<'a, const N: usize> = ([Option<&'a str>; N], Option<i64>);

/// An item's text, and the strings [`plain_strings`] found in it.
pub type PlainItem<'a, const N: usize> = (&'a str, [Option<&'a str>; N]);

/// The items of the JSON array `text` when each is an object [`plain_strings`] reads: each
/// item's text, and its strings. Read in one pass: a Node's taints split first and then read
/// one by one were read twice (benchmarks/cost.md, "Decision work, measured per function").
/// `None` for any other text.
pub fn plain_items<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<Vec<PlainItem<'a, N>>> {
    super::array::each_item(text, |at| {
        let ((found, _), end) = plain_object_at::<N, OTHERS_SKIPPED>(text, at, names, None)?;
        Some(((&text[at..end], found), end))
    })
}

/// The items of the JSON array `text` when each is an object [`plain_strings`] reads, its member
/// `integer` absent or a JSON integer an `i64` holds: each item's strings and integer. A pod
/// spec's tolerations (`tolerationSeconds`) were read by serde's derive, at more cost
/// (benchmarks/cost.md, "Strings with escapes"). `None` for any other text.
pub fn plain_items_with_integer<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
    integer: &str,
) -> Option<Vec<PlainFields<'a, N>>> {
    super::array::each_item(text, |at| {
        plain_object_at::<N, OTHERS_SKIPPED>(text, at, names, Some(integer))
    })
}

/// [`plain_items_with_integer`] of items with no member but `names` and `integer`: `None` also
/// for an item with any other, for the caller to read as it reads any item. Tolerations as a
/// namespace's annotation holds them, whose reader matches names in any case (Go's
/// `encoding/json`): skipped, `Key` would be lost.
pub fn plain_items_of_only<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
    integer: &str,
) -> Option<Vec<PlainFields<'a, N>>> {
    super::array::each_item(text, |at| {
        plain_object_at::<N, OTHERS_REFUSED>(text, at, names, Some(integer))
    })
}

/// What [`plain_object_at`] does with a member it was not asked for: skips it, or refuses the
/// object (`None`). A constant of each reader rather than a fifth argument: gathered with the
/// names and the integer into one struct, the arguments stopped being constants the optimiser
/// folds into the reader (taint-preservation's, which reads no integer, grew its integer branch
/// back).
const OTHERS_SKIPPED: bool = false;
/// See [`OTHERS_SKIPPED`].
const OTHERS_REFUSED: bool = true;

/// The string member `name` and the member `list`, a list of strings, of the JSON object `text`
/// (`None` for one that is absent), when each string has no escapes: an admission request's
/// `userInfo`, its username and groups, the groups as the request keeps them. `None` for any
/// other text, a name given twice or a `null` included, which the caller's serde reader then
/// reads, or refuses in its words.
/// serde's derive read a `userInfo` at more cost, on every request (benchmarks/cost.md,
/// "Strings with escapes").
pub fn plain_string_and_list<'a>(
    text: &'a str,
    name: &str,
    list: &str,
) -> Option<(Option<&'a str>, Option<Vec<JsonStr<'a>>>)> {
    let bytes = text.as_bytes();
    let (mut string, mut strings) = (None, None);
    let string_at = |at: usize| {
        let chars = plain_string(bytes, at)?;
        Some((&text[chars.clone()], chars.end + 1))
    };
    let end = each_member(text, scan::whitespace_end(bytes, 0), |key, at| {
        if key == name && string.is_none() {
            let (read, end) = string_at(at)?;
            string = Some(read);
            Some(end)
        } else if key == list && strings.is_none() {
            // Collected once, as kept: not as `&str`s collected again (see `plain_keyed_members`).
            let item = |at| string_at(at).map(|(read, end)| (JsonStr::borrowed(read), end));
            let (read, end) = super::array::each_item_at(bytes, at, item)?;
            strings = Some(read);
            Some(end)
        } else if key == name || key == list {
            None
        } else {
            scan::value_end(bytes, at).ok()
        }
    })?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some((string, strings))
}

/// [`plain_strings`] of the object that begins at `at`, and the offset past its `}`; with the
/// member `integer` too, when one is named, read as a JSON integer an `i64` holds; `None` for
/// any other member when `REFUSE_OTHERS` ([`OTHERS_REFUSED`]).
fn plain_object_at<'a, const N: usize, const REFUSE_OTHERS: bool>(
    text: &'a str,
    at: usize,
    names: [&str; N],
    integer: Option<&str>,
) -> Option<(PlainFields<'a, N>, usize)> {
    let bytes = text.as_bytes();
    let mut found = [None; N];
    let mut number = None;
    let end = each_member(text, at, |key, at| {
        match names.iter().position(|name| *name == key) {
            Some(i) if found[i].is_none() => {
                let value = plain_string(bytes, at)?;
                found[i] = Some(&text[value.clone()]);
                Some(value.end + 1)
            }
            Some(_) => None,
            None if integer == Some(key) && number.is_none() => {
                let (value, end) = plain_integer(bytes, at)?;
                number = Some(value);
                Some(end)
            }
            None if integer == Some(key) || REFUSE_OTHERS => None,
            None => scan::value_end(bytes, at).ok(),
        }
    })?;
    Some(((found, number), end))
}

/// The JSON integer at `at` (`-`? (`0` | [1-9][0-9]*), but not `-0`, and nothing after it a
/// number could go on with) when an `i64` holds it, and the offset past it; `None` for any other
/// value, for serde to read or refuse.
pub(crate) fn plain_integer(bytes: &[u8], at: usize) -> Option<(i64, usize)> {
    let negative = bytes.get(at) == Some(&b'-');
    let start = at + usize::from(negative);
    let digits = bytes[start.min(bytes.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let end = start + digits;
    // `-0` is a float to serde_json (negative zero), which no `i64` is.
    if digits == 0 || (bytes[start] == b'0' && (digits > 1 || negative)) {
        return None;
    }
    if let Some(b'.' | b'e' | b'E') = bytes.get(end) {
        return None;
    }
    // Summed on the number's side of zero, so that `i64::MIN` is read too.
    let mut value: i64 = 0;
    for digit in &bytes[start..end] {
        let digit = i64::from(digit - b'0');
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(digit)?
        } else {
            value.checked_add(digit)?
        };
    }
    Some((value, end))
}

/// The members of the JSON object `text` when no key has escapes: each key's string and its
/// value's text. `None` for any other text, which serde reads. Annotations and labels were read
/// by serde as `&RawValue`s, each found with the machinery it builds values with (benchmarks/
/// cost.md, "Decision work, measured per function").
///
/// The keys come as [`JsonStr`]s, what the callers keep, and room for eight members is made at
/// once: collected again from `&str`s and grown from empty, a Node's annotations cost a second
/// collection and the growth (benchmarks/cost.md, "Function tables and one buffer").
pub(super) fn plain_keyed_members(text: &str) -> Option<Vec<(JsonStr<'_>, &str)>> {
    let bytes = text.as_bytes();
    let mut members = Vec::with_capacity(8);
    let end = each_member(text, scan::whitespace_end(bytes, 0), |key, at| {
        let end = scan::value_end(bytes, at).ok()?;
        members.push((JsonStr::borrowed(key), &text[at..end]));
        Some(end)
    })?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some(members)
}

/// The first member `key` of the JSON object `text` when no key has escapes, as raw text (`null`
/// kept; absent as `Raw(None)`), every value checked on the way; `None` for any other text, which
/// serde reads. What follows the object is not looked at, as serde's [`super::field`] does not.
/// A Namespace's metadata and a container's resources were found by serde, every member
/// captured to find one (benchmarks/cost.md, "PodTolerationRestriction's reads").
pub(super) fn plain_field<'a>(text: &'a str, key: &str) -> Option<Raw<'a>> {
    plain_field_at(text, scan::whitespace_end(text.as_bytes(), 0), key).map(|(found, _)| found)
}

/// [`plain_field`] of the object whose `{` is at `at`, and the offset past its `}`.
fn plain_field_at<'a>(text: &'a str, at: usize, key: &str) -> Option<(Raw<'a>, usize)> {
    let bytes = text.as_bytes();
    let mut found = None;
    let end = each_member(text, at, |name, at| {
        let end = scan::value_end(bytes, at).ok()?;
        if found.is_none() && name == key {
            found = Some(&text[at..end]);
        }
        Some(end)
    })?;
    Some((Raw(found), end))
}

/// [`super::any_item_field`] when no key has escapes and each item is an object: `None` for
/// any other text, which serde reads; `Some` of what `wanted` answered (an error, or the item
/// it held for, after which nothing is read) or of `false` once every item was asked.
pub(super) fn plain_any_item_field<'a>(
    text: &'a str,
    key: &str,
    mut wanted: impl FnMut(Raw<'a>) -> Result<bool, String>,
) -> Option<Result<bool, String>> {
    let mut stopped = None;
    let walked = super::array::each_item(text, |at| {
        let (found, end) = plain_field_at(text, at, key)?;
        match wanted(found) {
            Ok(false) => Some(((), end)),
            answer => {
                stopped = Some(answer);
                None
            }
        }
    });
    stopped.or(walked.map(|_| Ok(false)))
}

/// The member at `path` of the JSON object `text` ([`super::member_at`]), when every key on the
/// way has no escapes and every object on the way is one; `None` for any other text, which the
/// caller reads whole. Nothing past the member is read.
pub(super) fn plain_member_at<'a>(text: &'a str, path: &[&str]) -> Option<Raw<'a>> {
    /// Why the walk of an object's members stopped before its end.
    enum Stop {
        Found(usize),
        Unread,
    }
    impl From<scan::Malformed> for Stop {
        fn from(_: scan::Malformed) -> Stop {
            Stop::Unread
        }
    }
    let bytes = text.as_bytes();
    let mut at = scan::whitespace_end(bytes, 0);
    for (step, name) in path.iter().enumerate() {
        let walked = scan::each_member(bytes, at, |key, escaped, at| {
            if escaped {
                return Err(Stop::Unread);
            }
            if text[key.start + 1..key.end - 1] == **name {
                return Err(Stop::Found(at));
            }
            Ok(scan::value_end(bytes, at)?)
        });
        at = match walked {
            Err(Stop::Found(value)) => value,
            Ok(_) => return Some(Raw(None)),
            Err(Stop::Unread) => return None,
        };
        let last = step + 1 == path.len();
        match bytes.get(at) {
            _ if last => {
                let end = scan::value_end(bytes, at).ok()?;
                return Some(Raw(Some(&text[at..end])));
            }
            Some(b'{') => {}
            Some(b'n') => return (scan::value_end(bytes, at).ok()? == at + 4).then_some(Raw(None)),
            _ => return None,
        }
    }
    Some(Raw(Some(text)))
}

/// The members of the JSON object `text` when every key and every value is a string without
/// escapes, borrowed: `metadata.labels` as the API server writes them, read in one pass. `None`
/// for any other text, which the caller reads with [`super::members`] and [`JsonStr::read`]:
/// that way a label set costs a second pass over each value and a second list
/// (benchmarks/cost.md, "Few tolerations").
pub(crate) fn plain_string_members(text: &str) -> Option<Vec<(JsonStr<'_>, JsonStr<'_>)>> {
    let bytes = text.as_bytes();
    let mut members = Vec::with_capacity(8);
    let end = each_member(text, scan::whitespace_end(bytes, 0), |key, at| {
        let chars = plain_string(bytes, at)?;
        let value = JsonStr::borrowed(&text[chars.clone()]);
        members.push((JsonStr::borrowed(key), value));
        Some(chars.end + 1)
    })?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some(members)
}

/// Walks the object that begins at `at` (its `{`), its keys strings without escapes: `member`
/// is given each key's string and where its value begins, and answers where the value ends.
/// The offset past the object's `}`; `None` where the text is not such an object or `member`
/// refuses a value.
fn each_member<'a>(
    text: &'a str,
    at: usize,
    mut member: impl FnMut(&'a str, usize) -> Option<usize>,
) -> Option<usize> {
    let walked = scan::each_member(text.as_bytes(), at, |key, escaped, at| {
        let read = (!escaped).then(|| member(&text[key.start + 1..key.end - 1], at));
        read.flatten().ok_or(scan::Malformed(at))
    });
    walked.ok()
}

/// The string of `literal` when it is one JSON string without escapes, borrowed; `None` for any
/// other text, for serde to decode or refuse.
pub fn plain_str(literal: &str) -> Option<&str> {
    let chars = plain_string(literal.as_bytes(), 0)?;
    (chars.end + 1 == literal.len()).then(|| &literal[chars])
}

/// The string of `literal` when it is one JSON string whose escapes, if any, are each a `\` and
/// one character (`\"`, `\\`, `\n`...): borrowed when it has none, else decoded. `None` for any
/// other text, a `\u` escape included, for serde to decode or refuse. An owner record is JSON
/// kept in an annotation, so its quotes are escaped: serde's decoding of it was a large part of
/// what a Node update carrying one costs beyond reading it (benchmarks/cost.md, "Strings with
/// escapes").
pub fn decoded_str(literal: &str) -> Option<Cow<'_, str>> {
    let (decoded, end) = decoded_at(literal, 0)?;
    (end == literal.len()).then_some(decoded)
}

/// The string whose literal begins at `at` (its `"`), as [`decoded_str`] decodes one, and the
/// offset past its closing quote.
fn decoded_at(text: &str, at: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let run = scan::plain_run_end(bytes, at + 1);
    match bytes.get(run) {
        Some(b'"') => Some((Cow::Borrowed(&text[at + 1..run]), run + 1)),
        Some(b'\\') => decoded_from(bytes, at + 1, run).map(|(s, end)| (Cow::Owned(s), end)),
        // A raw control character, or no closing quote.
        _ => None,
    }
}

/// The rest of [`decoded_at`]: the string whose characters begin at `start` and whose first
/// escape is at `escape`, and the offset past its closing quote. Run by run between escapes, a
/// short run pushed a byte at a time: copied, each run was a `memory.copy` through the host,
/// and an annotation holding JSON has an escape every few bytes; an owner record's longer runs
/// cost less copied (benchmarks/cost.md, "PodTolerationRestriction's reads").
fn decoded_from(bytes: &[u8], start: usize, escape: usize) -> Option<(String, usize)> {
    // Room for the rest of the text when it is a short literal; within a larger document (an
    // object's members, `last_strings`) a little past the first escape, grown from there.
    let mut decoded = Vec::with_capacity((bytes.len() - start).min(escape - start + 128));
    let (mut at, mut run) = (start, escape);
    loop {
        let chunk = &bytes[at..run];
        if chunk.len() < 16 {
            for &byte in chunk {
                decoded.push(byte);
            }
        } else {
            decoded.extend_from_slice(chunk);
        }
        let escaped = match bytes.get(run) {
            Some(b'"') => break,
            Some(b'\\') => match bytes.get(run + 1) {
                Some(b'"') => b'"',
                Some(b'\\') => b'\\',
                Some(b'/') => b'/',
                Some(b'b') => 0x08,
                Some(b'f') => 0x0c,
                Some(b'n') => b'\n',
                Some(b'r') => b'\r',
                Some(b't') => b'\t',
                // `\u` escapes, unknown ones, and a string cut after its `\`.
                _ => return None,
            },
            // A raw control character, or no closing quote.
            _ => return None,
        };
        decoded.push(escaped);
        at = run + 2;
        run = scan::plain_run_end(bytes, at);
    }
    // Escapes were replaced by the ASCII bytes they stand for; what lay between them was text.
    Some((String::from_utf8(decoded).ok()?, run + 1))
}

/// The strings of the members `names` of the JSON object `text` (the last of a name given
/// twice, as the API server keeps it; `None` where absent), decoded as `decoded_str` decodes
/// them, in one pass, when every member is a string and no key has escapes: a Namespace's
/// annotations, of which two are wanted and each holds JSON, escapes every few bytes. `None`
/// for any other text, which the caller reads its own way.
///
/// # Examples
///
/// ```
/// use taintguard::json::last_strings;
///
/// let annotations = r#"{"a": "[{\"k\":1}]", "b": "x", "a": "[]"}"#;
/// let [a, c] = last_strings(annotations, ["a", "c"]).unwrap();
/// assert_eq!((a.as_deref(), c), (Some("[]"), None));
/// assert!(last_strings(r#"{"a": 1}"#, ["a"]).is_none());
/// ```
pub fn last_strings<'a, const N: usize>(
    text: &'a str,
    names: [&str; N],
) -> Option<[Option<Cow<'a, str>>; N]> {
    let bytes = text.as_bytes();
    let mut found = [const { None }; N];
    let end = each_member(text, scan::whitespace_end(bytes, 0), |key, at| match names
        .iter()
        .position(|name| *name == key)
    {
        Some(i) => {
            let (decoded, end) = decoded_at(text, at)?;
            found[i] = Some(decoded);
            Some(end)
        }
        None if bytes.get(at) == Some(&b'"') => scan::string_end(bytes, at + 1).ok(),
        None => None,
    })?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some(found)
}

/// Where the string at `at` holds its characters, between its quotes, when it is a string
/// without escapes; its closing quote is at the range's end. Inlined: called, it set up a
/// frame in linear memory for its answer on every string (benchmarks/cost.md, "Few tolerations").
#[inline(always)]
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

    /// Every cut and damaged text of `doc` ([`scan::cut_and_damaged`]), then `more`: what the
    /// differential tests below hold each plain reader to serde on.
    fn texts_from(doc: &str, more: &[&str]) -> Vec<String> {
        let mut texts = scan::cut_and_damaged(doc);
        texts.extend(more.iter().map(|text| text.to_string()));
        texts
    }

    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(borrow)]
        key: Option<JsonStr<'a>>,
        #[serde(borrow)]
        value: Option<JsonStr<'a>>,
        #[serde(borrow)]
        effect: Option<JsonStr<'a>>,
    }

    #[test]
    fn plain_str_is_what_serde_decodes_or_none() {
        for text in [
            r#""a""#,
            r#""""#,
            r#""a\"""#,
            r#" "a""#,
            r#""a" "#,
            r#""a"#,
            "1",
            "null",
            r#""a\u0041""#,
        ] {
            let serde = serde_json::from_str::<JsonStr>(text).ok();
            match plain_str(text) {
                Some(s) => assert_eq!(Some(s), serde.as_ref().map(JsonStr::as_str), "{text}"),
                None => assert!(serde.is_none() || text.contains('\\') || text != text.trim()),
            }
        }
    }

    #[derive(serde::Deserialize)]
    struct User<'a> {
        #[serde(borrow)]
        username: Option<JsonStr<'a>>,
        #[serde(borrow)]
        groups: Option<Vec<JsonStr<'a>>>,
    }

    /// Wherever it answers, serde's derive reads the same username and groups; where serde
    /// reads plain strings and nothing else is odd, it answers.
    #[test]
    fn reads_a_string_and_a_list_as_serde_does() {
        let doc = r#"{"username":"system:node:a", "uid" : "u","groups":["x", "y:z" ],"extra":{"k":["v"]}}"#;
        let texts = texts_from(
            doc,
            &[
                "{}",
                r#"{"groups":[]}"#,
                r#"{"username":"a","username":"b"}"#,
                r#"{"groups":[],"groups":[]}"#,
                r#"{"groups":["a\u0041"]}"#,
                r#"{"groups":null}"#,
                r#"{"groups":[1]}"#,
                r#"{"groups":["a",]}"#,
            ],
        );
        let owned = |s: Option<&str>| s.map(str::to_owned);
        for text in texts {
            let serde = serde_json::from_str::<User>(&text).ok().map(|u| {
                let groups = u
                    .groups
                    .map(|g| g.iter().map(|s| s.as_str().to_owned()).collect());
                (owned(u.username.as_ref().map(JsonStr::as_str)), groups)
            });
            let read = plain_string_and_list(&text, "username", "groups").map(|(name, groups)| {
                let groups: Option<Vec<String>> =
                    groups.map(|g| g.iter().map(|s| s.as_str().to_owned()).collect());
                (owned(name), groups)
            });
            if read.is_some() {
                assert_eq!(read, serde, "{text}");
            }
            let plain = !text.contains('\\') && !text.contains("null");
            let twice =
                text.matches("\"username\"").count() > 1 || text.matches("\"groups\"").count() > 1;
            if serde.is_some() && plain && !twice {
                assert!(read.is_some(), "{text}");
            }
        }
    }

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Toleration<'a> {
        #[serde(borrow)]
        key: Option<JsonStr<'a>>,
        #[serde(borrow)]
        operator: Option<JsonStr<'a>>,
        toleration_seconds: Option<i64>,
    }

    /// Wherever it answers, serde's derive reads the same strings and integer; where serde reads
    /// plain strings and an integer and nothing else is odd, it answers.
    #[test]
    fn reads_strings_and_an_integer_as_serde_does() {
        let doc = r#"[{"key":"a","operator":"Exists","tolerationSeconds":300}, {"x":[1.5e3],"tolerationSeconds" : -12 }]"#;
        let texts = texts_from(
            doc,
            &[
                "[]",
                r#"[{"tolerationSeconds":0}]"#,
                r#"[{"tolerationSeconds":-0}]"#,
                r#"[{"tolerationSeconds":9223372036854775807}]"#,
                r#"[{"tolerationSeconds":-9223372036854775808}]"#,
                r#"[{"tolerationSeconds":9223372036854775808}]"#,
                r#"[{"tolerationSeconds":012}]"#,
                r#"[{"tolerationSeconds":1.0}]"#,
                r#"[{"tolerationSeconds":1e2}]"#,
                r#"[{"tolerationSeconds":"1"}]"#,
                r#"[{"tolerationSeconds":null}]"#,
                r#"[{"tolerationSeconds":1,"tolerationSeconds":1}]"#,
                r#"[{"key":"a","key":"a"}]"#,
                r#"[{"tolerationSeconds":-}]"#,
            ],
        );
        type Read = Vec<([Option<String>; 2], Option<i64>)>;
        for text in texts {
            let serde: Option<Read> =
                serde_json::from_str::<Vec<Toleration>>(&text)
                    .ok()
                    .map(|items| {
                        let string =
                            |s: &Option<JsonStr>| s.as_ref().map(|s| s.as_str().to_owned());
                        (items.iter())
                            .map(|t| ([string(&t.key), string(&t.operator)], t.toleration_seconds))
                            .collect()
                    });
            let read: Option<Read> =
                plain_items_with_integer(&text, ["key", "operator"], "tolerationSeconds").map(
                    |items| {
                        (items.into_iter())
                            .map(|(found, n)| (found.map(|s| s.map(str::to_owned)), n))
                            .collect()
                    },
                );
            if read.is_some() {
                assert_eq!(read, serde, "{text}");
            }
            let plain = !text.contains('\\') && !text.contains("null") && !text.contains(".0}");
            let twice = text.matches("\"key\"").count() > 1
                || text.matches("\"tolerationSeconds\"").count() > 1 && !text.contains("},");
            if serde.is_some() && plain && !twice {
                assert!(read.is_some(), "{text}");
            }
        }
    }

    /// Wherever it answers, serde decodes the same string; it answers for every string whose
    /// escapes are of one character.
    #[test]
    fn decoded_str_is_what_serde_decodes_or_none() {
        let doc = r#""a\"b\\c\/d\be\ff\ng\rh\ti""#;
        let texts = texts_from(
            doc,
            &[
                r#""""#,
                r#""é\n""#,
                r#""\u0041""#,
                r#""a\x""#,
                "\"a\u{1}\"",
                r#""a" "#,
                "7",
                r#""\\""#,
            ],
        );
        for text in texts {
            let serde = serde_json::from_str::<String>(&text).ok();
            match decoded_str(&text) {
                Some(decoded) => assert_eq!(Some(&*decoded), serde.as_deref(), "{text}"),
                None => assert!(serde.is_none() || text.contains("\\u") || text != text.trim()),
            }
        }
        assert!(decoded_str(doc).is_some());
    }

    /// Wherever it answers, the items are those `items` splits, each with the strings
    /// `plain_strings` reads in it; a list of plain objects it answers.
    #[test]
    fn reads_plain_items_as_items_then_plain_strings_do() {
        let doc =
            r#"[{"key":"a","effect":"NoSchedule"}, {"key" : "b","timeAdded":null,"value":"v"} ]"#;
        let names = ["key", "value", "effect"];
        assert!(plain_items(doc, names).is_some());
        for text in crate::json::scan::cut_and_damaged(doc) {
            let Some(read) = plain_items(&text, names) else {
                continue;
            };
            let items = crate::json::items(&text).unwrap();
            let split: Vec<_> = (items.iter())
                .map(|item| (*item, plain_strings(item, names).unwrap()))
                .collect();
            assert_eq!(read, split, "{text}");
        }
    }

    /// Wherever it answers, serde reads the same keys and string values; where serde reads
    /// plain strings only, it answers.
    #[test]
    fn reads_string_members_as_serde_does() {
        let doc = r#"{"app":"flannel", "tier" : "node","example.com/x":""}"#;
        let texts = texts_from(
            doc,
            &[
                "{}",
                r#"{"a":"1","a":"2"}"#,
                r#"{"a":"b\u0041"}"#,
                r#"{"\u0061":"b"}"#,
                r#"{"a":null}"#,
                r#"{"a":1}"#,
                r#"{"a":"b"} x"#,
                "[]",
            ],
        );
        for text in texts {
            // serde_members reads one object and leaves what follows: the whole text must be one.
            let one = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
            let members = super::super::text::serde_members(&text)
                .ok()
                .filter(|_| one);
            let serde = members.and_then(|members| {
                let value = |v: &str| serde_json::from_str::<String>(v).ok();
                let read = members
                    .iter()
                    .map(|(k, v)| Some((k.as_str().to_owned(), value(v)?)));
                read.collect::<Option<Vec<_>>>()
            });
            let read = plain_string_members(&text).map(|members| {
                let owned = |s: &JsonStr| s.as_str().to_owned();
                members
                    .iter()
                    .map(|(k, v)| (owned(k), owned(v)))
                    .collect::<Vec<_>>()
            });
            if read.is_some() {
                assert_eq!(read, serde, "{text}");
            }
            let plain = !text.contains('\\') && !text.contains("null") && !text.contains(":1");
            if serde.is_some() && plain {
                assert!(read.is_some(), "{text}");
            }
        }
    }

    /// Wherever it answers, serde's derive reads the same strings; where serde reads plain
    /// strings and nothing else is odd, it answers.
    #[test]
    fn reads_what_serde_reads() {
        let doc = r#"{"effect":"NoSchedule", "key" : "example.com/gpu","timeAdded":"2025-04-10T08:00:03Z","x":[1,{"key":2}],"value":""}"#;
        let texts = texts_from(
            doc,
            &[
                "{}",
                " { } ",
                r#"{"key":"a","key":"b"}"#,
                r#"{"key":"a\u0041"}"#,
                r#"{"k\u0065y":"a"}"#,
                r#"{"key":null}"#,
                r#"{"key":1}"#,
                r#"{"key":"a"} x"#,
                "[]",
            ],
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

    /// Wherever it answers, serde finds the same member, alone or in each item of an array; where
    /// serde reads objects whose keys have no escapes, it answers (what follows a lone object is
    /// left to the caller by both).
    #[test]
    fn finds_the_field_serde_finds() {
        let doc = r#"{"metadata": {"annotations": {"a": "[{\"key\":1}]"}}, "spec" : [1, {"x":null}],"metadata":2}"#;
        let texts = texts_from(
            doc,
            &[
                "{}",
                " { } x",
                r#"{"\u006detadata":1}"#,
                r#"{"metadata":null}"#,
                "[]",
            ],
        );
        for text in texts {
            for key in ["metadata", "spec", "status"] {
                let serde = super::super::text::serde_field(&text, key).ok();
                let read = plain_field(&text, key);
                if let Some(read) = read {
                    assert_eq!(Some(read.text()), serde.map(|s| s.text()), "{text}");
                }
                // Escaped quotes are in values only: any other escape may be in a key.
                let plain_keys = !text.replace("\\\"", "").contains('\\');
                if serde.is_some() && plain_keys {
                    assert!(read.is_some(), "{text}");
                }
                // The same text as an array's items, each asked for and none held: ends checked.
                let array = format!("[{text}, {{}}]");
                let serde_items = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(&array)
                    .ok()
                    .and_then(|items| {
                        let field = |item: &serde_json::value::RawValue| {
                            let found = super::super::text::serde_field(item.get(), key).ok()?;
                            Some(found.text().map(str::to_owned))
                        };
                        items.into_iter().map(field).collect::<Option<Vec<_>>>()
                    });
                let mut asked = Vec::new();
                let read = plain_any_item_field(&array, key, |found| {
                    asked.push(found.text().map(str::to_owned));
                    Ok(false)
                });
                match read {
                    Some(answer) => {
                        assert_eq!(answer, Ok(false), "{array}");
                        assert_eq!(Some(asked), serde_items, "{array}");
                    }
                    None => assert!(serde_items.is_none() || !plain_keys, "{array}"),
                }
            }
        }
    }

    /// Wherever serde reads the whole text, a member found without reading past it is the
    /// member serde finds; where no key on the way has escapes, it is found.
    #[test]
    fn finds_the_member_serde_finds_without_reading_past_it() {
        let doc = r#"{"kind":"Namespace", "metadata" : {"annotations": {"a": "[{\"k\":1}]"}, "labels":{}, "managedFields":[{"f:x":{}}]},"status":{"phase":"Active"}}"#;
        let texts = texts_from(
            doc,
            &[
                r#"{"metadata":null}"#,
                r#"{"metadata":{"annotations":null}}"#,
                r#"{"\u006detadata":{}}"#,
            ],
        );
        let serde = |text: &str, path: &[&str]| {
            serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
            let mut found = Some(text.to_owned());
            for name in path {
                let Some(object) = found.filter(|t| t != "null") else {
                    return Some(None);
                };
                let raw = super::super::text::serde_field(&object, name).ok()?;
                found = raw.text().map(str::to_owned);
            }
            Some(found)
        };
        for text in texts {
            for path in [
                &["metadata", "annotations"][..],
                &["metadata", "labels"],
                &["status"],
                &["spec", "x"],
            ] {
                let read = plain_member_at(&text, path).map(|raw| raw.text().map(str::to_owned));
                let Some(serde) = serde(&text, path) else {
                    continue;
                };
                match read {
                    Some(read) => assert_eq!(read, serde, "{text} {path:?}"),
                    // Escaped quotes are in values only: any other escape may be in a key.
                    None => assert!(text.replace("\\\"", "").contains('\\'), "{text}"),
                }
            }
        }
    }

    /// Wherever it answers, serde reads the same strings (the last of a name given twice);
    /// where serde reads an object of strings whose keys have no escapes, it answers.
    #[test]
    fn last_strings_are_what_serde_reads() {
        let doc = r#"{"d": "[{\"k\":\"a\"}]\n", "x" : "y", "w":"plain", "d":"\/t"}"#;
        let more = [
            "{}",
            r#"{"w":1}"#,
            r#"{"\u0077":"a"}"#,
            r#"{"w":"\u00e9"}"#,
            r#"{"w":"a"} x"#,
        ];
        let texts = texts_from(doc, &more);
        for text in texts {
            let one = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
            let serde = super::super::text::serde_members(&text)
                .ok()
                .filter(|_| one)
                .and_then(|members| {
                    let mut found = [None, None];
                    for (key, value) in members {
                        let value = serde_json::from_str::<String>(value).ok()?;
                        match key.as_str() {
                            "d" => found[0] = Some(value),
                            "w" => found[1] = Some(value),
                            _ => {}
                        }
                    }
                    Some(found)
                });
            let read = last_strings(&text, ["d", "w"]);
            let read = read.map(|found| found.map(|s| s.map(|s| s.into_owned())));
            if read.is_some() {
                assert_eq!(read, serde, "{text}");
            }
            // `\u` escapes are left to serde, and so are escaped keys.
            if serde.is_some() && !text.contains("\\u") {
                assert!(read.is_some(), "{text}");
            }
        }
    }

    /// [`plain_strings`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn plain_strings_examples() {
        let taint = r#"{"key": "gpu", "effect": "NoSchedule", "timeAdded": null}"#;
        let [key, value, effect] = plain_strings(taint, ["key", "value", "effect"]).unwrap();
        assert_eq!(
            (key, value, effect),
            (Some("gpu"), None, Some("NoSchedule"))
        );
        assert!(plain_strings(r#"{"key": "a\"b"}"#, ["key"]).is_none());
    }

    /// [`plain_items_with_integer`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn plain_items_with_integer_examples() {
        let tolerations = r#"[{"key": "a", "operator": "Exists", "tolerationSeconds": 300}, {}]"#;
        let read = plain_items_with_integer(tolerations, ["key", "operator"], "tolerationSeconds");
        assert_eq!(
            read,
            Some(vec![
                ([Some("a"), Some("Exists")], Some(300)),
                ([None, None], None)
            ])
        );
    }

    /// [`plain_items_of_only`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn plain_items_of_only_examples() {
        let tolerations = r#"[{"key": "a", "tolerationSeconds": 300}]"#;
        let read = plain_items_of_only(tolerations, ["key"], "tolerationSeconds");
        assert_eq!(read, Some(vec![([Some("a")], Some(300))]));
        assert_eq!(
            plain_items_of_only(r#"[{"Key": "a"}]"#, ["key"], "tolerationSeconds"),
            None
        );
    }

    /// [`plain_string_and_list`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn plain_string_and_list_examples() {
        let user = r#"{"username": "kured", "uid": "7", "groups": ["a", "b"]}"#;
        let (name, groups) = plain_string_and_list(user, "username", "groups").unwrap();
        let groups = groups.unwrap();
        let groups: Vec<&str> = groups.iter().map(|g| g.as_str()).collect();
        assert_eq!((name, groups), (Some("kured"), vec!["a", "b"]));
        assert!(plain_string_and_list(r#"{"groups": null}"#, "username", "groups").is_none());
    }

    /// [`plain_str`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn plain_str_examples() {
        assert_eq!(plain_str(r#""UPDATE""#), Some("UPDATE"));
        assert_eq!(plain_str(r#""a\nb""#), None);
        assert_eq!(plain_str("7"), None);
    }

    /// [`decoded_str`]'s examples: it is the core's own, so they are unit tests, not doctests.
    #[test]
    fn decoded_str_examples() {
        assert_eq!(decoded_str(r#""gpu""#), Some(Cow::Borrowed("gpu")));
        assert_eq!(
            decoded_str(r#""{\"a\":\"b\"}\n""#).as_deref(),
            Some("{\"a\":\"b\"}\n")
        );
        assert_eq!(decoded_str(r#""\u0041""#), None);
    }
}
