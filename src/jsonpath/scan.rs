//! Reading JSON text in place: the members or elements of one container, the whole subtree of a
//! node in document order, and the decoding of the few values a query compares.
//!
//! The object text was accepted by serde_json when the request was captured, but nothing here
//! relies on that for safety: text that is not JSON gives an error, never a panic. Nesting is
//! counted from the object's root the way serde_json counts it, and reading into a container
//! nested deeper than [`MAX_NESTING`] is an error, as it is when serde_json parses it into a `Value`.

use std::borrow::Cow;

use serde_json::Value;

use super::skip;
use crate::json::MAX_NESTING;

/// A value in the object: its text and how many arrays and objects enclose it.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    pub text: &'a str,
    pub depth: usize,
}

/// A child of a container: its member name (the raw string token, quotes included) unless the
/// container is an array, and its value.
#[derive(Debug, Clone, Copy)]
pub struct Child<'a> {
    pub key: Option<&'a str>,
    pub node: Node<'a>,
}

/// Why the object could not be read: what, and the text where it happened.
#[derive(Debug, Clone)]
pub struct ReadError<'a> {
    pub at: &'a str,
    pub what: String,
}

impl ReadError<'_> {
    fn new(at: &str, what: impl Into<String>) -> ReadError<'_> {
        ReadError {
            at,
            what: what.into(),
        }
    }

    /// The error with its byte offset in `object`, the text the query ran on.
    pub fn describe(&self, object: &str) -> String {
        let offset = (self.at.as_ptr() as usize).wrapping_sub(object.as_ptr() as usize);
        if offset <= object.len() {
            format!("{} at byte {offset}", self.what)
        } else {
            self.what.clone()
        }
    }
}

pub type Result<'a, T> = std::result::Result<T, ReadError<'a>>;

pub(super) fn too_deep(at: &str) -> ReadError<'_> {
    ReadError::new(
        at,
        format!("more than {MAX_NESTING} nested arrays and objects (the recursion limit)"),
    )
}

pub(super) fn malformed(at: &str) -> ReadError<'_> {
    ReadError::new(at, "malformed JSON")
}

pub(super) fn blank(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// The end of the string token that starts at `i`.
pub(super) fn string_end(s: &str, i: usize) -> Result<'_, usize> {
    skip::string_end(s.as_bytes(), i).ok_or_else(|| malformed(rest(s, i)))
}

/// The end of the value that starts at `i`, nested values skipped without being counted.
pub(super) fn value_end(s: &str, i: usize) -> Result<'_, usize> {
    skip::value_end(s.as_bytes(), i).ok_or_else(|| malformed(rest(s, i)))
}

pub(super) fn rest(s: &str, i: usize) -> &str {
    s.get(i..).unwrap_or_default()
}

pub(super) fn slice(s: &str, from: usize, to: usize) -> Result<'_, &str> {
    s.get(from..to).ok_or_else(|| malformed(s))
}

/// The members of an object or the elements of an array, in document order; nothing for other
/// values.
pub fn children(node: Node<'_>) -> Result<'_, Vec<Child<'_>>> {
    let s = node.text;
    let b = s.as_bytes();
    let (object, close) = match b.first() {
        Some(b'{') => (true, b'}'),
        Some(b'[') => (false, b']'),
        _ => return Ok(Vec::new()),
    };
    if node.depth + 1 > MAX_NESTING {
        return Err(too_deep(s));
    }
    let mut out = Vec::new();
    let mut i = blank(b, 1);
    if b.get(i) == Some(&close) {
        return Ok(out);
    }
    loop {
        let mut key = None;
        if object {
            if b.get(i) != Some(&b'"') {
                return Err(malformed(rest(s, i)));
            }
            let end = string_end(s, i)?;
            key = Some(slice(s, i, end)?);
            i = blank(b, end);
            if b.get(i) != Some(&b':') {
                return Err(malformed(rest(s, i)));
            }
            i = blank(b, i + 1);
        }
        let end = value_end(s, i)?;
        out.push(Child {
            key,
            node: Node {
                text: slice(s, i, end)?,
                depth: node.depth + 1,
            },
        });
        i = blank(b, end);
        match b.get(i) {
            Some(b',') => i = blank(b, i + 1),
            Some(c) if *c == close => return Ok(out),
            _ => return Err(malformed(rest(s, i))),
        }
    }
}

/// One node of a [`subtree`].
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub child: Child<'a>,
    /// The index of the entry after this node's subtree: its next sibling, if it has one.
    pub after: usize,
}

