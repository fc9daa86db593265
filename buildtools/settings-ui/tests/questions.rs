//! Each policy's `settings-fields.yml` against the policy's real settings reader, and the files
//! written from it against what is committed.
//!
//! The settings fields are not listed here: they are found by probing the reader. Every settings
//! object denies unknown fields, and its error lists the fields it has; a value of the wrong type
//! is refused with the type it expected. So from `{}` down, the shape of every field is learnt
//! from the errors of documents that hold one odd value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use taintguard_settings_ui::{policy_dirs, stale, variable, Field, Kind, Source, REGENERATE};

/// A policy's settings reader: the settings read (written back as JSON) or the error message.
type Reader = fn(&str) -> Result<String, String>;

/// Every policy, by its folder, with its real settings reader: the npm package's registry,
/// which links every policy folder (abi/js/src/registry.rs).
fn policy_readers() -> Vec<(&'static str, Reader)> {
    taintguard_js::registry::POLICIES
        .iter()
        .map(|entry| (entry.folder, entry.read_settings))
        .collect()
}

fn policies() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies")
}

fn source(policy: &str) -> Source {
    Source::read(&policies().join(policy).join(taintguard_settings_ui::SOURCE))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The shape of a settings value, as the reader takes it.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Bool,
    Int,
    String,
    /// Any JSON value (a JSONPath condition's `equals`).
    Any,
    /// An object of free keys (`matchLabels`).
    Map,
    Object(Vec<(String, Shape)>),
    /// A taint selector: a key glob string, or an object.
    KeyOrObject(Vec<(String, Shape)>),
    Array(Box<Shape>),
}

#[derive(Clone)]
enum Seg {
    Field(String),
    Element,
}

/// The path as the reader's errors write it (`rules[0].match`).
fn display(at: &[Seg]) -> String {
    let mut out = String::new();
    for seg in at {
        match seg {
            Seg::Field(name) if out.is_empty() => out.push_str(name),
            Seg::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Seg::Element => out.push_str("[0]"),
        }
    }
    out
}

/// A settings document holding `value` at `at`, and nothing else.
fn nest(at: &[Seg], value: Value) -> Value {
    at.iter().rev().fold(value, |inner, seg| match seg {
        Seg::Field(name) => json!({ name: inner }),
        Seg::Element => json!([inner]),
    })
}

/// The error the reader gives for `value` at `at`, as (path, message).
fn error(read: Reader, at: &[Seg], value: Value) -> Option<(String, String)> {
    let message = read(&nest(at, value).to_string()).err()?;
    if let Some(root) = message.strip_prefix("settings: ") {
        return Some((String::new(), root.to_owned()));
    }
    let rest = message.strip_prefix("settings field `")?;
    let (path, message) = rest.split_once("`: ")?;
    Some((path.to_owned(), message.to_owned()))
}

/// What the reader expected instead of `value` at `at` (`a boolean`), if it refused its type.
fn expected(read: Reader, at: &[Seg], value: Value) -> Option<String> {
    let (path, message) = error(read, at, value)?;
    let rest = message.strip_prefix("expected ")?;
    (path == display(at)).then(|| rest.split(", found").next().unwrap_or(rest).to_owned())
}

fn probe(read: Reader, at: &[Seg]) -> Shape {
    let down = |seg: Seg| {
        let mut path = at.to_vec();
        path.push(seg);
        probe(read, &path)
    };
    match expected(read, at, json!(0)).as_deref() {
        Some("a boolean") => Shape::Bool,
        Some("a string") => Shape::String,
        Some("an array") => Shape::Array(Box::new(down(Seg::Element))),
        Some("an object") => {
            let mut inside = at.to_vec();
            // A name a map's key may be too (a label key), so that only an object refuses it.
            inside.push(Seg::Field("probe".to_owned()));
            let probe_at = display(&inside);
            let fields = match error(read, at, json!({"probe": 0})) {
                Some((path, message))
                    if path == probe_at && message.starts_with("unknown field") =>
                {
                    message
                        .strip_prefix("unknown field; expected one of: ")
                        .unwrap_or_else(|| panic!("{path}: {message}"))
                        .split(", ")
                        .map(|name| (name.to_owned(), down(Seg::Field(name.to_owned()))))
                        .collect()
                }
                _ => return Shape::Map,
            };
            match expected(read, at, json!("x")).as_deref() {
                Some("an object") => Shape::Object(fields),
                _ => Shape::KeyOrObject(fields),
            }
        }
        None => match expected(read, at, json!("x")).as_deref() {
            Some("an integer") => Shape::Int,
            _ => Shape::Any,
        },
        Some(other) => panic!("`{}`: the reader expected {other}", display(at)),
    }
}

