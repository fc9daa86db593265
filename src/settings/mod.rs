//! Reading settings text, with errors that name the field they are about.
//!
//! Each policy's settings are one `#[derive(Deserialize, Serialize)]` type per concept whose
//! fields are validated newtypes and enums, so a value is checked while it is read, with
//! `#[serde(default)]` and a `Default` impl carrying the policy's defaults (`types` holds what
//! builds them). Objects deny unknown fields, which catches misspelt settings that would
//! otherwise be silently ignored. What types cannot say (one field against another) each policy
//! checks in one [`PolicySettings::check`]. [`read`] names the field behind any error, for both
//! steps.

mod types;

use std::fmt;

use serde::de::{Deserialize, DeserializeOwned};
use serde_json::error::Category;

use crate::json;

pub use types::{checked, from_string, settings_object, string_enum};
pub use types::{
    deserialize_checked, deserialize_keyword, deserialize_object, null_as_default, Builtin,
    SettingsObject,
};

/// A settings error: the path of the offending field (`protectedTaints[1].effects[0]`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    pub path: String,
    pub message: String,
}

impl SettingsError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        SettingsError {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "settings: {}", self.message)
        } else {
            write!(f, "settings field `{}`: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for SettingsError {}

/// Where a settings value is, for errors found after reading. Built on the stack as a check
/// descends, and written out only when there is an error.
#[derive(Debug, Clone, Copy)]
pub enum At<'a> {
    Root,
    Field(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    pub fn field(&'a self, name: &'a str) -> At<'a> {
        At::Field(self, name)
    }

    pub fn index(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }

    pub fn error(&self, message: impl Into<String>) -> SettingsError {
        SettingsError::new(self.to_string(), message)
    }
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Root => Ok(()),
            At::Field(At::Root, name) => f.write_str(name),
            At::Field(parent, name) => write!(f, "{parent}.{name}"),
            At::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A policy's settings: one derived type whose fields check themselves while they are read,
/// with `Default` carrying the defaults, and one [`PolicySettings::check`] for what fields
/// cannot check alone (one field against another), in the shape of Kubewarden's `Validatable`.
pub trait PolicySettings: DeserializeOwned + serde::Serialize + Default {
    /// Checks across fields; `at` is where the settings are.
    ///
    /// # Errors
    ///
    /// The first field that does not fit with the others, by its path.
    fn check(&self, _at: At<'_>) -> Result<(), SettingsError> {
        Ok(())
    }
}

/// Reads and checks a policy's settings text: `{}` and `null` mean every default.
///
/// # Errors
///
/// What [`read`] and [`PolicySettings::check`] find, the field named.
///
/// # Examples
///
/// ```
/// use taintguard::settings::parse;
/// use taint_preservation::{Mode, Settings};
///
/// let settings: Settings = parse(r#"{"mode": "deny"}"#).unwrap();
/// assert_eq!(settings.mode, Mode::Deny);
/// let error = parse::<Settings>(r#"{"protectedTaints": [{"key": "a", "effects": ["Never"]}]}"#);
/// assert_eq!(
///     error.unwrap_err().to_string(),
///     "settings field `protectedTaints[0].effects[0]`: unknown effect \"Never\"; \
///      expected one of NoSchedule, PreferNoSchedule, NoExecute"
/// );
/// ```
pub fn parse<S: PolicySettings>(text: &str) -> Result<S, SettingsError> {
    let settings: S = read(text)?;
    settings.check(At::Root)?;
    Ok(settings)
}

/// Reads settings text into `T` (Kubewarden sends `{}` when none are configured; `null` reads as
/// `T::default()`). An error names the field: serde_json's position is turned into the path of
/// the field it is in. Text that is not JSON is reported as such whatever else is wrong with it,
/// as parsing a `serde_json::Value` reports it (nesting past serde_json's recursion limit
/// included).
///
/// # Errors
///
/// The first value that cannot be read, with its path and why, in the words of
/// [`describe`].
pub fn read<T: DeserializeOwned + Default>(text: &str) -> Result<T, SettingsError> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let error = match Option::<T>::deserialize(&mut deserializer)
        .and_then(|v| deserializer.end().map(|()| v))
    {
        Ok(value) => return Ok(value.unwrap_or_default()),
        Err(e) => e,
    };
    if error.classify() != Category::Data {
        return Err(not_json(&error));
    }
    // A type error may come before a syntax error further on; the syntax error wins. Only a
    // `Value` parse finds every one: skipping a value (`IgnoredAny`) has no recursion limit.
    if let Err(syntax) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(not_json(&syntax));
    }
    let mut path = json::error::path(text, &error);
    let (field, message) = describe(&error);
    if let Some(field) = field {
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&field);
    }
    Err(SettingsError::new(path, message))
}

