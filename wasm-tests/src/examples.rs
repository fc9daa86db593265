//! The bundled examples of each policy (`policies/<name>/examples/cases.yml`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::kubewarden::ClusterAnswers;

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
    /// A kwctl host-capabilities session answering the cluster questions the request raises
    /// (`kwctl run --replay-host-capabilities-interactions`; the end-to-end suite replays the
    /// same files through kwctl).
    #[serde(default)]
    pub session: Option<PathBuf>,
    pub expect: Expect,
}

pub struct Example {
    pub name: String,
    pub request: Value,
    pub settings: Value,
    /// The session file's text, when the case has one.
    pub session: Option<String>,
    pub expect: Expect,
}

impl Example {
    /// A host answering as the case's session does (each call consumes an answer, so every
    /// evaluation needs its own), or one that grants no cluster access.
    pub fn answers(&self) -> Result<ClusterAnswers, String> {
        match &self.session {
            Some(text) => {
                ClusterAnswers::replaying(text).map_err(|e| format!("{}: session {e}", self.name))
            }
            None => Ok(ClusterAnswers::default()),
        }
    }
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
            let session = case
                .session
                .as_ref()
                .map(|path| {
                    let path = examples.join(path);
                    std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))
                })
                .transpose()?;
            let name = match &case.session {
                Some(session) => format!(
                    "{} [{}, {}]",
                    stem(&case.request),
                    stem(&case.settings),
                    stem(session)
                ),
                None => format!("{} [{}]", stem(&case.request), stem(&case.settings)),
            };
            Ok(Example {
                name,
                request: read_json(&examples.join(&case.request))?,
                settings: read_json(&examples.join(&case.settings))?,
                session,
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
    validate: impl Fn(&Value, &Value, &ClusterAnswers) -> Result<Value, String>,
) {
    let examples = load(dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(examples.len() >= 10, "{}: too few examples", dir.display());
    for example in examples {
        let answers = example.answers().unwrap_or_else(|e| panic!("{e}"));
        let response = validate(&example.request, &example.settings, &answers)
            .unwrap_or_else(|e| panic!("{}: {e}", example.name));
        assert_eq!(
            outcome(&response),
            example.expect,
            "{}: {response}",
            example.name
        );
    }
}
