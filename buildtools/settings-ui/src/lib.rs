//! One description of a policy's settings, `policies/<policy>/settings-fields.yml`, and what is
//! written from it:
//!
//! * `policies/<policy>/questions-ui.yml`, the form the Kubewarden UI (the Rancher extension)
//!   renders for the policy's settings, in the shape the policies of Kubewarden's hub use: a
//!   top-level `questions:` list; an object setting is a `map[` question whose `subquestions`
//!   name its fields by dotted path; a list of objects is a `sequence[` question whose
//!   `sequence_questions` name the fields of one element, relative to the element;
//! * the settings tables of `policies/<policy>/README.md` (found by their header and fields).
//!
//! `tests/` checks that the written files are up to date and that the questions match the real
//! settings types, read through the policies' own settings readers. docs/settings-ui.md has the
//! facts about the UI this relies on.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The file every policy folder describes its settings in.
pub const SOURCE: &str = "settings-fields.yml";
/// The UI's settings form, next to `metadata.yml`.
pub const QUESTIONS: &str = "questions-ui.yml";
/// The policy's README, whose settings tables are written from the source.
pub const README: &str = "README.md";
/// How to rewrite the generated files, for the messages that find them stale.
pub const REGENERATE: &str =
    "./build.sh settings-ui (or: cargo run -p taintguard-settings-ui -- write)";

/// The group every question is shown in, as on the hub's policies.
const GROUP: &str = "Settings";

/// `settings-fields.yml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The README tables the fields' rows go to; a row names its table, the first by default.
    pub tables: Vec<Table>,
    /// Every settings field, parents before their fields, in the order of the form.
    pub fields: Vec<Field>,
}

/// A settings table of the README: the name rows refer to it by, and how its field column and
/// columns are written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The name rows give in `row.table` and messages show; not written to the README.
    pub name: String,
    /// Left out of the field column (`rules[].match.` for the table of `match`).
    #[serde(default)]
    pub prefix: String,
    /// Whether the table has a default column.
    #[serde(default = "yes")]
    pub defaults: bool,
}

fn yes() -> bool {
    true
}

/// What a settings field holds, and so which question edits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Free text (`string`).
    String,
    /// `true` or `false` (`boolean`).
    Boolean,
    /// A whole number (`int`).
    Int,
    /// A string among `options`.
    Enum,
    /// A list of scalars (`array[`).
    Array,
    /// A map of free keys to strings (`map[` without subquestions).
    Map,
    /// An object with named fields (`map[` with subquestions).
    Object,
    /// A list of objects (`sequence[` with sequence questions).
    Sequence,
}

/// One settings field: where it is, how the form asks for it and its README row.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// `cordon.ownerAnnotation`, `protectedTaints[].key`: `[]` steps into a list's elements.
    pub path: String,
    /// The question's label in the form.
    pub label: String,
    /// What the field holds, and so which question edits it.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// The accepted values of an `enum`, or of the elements of an `array` (shown in the help).
    #[serde(default)]
    pub options: Vec<String>,
    /// What the form writes when the user leaves the field alone: the value the policy takes
    /// when the field is absent (`null` where absent has no other spelling). Objects are `{}`,
    /// or `null` where an empty object means something else than none.
    #[serde(default)]
    pub default: Value,
    /// The form asks for a value (a list element's key, a rule's name).
    #[serde(default)]
    pub required: bool,
    /// A valid value of a required field, shown as the input's placeholder where the field is a
    /// string, and used by the tests as the value a user would type.
    pub example: Option<Value>,
    /// The form keeps the default and the value is edited as YAML: for shapes no form widget
    /// holds (a list of lists).
    #[serde(default)]
    pub hide_input: bool,
    /// The help text of the question; the README row's meaning when left out.
    pub help: Option<String>,
    /// The field's row in a README table, if it has one.
    pub row: Option<Row>,
}

/// A field's row in a README settings table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The table the row goes to, by name; `None`: the first table.
    pub table: Option<String>,
    /// The type column, as readers see it (Markdown).
    #[serde(rename = "type")]
    pub kind: String,
    /// The default column; the field's default as JSON when left out.
    pub default: Option<String>,
    /// The meaning column (Markdown); also the question's help when the field has none.
    pub meaning: String,
}

/// A question of `questions-ui.yml`.
#[derive(Debug, Clone, Serialize)]
pub struct Question {
    /// The field's path from the innermost list element holding it, or from the settings.
    pub variable: String,
    /// The label shown over the input.
    pub label: String,
    /// The help text shown with the input.
    pub description: String,
    /// The UI's question type: `string`, `boolean`, `int`, `enum`, `array[`, `map[` or
    /// `sequence[`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The values an `enum` question offers; empty for other types.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// The value the form writes when the user leaves the field alone.
    pub default: Value,
    /// Whether the form asks for a value.
    pub required: bool,
    /// The input is hidden: a heading of an object or list, or a value edited as YAML.
    #[serde(skip_serializing_if = "is_false")]
    pub hide_input: bool,
    /// The text shown in an empty string input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    /// The group the question is shown in.
    pub group: String,
    /// The questions of an object's fields, by dotted path (`map[`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subquestions: Vec<Question>,
    /// The questions of a list element's fields, relative to the element (`sequence[`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sequence_questions: Vec<Question>,
}

