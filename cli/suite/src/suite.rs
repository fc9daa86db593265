//! The test-suite file format (`apiVersion: taintguard.io/v1alpha1`, `kind: TestSuite`;
//! docs/testing.md is its reference): the wire types, read strictly, and [`load`], which checks
//! them into a [`Suite`] whose files are read, whose requests are built and whose every case
//! has an expectation. Errors name the file, the case and the field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use taintguard::cluster::ResourceKind;

use crate::cluster;
use crate::files::Files;
use crate::object;
use crate::review::{Operation, Requester, SUITE_FIELDS};

/// The `apiVersion` every suite file must have.
pub const API_VERSION: &str = "taintguard.io/v1alpha1";
/// The `kind` every suite file must have, and that marks a file as a suite.
pub const KIND: &str = "TestSuite";

/// A suite file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SuiteFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    name: Option<String>,
    /// The waPC module, relative to the suite file.
    policy: PathBuf,
    /// The gatekeeper build; by default the engine looks for `<policy>.gatekeeper.wasm` beside
    /// the policy.
    #[serde(default)]
    gatekeeper: Option<PathBuf>,
    #[serde(default)]
    settings: Option<Value>,
    #[serde(default)]
    settings_file: Option<PathBuf>,
    #[serde(default)]
    cluster: Option<ClusterFile>,
    cases: Vec<CaseFile>,
}

/// A case as written, or a step of one: a step is a write (who, what, the expectation) without
/// the case's own fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseFile {
    /// Required for a case; a step is named after its place when it has none.
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    skip: Option<String>,
    #[serde(default)]
    settings: Option<Value>,
    #[serde(default)]
    settings_file: Option<PathBuf>,
    #[serde(default)]
    cluster: Option<ClusterFile>,
    /// A ready AdmissionReview (or AdmissionRequest): a file or inline.
    #[serde(default)]
    request: Option<Value>,
    #[serde(default)]
    old_object: Option<Value>,
    #[serde(default)]
    steps: Option<Vec<CaseFile>>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    service_account: Option<String>,
    #[serde(default)]
    sub_resource: Option<String>,
    #[serde(default)]
    object: Option<Value>,
    #[serde(default)]
    merge_patch: Option<Value>,
    #[serde(default)]
    json_patch: Option<Value>,
    #[serde(default)]
    expect: Option<ExpectFile>,
    /// A step stored without the policy, and why (docs/testing.md, "Writes the policy does not
    /// judge").
    #[serde(default)]
    unjudged: Option<String>,
}

impl CaseFile {
    /// Whether it names any part of a write beside its expectation.
    fn writes(&self) -> bool {
        self.operation.is_some()
            || self.user.is_some()
            || !self.groups.is_empty()
            || self.service_account.is_some()
            || self.sub_resource.is_some()
            || self.object.is_some()
            || self.merge_patch.is_some()
            || self.json_patch.is_some()
            || self.unjudged.is_some()
    }

    /// The first of the case's own fields it has, which a step may not.
    fn case_field(&self) -> Option<&'static str> {
        [
            ("skip", self.skip.is_some()),
            ("settings", self.settings.is_some()),
            ("settingsFile", self.settings_file.is_some()),
            ("cluster", self.cluster.is_some()),
            ("request", self.request.is_some()),
            ("oldObject", self.old_object.is_some()),
            ("steps", self.steps.is_some()),
        ]
        .into_iter()
        .find_map(|(field, present)| present.then_some(field))
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClusterFile {
    /// The objects the cluster's reads find, of any kind: files or inline objects, each with
    /// its `apiVersion`, `kind` and `metadata.name` (and `metadata.namespace` if namespaced).
    #[serde(default)]
    objects: Vec<Value>,
    /// Nodes, as `objects` whose `apiVersion` and `kind` may be left out.
    #[serde(default)]
    nodes: Vec<Value>,
    /// Namespaces, as `objects` whose `apiVersion` and `kind` may be left out.
    #[serde(default)]
    namespaces: Vec<Value>,
    /// SubjectAccessReview answers; a question no entry answers is denied.
    #[serde(default)]
    can_i: Vec<CanIFile>,
    /// A kwctl host-capabilities session, replayed instead.
    #[serde(default)]
    session: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CanIFile {
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    service_account: Option<String>,
    verb: String,
    #[serde(default)]
    name: Option<String>,
    allowed: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ExpectFile {
    verdict: Verdict,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    message_regex: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    warnings: Option<Vec<String>>,
    #[serde(default)]
    audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    patched_object: Option<Value>,
    /// What the gatekeeper build answers where it differs from the waPC build by design.
    #[serde(default)]
    gatekeeper: Option<Box<ExpectFile>>,
}

/// What a policy made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Accepted as it is.
    Accepted,
    /// Accepted with a patch to the object.
    Mutated,
    /// Rejected.
    Rejected,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Accepted => "accepted",
            Verdict::Mutated => "mutated",
            Verdict::Rejected => "rejected",
        })
    }
}

