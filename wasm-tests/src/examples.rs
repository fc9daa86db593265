//! The bundled examples of each policy (`policies/<name>/examples/cases.yml`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    Accepted,
    Mutated,
    Rejected,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub request: PathBuf,
    pub settings: PathBuf,
    pub expect: Expect,
}

pub struct Example {
    pub name: String,
    pub request: Value,
    pub settings: Value,
    pub expect: Expect,
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `(file name, parsed JSON)` of every `*.json` file in `dir`, sorted by name.
pub fn json_files(dir: &Path) -> Result<Vec<(String, Value)>, String> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "json") {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            files.push((name, read_json(&path)?));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// Loads `examples/cases.yml` of the policy folder `dir`.
pub fn load(dir: &Path) -> Result<Vec<Example>, String> {
    let examples = dir.join("examples");
    let manifest = examples.join("cases.yml");
    let text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    let cases: Vec<Case> =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    cases
        .into_iter()
        .map(|case| {
            let stem = |p: &Path| {
                p.file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            Ok(Example {
                name: format!("{} [{}]", stem(&case.request), stem(&case.settings)),
                request: read_json(&examples.join(&case.request))?,
                settings: read_json(&examples.join(&case.settings))?,
                expect: case.expect,
            })
        })
        .collect()
}

/// What a `ValidationResponse` amounts to.
pub fn outcome(response: &Value) -> Expect {
    if response["accepted"] != Value::Bool(true) {
        Expect::Rejected
    } else if response.get("mutated_object").is_some_and(|m| !m.is_null()) {
        Expect::Mutated
    } else {
        Expect::Accepted
    }
}

/// Runs every bundled example of the policy in `dir` through `validate` (a fresh waPC instance per
/// call) and panics naming each example whose verdict is not the one `cases.yml` expects.
pub fn assert_expected_verdicts(
    dir: &Path,
    validate: impl Fn(&Value, &Value) -> Result<Value, String>,
) {
    let examples = load(dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(examples.len() >= 10, "{}: too few examples", dir.display());
    for example in examples {
        let response = validate(&example.request, &example.settings)
            .unwrap_or_else(|e| panic!("{}: {e}", example.name));
        assert_eq!(
            outcome(&response),
            example.expect,
            "{}: {response}",
            example.name
        );
    }
}