fn not_json(error: &serde_json::Error) -> SettingsError {
    SettingsError::new("", format!("not valid JSON: {error}"))
}

/// serde's message for a data error, in the words of these settings: `expected a string, found a
/// number` for serde's `invalid type: integer `3`, expected a string`, and no text position
/// (settings are usually YAML converted to JSON, whose lines and columns the user never sees).
/// A missing field is reported at the field (`Some(name)`), as `required field is missing`.
///
/// These are serde's and serde_json's messages, matched by their text: the tests of this module
/// pin each form, so a rewording in a new serde fails them rather than the users' messages.
fn describe(error: &serde_json::Error) -> (Option<String>, String) {
    let message = &json::error::message(error);
    let mismatch = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "));
    if let Some((found, expected)) = mismatch {
        return (
            None,
            format!("expected {}, found {}", noun(expected), noun(found)),
        );
    }
    if message.starts_with("duplicate field `") {
        return (None, "field given twice".to_owned());
    }
    if let Some(name) = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        return (
            Some(name.to_owned()),
            "required field is missing".to_owned(),
        );
    }
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let expected = rest
            .split_once(", expected ")
            .map_or("", |(_, names)| names);
        let names = expected
            .trim_start_matches("one of ")
            .replace(" or ", ", ")
            .replace('`', "");
        return (None, format!("unknown field; expected one of: {names}"));
    }
    (None, message.to_owned())
}