/// A checked expectation.
#[derive(Debug, Clone)]
pub struct Expect {
    /// The verdict the request must get.
    pub verdict: Verdict,
    /// A fragment the response's message must contain.
    pub message: Option<String>,
    /// A pattern the response's message must match.
    pub message_regex: Option<regex_lite::Regex>,
    /// The HTTP code the response must carry.
    pub code: Option<u16>,
    /// Fragments of the warnings, one per warning in order; a warning not listed fails the case.
    pub warnings: Option<Vec<String>>,
    /// A fragment of each audit annotation, by key; an annotation not listed fails the case.
    pub audit_annotations: Option<BTreeMap<String, String>>,
    /// What the patched object must hold: the members named, a `null` member absent.
    pub patched_object: Option<Value>,
    /// What the gatekeeper build must answer instead of what the waPC build answers, where the
    /// two differ by design (docs/testing.md, "Both builds must agree"): its verdict, message
    /// and code. Given, the gatekeeper build is judged by it rather than compared; an engine
    /// without a gatekeeper build (the npm package) does not check it.
    pub gatekeeper: Option<Box<Expect>>,
}

/// What the cluster answers while a case runs.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// The objects the policy's reads are answered from, of any kind, each with a string
    /// `apiVersion`, `kind` and `metadata.name` ([`cluster::checked_object`]).
    pub objects: Vec<Value>,
    /// The SubjectAccessReview answers; a review not listed is answered "not allowed".
    pub can_i: Vec<CanI>,
    /// A kwctl session's text.
    pub session: Option<String>,
}

impl Cluster {
    /// A suite's `cluster:` given as a value (`{nodes, namespaces, canI, session}`), its file
    /// names read through `files` relative to `dir`, as a suite's are.
    ///
    /// # Errors
    ///
    /// The first field that is not what a suite's `cluster:` takes, named.
    pub fn from_value(value: Value, files: &dyn Files, dir: &Path) -> Result<Cluster, String> {
        let file: ClusterFile = serde_json::from_value(value).map_err(|e| e.to_string())?;
        cluster(&Base { files, dir }, file)
    }
}

/// One SubjectAccessReview answer: for the requester, the verb and (if given) the node.
#[derive(Debug, Clone)]
pub struct CanI {
    /// The requester's username.
    pub username: String,
    /// The verb asked about.
    pub verb: String,
    /// The node the review names; `None`: any node.
    pub name: Option<String>,
    /// Whether the review allows it.
    pub allowed: bool,
}

/// How a write reaches the stored object.
#[derive(Debug, Clone)]
pub enum Write {
    /// The whole object, as a PUT (`kubectl replace`, a controller's Update) sends it.
    Object(Value),
    /// An RFC 7386 merge patch on the stored object, sent as a PATCH. For `spec.taints` and
    /// `tolerations`, lists with no merge key, a strategic merge patch does the same.
    MergePatch(Value),
    /// An RFC 6902 patch on the stored object, sent as a PATCH.
    JsonPatch(json_patch::Patch),
}

/// One write of a sequence, or a single case built from parts.
#[derive(Debug, Clone)]
pub struct Step {
    /// The step's name, as reports show it.
    pub name: String,
    /// The operation; `None`: UPDATE when an object is stored, CREATE when none is.
    pub operation: Option<Operation>,
    /// Who makes the request.
    pub requester: Requester,
    /// `status` for a write to a status subresource.
    pub sub_resource: Option<String>,
    /// None for a DELETE.
    pub write: Option<Write>,
    /// Whether the policy judges the write, and what it must answer.
    pub judged: Judged,
}

/// Whether the policy judges a step's write.
#[derive(Debug, Clone)]
pub enum Judged {
    /// The policy judges it, and its answer must meet this.
    By(Expect),
    /// It is stored as written, without the policy: a write while the policy server was down
    /// under `failurePolicy: Ignore`, or one its webhook's rules skip. The text says which.
    Not(String),
}

