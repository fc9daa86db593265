//! Where JSON values end, found without building them: the reader under the request's one pass
//! ([`super::Object`]).
//!
//! serde_json skips a value it is not asked to build (`IgnoredAny`, a `&RawValue` capture) with
//! the machinery it builds values with: a call per token and a string checked four bytes at a time
//! in a waPC module (its words are `usize`). Most of a request is values no policy reads (a
//! Node's status, a pod's containers), so their skipping is most of what reading costs. Here the
//! cursor stays a local, a string is checked eight bytes at a time, two words a turn (wasm has
//! 64-bit integers but no SIMD here), and only a container costs more than its bytes: less than
//! serde_json on a Node in a waPC module, less still on a document of short members
//! (benchmarks/cost.md, "The request's own reader").
//!
//! It accepts what policy-server accepts, with two exceptions (a differential test holds the two
//! together): policy-server reads a request into serde_json values, so every string is decoded
//! and every number read. Strings without raw control characters and with known escapes, a `\u`
//! escape of four hex digits, and half of a surrogate pair only with its other half right after
//! it; numbers in JSON's grammar; `true`, `false`, `null`. The exceptions, where this reads as
//! serde_json skips a value: a number beyond f64's range (`1e400`) is accepted, as checking
//! every number's range made every Node's status dearer to read (benchmarks/cost.md, "What
//! policy-server cannot read"); and any depth is. policy-server refuses both before a
//! policy runs (its depth counted from a root that differs from host to host), and no engine
//! sends either. It does not recurse: it only tells whether a value nests past [`SHALLOW`]
//! levels, [`value_end_deep`]. Errors carry only where the text stopped being JSON: callers ask
//! serde_json for the words.

use std::ops::Range;

use crate::byte_class::{self, Class};

/// The byte offset at which the text stopped being JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub usize);

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH: u64 = ONES * 0x80;

/// Bytes that end a string's plain run: `"`, `\` and the control characters.
const STOPS: Class = byte_class::class(&[(0, 0x1f), (b'"', b'"'), (b'\\', b'\\')]);

/// The offset of the first byte at or after `at` that is not JSON whitespace.
#[inline(always)]
pub fn whitespace_end(bytes: &[u8], at: usize) -> usize {
    // The loop is out of line: the engines send requests and settings compact, and entering
    // it at the head of every value cost a check of policy-server's timeout where there was no
    // whitespace at all (benchmarks/cost.md, "The timeout's checks").
    match bytes.get(at) {
        Some(b' ' | b'\n' | b'\t' | b'\r') => whitespace_run_end(bytes, at + 1),
        _ => at,
    }
}

