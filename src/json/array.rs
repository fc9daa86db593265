//! Items appended to a JSON array's text.

/// The array `array` (its JSON text) with `items` (JSON texts) appended: the array's own text,
/// spacing included, is kept up to its closing bracket.
pub fn append_items(array: &str, items: &[String]) -> String {
    let body = &array[..array.len() - 1];
    let empty = body[1..].trim().is_empty();
    let added: usize = items.iter().map(|item| item.len() + 1).sum();
    let mut out = String::with_capacity(array.len() + added);
    out.push_str(body);
    for (i, item) in items.iter().enumerate() {
        if i > 0 || !empty {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
