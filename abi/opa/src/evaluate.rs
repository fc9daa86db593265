//! What the module's entrypoints answer, as JSON text: a Rego *result set*
//! (`[{"result": <value>}]`), written without touching wasm memory so it is tested on the host.
//!
//! Both entrypoints run the validating half of the policy ([`Half::Validating`]): engines that
//! load this module cannot apply a mutation, so whatever the mutating half would repair is
//! reported as a violation instead.
//!
//! Nothing here fails open. Kubewarden's gatekeeper mode *allows* a request whose result does not
//! deserialise as `[{"result": [{"msg": "<string>"}, …]}]`, so every answer of
//! [`Entrypoint::Violation`] has that shape, and missing or malformed input becomes a violation
//! that says what is wrong.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use taintguard::cluster::Cluster;
use taintguard::json::{members, write_str, JsonStr, Raw};
use taintguard::policy::Half;
use taintguard::verdict::serialize_pairs;
use taintguard::{run, Decision, NoCluster, Policy, Verdict};

use crate::inventory::{self, Inventory};

/// The module's entrypoints. Kubewarden always runs id 0, whatever the mode; the input's shape
/// tells the modes apart, so the OPA-mode entrypoint is only reachable by name (the JS SDK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entrypoint {
    /// Gatekeeper: input `{"review": AdmissionRequest, "parameters": settings}`, result the
    /// list of violations `[{"msg": …, "details": {…}}]`, empty when the request is allowed.
    Violation = 0,
    /// OPA: input `{"request": AdmissionRequest}`, settings as data, result an AdmissionReview
    /// whose `response` Kubewarden reads.
    Main = 1,
}

/// `entrypoints()`: names as Kubewarden's own Rego builds name them (`-e policy/violation`,
/// `-e policy/main`). Hosts need integer values.
pub const ENTRYPOINTS_JSON: &str = r#"{"policy/violation":0,"policy/main":1}"#;

impl Entrypoint {
    /// The entrypoint with the id `entrypoints()` gives it; `None` for an id the module does not
    /// export.
    pub fn from_id(id: i32) -> Option<Entrypoint> {
        match id {
            0 => Some(Entrypoint::Violation),
            1 => Some(Entrypoint::Main),
            _ => None,
        }
    }
}

/// Evaluates `entrypoint`. `input` and `data` are the JSON bytes the host gave (`None` when it
/// gave none); the answer is the result set as JSON text.
pub fn evaluate<P: Policy>(
    entrypoint: Entrypoint,
    input: Option<&[u8]>,
    data: Option<&[u8]>,
) -> String {
    match entrypoint {
        Entrypoint::Violation => violations::<P>(input, data),
        Entrypoint::Main => admission_review::<P>(input, data),
    }
}

/// What `entrypoint` answers when the host's input cannot even be read (see `abi`): the same
/// 400 a malformed input gets, naming `problem`.
pub fn refuse<P: Policy>(entrypoint: Entrypoint, problem: &str) -> String {
    let verdict = Verdict::reject(400, format!("{}: {problem}", P::NAME));
    match entrypoint {
        Entrypoint::Violation => violation_set::<P>(&verdict),
        Entrypoint::Main => review_set("", &verdict),
    }
}

/// The input of the gatekeeper entrypoint. Other members (Gatekeeper's `constraint`, …) are
/// skipped unread. The request is kept as a `RawValue` (absent or `null`: `None`) for the policy
/// to read.
#[derive(Deserialize)]
struct GatekeeperInput<'a> {
    #[serde(borrow, default)]
    review: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parameters: Raw<'a>,
}

/// The input of the OPA entrypoint.
#[derive(Deserialize)]
struct OpaInput<'a> {
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
}

/// Input bytes as text; `what` describes the expected shape for the error message.
fn input_text<'a>(input: Option<&'a [u8]>, what: &str) -> Result<&'a str, String> {
    let bytes = input.ok_or_else(|| format!("no input; expected {what}"))?;
    std::str::from_utf8(bytes).map_err(|e| format!("input is not UTF-8 text: {e}"))
}

