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
use std::rc::Rc;

use serde::Deserialize;
use serde_json::value::RawValue;
use taintguard::admission::describe_error;
use taintguard::json::{members, write_str, write_str_array, write_str_map, JsonStr, Raw};
#[cfg(not(target_arch = "wasm32"))]
use taintguard::policy::cached_settings;
#[cfg(target_arch = "wasm32")]
use taintguard::policy::cached_settings_kept_by;
use taintguard::policy::Half;
use taintguard::settings::SettingsError;
use taintguard::{Policy, Verdict};

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
        Entrypoint::Violation => violations::<P>(input),
        Entrypoint::Main => admission_review::<P>(input, data),
    }
}

/// What `entrypoint` answers when the host's input cannot even be read (see `abi`): the same
/// 400 a malformed input gets, naming `problem`.
pub fn refuse<P: Policy>(entrypoint: Entrypoint, problem: &str) -> String {
    let verdict = Verdict::reject(400, format!("{}: {problem}", P::NAME));
    match entrypoint {
        Entrypoint::Violation => violation_set::<P>(&verdict),
        Entrypoint::Main => review_set::<P>("", &verdict),
    }
}

/// The input of the gatekeeper entrypoint. Other members (Gatekeeper's `constraint`, …) are
/// skipped unread. The request is kept as a `RawValue` (absent or `null`: `None`): serde_json has
/// checked it, so the policy reads it in one pass ([`AdmissionRequest::parse_raw`]).
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
            describe_error(text, &e)
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

/// Settings built from `text`, or those built last from the same text. In the module they are
/// kept in the heap's kept region, which the hosts' heap resets spare (see `heap`).
fn settings<P: Policy>(text: &str) -> Result<Rc<P::Settings>, SettingsError> {
    #[cfg(target_arch = "wasm32")]
    return cached_settings_kept_by::<P>(text, crate::heap::keep);
    #[cfg(not(target_arch = "wasm32"))]
    cached_settings::<P>(text)
}

/// The validating half on a request serde_json has checked, and settings text.
fn validate<P: Policy>(request: &RawValue, settings_text: &str) -> Verdict {
    P::validate_checked_half(request, settings_text, settings::<P>, Half::Validating)
}

fn violations<P: Policy>(input: Option<&[u8]>) -> String {
    let verdict = match gatekeeper_input(input) {
        Ok((review, parameters)) => validate::<P>(review, parameters),
        Err(problem) => Verdict::reject(400, format!("{}: {problem}", P::NAME)),
    };
    violation_set::<P>(&verdict)
}

/// The gatekeeper result set for `verdict`: no violation, or one.
fn violation_set<P: Policy>(verdict: &Verdict) -> String {
    if verdict.accepted {
        return r#"[{"result":[]}]"#.to_owned();
    }
    let mut out = String::from(r#"[{"result":[{"msg":"#);
    write_str(&mut out, &rejection_message::<P>(verdict));
    out.push_str(r#","details":{"policy":"#);
    write_str(&mut out, P::NAME);
    if let Some(code) = verdict.code {
        out.push_str(&format!(r#","code":{code}"#));
    }
    out.push_str("}}]}]");
    out
}

/// A rejection always carries a message; a policy that forgot one still gets a readable `msg`
/// (Gatekeeper requires a string, Kubewarden would show an empty message).
fn rejection_message<P: Policy>(verdict: &Verdict) -> Cow<'_, str> {
    match verdict.message.as_deref() {
        Some(message) if !message.is_empty() => Cow::Borrowed(message),
        _ => Cow::Owned(format!("{}: request rejected", P::NAME)),
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
        out.push_str(value.get());
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

fn admission_review<P: Policy>(input: Option<&[u8]>, data: Option<&[u8]>) -> String {
    let (uid, verdict) = match opa_input(input) {
        Ok(request) => (
            uid(request.get()),
            match settings_from_data(data) {
                Ok(settings) => validate::<P>(request, &settings),
                Err(problem) => Verdict::reject(400, format!("{}: {problem}", P::NAME)),
            },
        ),
        Err(problem) => (
            String::new(),
            Verdict::reject(400, format!("{}: {problem}", P::NAME)),
        ),
    };
    review_set::<P>(&uid, &verdict)
}

/// The OPA-mode result set for `verdict`: an AdmissionReview answering the request `uid`.
fn review_set<P: Policy>(uid: &str, verdict: &Verdict) -> String {
    let mut out = String::from(
        r#"[{"result":{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"#,
    );
    write_str(&mut out, uid);
    out.push_str(if verdict.accepted {
        r#","allowed":true"#
    } else {
        r#","allowed":false"#
    });
    let message = if verdict.accepted {
        verdict.message.as_deref().map(Cow::Borrowed)
    } else {
        Some(rejection_message::<P>(verdict))
    };
    if message.is_some() || verdict.code.is_some() {
        out.push_str(r#","status":{"#);
        if let Some(message) = &message {
            out.push_str(r#""message":"#);
            write_str(&mut out, message);
        }
        if let Some(code) = verdict.code {
            if message.is_some() {
                out.push(',');
            }
            out.push_str(&format!(r#""code":{code}"#));
        }
        out.push('}');
    }
    if !verdict.warnings.is_empty() {
        out.push_str(r#","warnings":"#);
        write_str_array(&mut out, &verdict.warnings);
    }
    if !verdict.audit_annotations.is_empty() {
        out.push_str(r#","auditAnnotations":"#);
        write_str_map(&mut out, &verdict.audit_annotations);
    }
    out.push_str("}}}]");
    out
}

#[cfg(test)]
mod tests;