/// What serde calls a JSON value (`integer `3``) or the type it expected (`a sequence`), as
/// these settings call it.
fn noun(serde: &str) -> &str {
    match serde {
        "a sequence" => return "an array",
        "a map" => return "an object",
        "i64" | "u64" => return "an integer",
        _ => {}
    }
    match serde.split(' ').next() {
        Some("boolean") => "a boolean",
        Some("integer" | "floating") => "a number",
        Some("string") => "a string",
        Some("sequence") => "an array",
        Some("map") => "an object",
        Some("unit") => "null",
        _ => serde,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    // Only the errors of reading these are tested.
    #[derive(Debug, Default, Deserialize, Serialize)]
    #[serde(
        remote = "Self",
        rename_all = "camelCase",
        deny_unknown_fields,
        default
    )]
    struct Shape {
        flag: bool,
        names: Vec<String>,
        count: i64,
        inner: Option<Inner>,
        inner_list: Vec<Inner>,
        keyed: Vec<Keyed>,
        checked: Vec<Even>,
    }
    settings_object!(Shape);

    impl PolicySettings for Shape {}

    #[derive(Debug, Default, Deserialize, Serialize)]
    #[serde(remote = "Self", deny_unknown_fields)]
    struct Inner {
        on: Option<bool>,
    }
    settings_object!(Inner);

    /// An object with a required field and a string form.
    #[derive(Debug, Deserialize, Serialize)]
    #[serde(remote = "Self", deny_unknown_fields)]
    struct Keyed {
        key: Even,
        #[serde(default)]
        on: bool,
    }
    settings_object!(
        Keyed,
        from_str = |text: &str| Ok::<_, String>(Keyed {
            key: Even::try_from(text.to_owned())?,
            on: false,
        })
    );

    checked! {
        /// Text of an even length.
        pub struct Even(String) = |text| {
            if text.len() % 2 == 0 {
                Ok(text)
            } else {
                Err(format!("{text:?} is odd"))
            }
        };
    }

    fn error(text: &str) -> String {
        parse::<Shape>(text).unwrap_err().to_string()
    }

    /// Type errors, unknown, missing and repeated fields and the checked values' own errors, in
    /// the words the settings references use, at the field. These pin serde's messages too.
    #[test]
    fn errors_name_the_field() {
        let cases = [
            (r#"{"flag": "yes"}"#, "settings field `flag`: expected a boolean, found a string"),
            (r#"{"flag": null}"#, "settings field `flag`: expected a boolean, found null"),
            (r#"{"names": ["a", 1]}"#, "settings field `names[1]`: expected a string, found a number"),
            (r#"{"names": "a"}"#, "settings field `names`: expected an array, found a string"),
            (r#"{"names": [null]}"#, "settings field `names[0]`: expected a string, found null"),
            (r#"{"count": 1.5}"#, "settings field `count`: expected an integer, found a number"),
            (
                r#"{"count": 18446744073709551615}"#,
                "settings field `count`: expected an integer, found a number",
            ),
            (r#"{"count": {}}"#, "settings field `count`: expected an integer, found an object"),
            (r#"{"inner": [true]}"#, "settings field `inner`: expected an object, found an array"),
            (r#"{"inner": "x"}"#, "settings field `inner`: expected an object, found a string"),
            (r#"{"inner": {"on": 1}}"#, "settings field `inner.on`: expected a boolean, found a number"),
            (
                r#"{"innerList": [{"on": true}, {"of": true}]}"#,
                "settings field `innerList[1].of`: unknown field; expected one of: on",
            ),
            (
                r#"{"flags": true}"#,
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList, keyed, checked",
            ),
            ("[true]", "settings: expected an object, found an array"),
            ("7", "settings: expected an object, found a number"),
            (r#"{"flag": true, "flag": false}"#, "settings field `flag`: field given twice"),
            (
                r#"{"inner": {"on": true, "on": true}}"#,
                "settings field `inner.on`: field given twice",
            ),
            (r#"{"keyed": [{"on": true}]}"#, "settings field `keyed[0].key`: required field is missing"),
            (r#"{"keyed": ["ab", {}]}"#, "settings field `keyed[1].key`: required field is missing"),
            (r#"{"keyed": ["abc"]}"#, "settings field `keyed[0]`: \"abc\" is odd"),
            (r#"{"keyed": [{"key": "a"}]}"#, "settings field `keyed[0].key`: \"a\" is odd"),
            (r#"{"checked": ["ab", "abc"]}"#, "settings field `checked[1]`: \"abc\" is odd"),
            // What the path is read from: escapes, and brackets, commas and quotes in strings.
            (
                r#"{"fl\u0061gs": 1}"#,
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList, keyed, checked",
            ),
            (
                r#"{"names": ["a,]\"[{", "}"], "innerList": [{}, {"on": true}, {"on": "x"}]}"#,
                "settings field `innerList[2].on`: expected a boolean, found a string",
            ),
            (
                "{\n  \"inner\": {},\n  \"innerList\": [\n    {\"on\": true},\n    {\"on\": 1}\n  ]\n}",
                "settings field `innerList[1].on`: expected a boolean, found a number",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(error(text), want, "{text}");
        }
        let fine = parse::<Shape>(r#"{"keyed": ["ab", {"key": "cd", "on": true}]}"#).unwrap();
        assert_eq!(fine.keyed[0].key.as_str(), "ab");
        assert!(fine.keyed[1].on);
        assert!(!parse::<Shape>("null").unwrap().flag);
    }

    /// Text that is not JSON is said to be so, as serde_json says it, even where a field before
    /// the syntax error is wrong too.
    #[test]
    fn not_json_is_not_json() {
        let deep = format!("{{\"flags\": {}1{}}}", "[".repeat(200), "]".repeat(200));
        for text in [
            "{",
            "",
            "{\"flag\": true} x",
            "{\"flag\": tru}",
            "{\"count\": 1e400}",
            "{\"flags\": true,}",
            "{\"flag\": 1, \"x\"}",
            "{\"names\": [1, ]}",
            "{\"names\": [\"\\ud800\"]}",
            &deep,
        ] {
            let want = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
            assert_eq!(
                error(text),
                format!("settings: not valid JSON: {want}"),
                "{text}"
            );
        }
    }
}
