//! The bundled examples of each policy (`policies/<name>/examples/cases.yml`, a `taintguard test`
//! suite): its ready-review cases, for the tools and benchmarks that take one request at a time.

use std::path::Path;

use serde_json::Value;
use taintguard_suite::files::Disk;
use taintguard_suite::suite::{self, Requests};

use crate::kubewarden::ClusterAnswers;

/// What a policy made of a request: accepted, mutated or rejected.
pub use taintguard_suite::suite::Verdict as Expect;

/// What a `ValidationResponse` amounts to.
pub use taintguard_suite::expect::verdict as outcome;

/// One ready-review case of a policy's bundled examples.
pub struct Example {
    /// The case's name in `cases.yml`.
    pub name: String,
    /// The AdmissionReview the case sends.
    pub request: Value,
    /// The policy settings the case is judged with.
    pub settings: Value,
    /// The kwctl session answering the case's cluster questions, when it has one.
    pub session: Option<String>,
    /// What the policy must make of the request.
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
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
            files.push((name, value));
        }
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(files)
}

/// The ready-review cases of the suite `examples/cases.yml` in the policy folder `dir`; cases
/// written as steps are left to `taintguard test`.
pub fn load(dir: &Path) -> Result<Vec<Example>, String> {
    let suite = suite::load(&Disk, &dir.join("examples/cases.yml"))?;
    Ok(suite
        .cases
        .into_iter()
        .filter_map(|case| {
            let Requests::Review { review, expect } = case.requests else {
                return None;
            };
            Some(Example {
                name: case.name,
                request: review,
                settings: case.settings,
                session: case.cluster.session,
                expect: expect.verdict,
            })
        })
        .collect())
}