/// [`whitespace_end`] past its first byte.
#[inline(never)]
fn whitespace_run_end(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// The offset just past the `"` that closes the string whose contents begin at `at` (just past
/// its opening `"`).
///
/// # Errors
///
/// A raw control character, an unknown or short escape, or no closing `"`.
#[inline(always)]
pub fn string_end(bytes: &[u8], at: usize) -> Result<usize, Malformed> {
    escaped_string_end(bytes, at).map(|(end, _)| end)
}

/// [`string_end`], and whether the string has escapes.
///
/// # Errors
///
/// As [`string_end`].
#[inline(always)]
pub fn escaped_string_end(bytes: &[u8], mut at: usize) -> Result<(usize, bool), Malformed> {
    let mut escaped = false;
    loop {
        at = plain_run_end(bytes, at);
        match bytes.get(at) {
            Some(b'"') => return Ok((at + 1, escaped)),
            Some(b'\\') => {
                escaped = true;
                at = escape_end(bytes, at + 1)?;
            }
            _ => return Err(Malformed(at)),
        }
    }
}

/// The offset of the first byte at or after `at` that a JSON string cannot hold as it is (`"`,
/// `\` or a control character), or the end of `bytes`: a string's plain run, a word (eight
/// bytes) at a time, as a string is skipped, decoded ([`super::flat::decoded_str`]) and written
/// ([`super::write_str`]).
#[inline(always)]
pub fn plain_run_end(bytes: &[u8], mut at: usize) -> usize {
    // Two words a turn, and no loop for the last few bytes: under policy-server every turn of a
    // loop also checks the policy's timeout (epoch interruption, docs/abi.md; benchmarks/cost.md,
    // "The timeout's checks").
    while let Some(block) = bytes.get(at..at + 16) {
        let (low, high) = block.split_at(8);
        let stops = word_stops(word(low));
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        let stops = word_stops(word(high));
        if stops != 0 {
            return at + 8 + (stops.trailing_zeros() / 8) as usize;
        }
        at += 16;
    }
    short_run_end(bytes, at)
}

/// [`plain_run_end`] where fewer than 16 bytes are left: out of line, as the scanner comes here
/// only at a text's end, and inlined into each of its readers it made the modules larger
/// (benchmarks/cost.md, "The timeout's checks").
#[inline(never)]
fn short_run_end(bytes: &[u8], mut at: usize) -> usize {
    if let Some(low) = bytes.get(at..at + 8) {
        let stops = word_stops(word(low));
        if stops != 0 {
            return at + (stops.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let left = bytes.len().saturating_sub(at);
    if left == 0 {
        return at;
    }
    if let Some(last) = bytes.len().checked_sub(8).map(|start| &bytes[start..]) {
        // The bytes before `at` are shifted out (a stop among them could borrow into ours);
        // the zeros shifted in after the end stop a run where `bytes` ends.
        let stops = word_stops(word(last) >> (8 * (8 - left)));
        return at + (stops.trailing_zeros() / 8) as usize;
    }
    // Fewer than eight bytes in all: two halves that meet or overlap, or up to three bytes
    // each in turn.
    let rest = &bytes[at..];
    if left >= 4 {
        let half = |from: usize| {
            u64::from(u32::from_le_bytes(
                rest[from..from + 4].try_into().unwrap_or_default(),
            ))
        };
        let stops = word_stops(half(0) | half(left - 4) << 32);
        let first = (stops.trailing_zeros() / 8) as usize;
        // A stop in the second half is `left - 8` bytes further on; with none, `first` is 8.
        let offset = if first < 4 { first } else { first + left - 8 };
        return at + offset;
    }
    let stop = |i: usize| rest.get(i).is_none_or(|&b| STOPS[usize::from(b)]);
    let offset = if stop(0) {
        0
    } else if stop(1) {
        1
    } else if stop(2) {
        2
    } else {
        3
    };
    at + offset
}

/// Eight bytes read little-endian.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

/// The high bit of each byte of `x` that is `"`, `\` or below 0x20, and maybe of bytes after
/// one (a borrow carries on): the lowest, the only one read, is exact.
#[inline(always)]
fn word_stops(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    ((quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash)
        | (x.wrapping_sub(ONES * 0x20) & !x))
        & HIGH
}

/// The offset past the escape whose letter is at `at` (just past its `\`).
fn escape_end(bytes: &[u8], at: usize) -> Result<usize, Malformed> {
    match bytes.get(at) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 1),
        Some(b'u') => unicode_escape_end(bytes, at),
        _ => Err(Malformed(at)),
    }
}

/// [`escape_end`] of a `\u` escape: out of line, as such escapes are rare in requests and the
/// string loops every reader inlines stay as small as before the surrogate checks
/// (benchmarks/cost.md, "What policy-server cannot read").
#[inline(never)]
fn unicode_escape_end(bytes: &[u8], at: usize) -> Result<usize, Malformed> {
    match unicode_escape(bytes, at - 1) {
        None => Err(Malformed(at)),
        // Half of a surrogate pair, refused at its `\`.
        Some(Err(HalfPair)) => Err(Malformed(at - 1)),
        Some(Ok(len)) => Ok(at - 1 + len),
    }
}

/// Half of a surrogate pair, its other half not right after it.
struct HalfPair;

/// The `\u` escape whose `\` is at `backslash`, as serde_json decodes one: its length (6, or
/// 12 for a surrogate pair), or [`HalfPair`]; `None` where no `\u` and four hex digits are.
fn unicode_escape(bytes: &[u8], backslash: usize) -> Option<Result<usize, HalfPair>> {
    let unit = |at: usize| match bytes.get(at..at + 2) {
        Some(b"\\u") => hex_escape(bytes, at + 2),
        _ => None,
    };
    Some(match unit(backslash)? {
        0xd800..=0xdbff if matches!(unit(backslash + 6), Some(0xdc00..=0xdfff)) => Ok(12),
        0xd800..=0xdfff => Err(HalfPair),
        _ => Ok(6),
    })
}

/// `text` with every `\u` escape of half a surrogate pair that its other half does not follow
/// replaced by `\ufffd`, which is how Go's `encoding/json` decodes one (the readers here refuse
/// it, as policy-server does); `None` when there is none. For text a Go program reads, such as
/// an annotation holding JSON. A backslash outside a string makes a text no JSON either way, so
/// escapes are found without telling strings apart.
///
/// # Examples
///
/// ```
/// use taintguard::json::unpaired_surrogates_replaced;
///
/// let text = r#"["\ud800", "\ud83d\ude00", "\\ud800", "\udc00\ud800", "\ud83d_ude00"]"#;
/// let replaced = r#"["\ufffd", "\ud83d\ude00", "\\ud800", "\ufffd\ufffd", "\ufffd_ude00"]"#;
/// assert_eq!(unpaired_surrogates_replaced(text).as_deref(), Some(replaced));
/// assert_eq!(unpaired_surrogates_replaced(r#"["\u00e9"]"#), None);
/// ```
pub fn unpaired_surrogates_replaced(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut replaced = String::new();
    let (mut copied, mut at) = (0, 0);
    while let Some(found) = bytes[at.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'\\')
    {
        at += found;
        match unicode_escape(bytes, at) {
            Some(Ok(len)) => at += len,
            Some(Err(HalfPair)) => {
                replaced.push_str(&text[copied..at]);
                replaced.push_str("\\ufffd");
                at += 6;
                copied = at;
            }
            _ => at += 2,
        }
    }
    (copied > 0).then(|| replaced + &text[copied..])
}

/// The code unit of the four hex digits at `at`, if there are four.
fn hex_escape(bytes: &[u8], at: usize) -> Option<u16> {
    let hex = bytes.get(at..at + 4)?;
    hex.iter().try_fold(0u16, |unit, &digit| {
        let value = (digit as char).to_digit(16)?;
        Some(unit << 4 | value as u16)
    })
}

fn digits_end(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_digit) {
        at += 1;
    }
    at
}

/// The offset past the number at `at`:
/// `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?
fn number_end(bytes: &[u8], mut at: usize) -> Result<usize, Malformed> {
    if bytes.get(at) == Some(&b'-') {
        at += 1;
    }
    at = match bytes.get(at) {
        Some(b'0') => at + 1,
        Some(b'1'..=b'9') => digits_end(bytes, at + 1),
        _ => return Err(Malformed(at)),
    };
    if bytes.get(at) == Some(&b'.') {
        let end = digits_end(bytes, at + 1);
        if end == at + 1 {
            return Err(Malformed(end));
        }
        at = end;
    }
    if let Some(b'e' | b'E') = bytes.get(at) {
        at += 1;
        if let Some(b'+' | b'-') = bytes.get(at) {
            at += 1;
        }
        let end = digits_end(bytes, at);
        if end == at {
            return Err(Malformed(end));
        }
        at = end;
    }
    Ok(at)
}

/// The offset past `word` (`true`, `false` or `null`) at `at`.
fn literal_end(bytes: &[u8], at: usize, word: &[u8]) -> Result<usize, Malformed> {
    match bytes.get(at..at + word.len()) {
        Some(found) if found == word => Ok(at + word.len()),
        _ => {
            let same = (bytes[at..].iter().zip(word)).take_while(|(a, b)| a == b);
            Err(Malformed(at + same.count()))
        }
    }
}

/// Walks the members of the object whose `{` is at `at`: `member` is given each key (the range
/// of its literal, quotes included, and whether it has escapes) and where its value begins, and
/// answers where the value ends. The offset past the object's `}`.
///
/// The one member walk of the readers that keep members ([`super::Object`]'s and the plain
/// readers'); [`value_end`], which keeps nothing, walks members in its own loop, with no call
/// per member.
///
/// # Errors
///
/// Where the text stops being JSON between the members, or what `member` answers.
#[inline]
pub fn each_member<E: From<Malformed>>(
    bytes: &[u8],
    mut at: usize,
    mut member: impl FnMut(Range<usize>, bool, usize) -> Result<usize, E>,
) -> Result<usize, E> {
    if bytes.get(at) != Some(&b'{') {
        return Err(Malformed(at).into());
    }
    at = whitespace_end(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return Ok(at + 1);
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return Err(Malformed(at).into());
        }
        let (key_end, escaped) = escaped_string_end(bytes, at + 1)?;
        let key = at..key_end;
        at = whitespace_end(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return Err(Malformed(at).into());
        }
        at = whitespace_end(bytes, at + 1);
        at = whitespace_end(bytes, member(key, escaped, at)?);
        match bytes.get(at) {
            Some(b',') => at = whitespace_end(bytes, at + 1),
            Some(b'}') => return Ok(at + 1),
            _ => return Err(Malformed(at).into()),
        }
    }
}