/// Parses the input object. serde's derived structs also accept a JSON array (fields by
/// position), which would turn `[1, 2]` into a confusing settings error: only objects pass.
fn parse_input<'a, T: Deserialize<'a>>(text: &'a str, what: &str) -> Result<T, String> {
    if !text.trim_start().starts_with('{') {
        let start: String = text.trim_start().chars().take(16).collect();
        return Err(format!(
            "input must be a JSON object, not `{start}`; expected {what}"
        ));
    }
    serde_json::from_str(text).map_err(|e| {
        format!(
            "malformed input ({}); expected {what}",
            taintguard::json::error::describe(text, &e)
        )
    })
}

const GATEKEEPER_SHAPE: &str = r#"{"review": <AdmissionRequest>, "parameters": <settings>}"#;
const OPA_SHAPE: &str = r#"{"request": <AdmissionRequest>} with the settings as data"#;

/// `(review, parameters)`; absent or `null` parameters mean every default, as Kubewarden does
/// for absent settings.
fn gatekeeper_input(input: Option<&[u8]>) -> Result<(&RawValue, &str), String> {
    let text = input_text(input, GATEKEEPER_SHAPE)?;
    let input: GatekeeperInput = parse_input(text, GATEKEEPER_SHAPE)?;
    let review = input
        .review
        .ok_or_else(|| format!("input has no `review`; expected {GATEKEEPER_SHAPE}"))?;
    Ok((review, input.parameters.value().unwrap_or("{}")))
}

/// The validating half on a request serde_json has checked, and settings text; the cluster's
/// objects as `cluster` holds them.
fn validate<P: Policy>(request: &RawValue, settings_text: &str, cluster: &dyn Cluster) -> Verdict {
    run::<P>(request.get(), settings_text, Half::Validating, cluster)
}

/// OPA mode's data is the settings (Kubewarden adds its own `kubernetes` inventory form, which
/// this build does not read): no question is answered, so a setting that needs the cluster's
/// objects to refuse (a Pod's Namespace) refuses there.
const NO_INVENTORY: NoCluster = NoCluster(
    "the OPA entrypoint (policy/main) reads no inventory: run the policy/violation entrypoint \
     with the cluster's objects in data.inventory, as Kubewarden's gatekeeper mode passes those \
     of the policy's contextAwareResources and Gatekeeper those its `Config` syncs \
     (docs/context.md)",
);

/// A Rego result set of one result: `[{"result": <result>}]`.
fn result_set(result: impl Serialize) -> String {
    #[derive(Serialize)]
    struct Result<T> {
        result: T,
    }
    // Cannot fail: every map key is a string.
    serde_json::to_string(&[Result { result }]).expect("results serialise")
}

/// One Gatekeeper violation.
#[derive(Serialize)]
struct Violation<'a> {
    msg: &'a str,
    details: ViolationDetails<'a>,
}

#[derive(Serialize)]
struct ViolationDetails<'a> {
    policy: &'a str,
    code: u16,
}

/// The violations of the gatekeeper input, the cluster's objects read from the data document's
/// inventory (`data` not UTF-8 holds none).
///
/// A policy whose `Asks` read no objects is not handed the inventory, only its one answer to
/// anything else ([`inventory::NO_ANSWERS`]): its module then carries none of the inventory's
/// reader, which its engines' dispatch kept in otherwise (18 KB of taint-preservation's build;
/// README, the modules' sizes).
fn violations<P: Policy>(input: Option<&[u8]>, data: Option<&[u8]>) -> String {
    let verdict = match gatekeeper_input(input) {
        Ok((review, parameters)) if const { P::ASKS.reads.is_empty() } => {
            validate::<P>(review, parameters, &inventory::NO_ANSWERS)
        }
        Ok((review, parameters)) => {
            let inventory = Inventory::from_data(data.and_then(|d| std::str::from_utf8(d).ok()));
            validate::<P>(review, parameters, &inventory)
        }
        Err(problem) => Verdict::reject(400, format!("{}: {problem}", P::NAME)),
    };
    violation_set::<P>(&verdict)
}