/// What a case sends.
#[derive(Debug, Clone)]
pub enum Requests {
    /// A ready AdmissionReview, and what it must get.
    Review {
        /// The AdmissionReview, sent as it is.
        review: Value,
        /// What the review must get.
        expect: Expect,
    },
    /// Writes applied in turn to what the previous one stored, starting from `stored`.
    Steps {
        /// The object stored before the first write; `None`: nothing, the first write creates it.
        stored: Option<Value>,
        /// The writes, in order.
        steps: Vec<Step>,
    },
}

/// One case of a suite: its settings, its cluster and the requests it sends.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's name, as reports show it.
    pub name: String,
    /// Why the case is skipped; `None`: it runs.
    pub skip: Option<String>,
    /// The policy settings the case is judged with.
    pub settings: Value,
    /// What the cluster answers the policy.
    pub cluster: Cluster,
    /// The requests and what each must get.
    pub requests: Requests,
}

/// A suite read and checked: its files read, its requests built, every case with an expectation.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite's file, as found.
    pub file: PathBuf,
    /// The suite's name; by default the policy module's file stem.
    pub name: String,
    /// The waPC module, resolved against the suite file's directory.
    pub policy: PathBuf,
    /// The gatekeeper build, when the suite names one.
    pub gatekeeper: Option<PathBuf>,
    /// The cases, in the file's order.
    pub cases: Vec<Case>,
}

/// Whether `text` is meant as a suite: YAML or JSON (on any number of lines) whose top level
/// says `kind: TestSuite`, or, for a file that does not parse, a line that says so. A file that
/// says so and cannot be read as one is an error, never skipped.
pub fn is_suite(text: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind {
        kind: Option<String>,
    }
    match serde_yaml::from_str::<Kind>(text) {
        Ok(top) => top.kind.as_deref() == Some(KIND),
        Err(_) => says_suite_on_a_line(text),
    }
}

/// A line `kind: TestSuite` (YAML) or `"kind": "TestSuite"` (JSON): what marks a suite that
/// does not parse.
fn says_suite_on_a_line(text: &str) -> bool {
    text.lines().any(|line| {
        let bare: String = line
            .chars()
            .filter(|c| !matches!(c, '"' | '\'' | ',' | '{' | '}') && !c.is_whitespace())
            .collect();
        bare.strip_prefix("kind:") == Some(KIND)
    })
}

/// Reads and checks the suite file at `path`.
///
/// # Errors
///
/// The first problem, as `FILE: case "NAME": FIELD: what is wrong`.
pub fn load(files: &dyn Files, path: &Path) -> Result<Suite, String> {
    let at_file = |e: String| format!("{}: {e}", path.display());
    let text = files.read(path)?;
    let file: SuiteFile = serde_yaml::from_str(&text).map_err(|e| at_file(e.to_string()))?;
    let dir = Base {
        files,
        dir: path.parent().unwrap_or(Path::new(".")),
    };
    let suite = check_suite(file, &dir).map_err(at_file)?;
    Ok(Suite {
        file: path.to_owned(),
        ..suite
    })
}

