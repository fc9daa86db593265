//! A webhook's `matchConditions` evaluated with cel-rust, as the API server (Kubernetes 1.28 and
//! later) evaluates them before it calls the webhook: what the policies' soundness tests use
//! (docs/availability.md).

use std::path::Path;

use serde_json::Value;
use taintguard::policy::{read_settings, Policy};
use taintguard::{MatchCondition, Verdict};

/// The policy resource at `path` (a policy folder's `cluster-admission-policy*.yaml`), as JSON.
///
/// # Panics
///
/// A file that cannot be read or is not YAML, named.
pub fn manifest(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Holds the manifest at `path` to the `matchConditions` that `generate` writes from the
/// manifest's own `spec.settings`: a policy's generator and what it ships never drift apart.
///
/// # Panics
///
/// The manifest cannot be read, `P` refuses its settings, or the conditions differ; the message
/// names the file.
pub fn assert_ships_its_conditions<P: Policy>(
    path: &Path,
    generate: impl Fn(&P::Settings) -> Vec<MatchCondition>,
) {
    let doc = manifest(path);
    let settings = read_settings::<P>(&doc["spec"]["settings"].to_string())
        .unwrap_or_else(|e| panic!("{}: spec.settings: {e}", path.display()));
    let shipped: Vec<(&str, &str)> = (doc["spec"]["matchConditions"].as_array().into_iter())
        .flatten()
        .map(|c| {
            let field = |name: &str| c[name].as_str().unwrap_or_default();
            (field("name"), field("expression"))
        })
        .collect();
    let generated = generate(&settings);
    let generated: Vec<(&str, &str)> = (generated.iter())
        .map(|c| (c.name, c.expression.as_str()))
        .collect();
    assert_eq!(
        shipped,
        generated,
        "{}: its matchConditions are not the ones its settings generate (docs/availability.md)",
        path.display()
    );
}

/// What the API server decides for `request` (an AdmissionRequest as JSON): `Some(true)` call
/// the webhook, `Some(false)` skip it, `None` an evaluation error (then the webhook's
/// `failurePolicy` decides: `Fail` refuses the request, `Ignore` skips the webhook).
///
/// # Panics
///
/// A condition that does not compile: the policy's generator wrote a broken expression.
pub fn sent(conditions: &[MatchCondition], request: &Value) -> Option<bool> {
    let mut all = true;
    for condition in conditions {
        let program = cel::Program::compile(&condition.expression)
            .unwrap_or_else(|e| panic!("matchCondition {} does not compile: {e}", condition.name));
        let mut context = cel::Context::default();
        context.add_variable("request", request.clone()).ok()?;
        for variable in ["object", "oldObject"] {
            let value = request.get(variable).cloned().unwrap_or(Value::Null);
            context.add_variable(variable, value).ok()?;
        }
        match program.execute(&context) {
            Ok(cel::Value::Bool(holds)) => all &= holds,
            _ => return None,
        }
    }
    Some(all)
}

/// How a soundness test's corpus fared with a webhook's conditions: requests sent to the
/// webhook, filtered out, and whose evaluation failed (the `failurePolicy` decides those).
#[derive(Debug, Default)]
pub struct Tally {
    /// Requests the conditions send to the webhook.
    pub sent: usize,
    /// Requests the conditions keep from it.
    pub filtered: usize,
    /// Requests whose conditions could not be evaluated.
    pub errors: usize,
}

impl Tally {
    /// Counts one request as a policy's soundness test judges it: `Ok(Some(sent))`, `Ok(None)`
    /// for an evaluation error, `Err` for a hole, which it names.
    ///
    /// # Panics
    ///
    /// A hole: a request the policy acts on that the conditions filter out.
    pub fn count(&mut self, decision: Result<Option<bool>, String>) {
        match decision {
            Ok(Some(true)) => self.sent += 1,
            Ok(Some(false)) => self.filtered += 1,
            Ok(None) => self.errors += 1,
            Err(hole) => panic!("{hole}"),
        }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Tally {
            sent,
            filtered,
            errors,
        } = self;
        write!(f, "{sent} sent, {filtered} filtered, {errors} errors")
    }
}

/// Every bundled example of the policy folder `policy` ([`bundled_examples`]) judged by a
/// soundness test's `judge`; how many it judged.
///
/// # Panics
///
/// A hole, named by `judge`.
pub fn assert_no_bundled_hole(
    policy: &Path,
    judge: impl Fn(&Value, &str) -> Result<Option<bool>, String>,
) -> usize {
    let examples = bundled_examples(policy);
    for (request, settings) in &examples {
        judge(request, settings).unwrap_or_else(|hole| panic!("{hole}"));
    }
    examples.len()
}

/// Whether a verdict does anything but accept the request untouched and silently: what no
/// condition may keep from the policy.
pub fn acts(verdict: &Verdict) -> bool {
    !verdict.accepted()
        || verdict.mutated_object().is_some()
        || !verdict.warnings.is_empty()
        || !verdict.audit_annotations.is_empty()
}

/// `count` byte strings of 1 KiB for the generators (`gen`), the same on every run: a corpus of
/// hostile requests a soundness test can name a failure of and replay.
pub fn corpus(count: usize) -> impl Iterator<Item = Vec<u8>> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..count).map(move |_| {
        (0..1024)
            .map(|_| {
                // xorshift64: a fixed sequence, no dependency.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect()
    })
}

/// Every bundled example request of the policy folder `policy` (`examples/requests/*.json`,
/// AdmissionReviews), each with `{}` and with every settings file of `examples/settings`.
///
/// # Panics
///
/// A folder or file that cannot be read, or a request that is not JSON.
pub fn bundled_examples(policy: &std::path::Path) -> Vec<(Value, String)> {
    let read = |path: &std::path::Path| {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let files = |dir: &str| -> Vec<std::path::PathBuf> {
        let dir = policy.join(dir);
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        paths
    };
    let mut settings = vec!["{}".to_owned()];
    settings.extend(files("examples/settings").iter().map(|p| read(p)));
    let mut examples = Vec::new();
    for path in files("examples/requests") {
        let review: Value = serde_json::from_str(&read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for settings in &settings {
            examples.push((review["request"].clone(), settings.clone()));
        }
    }
    examples
}
