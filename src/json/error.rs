//! serde_json's errors, said in terms of the JSON they are about: the path of the value being
//! read (`spec.taints[2].key`) instead of a line and column. Settings and requests alike name the
//! field this way; settings then reword serde's message (`crate::settings`).

use super::walk::path_at;

/// serde_json's message without its position (`invalid type: integer `7`, expected a string`).
/// The position is removed as serde_json writes it, not by searching the text for it.
pub fn message(error: &serde_json::Error) -> String {
    let full = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match full.strip_suffix(&position) {
        Some(message) => message.to_owned(),
        None => full,
    }
}

/// The path of the value serde_json was reading in `text` when it found `error`; empty at the
/// top level and for errors with no position. serde_json reports a type error just past the
/// value it read (or at the bracket it would not read), an unknown or duplicate field just past
/// the key, and an error found once an object is read (a missing field) past its `}`, so the
/// value being read is the last one begun. Only errors pay for this walk. A deserializer wrapper
/// that tracks the path as it reads (serde_path_to_error) made the modules larger and every
/// request pay for the tracking, and could not name a field given twice (benchmarks/cost.md,
/// "Tried and dropped").
pub fn path(text: &str, error: &serde_json::Error) -> String {
    if error.line() == 0 {
        return String::new();
    }
    path_at(text, offset(text, error.line(), error.column()))
}

/// The message of an error reading `text`, with the path of the field it is about:
/// `invalid type: integer `7`, expected a string (at `userInfo.username`)`.
pub fn describe(text: &str, error: &serde_json::Error) -> String {
    describe_in(text, text, error)
}

/// [`describe`] for an error reading `inner`, a slice of `outer` (a member of the document):
/// the path is named in `outer`.
pub fn describe_in(outer: &str, inner: &str, error: &serde_json::Error) -> String {
    if error.line() == 0 {
        return message(error);
    }
    let at = super::span_in(outer, inner).start + offset(inner, error.line(), error.column());
    with_path(message(error), &path_at(outer, at))
}

/// `message`, naming `path` after it (``(at `spec.taints[2].key`)``) unless it is the top level.
pub fn with_path(message: String, path: &str) -> String {
    match path {
        "" => message,
        path => format!("{message} (at `{path}`)"),
    }
}

/// The byte offset of serde_json's error position: a 1-based line and the bytes before the
/// position on that line.
fn offset(text: &str, line: usize, column: usize) -> usize {
    let line_start = match line {
        0 | 1 => 0,
        _ => text
            .match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(i, _)| i + 1),
    };
    (line_start + column).min(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        name: String,
        #[serde(default)]
        items: Vec<Item>,
    }

    #[allow(dead_code)]
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        on: bool,
    }

    /// Each place serde_json puts an error, and serde's words for it: a change in either fails
    /// here first.
    #[test]
    fn errors_are_described_at_their_field() {
        let cases = [
            (
                r#"{"name": 7}"#,
                "invalid type: integer `7`, expected a string (at `name`)",
            ),
            (
                r#"{"name": "a", "items": [{"on": true}, {"on": 1}]}"#,
                "invalid type: integer `1`, expected a boolean (at `items[1].on`)",
            ),
            (
                r#"{"name": "a", "items": [{"on": true}, {}]}"#,
                "missing field `on` (at `items[1]`)",
            ),
            (r#"{"items": []}"#, "missing field `name`"),
            (
                r#"{"name": "a", "extra": 1}"#,
                "unknown field `extra`, expected `name` or `items` (at `extra`)",
            ),
            (
                r#"{"name": "a", "name": "b"}"#,
                "duplicate field `name` (at `name`)",
            ),
            (
                r#"{"n\u0061me": 7}"#,
                "invalid type: integer `7`, expected a string (at `name`)",
            ),
            (
                "{\n \"name\": \"x\",\n \"items\": [\n {\"on\": \"[{\"}]}",
                "invalid type: string \"[{\", expected a boolean (at `items[0].on`)",
            ),
            // A derived struct reads an array as its fields in order.
            (
                "[1]",
                "invalid type: integer `1`, expected a string (at `[0]`)",
            ),
            (r#"{"name": "#, "EOF while parsing a value (at `name`)"),
        ];
        for (text, want) in cases {
            let error = serde_json::from_str::<Doc>(text).unwrap_err();
            assert_eq!(describe(text, &error), want, "{text}");
        }
    }
}