/// The gatekeeper result set for `verdict`: no violation, or one.
fn violation_set<P: Policy>(verdict: &Verdict) -> String {
    match &verdict.decision {
        Decision::Reject { code, message } => result_set([Violation {
            msg: message,
            details: ViolationDetails {
                policy: P::NAME,
                code: *code,
            },
        }]),
        Decision::Accept | Decision::Mutate { .. } => result_set([(); 0]),
    }
}

/// The settings as JSON text: the data document without `kubernetes`, which Kubewarden fills with
/// the cluster inventory of context-aware policies (overwriting any user key of that name).
fn settings_from_data(data: Option<&[u8]>) -> Result<Cow<'_, str>, String> {
    let Some(bytes) = data else {
        return Ok(Cow::Borrowed("{}"));
    };
    let text = std::str::from_utf8(bytes).map_err(|e| format!("data is not UTF-8 text: {e}"))?;
    let fields =
        members(text).map_err(|e| format!("data (the settings) must be a JSON object: {e}"))?;
    if !fields.iter().any(|(key, _)| key.as_str() == "kubernetes") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::from("{");
    for (key, value) in fields.iter().filter(|(k, _)| k.as_str() != "kubernetes") {
        if out.len() > 1 {
            out.push(',');
        }
        write_str(&mut out, key.as_str());
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    Ok(Cow::Owned(out))
}

/// The request's `uid`, echoed in the response as the API server requires (Kubewarden
/// overwrites it anyway); empty when the request has none.
fn uid(request: &str) -> String {
    #[derive(Deserialize)]
    struct Uid<'a> {
        #[serde(borrow, default)]
        uid: Option<JsonStr<'a>>,
    }
    serde_json::from_str::<Uid>(request)
        .ok()
        .and_then(|u| u.uid)
        .map(|u| u.as_str().to_owned())
        .unwrap_or_default()
}

fn opa_input(input: Option<&[u8]>) -> Result<&RawValue, String> {
    let text = input_text(input, OPA_SHAPE)?;
    let input: OpaInput = parse_input(text, OPA_SHAPE)?;
    input
        .request
        .ok_or_else(|| format!("input has no `request`; expected {OPA_SHAPE}"))
}

/// The `AdmissionReview` the OPA entrypoint answers, whose `response` Kubewarden reads.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionReview<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: AdmissionResponse<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionResponse<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Status<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    warnings: &'a [String],
    #[serde(
        skip_serializing_if = "<[_]>::is_empty",
        serialize_with = "serialize_pairs"
    )]
    audit_annotations: &'a [(String, String)],
}

#[derive(Serialize)]
struct Status<'a> {
    message: &'a str,
    code: u16,
}

fn admission_review<P: Policy>(input: Option<&[u8]>, data: Option<&[u8]>) -> String {
    let (uid, verdict) = match opa_input(input) {
        Ok(request) => (
            uid(request.get()),
            match settings_from_data(data) {
                Ok(settings) => validate::<P>(request, &settings, &NO_INVENTORY),
                Err(problem) => Verdict::reject(400, format!("{}: {problem}", P::NAME)),
            },
        ),
        Err(problem) => (
            String::new(),
            Verdict::reject(400, format!("{}: {problem}", P::NAME)),
        ),
    };
    review_set(&uid, &verdict)
}

/// The OPA-mode result set for `verdict`: an AdmissionReview answering the request `uid`.
fn review_set(uid: &str, verdict: &Verdict) -> String {
    let status = match &verdict.decision {
        Decision::Reject { code, message } => Some(Status {
            message,
            code: *code,
        }),
        Decision::Accept | Decision::Mutate { .. } => None,
    };
    result_set(AdmissionReview {
        api_version: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        response: AdmissionResponse {
            uid,
            allowed: verdict.accepted(),
            status,
            warnings: &verdict.warnings,
            audit_annotations: &verdict.audit_annotations,
        },
    })
}

#[cfg(test)]
mod tests;