/// The offset past a member's key (its `"` at `at`) and the `:` after it.
#[inline(always)]
fn key_end(bytes: &[u8], at: usize) -> Result<usize, Malformed> {
    if bytes.get(at) != Some(&b'"') {
        return Err(Malformed(at));
    }
    let at = whitespace_end(bytes, string_end(bytes, at + 1)?);
    match bytes.get(at) {
        Some(b':') => Ok(at + 1),
        _ => Err(Malformed(at)),
    }
}

/// The levels of arrays and objects the scanner keeps in a word; a value nesting deeper spills
/// the outer ones into a `Vec`.
pub const SHALLOW: usize = 64;

/// The offset past the value that begins at `at`, after whitespace; containers whole.
///
/// # Errors
///
/// Where the text stops being JSON, inside the value or at its end.
#[inline]
pub fn value_end(bytes: &[u8], at: usize) -> Result<usize, Malformed> {
    value_end_deep(bytes, at, &mut false)
}

/// [`value_end`], which also sets `deep` when the value nests more than [`SHALLOW`] levels of
/// arrays and objects. A mutation that copies values known to nest no deeper is read back by
/// engines without a walk of its text (see [`super::nested_past`]). `deep` is written only when
/// it happens: counting every level, and returning the count, cost the skipping more than this
/// flag (benchmarks/cost.md, "Short copies", the mutation's nesting).
///
/// # Errors
///
/// As [`value_end`].
#[inline(always)]
pub fn value_end_deep(bytes: &[u8], at: usize, deep: &mut bool) -> Result<usize, Malformed> {
    // A string, a common member to skip, goes around the walk, whose frame every string skipped
    // paid for (benchmarks/cost.md, "Few tolerations").
    if bytes.get(at) == Some(&b'"') {
        return string_end(bytes, at + 1);
    }
    walk_end(bytes, at, deep)
}