/// `node` and all of its descendants in document order (each node before its descendants, the
/// children of a container in order), read in one pass. The children of entry `i` are
/// `i + 1`, then each next one at the previous one's `after`, up to `entries[i].after`.
pub fn subtree(node: Node<'_>) -> Result<'_, Vec<Entry<'_>>> {
    let s = node.text;
    let b = s.as_bytes();
    let mut entries: Vec<Entry<'_>> = Vec::new();
    // Open containers: entry index, start offset, closing byte.
    let mut open: Vec<(usize, usize, u8)> = Vec::new();
    let mut i = 0;
    let mut key = None;
    loop {
        // A value starts at `i`.
        i = blank(b, i);
        let depth = node.depth + open.len();
        match b.get(i) {
            Some(&c @ (b'{' | b'[')) => {
                if depth + 1 > MAX_NESTING {
                    return Err(too_deep(rest(s, i)));
                }
                entries.push(Entry {
                    child: Child {
                        key,
                        node: Node { text: "", depth },
                    },
                    after: 0,
                });
                open.push((entries.len() - 1, i, if c == b'{' { b'}' } else { b']' }));
                i = blank(b, i + 1);
                if b.get(i) != Some(&open[open.len() - 1].2) {
                    key = member_key(s, &mut i, c == b'{')?;
                    continue;
                }
            }
            _ => {
                let end = value_end(s, i)?;
                entries.push(Entry {
                    child: Child {
                        key,
                        node: Node {
                            text: slice(s, i, end)?,
                            depth,
                        },
                    },
                    after: entries.len() + 1,
                });
                i = blank(b, end);
            }
        }
        // After a value: close containers until a `,` or the end of `node`.
        loop {
            let Some(&(index, start, close)) = open.last() else {
                return Ok(entries);
            };
            match b.get(i) {
                Some(b',') => {
                    i = blank(b, i + 1);
                    key = member_key(s, &mut i, close == b'}')?;
                    break;
                }
                Some(c) if *c == close => {
                    i += 1;
                    entries[index].child.node.text = slice(s, start, i)?;
                    entries[index].after = entries.len();
                    open.pop();
                    i = blank(b, i);
                }
                _ => return Err(malformed(rest(s, i))),
            }
        }
    }
}

/// In an object, reads `"key" :` at `*i` and leaves `*i` at the value.
fn member_key<'a>(s: &'a str, i: &mut usize, object: bool) -> Result<'a, Option<&'a str>> {
    if !object {
        return Ok(None);
    }
    let b = s.as_bytes();
    if b.get(*i) != Some(&b'"') {
        return Err(malformed(rest(s, *i)));
    }
    let end = string_end(s, *i)?;
    let key = slice(s, *i, end)?;
    *i = blank(b, end);
    if b.get(*i) != Some(&b':') {
        return Err(malformed(rest(s, *i)));
    }
    *i += 1;
    Ok(Some(key))
}

/// The text of a string token (quotes included), unescaped.
pub fn string(token: &str) -> Result<'_, Cow<'_, str>> {
    let inner = token
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or_else(|| malformed(token))?;
    if !inner.contains('\\') {
        return Ok(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(token)
        .map(Cow::Owned)
        .map_err(|e| ReadError::new(token, format!("unreadable string: {e}")))
}

/// Whether the member name token `key` is `name`.
pub fn key_is<'a>(key: &'a str, name: &str) -> Result<'a, bool> {
    Ok(string(key)? == name)
}

/// The value of a number token, read as serde_json reads numbers: the same digits give the same
/// `f64` in a document and in a path's literal (see [`json_number`]).
pub fn number(token: &str) -> Result<'_, f64> {
    json_number(token).map_err(|e| match e {
        NumberError::OutOfRange => ReadError::new(token, "number out of range"),
        NumberError::Malformed => malformed(token),
    })
}

/// Why text is not read as a number.
pub enum NumberError {
    /// Not JSON's number syntax.
    Malformed,
    /// JSON's syntax, but no finite `f64` (`1e400`).
    OutOfRange,
}

/// A JSON number's text as an `f64`, through serde_json's own number parser. One parser for
/// documents and literals keeps equal digits equal, and the core library's `str::parse::<f64>`,
/// linked only for this, brought 10 KiB of tables into every module's static data, which each
/// gatekeeper instantiation copies (`benchmarks/results.md`).
pub fn json_number(text: &str) -> std::result::Result<f64, NumberError> {
    if !is_json_number(text) {
        // serde_json would also take surrounding white space.
        return Err(NumberError::Malformed);
    }
    match serde_json::from_str::<f64>(text) {
        Ok(n) if n.is_finite() => Ok(n),
        // serde_json refuses a well-formed number only when it is out of range.
        _ => Err(NumberError::OutOfRange),
    }
}

/// Whether `text` is a JSON number: `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?
fn is_json_number(text: &str) -> bool {
    fn digits(b: &[u8]) -> usize {
        b.iter().take_while(|c| c.is_ascii_digit()).count()
    }
    let mut b = text.as_bytes();
    b = b.strip_prefix(b"-").unwrap_or(b);
    let int = digits(b);
    if int == 0 || (int > 1 && b[0] == b'0') {
        return false;
    }
    b = &b[int..];
    if let Some(rest) = b.strip_prefix(b".") {
        let frac = digits(rest);
        if frac == 0 {
            return false;
        }
        b = &rest[frac..];
    }
    if let Some(rest) = b.strip_prefix(b"e").or_else(|| b.strip_prefix(b"E")) {
        let rest = rest
            .strip_prefix(b"+")
            .or_else(|| rest.strip_prefix(b"-"))
            .unwrap_or(rest);
        let exp = digits(rest);
        if exp == 0 {
            return false;
        }
        b = &rest[exp..];
    }
    b.is_empty()
}

/// `node` as a `Value`, refused as serde_json refuses it when parsing the whole object (nesting
/// counted from the object's root).
pub fn decode(node: Node<'_>) -> Result<'_, Value> {
    if matches!(node.text.as_bytes().first(), Some(b'{' | b'[')) {
        // Read the nesting first: serde_json would count it from this node, not from the root.
        subtree(node)?;
    }
    serde_json::from_str(node.text).map_err(|e| ReadError::new(node.text, format!("{e}")))
}
