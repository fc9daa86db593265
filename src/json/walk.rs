//! JSON text's structure, walked without decoding it: how deep it nests, and which member or
//! element a byte offset is in. Both skip strings the same way ([`string_end`]).
//!
//! The borrowed views read requests with `&RawValue` captures, which serde_json skips without
//! counting nesting: a request nested 10,000 levels deep in a field no policy reads is read fine.
//! The engines are not as lenient with what a policy hands back. Kubewarden's policy-server, and
//! the npm package when it computes the JSONPatch, read the mutated object into a
//! `serde_json::Value`, which refuses the 128th nested array or object ("recursion limit
//! exceeded": serde_json's guard against overflowing the stack).

use super::JsonStr;

/// The most arrays and objects serde_json nests when it reads a `Value`: it refuses the 128th.
pub const MAX_NESTING: usize = 127;

/// The byte offset of the first `[` or `{` in `text` that opens a container nested more than
/// `max` levels deep (the outermost container is level 1), or `None` when `text` nests at most
/// `max` levels. Meant for text serde_json accepted; on anything else the answer is meaningless
/// but never a panic. Linear in the text, without allocating or recursing.
pub fn nested_past(text: &str, max: usize) -> Option<usize> {
    let b = text.as_bytes();
    // Text cannot nest deeper than it has `[` and `{`, strings included. Counted eight bytes at
    // a time, that clears almost every object for a fraction of the walk below, which was a
    // large share of a small mutation (benchmarks/cost.md, "What each change bought").
    if openers(b) <= max {
        return None;
    }
    let mut depth = 0usize;
    let mut at = 0;
    while let Some(&byte) = b.get(at) {
        match byte {
            // Brackets inside a string nest nothing.
            b'"' => at = string_end(b, at)?,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return Some(at);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        at += 1;
    }
    None
}

/// How many `[` and `{` bytes `bytes` holds. The two differ only in bit 0x20, and no other
/// byte becomes `{` with that bit set, so one comparison per byte tells both, made on a word
/// of eight bytes at once (wasm has no SIMD here).
fn openers(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const LOW7: u64 = ONES * 0x7f;
    let (words, rest) = bytes.as_chunks::<8>();
    let mut count = 0;
    for word in words {
        // Zero bytes where `word` held `[` or `{`; then the high bit of each zero byte alone.
        let x = (u64::from_ne_bytes(*word) | (ONES * 0x20)) ^ (ONES * u64::from(b'{'));
        let zero = !(((x & LOW7) + LOW7) | x | LOW7);
        count += zero.count_ones() as usize;
    }
    count + rest.iter().filter(|&&b| b | 0x20 == b'{').count()
}

/// The offset of the `"` that closes the string opened at `open`, or `None` when it is not
/// closed (or not JSON: these walks are meant for text serde_json accepted).
fn string_end(bytes: &[u8], open: usize) -> Option<usize> {
    super::scan::string_end(bytes, open + 1)
        .ok()
        .map(|end| end - 1)
}

/// The path (`spec.taints[2].key`) of the value being read at byte `end` of `text`: the member
/// key or element index in each object and array still open there. A key is written as its
/// text between the quotes, escapes decoded where they are simple.
pub fn path_at(text: &str, end: usize) -> String {
    enum Open {
        /// The key of the member being read, once read.
        Object(Option<String>),
        /// The index of the element being read.
        Array(usize),
    }
    let bytes = text.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    let mut i = 0;
    while i < end.min(bytes.len()) {
        match bytes[i] {
            b'{' => open.push(Open::Object(None)),
            b'[' => open.push(Open::Array(0)),
            b'}' | b']' => drop(open.pop()),
            b',' => match open.last_mut() {
                Some(Open::Object(key)) => *key = None,
                Some(Open::Array(n)) => *n += 1,
                None => {}
            },
            b'"' => {
                let start = i;
                i = string_end(bytes, i).unwrap_or(bytes.len());
                if let Some(Open::Object(key @ None)) = open.last_mut() {
                    let token = text.get(start..=i).unwrap_or_default();
                    let name = serde_json::from_str::<JsonStr<'_>>(token).unwrap_or_default();
                    *key = Some(name.0.into_owned());
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for segment in open {
        match segment {
            Open::Object(None) => {}
            Open::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&key);
            }
            Open::Array(n) => {
                path.push('[');
                path.push_str(&n.to_string());
                path.push(']');
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(depth: usize) -> String {
        format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
    }

    fn arrays(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// `MAX_NESTING` is serde_json's own limit, whatever the containers, at the boundary.
    #[test]
    fn agrees_with_serde_json_at_the_limit() {
        for depth in [2, 126, 127, 128, 129, 1000] {
            for text in [
                objects(depth),
                arrays(depth),
                format!(r#"{{"s":"[[[{{\"","x":{}}}"#, arrays(depth - 1)),
            ] {
                let readable = serde_json::from_str::<serde_json::Value>(&text).is_ok();
                let past = nested_past(&text, MAX_NESTING);
                assert_eq!(past.is_none(), readable, "{depth}: {past:?}");
                if let Some(at) = past {
                    assert!(matches!(text.as_bytes()[at], b'[' | b'{'), "{depth}");
                    assert_eq!(nested_past(&text[..at], MAX_NESTING), None, "{depth}");
                }
            }
        }
    }

    /// The count that spares the walk is exact, whatever the alignment, bytes of every value
    /// around the brackets (the high bit and 0x20 included).
    #[test]
    fn openers_are_counted_exactly() {
        let alphabet: Vec<u8> = (0..=255).collect();
        for len in 0..40 {
            for start in 0..8 {
                let bytes: Vec<u8> = alphabet
                    .iter()
                    .cycle()
                    .skip(start * 37 + len)
                    .take(len)
                    .copied()
                    .collect();
                let want = bytes.iter().filter(|&&b| b == b'[' || b == b'{').count();
                assert_eq!(openers(&bytes), want, "{bytes:?}");
            }
        }
        let all: Vec<u8> = alphabet.iter().chain(&alphabet).copied().collect();
        assert_eq!(openers(&all), 4);
        assert_eq!(openers(&[b'{'; 300]), 300);
    }

    #[test]
    fn strings_and_escapes_do_not_nest() {
        // (text, max, want)
        let cases: [(&str, usize, Option<usize>); 7] = [
            (r#"{"a":"{[{[","b":[]}"#, 1, Some(16)),
            (r#"{"a":"\"[","b":1}"#, 1, None),
            (r#"{"a":"\\","b":[1]}"#, 1, Some(14)),
            (r#"["]]]]",[[]]]"#, 2, Some(9)),
            ("1", 0, None),
            ("", 0, None),
            // Not JSON: an answer, never a panic.
            (r#"{"a":"unterminated\"#, 1, None),
        ];
        for (text, max, want) in cases {
            assert_eq!(nested_past(text, max), want, "{text}");
        }
    }
}
