//! Reading settings text, with errors that name the field they are about.
//!
//! Each policy's settings are one type per concept whose fields are validated newtypes and
//! enums, so a value is checked while it is read: `#[derive(SettingsFields, Serialize)]`, the
//! field names and defaults given once in serde's attributes (`rename`, `default`, with a
//! `Default` impl carrying the policy's defaults) and read by both derives. Objects refuse
//! unknown fields, which catches misspelt settings that would otherwise be silently ignored.
//! What types cannot say (one field against another) each policy checks in one
//! [`PolicySettings::check`]. [`read`] names the field behind any error, for both steps.
//! `types` holds what builds the checked values, `reader` the reader itself.

mod reader;
mod types;

use std::fmt;

use crate::json::scan;

pub use reader::{ReadSettings, Reader, SettingsFields};
/// `#[derive(SettingsFields)]`: a struct as a settings object, its [`SettingsFields`] named by
/// its serde attributes and its [`ReadSettings`] reading a JSON object only (never an array,
/// which serde's derive would read as the fields in order); `#[settings(from_str = "path")]`
/// reads a bare string too (`taintguard-derive`).
///
/// # Examples
///
/// ```
/// use serde::Serialize;
/// use taintguard::settings::{read, SettingsFields};
///
/// /// A label to require: `"team"`, or `{"key": "team", "onCreate": true}`.
/// #[derive(Debug, SettingsFields, Serialize)]
/// #[serde(rename_all = "camelCase", deny_unknown_fields)]
/// #[settings(from_str = "Required::from_key")]
/// struct Required {
///     key: String,
///     #[serde(default)]
///     on_create: bool,
/// }
///
/// impl Required {
///     fn from_key(key: &str) -> Result<Required, String> {
///         Ok(Required { key: key.to_owned(), on_create: false })
///     }
/// }
///
/// let list: Vec<Required> = read(r#"["team", {"key": "tier", "onCreate": true}]"#).unwrap();
/// assert_eq!((list[0].key.as_str(), list[1].on_create), ("team", true));
/// let error = read::<Vec<Required>>(r#"["team", {"onCreate": true}]"#).unwrap_err();
/// assert_eq!(error.to_string(), "settings field `[1].key`: required field is missing");
/// ```
pub use taintguard_derive::SettingsFields;
pub use types::{checked, from_string, string_enum, Builtin};

/// A settings error: the path of the offending field (`protectedTaints[1].effects[0]`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// Where the offending value is; empty for the settings as a whole.
    pub path: String,
    /// Why it is refused.
    pub message: String,
}

impl SettingsError {
    /// The error `message` about the value at `path`.
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
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
    /// The settings themselves.
    Root,
    /// The field of this name in the object at the first.
    Field(&'a At<'a>, &'a str),
    /// The item of this index in the array at the first.
    Index(&'a At<'a>, usize),
}

impl<'a> At<'a> {
    /// The field `name` of the object here.
    pub fn field(&'a self, name: &'a str) -> At<'a> {
        At::Field(self, name)
    }