/// Every field of a shape by path, `[]` stepping into list elements.
fn flatten(prefix: &str, shape: &Shape, out: &mut BTreeMap<String, Shape>) {
    let fields = match shape {
        Shape::Object(fields) | Shape::KeyOrObject(fields) => fields,
        Shape::Array(element) => match &**element {
            Shape::Object(fields) | Shape::KeyOrObject(fields) => {
                for (name, shape) in fields {
                    let path = format!("{prefix}[].{name}");
                    out.insert(path.clone(), shape.clone());
                    flatten(&path, shape, out);
                }
                return;
            }
            _ => return,
        },
        _ => return,
    };
    for (name, shape) in fields {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        out.insert(path.clone(), shape.clone());
        flatten(&path, shape, out);
    }
}

fn real_fields(read: Reader) -> BTreeMap<String, Shape> {
    let mut out = BTreeMap::new();
    let root = probe(read, &[]);
    assert!(matches!(root, Shape::Object(_)), "settings are {root:?}");
    flatten("", &root, &mut out);
    out
}

/// Whether a question of `field`'s type edits a value of `shape`.
fn agrees(field: &Field, shape: &Shape) -> bool {
    let scalar = |s: &Shape| matches!(s, Shape::String | Shape::Any);
    match (field.kind, shape) {
        (Kind::Boolean, Shape::Bool) | (Kind::Int, Shape::Int) | (Kind::Map, Shape::Map) => true,
        (Kind::String, s) => scalar(s),
        (Kind::Enum, s) => *s == Shape::String,
        (Kind::Object, s) => matches!(s, Shape::Object(_)),
        // A list of lists has no input: the form keeps the default (YAML edits it).
        (Kind::Array, Shape::Array(element)) => scalar(element) || field.hide_input,
        (Kind::Sequence, Shape::Array(element)) => {
            matches!(**element, Shape::Object(_) | Shape::KeyOrObject(_))
        }
        _ => false,
    }
}

/// The value a user leaves or types in: the example of a required field, else the default.
fn filled(f: &Field) -> Value {
    match (&f.example, f.required) {
        (Some(example), true) => example.clone(),
        _ => f.default.clone(),
    }
}

fn children<'a>(source: &'a Source, list: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
    let prefix = format!("{list}[].");
    source.fields.iter().filter(move |f| {
        f.path
            .strip_prefix(&prefix)
            .is_some_and(|r| !r.contains('.'))
    })
}

/// A list element as the form adds it (every field at its default), with the required fields
/// filled in.
fn element(source: &Source, list: &str) -> Value {
    let mut out = serde_json::Map::new();
    for f in children(source, list) {
        out.insert(variable(&f.path).to_owned(), filled(f));
    }
    Value::Object(out)
}

/// Settings holding `value` at the field `path`, inside elements of its lists as the form adds
/// them.
fn with_value(source: &Source, path: &str, value: Value) -> Value {
    if let Some((list, name)) = path.rsplit_once("[].").filter(|(_, n)| !n.contains('.')) {
        let mut element = element(source, list);
        element[name] = value;
        return with_value(source, list, json!([element]));
    }
    match path.rsplit_once('.') {
        Some((object, name)) => with_value(source, object, json!({ name: value })),
        None => json!({ path: value }),
    }
}

/// The settings the form writes when nothing is touched: each shown question writes its default
/// where its variable has no value (objects' fields after the object), and the fields of the
/// elements of a default list get their defaults where the form shows inputs for them.
fn untouched_form(source: &Source) -> Value {
    let mut settings = json!({});
    for f in source.fields.iter().filter(|f| !f.path.contains("[]")) {
        let mut at = &mut settings;
        let mut names = f.path.split('.').peekable();
        while let Some(name) = names.next() {
            if names.peek().is_none() {
                if at.get(name).is_none() {
                    at[name] = f.default.clone();
                }
            } else {
                at = &mut at[name];
            }
        }
        if f.kind == Kind::Sequence {
            let inputs: Vec<&Field> = children(source, &f.path)
                .filter(|c| !matches!(c.kind, Kind::Object | Kind::Sequence))
                .collect();
            for item in at[f.path.rsplit('.').next().unwrap()]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                for c in &inputs {
                    let name = variable(&c.path);
                    if item.get(name).is_none() {
                        item[name] = c.default.clone();
                    }
                }
            }
        }
    }
    settings
}