/// [`value_end_deep`] of any value, containers as well.
///
/// The [`Spilled`] words are kept outside the [`Nesting`], which then stays in locals: with them
/// in it, the whole was kept in memory and each container opened and closed stored it there
/// (benchmarks/cost.md, "Few tolerations").
fn walk_end(bytes: &[u8], mut at: usize, deep: &mut bool) -> Result<usize, Malformed> {
    let mut open = Nesting { top: 0, depth: 0 };
    let mut spilled = Spilled(None);
    loop {
        // A value begins here.
        at = whitespace_end(bytes, at);
        match bytes.get(at) {
            Some(b'{') => {
                at = whitespace_end(bytes, at + 1);
                if bytes.get(at) == Some(&b'}') {
                    open.empty(deep);
                    at += 1;
                } else {
                    open.push(true, &mut spilled, deep);
                    at = key_end(bytes, at)?;
                    continue;
                }
            }
            Some(b'[') => {
                at = whitespace_end(bytes, at + 1);
                if bytes.get(at) == Some(&b']') {
                    open.empty(deep);
                    at += 1;
                } else {
                    open.push(false, &mut spilled, deep);
                    continue;
                }
            }
            Some(b'"') => at = string_end(bytes, at + 1)?,
            Some(b't') => at = literal_end(bytes, at, b"true")?,
            Some(b'f') => at = literal_end(bytes, at, b"false")?,
            Some(b'n') => at = literal_end(bytes, at, b"null")?,
            Some(b'-' | b'0'..=b'9') => at = number_end(bytes, at)?,
            _ => return Err(Malformed(at)),
        }
        // A value ended: close what it ends, up to a container with more to come.
        loop {
            let Some(in_object) = open.top() else {
                return Ok(at);
            };
            at = whitespace_end(bytes, at);
            match bytes.get(at) {
                Some(b',') if in_object => {
                    at = key_end(bytes, whitespace_end(bytes, at + 1))?;
                    break;
                }
                Some(b',') => {
                    at += 1;
                    break;
                }
                Some(b'}') if in_object => at += 1,
                Some(b']') if !in_object => at += 1,
                _ => return Err(Malformed(at)),
            }
            open.pop(&mut spilled);
        }
    }
}