fn is_false(b: &bool) -> bool {
    !b
}

#[derive(Serialize)]
struct QuestionsFile<'a> {
    questions: &'a [Question],
}

/// A field's place: its parent, and whether it is a field of the parent object or of the
/// elements of the parent list.
fn parent(path: &str) -> Option<(&str, bool)> {
    let (head, _) = path.rsplit_once('.')?;
    Some(match head.strip_suffix("[]") {
        Some(list) => (list, true),
        None => (head, false),
    })
}

/// The question variable of a field: its path from the element of the innermost list holding
/// it, or from the settings.
pub fn variable(path: &str) -> &str {
    path.rsplit_once("[].").map_or(path, |(_, rest)| rest)
}

impl Source {
    /// Reads and checks the settings description at `path`.
    ///
    /// # Errors
    ///
    /// The file cannot be read or parsed, or is inconsistent (a field described twice or before
    /// its parent, a required field without an example, an unknown table); the message names
    /// the file.
    pub fn read(path: &Path) -> Result<Source, String> {
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let source: Source =
            serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        source
            .check()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(source)
    }

    fn check(&self) -> Result<(), String> {
        let mut kinds: BTreeMap<&str, Kind> = BTreeMap::new();
        for f in &self.fields {
            if kinds.insert(&f.path, f.kind).is_some() {
                return Err(format!("field `{}` is described twice", f.path));
            }
            if let Some((parent, element)) = parent(&f.path) {
                let want = if element {
                    Kind::Sequence
                } else {
                    Kind::Object
                };
                if kinds.get(parent) != Some(&want) {
                    return Err(format!(
                        "field `{}` needs `{parent}`, of type {want:?}, described before it",
                        f.path
                    ));
                }
            }
            let takes_options = matches!(f.kind, Kind::Enum | Kind::Array);
            if (f.kind == Kind::Enum && f.options.is_empty())
                || (!takes_options && !f.options.is_empty())
            {
                return Err(format!(
                    "field `{}`: an enum has options, and only an enum or an array",
                    f.path
                ));
            }
            if f.kind == Kind::Object
                && !(f.default.is_null() || f.default == serde_json::json!({}))
            {
                return Err(format!(
                    "field `{}`: an object's default is {{}} or null",
                    f.path
                ));
            }
            if f.required && f.example.is_none() {
                return Err(format!("field `{}` is required and has no example", f.path));
            }
            if f.help.is_none() && f.row.is_none() {
                return Err(format!("field `{}` has neither help nor a row", f.path));
            }
            if let Some(table) = f.row.as_ref().and_then(|r| r.table.as_ref()) {
                if !self.tables.iter().any(|t| &t.name == table) {
                    return Err(format!("field `{}`: no table {table:?}", f.path));
                }
            }
        }
        if self.tables.is_empty() {
            return Err("no tables".to_owned());
        }
        Ok(())
    }

    /// The help text of a field: its own, or its README meaning without Markdown code marks.
    fn help(&self, f: &Field) -> String {
        match (&f.help, &f.row) {
            (Some(help), _) => help.trim().to_owned(),
            (None, Some(row)) => {
                let mut text = row.meaning.replace('`', "");
                if let Some(first) = text.get(..1) {
                    text.replace_range(..1, &first.to_uppercase());
                }
                text
            }
            (None, None) => String::new(),
        }
    }

    fn question(&self, f: &Field) -> Question {
        let mut description = self.help(f);
        if f.kind == Kind::Array && !f.options.is_empty() {
            let _ = write!(description, " Each one of: {}.", f.options.join(", "));
        }
        let (kind, hide_input) = match f.kind {
            Kind::String => ("string", f.hide_input),
            Kind::Boolean => ("boolean", f.hide_input),
            Kind::Int => ("int", f.hide_input),
            Kind::Enum => ("enum", f.hide_input),
            Kind::Array => ("array[", f.hide_input),
            Kind::Map => ("map[", f.hide_input),
            // Containers are headings: their fields are the inputs.
            Kind::Object => ("map[", true),
            Kind::Sequence => ("sequence[", true),
        };
        let children = |element: bool| -> Vec<Question> {
            self.fields
                .iter()
                .filter(|c| parent(&c.path) == Some((f.path.as_str(), element)))
                .map(|c| self.question(c))
                .collect()
        };
        Question {
            variable: variable(&f.path).to_owned(),
            label: f.label.clone(),
            description,
            kind: kind.to_owned(),
            options: if f.kind == Kind::Enum {
                f.options.clone()
            } else {
                Vec::new()
            },
            default: f.default.clone(),
            required: f.required,
            hide_input,
            placeholder: match (&f.example, f.kind) {
                (Some(Value::String(s)), Kind::String) => Some(s.clone()),
                _ => None,
            },
            group: GROUP.to_owned(),
            subquestions: if f.kind == Kind::Object {
                children(false)
            } else {
                Vec::new()
            },
            sequence_questions: if f.kind == Kind::Sequence {
                children(true)
            } else {
                Vec::new()
            },
        }
    }

