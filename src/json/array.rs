//! A JSON array's items: read as their texts, and appended to an array's text.

use serde_json::value::RawValue;

use super::scan;

/// The items of the JSON array `array`, each as its text, in order.
///
/// A list whose items are each read on their own (a Node's taints) was first read as
/// `Vec<&RawValue>`, with serde_json's machinery for building values; the scanner under the
/// request's pass finds where each item ends for less (benchmarks/cost.md, "Decision work,
/// measured per function"). It accepts what serde_json accepts (a differential test holds
/// the two together); a text it refuses is read by serde_json, for its words.
///
/// # Errors
///
/// `array` is not one JSON array, in serde_json's words.
///
/// # Examples
///
/// ```
/// let items = taintguard::json::items(r#"[{"key": "a"}, 2 ,"x"]"#).unwrap();
/// assert_eq!(items, [r#"{"key": "a"}"#, "2", r#""x""#]);
/// ```
pub fn items(array: &str) -> Result<Vec<&str>, serde_json::Error> {
    match scanned_items(array) {
        Some(items) => Ok(items),
        None => serde_json::from_str::<Vec<&RawValue>>(array)
            .map(|items| items.into_iter().map(RawValue::get).collect()),
    }
}

/// [`items`] by the scanner; `None` where the text is not one array.
fn scanned_items(text: &str) -> Option<Vec<&str>> {
    each_item(text, |at| {
        let end = scan::value_end(text.as_bytes(), at).ok()?;
        Some((&text[at..end], end))
    })
}

/// The items of the JSON array `text`, each read by `item` from where it begins (what it read,
/// and where the item ends); `None` where the text is not one array or `item` refuses one.
pub(super) fn each_item<T>(
    text: &str,
    item: impl FnMut(usize) -> Option<(T, usize)>,
) -> Option<Vec<T>> {
    let bytes = text.as_bytes();
    let (items, end) = each_item_at(bytes, scan::whitespace_end(bytes, 0), item)?;
    (scan::whitespace_end(bytes, end) == bytes.len()).then_some(items)
}

/// [`each_item`] of the array whose `[` is at `at`, and the offset past its `]`.
pub(super) fn each_item_at<T>(
    bytes: &[u8],
    mut at: usize,
    mut item: impl FnMut(usize) -> Option<(T, usize)>,
) -> Option<(Vec<T>, usize)> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let mut items = Vec::new();
    at = scan::whitespace_end(bytes, at + 1);
    if bytes.get(at) == Some(&b']') {
        return Some((items, at + 1));
    }
    loop {
        let (read, end) = item(at)?;
        items.push(read);
        at = scan::whitespace_end(bytes, end);
        match bytes.get(at) {
            Some(b',') => at = scan::whitespace_end(bytes, at + 1),
            Some(b']') => return Some((items, at + 1)),
            _ => return None,
        }
    }
}

/// The array `array` (its JSON text) with `items` (JSON texts) appended: the array's own text,
/// spacing included, is kept up to its closing bracket.
pub fn append_items<S: AsRef<str>>(array: &str, items: &[S]) -> String {
    let body = &array[..array.len() - 1];
    let empty = body[1..].trim().is_empty();
    let added: usize = items.iter().map(|item| item.as_ref().len() + 1).sum();
    let mut out = String::with_capacity(array.len() + added);
    out.push_str(body);
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !empty {
            out.push(',');
        }
        out.push_str(item.as_ref());
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_items_serde_json_reads() {
        let doc = r#" [{"key":"a\"b","effect":"NoSchedule"}, [1, -2.5e3], true ,null,"x",{}] "#;
        let mut texts = crate::json::scan::cut_and_damaged(doc);
        texts.extend(["[]", " [ ] ", "[,]", "[1,]", "[1 2]", "{}", "1", "[1] x"].map(String::from));
        for text in texts {
            let serde = serde_json::from_str::<Vec<&RawValue>>(&text)
                .map(|items| items.into_iter().map(RawValue::get).collect::<Vec<_>>());
            assert_eq!(scanned_items(&text), serde.as_ref().ok().cloned(), "{text}");
            assert_eq!(items(&text).ok(), serde.ok(), "{text}");
        }
    }

    #[test]
    fn appends_after_what_the_array_holds() {
        // (array, items, want)
        let cases: [(&str, &[&str], &str); 5] = [
            ("[1, 2 ]", &["3", "{}"], "[1, 2 ,3,{}]"),
            ("[]", &["1"], "[1]"),
            ("[ ]", &["1", "2"], "[ 1,2]"),
            (r#"["]"]"#, &["1"], r#"["]",1]"#),
            ("[1]", &[], "[1]"),
        ];
        for (array, items, want) in cases {
            let items: Vec<String> = items.iter().map(|i| i.to_string()).collect();
            let got = append_items(array, &items);
            assert_eq!(got, want, "{array}");
            serde_json::from_str::<serde_json::Value>(&got).unwrap();
        }
    }
}