/// The containers open around the cursor, innermost last: a bit each (object or array), the
/// innermost 64 in a word and the outer ones [`Spilled`], so no nesting is too deep to skip.
struct Nesting {
    top: u64,
    depth: usize,
}

/// The words of [`Nesting`] past the innermost: `None` until the 65th level, as an empty `Vec`
/// is still dropped through a call, once per value skipped (benchmarks/cost.md, "Decision
/// work, measured per function").
struct Spilled(Option<Vec<u64>>);

impl Spilled {
    #[cold]
    #[inline(never)]
    fn push(&mut self, word: u64) {
        self.0.get_or_insert_default().push(word);
    }

    #[cold]
    #[inline(never)]
    fn pop(&mut self) -> u64 {
        self.0.as_mut().and_then(Vec::pop).unwrap_or_default()
    }
}

impl Nesting {
    /// Opens a container; `deep` is set when it is past [`SHALLOW`] levels, and written only
    /// then, so that telling costs nothing until it happens.
    #[inline(always)]
    fn push(&mut self, object: bool, spilled: &mut Spilled, deep: &mut bool) {
        if self.depth > 0 && self.depth.is_multiple_of(SHALLOW) {
            spilled.push(self.top);
            self.top = 0;
            *deep = true;
        }
        self.top = (self.top << 1) | u64::from(object);
        self.depth += 1;
    }

    /// An empty container, opened and closed at once.
    #[inline(always)]
    fn empty(&self, deep: &mut bool) {
        if self.depth >= SHALLOW {
            *deep = true;
        }
    }

    #[inline(always)]
    fn pop(&mut self, spilled: &mut Spilled) {
        self.top >>= 1;
        self.depth -= 1;
        if self.depth > 0 && self.depth.is_multiple_of(SHALLOW) {
            self.top = spilled.pop();
        }
    }

    /// Whether the innermost container is an object; `None` outside all.
    #[inline(always)]
    fn top(&self) -> Option<bool> {
        (self.depth > 0).then_some(self.top & 1 == 1)
    }
}