    /// The item `i` of the array here.
    pub fn index(&'a self, i: usize) -> At<'a> {
        At::Index(self, i)
    }

    /// An error about the value here: `message`, at this path written out.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::settings::At;
    ///
    /// let rules = At::Root.field("rules");
    /// let error = rules.index(2).field("key").error("empty key");
    /// assert_eq!(error.path, "rules[2].key");
    /// assert_eq!(error.to_string(), "settings field `rules[2].key`: empty key");
    /// ```
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
///
/// # Examples
///
/// ```
/// use serde::Serialize;
/// use taintguard::settings::{parse, At, PolicySettings, SettingsError, SettingsFields};
///
/// #[derive(Debug, SettingsFields, Serialize)]
/// #[serde(deny_unknown_fields, default)]
/// struct Settings {
///     min: i64,
///     max: i64,
/// }
///
/// impl Default for Settings {
///     fn default() -> Settings {
///         Settings { min: 0, max: 10 }
///     }
/// }
///
/// impl PolicySettings for Settings {
///     fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
///         if self.max < self.min {
///             return Err(at.field("max").error("less than `min`"));
///         }
///         Ok(())
///     }
/// }
///
/// assert_eq!(parse::<Settings>(r#"{"min": 3}"#).unwrap().max, 10);
/// let error = parse::<Settings>(r#"{"min": 3, "max": 2}"#).unwrap_err();
/// assert_eq!(error.to_string(), "settings field `max`: less than `min`");
/// ```
pub trait PolicySettings: ReadSettings + serde::Serialize + Default {
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
/// `T::default()`). An error names the field it is about. Text that is not JSON is reported as
/// such whatever else is wrong with it, in serde_json's words, as parsing a `serde_json::Value`
/// reports it (nesting past serde_json's recursion limit included).
///
/// # Errors
///
/// The first value that cannot be read, with its path and why.
///
/// # Examples
///
/// ```
/// use taintguard::settings::read;
/// use taint_preservation::Settings;
///
/// let error = read::<Settings>(r#"{"mode": 1}"#).unwrap_err();
/// assert_eq!(error.to_string(), "settings field `mode`: expected a string, found a number");
/// let error = read::<Settings>(r#"{"mode": "deny""#).unwrap_err();
/// assert!(error.to_string().starts_with("settings: not valid JSON: EOF while parsing"));
/// ```
pub fn read<T: ReadSettings + Default>(text: &str) -> Result<T, SettingsError> {
    let error = match read_leading(text) {
        Ok((value, end)) if scan::whitespace_end(text.as_bytes(), end) == text.len() => {
            return Ok(value)
        }
        Ok(_) => SettingsError::new("", reader::NOT_JSON),
        Err(error) => error,
    };
    // A field's error may come before a syntax error further on; the syntax error wins. Only a
    // `Value` parse finds every one: skipping a value has no recursion limit.
    if let Err(syntax) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(not_json(&syntax));
    }
    Err(error)
}

/// Reads the settings value that begins `text` (after whitespace), `null` as `T::default()`:
/// the value and the offset past it. For a reader of an envelope
/// holding settings among other members, read in its one pass; [`read`] says what is wrong with
/// text this refuses, whose error may be one of syntax, in the reader's words.
///
/// # Errors
///
/// The first value that cannot be read, with its path and why.
pub fn read_leading<T: ReadSettings + Default>(text: &str) -> Result<(T, usize), SettingsError> {
    let mut reader = Reader::new(text);
    let value = reader.read_or_default(At::Root)?;
    // The reader stops past the whitespace after a value, which never ends in any.
    let end = text[..reader.offset()]
        .trim_end_matches(JSON_WHITESPACE)
        .len();
    Ok((value, end))
}

const JSON_WHITESPACE: [char; 4] = [' ', '\n', '\t', '\r'];

fn not_json(error: &serde_json::Error) -> SettingsError {
    SettingsError::new("", format!("not valid JSON: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    // Only the errors of reading these are tested.
    #[derive(Debug, Default, SettingsFields, Serialize)]
    #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
    struct Shape {
        flag: bool,
        names: Vec<String>,
        count: i64,
        inner: Option<Inner>,
        inner_list: Vec<Inner>,
        keyed: Vec<Keyed>,
        checked: Vec<Even>,
        any: Option<serde_json::Value>,
        /// Its own default wins over the struct's when it is not given, as in serde.
        #[serde(default = "seven")]
        limit: i64,
    }

    fn seven() -> i64 {
        7
    }

    impl PolicySettings for Shape {}

    #[derive(Debug, Default, SettingsFields, Serialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        on: Option<bool>,
    }

    /// An object with a required field and a string form.
    #[derive(Debug, SettingsFields, Serialize)]
    #[serde(deny_unknown_fields)]
    #[settings(from_str = "Keyed::from_key")]
    struct Keyed {
        key: Even,
        #[serde(default)]
        on: bool,
    }
    impl Keyed {
        fn from_key(text: &str) -> Result<Keyed, String> {
            Ok(Keyed {
                key: Even::try_from(text.to_owned())?,
                on: false,
            })
        }
    }

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
            // serde_json reads `-0` as a float, as it reads anything past an i64.
            (r#"{"count": -0}"#, "settings field `count`: expected an integer, found a number"),
            (r#"{"count": 1e2}"#, "settings field `count`: expected an integer, found a number"),
            (
                r#"{"count": -9223372036854775809}"#,
                "settings field `count`: expected an integer, found a number",
            ),
            (r#"{"inner": [true]}"#, "settings field `inner`: expected an object, found an array"),
            (r#"{"inner": "x"}"#, "settings field `inner`: expected an object, found a string"),
            (r#"{"inner": {"on": 1}}"#, "settings field `inner.on`: expected a boolean, found a number"),
            (
                r#"{"innerList": [{"on": true}, {"of": true}]}"#,
                "settings field `innerList[1].of`: unknown field; expected one of: on",
            ),
            (
                r#"{"flags": true}"#,
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList, keyed, checked, any, limit",
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
                "settings field `flags`: unknown field; expected one of: flag, names, count, inner, innerList, keyed, checked, any, limit",
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
        assert_eq!(parse::<Shape>("{}").unwrap().limit, 7);
        assert_eq!(parse::<Shape>(r#"{"limit": 3}"#).unwrap().limit, 3);
        // Any value, nested as deep as serde_json reads the whole text and no deeper.
        let nested = |levels: usize| {
            let value = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
            parse::<Shape>(&format!(r#"{{"any": {value}}}"#))
        };
        assert_eq!(nested(126).unwrap().any.unwrap().to_string().len(), 253);
        let too_deep = nested(127).unwrap_err().to_string();
        assert!(too_deep.starts_with("settings: not valid JSON: recursion limit exceeded"));
        for count in [i64::MIN, 0, i64::MAX] {
            let text = format!(r#"{{"count": {count}}}"#);
            assert_eq!(parse::<Shape>(&text).unwrap().count, count);
        }
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

    /// The reader reads JSON only: settings text cut anywhere, or with any byte changed to one
    /// that breaks JSON in its own way, is read only where serde_json reads it as JSON, and is
    /// said to be not JSON wherever serde_json says so. Whitespace everywhere, escapes in keys
    /// and values, `\u` escapes and every kind of value are on the way.
    #[test]
    fn only_json_is_read() {
        let valid = " { \"flag\" : true ,\n\t\"names\" : [ \"a\\\"b\" , \"\\u00e9\\n\" ] , \
                     \"co\\u0075nt\" : -12 , \"inner\" : { \"on\" : null } , \"innerList\" : \
                     [ { } , { \"on\" : false } ] , \"keyed\" : [ \"ab\" , { \"key\" : \"cd\" , \
                     \"on\" : true } ] , \"checked\" : [ ] }\r\n";
        let read = parse::<Shape>(valid).unwrap();
        assert_eq!(read.names, ["a\"b", "\u{e9}\n"]);
        assert_eq!(read.count, -12);
        let is_json = |text: &str| serde_json::from_str::<serde_json::Value>(text).is_ok();
        let check = |text: &str| match parse::<Shape>(text) {
            Ok(_) => assert!(is_json(text), "read as settings, not JSON: {text:?}"),
            Err(e) if !is_json(text) => assert!(
                e.to_string().starts_with("settings: not valid JSON: "),
                "{text:?}: {e}"
            ),
            Err(_) => {}
        };
        for end in (0..valid.len()).filter(|&end| valid.is_char_boundary(end)) {
            check(&valid[..end]);
        }
        for at in 0..valid.len() {
            for byte in *b"x,:}]\"\\\n0-.eu{[" {
                let mut text = valid.as_bytes().to_vec();
                text[at] = byte;
                if let Ok(text) = String::from_utf8(text) {
                    check(&text);
                }
            }
        }
    }
}
