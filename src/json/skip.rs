//! Where a JSON value ends, found without decoding it, in text serde_json has already accepted.
//!
//! Skipping the values a policy does not read (a Node's image list is most of its text) is most
//! of the work of the one-pass readers ([`super::scan`], `crate::jsonpath`), so both share these
//! two loops. A string is skipped with `memchr2`, which tests a machine word at a time for a quote
//! or a backslash (a byte-at-a-time loop measured half of a 200 KB Node's profile);
//! an array or object with a table lookup per byte outside its strings.
//!
//! Nothing is validated: text that is not JSON gives a wrong end or `None`, never a panic.

/// The index just past the closing quote of the string whose opening quote is at `open`, or
/// `None` when the text ends first.
pub fn string_end(text: &[u8], open: usize) -> Option<usize> {
    let mut at = open + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', text.get(at..)?)?;
        if text[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash: the byte after it is escaped, whatever it is.
        at += 2;
    }
}

/// Bytes that matter when skipping an array or object: 1 a quote, 2 an opening, 3 a closing.
const STRUCTURAL: [u8; 256] = {
    let mut table = [0; 256];
    table[b'"' as usize] = 1;
    table[b'{' as usize] = 2;
    table[b'[' as usize] = 2;
    table[b'}' as usize] = 3;
    table[b']' as usize] = 3;
    table
};

/// The index just past the value that starts at `start` (no leading whitespace), or `None`
/// when the text ends first or no value starts there.
pub fn value_end(text: &[u8], start: usize) -> Option<usize> {
    match text.get(start)? {
        b'"' => string_end(text, start),
        b'{' | b'[' => {
            let mut open = 0usize;
            let mut at = start;
            loop {
                while STRUCTURAL[*text.get(at)? as usize] == 0 {
                    at += 1;
                }
                match STRUCTURAL[text[at] as usize] {
                    1 => at = string_end(text, at)?,
                    2 => {
                        open += 1;
                        at += 1;
                    }
                    _ => {
                        open -= 1;
                        at += 1;
                        if open == 0 {
                            return Some(at);
                        }
                    }
                }
            }
        }
        _ => {
            let len = text[start..]
                .iter()
                .position(|b| {
                    matches!(
                        b,
                        b',' | b'}'
                            | b']'
                            | b':'
                            | b' '
                            | b'\t'
                            | b'\n'
                            | b'\r'
                            | b'"'
                            | b'{'
                            | b'['
                    )
                })
                .unwrap_or(text.len() - start);
            (len > 0).then_some(start + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_of_values() {
        // (text, start, end): `None` where the text ends first or holds no value at `start`.
        let cases: [(&str, usize, Option<usize>); 13] = [
            (r#""abc", 1"#, 0, Some(5)),
            (r#""a\"b\\" x"#, 0, Some(8)),
            (r#""\u00e9""#, 0, Some(8)),
            (r#""unterminated"#, 0, None),
            (r#""ends in \"#, 0, None),
            (r#"{"a": [1, {"b": "]}"}], "c": {}} tail"#, 0, Some(32)),
            (r#"[[], [[]], "[", "\"]"]"#, 0, Some(22)),
            (r#"[1, 2"#, 0, None),
            ("12.5e3, 1", 0, Some(6)),
            ("true}", 0, Some(4)),
            ("null", 0, Some(4)),
            (", 1", 0, None),
            ("", 0, None),
        ];
        for (text, start, want) in cases {
            assert_eq!(value_end(text.as_bytes(), start), want, "{text}");
        }
    }
}