/// The path of `path` as the reader's errors write it.
fn at(path: &str) -> String {
    path.replace("[]", "[0]")
}

#[test]
fn every_policy_folder_has_a_settings_form() {
    let dirs = policy_dirs(&policies()).unwrap();
    let names: Vec<&str> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_str().unwrap())
        .collect();
    let tested: Vec<&str> = policy_readers().iter().map(|(name, _)| *name).collect();
    assert_eq!(names, tested);
    for policy in taintguard_wasm_metadata::metadata::policy_folders(&policies()).unwrap() {
        let dir = policies().join(policy);
        assert!(
            dirs.contains(&dir),
            "{} has no {}",
            dir.display(),
            taintguard_settings_ui::SOURCE
        );
    }
}

#[test]
fn generated_files_are_up_to_date() {
    let stale = stale(&policies()).unwrap();
    assert!(
        stale.is_empty(),
        "out of date: {stale:?}; run {REGENERATE} and commit the result"
    );
}

/// Every settings field has a question, every question a settings field, and the question's
/// type edits the field's shape.
#[test]
fn questions_are_the_settings_fields() {
    for (policy, read) in policy_readers() {
        let source = source(policy);
        let real = real_fields(read);
        let described: BTreeMap<&str, &Field> =
            source.fields.iter().map(|f| (f.path.as_str(), f)).collect();
        let missing: Vec<&String> = real
            .keys()
            .filter(|p| !described.contains_key(p.as_str()))
            .collect();
        let unknown: Vec<&&str> = described
            .keys()
            .filter(|p| !real.contains_key(**p))
            .collect();
        assert!(
            missing.is_empty() && unknown.is_empty(),
            "{policy}: settings fields without a question: {missing:?}; questions of no settings \
             field: {unknown:?}"
        );
        for (path, shape) in &real {
            let f = described[path.as_str()];
            assert!(
                agrees(f, shape),
                "{policy}: `{path}` is a {:?} question for a {shape:?}",
                f.kind
            );
        }
    }
}

/// The form left alone writes settings that mean what `{}` means.
#[test]
fn untouched_form_is_the_default_configuration() {
    for (policy, read) in policy_readers() {
        let source = source(policy);
        let form = untouched_form(&source);
        assert_eq!(
            read(&form.to_string()),
            read("{}"),
            "{policy}: the untouched form writes {form}"
        );
    }
}

/// Each field's default (or, for a required one, its example) is accepted where the form puts
/// it, in list elements as the form adds them.
#[test]
fn defaults_and_examples_are_valid() {
    for (policy, read) in policy_readers() {
        let source = source(policy);
        for f in &source.fields {
            let settings = with_value(&source, &f.path, filled(f));
            if let Err(e) = read(&settings.to_string()) {
                panic!(
                    "{policy}: `{}` as the form writes it: {settings}: {e}",
                    f.path
                );
            }
            if f.kind == Kind::Sequence {
                let settings = with_value(&source, &f.path, json!([element(&source, &f.path)]));
                if let Err(e) = read(&settings.to_string()) {
                    panic!(
                        "{policy}: an element the form adds to `{}`: {settings}: {e}",
                        f.path
                    );
                }
            }
        }
    }
}

/// An enum's options (and those listed for an array's elements) are accepted, and a value that
/// is none of them is refused at that field.
#[test]
fn options_are_the_accepted_values() {
    for (policy, read) in policy_readers() {
        let source = source(policy);
        for f in source.fields.iter().filter(|f| !f.options.is_empty()) {
            let wrap = |v: &str| match f.kind {
                Kind::Array => json!([v]),
                _ => json!(v),
            };
            let refused_here = |v: &str| {
                let settings = with_value(&source, &f.path, wrap(v));
                let here = match f.kind {
                    Kind::Array => format!("{}[0]", at(&f.path)),
                    _ => at(&f.path),
                };
                // Another field may then be wrong (`In` needs values): only this one counts.
                read(&settings.to_string())
                    .err()
                    .filter(|e| e.starts_with(&format!("settings field `{here}`: ")))
            };
            for option in &f.options {
                if let Some(e) = refused_here(option) {
                    panic!("{policy}: option {option:?} of `{}`: {e}", f.path);
                }
            }
            assert!(
                refused_here("NotAnOption").is_some(),
                "{policy}: `{}` takes a value of none of its options",
                f.path
            );
        }
    }
}
