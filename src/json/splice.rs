use std::ops::Range;

use super::{members, span_in, write_str};

/// Byte-range edits to one JSON document, applied in a single pass by [`Splice::finish`].
///
/// Every `&str` handed in must be a slice of the document (a borrowed view); edits must not
/// overlap, which the policies guarantee by editing disjoint members.
#[derive(Debug)]
pub struct Splice<'a> {
    doc: &'a str,
    edits: Vec<(Range<usize>, String)>,
}

impl<'a> Splice<'a> {
    pub fn new(doc: &'a str) -> Self {
        Splice {
            doc,
            edits: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// Replaces the value `part` (a slice of the document) with `json`.
    pub fn replace(&mut self, part: &str, json: String) {
        let span = span_in(self.doc, part);
        self.edits.push((span, json));
    }

    /// Appends `members` (key, JSON value) to the object whose text is `object`.
    pub fn insert_members(&mut self, object: &str, new_members: &[(&str, String)]) {
        let span = span_in(self.doc, object);
        let inner = object[1..object.len() - 1].trim();
        let mut text = String::new();
        for (i, (key, value)) in new_members.iter().enumerate() {
            if i > 0 || !inner.is_empty() {
                text.push(',');
            }
            write_str(&mut text, key);
            text.push(':');
            text.push_str(value);
        }
        let at = span.end - 1;
        self.edits.push((at..at, text));
    }

    /// Appends `items` (JSON texts) to the array whose text is `array`.
    pub fn append_items(&mut self, array: &str, items: &[String]) {
        let span = span_in(self.doc, array);
        let mut text = String::new();
        let empty = array[1..array.len() - 1].trim().is_empty();
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !empty {
                text.push(',');
            }
            text.push_str(item);
        }
        let at = span.end - 1;
        self.edits.push((at..at, text));
    }

    /// Removes the member whose value is `value` from the object whose text is `object`,
    /// together with the comma that separated it from its neighbour.
    pub fn remove_member(&mut self, object: &str, value: &str) -> Result<(), serde_json::Error> {
        let object_span = span_in(self.doc, object);
        let all = members(object)?;
        let Some(index) = all
            .iter()
            .position(|(_, v)| v.get().as_ptr() == value.as_ptr())
        else {
            return Ok(());
        };
        let value_span = span_in(self.doc, value);
        let range = if index > 0 {
            // From the end of the previous value: `, "key": value`.
            span_in(self.doc, all[index - 1].1.get()).end..value_span.end
        } else if all.len() > 1 {
            // The first of several: `"key": value,` up to the next key.
            let rest = &self.doc[value_span.end..object_span.end];
            let comma = rest.find(',').map_or(0, |c| c + 1);
            object_span.start + 1..value_span.end + comma
        } else {
            object_span.start + 1..value_span.end
        };
        self.edits.push((range, String::new()));
        Ok(())
    }

    /// The edited document.
    pub fn finish(mut self) -> String {
        self.edits.sort_by_key(|(range, _)| range.start);
        let added: usize = self.edits.iter().map(|(_, t)| t.len()).sum();
        let mut out = String::with_capacity(self.doc.len() + added);
        let mut at = 0;
        for (range, text) in &self.edits {
            debug_assert!(range.start >= at, "overlapping edits");
            out.push_str(&self.doc[at..range.start]);
            out.push_str(text);
            at = range.end;
        }
        out.push_str(&self.doc[at..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Raw;

    #[derive(serde::Deserialize)]
    struct Doc<'a> {
        #[serde(borrow, default)]
        a: Raw<'a>,
        #[serde(borrow, default)]
        o: Raw<'a>,
    }

    #[test]
    fn edits_keep_everything_else() {
        let doc = r#"{"z":0, "a" : [1,2], "o": {"k1":"v1", "k2": "v2","k3":3}, "new": {"x":1}}"#;
        let view: Doc = serde_json::from_str(doc).unwrap();
        let object = view.o.text().unwrap();
        let m = members(object).unwrap();
        type Edit<'e> = Box<dyn Fn(&mut Splice) + 'e>;
        let cases: Vec<(&str, Edit, &str)> = vec![
            (
                "replace",
                Box::new(|s| s.replace(view.a.text().unwrap(), "[9]".into())),
                r#"{"z":0, "a" : [9], "o": {"k1":"v1", "k2": "v2","k3":3}, "new": {"x":1}}"#,
            ),
            (
                "remove first",
                Box::new(|s| s.remove_member(object, m[0].1.get()).unwrap()),
                r#"{"z":0, "a" : [1,2], "o": { "k2": "v2","k3":3}, "new": {"x":1}}"#,
            ),
            (
                "remove middle",
                Box::new(|s| s.remove_member(object, m[1].1.get()).unwrap()),
                r#"{"z":0, "a" : [1,2], "o": {"k1":"v1","k3":3}, "new": {"x":1}}"#,
            ),
            (
                "remove last",
                Box::new(|s| s.remove_member(object, m[2].1.get()).unwrap()),
                r#"{"z":0, "a" : [1,2], "o": {"k1":"v1", "k2": "v2"}, "new": {"x":1}}"#,
            ),
            (
                "append items",
                Box::new(|s| s.append_items(view.a.text().unwrap(), &["3".into(), "{}".into()])),
                r#"{"z":0, "a" : [1,2,3,{}], "o": {"k1":"v1", "k2": "v2","k3":3}, "new": {"x":1}}"#,
            ),
            (
                "insert two",
                Box::new(|s| s.insert_members(object, &[("a\"b", "1".into()), ("c", "[]".into())])),
                r#"{"z":0, "a" : [1,2], "o": {"k1":"v1", "k2": "v2","k3":3,"a\"b":1,"c":[]}, "new": {"x":1}}"#,
            ),
        ];
        for (name, edit, want) in cases {
            let mut s = Splice::new(doc);
            edit(&mut s);
            let got = s.finish();
            assert_eq!(got, want, "{name}");
            serde_json::from_str::<serde_json::Value>(&got).expect(name);
        }
    }

    #[test]
    fn single_member_and_empty_objects() {
        let doc = r#"{"a":{ "only": 1 },"o":{ }}"#;
        let view: Doc = serde_json::from_str(doc).unwrap();
        let a = view.a.text().unwrap();
        let only = members(a).unwrap()[0].1.get();
        let mut s = Splice::new(doc);
        s.remove_member(a, only).unwrap();
        s.insert_members(view.o.text().unwrap(), &[("k", "true".into())]);
        assert_eq!(s.finish(), r#"{"a":{ },"o":{ "k":true}}"#);
    }
}