    /// The top-level questions, each with its fields below it.
    pub fn questions(&self) -> Vec<Question> {
        self.fields
            .iter()
            .filter(|f| parent(&f.path).is_none())
            .map(|f| self.question(f))
            .collect()
    }

    /// `questions-ui.yml`.
    pub fn questions_file(&self, policy: &str) -> Result<String, String> {
        let body = serde_yaml::to_string(&QuestionsFile {
            questions: &self.questions(),
        })
        .map_err(|e| e.to_string())?;
        Ok(format!(
            "# The settings form of the Kubewarden UI for {policy}, generated from {SOURCE}\n\
             # by `./build.sh settings-ui`: edit that file, not this one.\n{body}"
        ))
    }

    /// The Markdown table `name`, header included.
    pub fn table(&self, table: &Table) -> String {
        let mut out = String::new();
        if table.defaults {
            out.push_str("| field | type | default | meaning |\n|---|---|---|---|\n");
        } else {
            out.push_str("| field | type | meaning |\n|---|---|---|\n");
        }
        let first = &self.tables[0].name;
        for f in &self.fields {
            let Some(row) = &f.row else { continue };
            if row.table.as_ref().unwrap_or(first) != &table.name {
                continue;
            }
            let name = f.path.strip_prefix(&table.prefix).unwrap_or(&f.path);
            let _ = write!(out, "| `{name}` | {} |", row.kind);
            if table.defaults {
                let default = match &row.default {
                    Some(text) => text.clone(),
                    None => format!("`{}`", json(&f.default)),
                };
                let _ = write!(out, " {default} |");
            }
            let _ = writeln!(out, " {} |", row.meaning);
        }
        out
    }

    /// The README field names of `table`'s rows.
    fn row_names<'a>(&'a self, table: &'a Table) -> impl Iterator<Item = &'a str> + 'a {
        let first = &self.tables[0].name;
        self.fields.iter().filter_map(move |f| {
            let row = f.row.as_ref()?;
            (row.table.as_ref().unwrap_or(first) == &table.name)
                .then(|| f.path.strip_prefix(&table.prefix).unwrap_or(&f.path))
        })
    }

    /// `readme` with every table rewritten. No markers are needed (the README is embedded in
    /// the modules, so it stays as lean as it is): a table is the first Markdown table with its
    /// header whose first row names one of its fields.
    pub fn readme(&self, readme: &str) -> Result<String, String> {
        let mut lines: Vec<String> = readme.lines().map(str::to_owned).collect();
        for table in &self.tables {
            let rendered = self.table(table);
            let header = rendered.lines().next().unwrap_or_default();
            let names: Vec<String> = self
                .row_names(table)
                .map(|n| format!("| `{n}` |"))
                .collect();
            let start = (0..lines.len())
                .find(|&i| {
                    lines[i] == header
                        && lines
                            .get(i + 2)
                            .is_some_and(|row| names.iter().any(|n| row.starts_with(n.as_str())))
                })
                .ok_or_else(|| {
                    format!(
                        "no table `{}` (a `{header}` table listing its fields)",
                        table.name
                    )
                })?;
            let end = (start..lines.len())
                .find(|&i| !lines[i].starts_with('|'))
                .unwrap_or(lines.len());
            lines.splice(start..end, rendered.lines().map(str::to_owned));
        }
        let mut out = lines.join("\n");
        if readme.ends_with('\n') {
            out.push('\n');
        }
        Ok(out)
    }
}

/// JSON as the READMEs write it: one line, a space after `:` and `,`.
pub fn json(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(json).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), json(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        other => other.to_string(),
    }
}

/// The generated files of one policy folder: (path, what it should hold).
pub fn render(policy_dir: &Path) -> Result<Vec<(PathBuf, String)>, String> {
    let policy = policy_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a policy folder", policy_dir.display()))?;
    let source = Source::read(&policy_dir.join(SOURCE))?;
    let readme_path = policy_dir.join(README);
    let readme =
        fs::read_to_string(&readme_path).map_err(|e| format!("{}: {e}", readme_path.display()))?;
    let readme = source
        .readme(&readme)
        .map_err(|e| format!("{}: {e}", readme_path.display()))?;
    Ok(vec![
        (policy_dir.join(QUESTIONS), source.questions_file(policy)?),
        (readme_path, readme),
    ])
}

/// The policy folders of `policies` (as every tool finds them:
/// `taintguard_wasm_metadata::metadata::policy_folders`) that describe their settings.
pub fn policy_dirs(policies: &Path) -> Result<Vec<PathBuf>, String> {
    let folders = taintguard_wasm_metadata::metadata::policy_folders(policies)?;
    Ok(folders
        .into_iter()
        .map(|name| policies.join(name))
        .filter(|dir| dir.join(SOURCE).is_file())
        .collect())
}

/// The generated files that differ from what is committed.
pub fn stale(policies: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for dir in policy_dirs(policies)? {
        for (path, want) in render(&dir)? {
            if fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
                out.push(path);
            }
        }
    }
    Ok(out)
}