/// Every cut of `doc`, and `doc` with each byte replaced by each byte that means something in
/// JSON (where the result is UTF-8): the texts the differential tests hold the readers to
/// serde_json on.
#[cfg(test)]
pub(super) fn cut_and_damaged(doc: &str) -> Vec<String> {
    let mut texts: Vec<String> = (0..=doc.len()).map(|cut| doc[..cut].to_owned()).collect();
    for at in 0..doc.len() {
        for &b in br#"{}[]",:\/u0de.-+18 tfnx"#.iter().chain(&[b'\n', 0x01]) {
            let mut damaged = doc.as_bytes().to_vec();
            damaged[at] = b;
            texts.extend(String::from_utf8(damaged));
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether policy-server accepts `text` as one value (whitespace around it allowed):
    /// serde_json reading it into values, every string decoded and every number read, as
    /// [`Read`] does; less its range check of numbers, which the scanner leaves out.
    fn policy_server_accepts(text: &str) -> bool {
        match serde_json::from_str::<Read>(text) {
            Ok(_) => true,
            Err(e) if e.to_string().starts_with("number out of range") => {
                serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
            }
            Err(_) => false,
        }
    }

    /// A value read as serde_json reads one into a `serde_json::Value`, and dropped.
    struct Read;

    impl<'de> serde::Deserialize<'de> for Read {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(Read)
        }
    }

    impl<'de> serde::de::Visitor<'de> for Read {
        type Value = Read;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_str<E>(self, _: &str) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_unit<E>(self) -> Result<Read, E> {
            Ok(Read)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Read, A::Error> {
            while seq.next_element::<Read>()?.is_some() {}
            Ok(Read)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Read, A::Error> {
            while map.next_entry::<Read, Read>()?.is_some() {}
            Ok(Read)
        }
    }

    fn scan_accepts(text: &str) -> bool {
        let bytes = text.as_bytes();
        value_end(bytes, 0).is_ok_and(|end| whitespace_end(bytes, end) == bytes.len())
    }

    /// Texts around every rule of the grammar, each accepted or refused as serde_json does.
    #[test]
    fn accepts_what_serde_json_accepts() {
        let texts = [
            "",
            " ",
            "1",
            "-0",
            "01",
            "-",
            "1.",
            "1.5",
            "1.e3",
            "1e",
            "1e+",
            "1E-7",
            "-1.25e+10",
            "0x10",
            "+1",
            ".5",
            "true",
            "tru",
            "truex",
            "false",
            "null",
            "nul",
            "nan",
            r#""""#,
            r#"""#,
            r#""a"#,
            r#""\""#,
            r#""\"""#,
            r#""\\""#,
            r#""\/\b\f\n\r\t""#,
            r#""\u00e9""#,
            r#""\uD800""#,
            r#""\uD800\uDC00""#,
            r#""\ud83d\ude00x""#,
            r#""\uDC00""#,
            r#""\uDBFF\uDFFF""#,
            r#""\uD800\u0041""#,
            r#""\uD800\uD800\uDC00""#,
            r#""\uD800\n""#,
            r#""\uD800\u""#,
            r#""\uD800\uDC0""#,
            r#""\uD800xuDC00""#,
            r#"{"resourc\ud800e":1}"#,
            "1e308",
            "1e309",
            "-1.8e308",
            "1.7976931348623157e308",
            "1e-400",
            "0e99999999999999999999",
            "1e99999999999999999999",
            "[1E400]",
            r#""\u12""#,
            r#""\u12g4""#,
            r#""\x41""#,
            "\"\t\"",
            "\"\u{7f}\"",
            "\"\u{e9}\u{1f600}\"",
            "\"a\nb\"",
            "[]",
            "[ ]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[1,2]",
            "[[]]",
            "[[]",
            "]",
            "{}",
            "{ }",
            r#"{"a":1}"#,
            r#"{"a" : 1 , "b":[]}"#,
            r#"{"a":1,}"#,
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{a:1}"#,
            r#"{"a":1"b":2}"#,
            r#"{1:2}"#,
            r#"{"a":1]"#,
            r#"[1}"#,
            "{}}",
            "[] []",
            " \n\t\r[1] \n",
            "\u{a0}1",
            r#"{"":{"":{}}}"#,
            r#"{"s":"0123456789abcdef\"x\\y"}"#,
            r#"["01234567","89abcdef","0123456\"]"#,
        ];
        for text in texts {
            assert_eq!(scan_accepts(text), policy_server_accepts(text), "{text:?}");
        }
    }

    /// Every cut of a realistic document, and every byte of it replaced by each byte that
    /// means something in JSON: accepted or refused as serde_json does.
    #[test]
    fn agrees_with_serde_json_on_damaged_documents() {
        let doc = r#"{"metadata":{"name":"n\"1","labels":{"a/b":"x\u0041"}},"spec":{"taints":[{"key":"k","effect":"NoSchedule","timeAdded":null}],"n":[-1.5e3,0,true,false]},"status":{"images":[{"names":["registry.k8s.io/pause:3.9"],"sizeBytes":321520}]}}"#;
        for text in cut_and_damaged(doc) {
            assert_eq!(scan_accepts(&text), policy_server_accepts(&text), "{text}");
        }
    }

    /// Deeper than a word of nesting bits, and deeper than serde_json builds, without recursion.
    #[test]
    fn skips_any_depth() {
        for depth in [63, 64, 65, 128, 129, 10_000] {
            let arrays = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let objects = format!("{}1{}", r#"{"a":["#.repeat(depth), "]}".repeat(depth));
            for text in [arrays, objects] {
                assert_eq!(value_end(text.as_bytes(), 0), Ok(text.len()), "{depth}");
                let short = &text[..text.len() - 1];
                assert!(value_end(short.as_bytes(), 0).is_err(), "{depth}");
            }
        }
    }

    /// A value is deep exactly when the walk of `nested_past` finds it nesting past
    /// [`SHALLOW`] levels, on every text the scanner accepts.
    #[test]
    fn tells_a_deep_value_as_the_walk_does() {
        let doc = r#"{"metadata":{"name":"n\"1","labels":{"a/b":"[{x"}},"spec":{"taints":[{"key":"k","e":{}}],"n":[[],[[1]],true]},"s":"]]"}"#;
        let mut texts = cut_and_damaged(doc);
        for depth in [SHALLOW - 1, SHALLOW, SHALLOW + 1, 2 * SHALLOW + 1] {
            texts.push(format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
            texts.push(format!(
                "{}{{}}{}",
                r#"{"a":["#.repeat(depth / 2),
                "]}".repeat(depth / 2)
            ));
            texts.push(format!(
                "[{}1{}, 2]",
                "[".repeat(depth - 1),
                "]".repeat(depth - 1)
            ));
        }
        let (mut shallow, mut deep) = (0, 0);
        for text in texts {
            let mut is_deep = false;
            if let Ok(end) = value_end_deep(text.as_bytes(), 0, &mut is_deep) {
                let walked = super::super::nested_past(&text[..end], SHALLOW).is_some();
                assert_eq!(is_deep, walked, "{text}");
                *(if is_deep { &mut deep } else { &mut shallow }) += 1;
            }
        }
        assert!(shallow > 20 && deep >= 4, "{shallow} {deep}");
    }

    #[test]
    fn ends_where_the_value_ends() {
        // (text, from, end)
        let cases = [
            (r#"{"a":1} ,"#, 0, 7),
            (r#"  "x\"y" :"#, 0, 8),
            ("[1, [2]]]", 0, 8),
            ("-12.5e3,", 0, 7),
            ("null}", 0, 4),
            (r#"[1,"a"]"#, 3, 6),
        ];
        for (text, from, end) in cases {
            assert_eq!(value_end(text.as_bytes(), from), Ok(end), "{text}");
        }
    }

    /// A plain run ends at the first stop at or after where it starts, wherever that falls
    /// among the two words of a turn, the word after them and the last few bytes (read as one
    /// word ending at the end, or byte by byte when there are fewer than eight), for any start:
    /// bytes before the start do not count, nor do the bytes a stop's borrow marks after it.
    #[test]
    fn plain_run_ends_at_the_first_stop() {
        let naive = |bytes: &[u8], at: usize| {
            (at..bytes.len())
                .find(|&i| STOPS[usize::from(bytes[i])])
                .unwrap_or(bytes.len().max(at))
        };
        for len in 0..=40 {
            for stop in [None, Some(b'"'), Some(b'\\'), Some(0), Some(0x1f)] {
                for place in 0..len.max(1) {
                    for after in [b'a', b'#', b']', b' ', 0x7f, 0xc3] {
                        let mut bytes = vec![b'a'; len];
                        if let Some(stop) = stop.filter(|_| len > 0) {
                            bytes[place] = stop;
                            if place + 1 < len {
                                bytes[place + 1] = after;
                            }
                        }
                        for at in 0..=len + 1 {
                            assert_eq!(
                                plain_run_end(&bytes, at),
                                naive(&bytes, at),
                                "{bytes:?} from {at}"
                            );
                        }
                    }
                }
            }
        }
    }
}