fn check_suite(file: SuiteFile, dir: &Base<'_>) -> Result<Suite, String> {
    if file.api_version != API_VERSION {
        return Err(format!(
            "apiVersion: {:?} is not {API_VERSION:?}",
            file.api_version
        ));
    }
    if file.kind != KIND {
        return Err(format!("kind: {:?} is not {KIND:?}", file.kind));
    }
    let policy = dir.join(&file.policy);
    let gatekeeper = file.gatekeeper.as_ref().map(|path| dir.join(path));
    let settings = settings(dir, file.settings, file.settings_file.as_deref())?
        .unwrap_or_else(|| Value::Object(Default::default()));
    let cluster = file
        .cluster
        .map(|c| cluster(dir, c).map_err(|e| format!("cluster.{e}")))
        .transpose()?
        .unwrap_or_default();
    if file.cases.is_empty() {
        return Err("cases: a suite needs at least one case".to_owned());
    }
    let mut cases = Vec::with_capacity(file.cases.len());
    for (i, case) in file.cases.into_iter().enumerate() {
        let at = match &case.name {
            Some(name) if cases.iter().any(|c: &Case| &c.name == name) => {
                return Err(format!(
                    "cases[{i}] (\"{name}\"): another case has this name"
                ));
            }
            Some(name) => format!("case \"{name}\""),
            None => format!("cases[{i}]"),
        };
        cases.push(check_case(case, dir, &settings, &cluster).map_err(|e| format!("{at}: {e}"))?);
    }
    let name = file.name.unwrap_or_else(|| {
        file.policy
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    Ok(Suite {
        file: PathBuf::new(),
        name,
        policy,
        gatekeeper,
        cases,
    })
}

/// A case of the suite file, checked: its settings and cluster (the suite's unless it gives its
/// own), and its requests, a whole AdmissionReview or steps (a case that is one write is its one
/// step).
fn check_case(
    mut case: CaseFile,
    dir: &Base<'_>,
    suite_settings: &Value,
    suite_cluster: &Cluster,
) -> Result<Case, String> {
    let name = case.name.take().ok_or("name: required")?;
    let settings_file = case.settings_file.take();
    let settings = settings(dir, case.settings.take(), settings_file.as_deref())?
        .unwrap_or_else(|| suite_settings.clone());
    let cluster = match case.cluster.take() {
        Some(c) => cluster(dir, c).map_err(|e| format!("cluster.{e}"))?,
        None => suite_cluster.clone(),
    };
    let stored = case
        .old_object
        .take()
        .map(|o| source(dir, o, "oldObject"))
        .transpose()?;
    let skip = case.skip.take();
    let requests = match (case.request.take(), case.steps.take()) {
        (Some(_), Some(_)) => return Err("give `request` or `steps`, not both".to_owned()),
        (Some(request), None) => {
            if case.writes() || stored.is_some() {
                return Err(
                    "`request` is a whole AdmissionReview: it takes no operation, requester or \
                     objects beside it"
                        .to_owned(),
                );
            }
            review_request(dir, request, case.expect)?
        }
        (None, Some(steps)) => {
            if case.writes() || case.expect.is_some() {
                return Err(
                    "a case with `steps` writes through them: operation, requester, object and \
                     expect belong to each step"
                        .to_owned(),
                );
            }
            let steps = check_steps(steps, dir)?;
            Requests::Steps { stored, steps }
        }
        (None, None) => {
            if case.unjudged.is_some() {
                return Err(
                    "unjudged: a case of one write the policy does not judge proves \
                            nothing; only a step of `steps` may be unjudged"
                        .to_owned(),
                );
            }
            let step = check_step(case, dir, name.clone())?;
            Requests::Steps {
                stored,
                steps: vec![step],
            }
        }
    };
    Ok(Case {
        name,
        skip,
        settings,
        cluster,
        requests,
    })
}

/// A case's whole AdmissionReview (or AdmissionRequest) `request`, and its expectation.
fn review_request(
    dir: &Base<'_>,
    request: Value,
    expect: Option<ExpectFile>,
) -> Result<Requests, String> {
    let review = source(dir, request, "request")?;
    if !review["request"].is_object() && !review["operation"].is_string() {
        return Err("request: neither an AdmissionReview nor an AdmissionRequest".into());
    }
    let expect = expect.ok_or("expect: required: a case without an expectation proves nothing")?;
    Ok(Requests::Review {
        review,
        expect: check_expect(expect).map_err(|e| format!("expect.{e}"))?,
    })
}

/// A case's `steps`, at least one, each named (`step <n>` when it has no name) and without the
/// fields that belong to the case.
fn check_steps(steps: Vec<CaseFile>, dir: &Base<'_>) -> Result<Vec<Step>, String> {
    if steps.is_empty() {
        return Err("steps: at least one step".to_owned());
    }
    steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| {
            let name = step
                .name
                .clone()
                .unwrap_or_else(|| format!("step {}", i + 1));
            let checked = match step.case_field() {
                Some(field) => Err(format!(
                    "{field}: belongs to the case; a step is a write (requester, \
                     operation, object or patch) and its expect"
                )),
                None => check_step(step, dir, name.clone()),
            };
            checked.map_err(|e| format!("steps[{i}] (\"{name}\"): {e}"))
        })
        .collect()
}

fn check_step(step: CaseFile, dir: &Base<'_>, name: String) -> Result<Step, String> {
    let operation = step
        .operation
        .as_deref()
        .map(Operation::try_from)
        .transpose()
        .map_err(|e| format!("operation: {e}"))?;
    let requester = Requester::from_parts(
        step.user,
        step.groups,
        step.service_account.as_deref(),
        &SUITE_FIELDS,
    )?;
    let write = match (step.object, step.merge_patch, step.json_patch) {
        (None, None, None) => None,
        (Some(object), None, None) => Some(Write::Object(source(dir, object, "object")?)),
        (None, Some(patch), None) => Some(Write::MergePatch(source(dir, patch, "mergePatch")?)),
        (None, None, Some(patch)) => {
            let patch = match patch {
                Value::String(path) => object::read_any(dir.files, &dir.join(path))?,
                inline => inline,
            };
            Some(Write::JsonPatch(serde_json::from_value(patch).map_err(
                |e| format!("jsonPatch: not an RFC 6902 patch: {e}"),
            )?))
        }
        _ => return Err("give one of `object`, `mergePatch` and `jsonPatch`".to_owned()),
    };
    if operation == Some(Operation::Delete) && write.is_some() {
        return Err("a DELETE writes nothing: no object or patch".to_owned());
    }
    if operation != Some(Operation::Delete) && write.is_none() {
        return Err("object: required (or `mergePatch`, `jsonPatch`) but for a DELETE".to_owned());
    }
    let judged = match (step.unjudged, step.expect) {
        (Some(_), Some(_)) => {
            return Err("expect: an unjudged write gets no answer to expect".to_owned())
        }
        (Some(why), None) => Judged::Not(why),
        (None, Some(expect)) => {
            Judged::By(check_expect(expect).map_err(|e| format!("expect.{e}"))?)
        }
        (None, None) => {
            return Err("expect: required: a case without an expectation proves nothing".to_owned())
        }
    };
    Ok(Step {
        name,
        operation,
        requester,
        sub_resource: step.sub_resource,
        write,
        judged,
    })
}

fn check_expect(expect: ExpectFile) -> Result<Expect, String> {
    let message_regex = expect
        .message_regex
        .as_deref()
        .map(regex_lite::Regex::new)
        .transpose()
        .map_err(|e| format!("messageRegex: {e}"))?;
    let has_message = expect.message.is_some() || message_regex.is_some();
    if expect.verdict != Verdict::Rejected && (has_message || expect.code.is_some()) {
        return Err(format!(
            "message: only a rejection has a message and a code, and the verdict is {}",
            expect.verdict
        ));
    }
    if expect.verdict == Verdict::Rejected && expect.patched_object.is_some() {
        return Err("patchedObject: a rejected request patches nothing".to_owned());
    }
    let gatekeeper = expect
        .gatekeeper
        .map(|gatekeeper| check_gatekeeper_expect(*gatekeeper).map(Box::new))
        .transpose()
        .map_err(|e| format!("gatekeeper.{e}"))?;
    Ok(Expect {
        verdict: expect.verdict,
        message: expect.message,
        message_regex,
        code: expect.code,
        warnings: expect.warnings,
        audit_annotations: expect.audit_annotations,
        patched_object: expect.patched_object,
        gatekeeper,
    })
}

/// An expectation of the gatekeeper build: what a Gatekeeper violation list can say, a verdict
/// that is no mutation, a message and a code.
fn check_gatekeeper_expect(expect: ExpectFile) -> Result<Expect, String> {
    let unsaid = [
        ("verdict", expect.verdict == Verdict::Mutated),
        ("warnings", expect.warnings.is_some()),
        ("auditAnnotations", expect.audit_annotations.is_some()),
        ("patchedObject", expect.patched_object.is_some()),
        ("gatekeeper", expect.gatekeeper.is_some()),
    ];
    if let Some((field, _)) = unsaid.iter().find(|(_, given)| *given) {
        return Err(format!(
            "{field}: the gatekeeper build accepts or rejects, with a message and a code; it \
             cannot mutate, and a violation list has no warnings or audit annotations"
        ));
    }
    check_expect(expect)
}

/// Settings inline or from a file (`kwctl run -s` takes the same files); `None` when neither.
fn settings(
    dir: &Base<'_>,
    inline: Option<Value>,
    file: Option<&Path>,
) -> Result<Option<Value>, String> {
    match (inline, file) {
        (Some(_), Some(_)) => Err("give `settings` or `settingsFile`, not both".to_owned()),
        (Some(Value::Null), None) => Ok(Some(Value::Object(Default::default()))),
        (Some(settings), None) => Ok(Some(settings)),
        (None, Some(path)) => object::read_any(dir.files, &dir.join(path))
            .map(Some)
            .map_err(|e| format!("settingsFile: {e}")),
        (None, None) => Ok(None),
    }
}

fn cluster(dir: &Base<'_>, file: ClusterFile) -> Result<Cluster, String> {
    let mut objects = Vec::new();
    let given = [
        ("objects", None, file.objects),
        ("nodes", Some(ResourceKind::NODE), file.nodes),
        ("namespaces", Some(ResourceKind::NAMESPACE), file.namespaces),
    ];
    for (field, kind, values) in given {
        for (i, value) in values.into_iter().enumerate() {
            let at = format!("{field}[{i}]");
            let object = source(dir, value, &at)?;
            objects.push(cluster::checked_object(object, kind).map_err(|e| format!("{at}: {e}"))?);
        }
    }
    let can_i: Vec<CanI> = file
        .can_i
        .into_iter()
        .enumerate()
        .map(|(i, answer)| {
            let at = |e: String| format!("canI[{i}]: {e}");
            let requester = Requester::from_parts(
                answer.user,
                Vec::new(),
                answer.service_account.as_deref(),
                &SUITE_FIELDS,
            )
            .map_err(at)?;
            let username = requester
                .username()
                .ok_or_else(|| at("give `user` or `serviceAccount`".to_owned()))?;
            Ok::<_, String>(CanI {
                username,
                verb: answer.verb,
                name: answer.name,
                allowed: answer.allowed,
            })
        })
        .collect::<Result<_, _>>()?;
    let session = file
        .session
        .map(|path| {
            let path = dir.join(path);
            dir.files.read(&path).map_err(|e| format!("session: {e}"))
        })
        .transpose()?;
    if session.is_some() && !can_i.is_empty() {
        return Err("session: a session answers every question; give it or `canI`".to_owned());
    }
    Ok(Cluster {
        objects,
        can_i,
        session,
    })
}

/// An object given inline, or as a file (a string) relative to the suite.
fn source(dir: &Base<'_>, value: Value, field: &str) -> Result<Value, String> {
    match value {
        Value::String(path) => {
            object::read(dir.files, &dir.join(path)).map_err(|e| format!("{field}: {e}"))
        }
        Value::Object(_) => Ok(value),
        other => Err(format!(
            "{field}: a file name or an inline object, not {other}"
        )),
    }
}

/// The suite files `paths` name: a file as given (it must be a suite), and under a directory
/// every `.yml`, `.yaml` and `.json` file that says `kind: TestSuite`, sorted, skipping hidden
/// directories, `node_modules` and `target`.
///
/// # Errors
///
/// A path that cannot be read, or a file given by name that is no suite.
pub fn find(files: &dyn Files, paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    for path in paths {
        if !walk(files, path, &mut found)? {
            if !is_suite(&files.read(path)?) {
                return Err(format!(
                    "{}: not a test suite (its top level has no `kind: {KIND}`)",
                    path.display()
                ));
            }
            found.push(path.clone());
        }
    }
    Ok(found)
}

/// Adds the suites under `dir`; false when `dir` is no directory.
fn walk(files: &dyn Files, dir: &Path, found: &mut Vec<PathBuf>) -> Result<bool, String> {
    let Some(mut entries) = files.list(dir)? else {
        return Ok(false);
    };
    entries.sort();
    for (name, is_dir) in entries {
        let path = dir.join(&name);
        if is_dir {
            if !name.starts_with('.') && name != "node_modules" && name != "target" {
                walk(files, &path, found)?;
            }
        } else if [".yml", ".yaml", ".json"].iter().any(|e| name.ends_with(e))
            && is_suite(&files.read(&path)?)
        {
            found.push(path);
        }
    }
    Ok(true)
}

/// The folder a suite's relative paths start from, and how its files are read.
struct Base<'a> {
    files: &'a dyn Files,
    dir: &'a Path,
}

impl Base<'_> {
    fn join(&self, path: impl AsRef<Path>) -> PathBuf {
        self.dir.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::is_suite;

    #[test]
    fn suites_say_so_in_yaml_or_json() {
        let cases = [
            ("apiVersion: x\nkind: TestSuite\n", true),
            ("kind: TestSuite   \n", true),
            ("{\n  \"kind\": \"TestSuite\",\n}", true),
            ("{\"kind\":\"TestSuite\"}", true),
            (
                r#"{"apiVersion":"taintguard.io/v1alpha1","kind":"TestSuite","cases":[]}"#,
                true,
            ),
            ("name: x\ncases: [\nkind: TestSuite\n", true),
            ("kind: Node\n", false),
            ("# kind: TestSuite\n", false),
            ("kind: TestSuites\n", false),
            ("metadata:\n  kind: TestSuite\n", false),
            (r#"{"spec":{"kind":"TestSuite"}}"#, false),
            ("- kind: TestSuite\n", false),
        ];
        for (text, want) in cases {
            assert_eq!(is_suite(text), want, "{text:?}");
        }
    }
}
