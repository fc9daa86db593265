//! Objects as users have them: a file of YAML or JSON (`kubectl get node n1 -o yaml`).

use std::path::Path;

use serde_json::Value;

use crate::files::Files;

/// The object in `text`: JSON, or YAML (a superset the files are usually written in). A
/// Kubernetes `List` is refused: a review holds one object.
///
/// # Errors
///
/// Text that is neither, or that holds no single object, with `what` (the file) named.
pub fn parse(text: &str, what: &str) -> Result<Value, String> {
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => {
            serde_yaml::from_str(text).map_err(|e| format!("{what}: not YAML or JSON: {e}"))?
        }
    };
    if !value.is_object() {
        return Err(format!(
            "{what}: expected one Kubernetes object, found {}",
            kind_of(&value)
        ));
    }
    if value.get("items").is_some_and(Value::is_array) {
        return Err(format!(
            "{what}: a list of objects; a review holds one (`kubectl get KIND NAME -o yaml`)"
        ));
    }
    Ok(value)
}

/// The JSON or YAML value in the file at `path`, whatever it is (settings, a JSON patch).
///
/// # Errors
///
/// A file that cannot be read, or holds neither JSON nor YAML.
pub fn read_any(files: &dyn Files, path: &Path) -> Result<Value, String> {
    let what = path.display().to_string();
    let text = files.read(path)?;
    serde_json::from_str(&text)
        .or_else(|_| serde_yaml::from_str(&text))
        .map_err(|e| format!("{what}: not YAML or JSON: {e}"))
}

/// The object in the file at `path`.
///
/// # Errors
///
/// A file that cannot be read, or whose text [`parse`] refuses.
pub fn read(files: &dyn Files, path: &Path) -> Result<Value, String> {
    let what = path.display().to_string();
    let text = files.read(path)?;
    parse(&text, &what)
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_objects_only() {
        let yaml = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";
        assert_eq!(parse(yaml, "f").unwrap()["metadata"]["name"], "n1");
        let json = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}"#;
        assert_eq!(parse(json, "f").unwrap(), parse(yaml, "f").unwrap());
        let cases = [
            (
                "- a\n- b\n",
                "f: expected one Kubernetes object, found an array",
            ),
            ("7", "f: expected one Kubernetes object, found a number"),
            ("kind: List\nitems: []\n", "f: a list of objects"),
            ("a: [", "f: not YAML or JSON"),
        ];
        for (text, want) in cases {
            let error = parse(text, "f").unwrap_err();
            assert!(error.starts_with(want), "{text:?}: {error}");
        }
    }
}
