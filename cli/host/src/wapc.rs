//! The waPC host stack Kubewarden's policy-server 1.35 runs: `wapc` on `wasmtime-provider`, the
//! module compiled once and a fresh instance (with `wapc_init`) for every call.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use wapc::WapcHost;
use wasmtime_provider::{WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

/// A policy module compiled for the waPC host: each call gets a fresh instance of it.
pub struct WapcPolicy {
    pre: WasmtimeEngineProviderPre,
}

pub use taintguard_suite::review::admission_request;

impl WapcPolicy {
    /// Compiles the waPC module `bytes`.
    ///
    /// # Errors
    ///
    /// The module does not compile.
    pub fn from_bytes(bytes: &[u8]) -> Result<WapcPolicy, String> {
        let pre = WasmtimeEngineProviderBuilder::new()
            .module_bytes(bytes)
            .build_pre()
            .map_err(|e| format!("cannot compile module: {e}"))?;
        Ok(WapcPolicy { pre })
    }

    /// A new instance: `_start` / `wapc_init` run here, as policy-server does per request.
    pub fn instance(&self) -> Result<WapcHost, String> {
        self.instance_with(&ClusterAnswers::default())
    }

    /// A new instance whose host answers the `kubewarden/kubernetes/*` calls from `answers`.
    pub fn instance_with(&self, answers: &ClusterAnswers) -> Result<WapcHost, String> {
        let engine = self
            .pre
            .rehydrate(None)
            .map_err(|e| format!("cannot instantiate: {e}"))?;
        let answers = answers.clone();
        let callback = move |_id: u64, binding: &str, namespace: &str, op: &str, payload: &[u8]| {
            let call = HostCall {
                binding,
                namespace,
                operation: op,
                payload,
            };
            host_callback(&answers, &call)
        };
        WapcHost::new(Box::new(engine), Some(Box::new(callback)))
            .map_err(|e| format!("waPC init failed: {e}"))
    }

    /// `validate` as [`WapcPolicy::validate`] does, on a host answering from `answers`.
    pub fn validate_with(
        &self,
        request: &Value,
        settings: &Value,
        answers: &ClusterAnswers,
    ) -> Result<Value, String> {
        let request = admission_request(request);
        let payload = json!({"request": request, "settings": settings});
        let out = self
            .instance_with(answers)?
            .call("validate", payload.to_string().as_bytes())
            .map_err(|e| e.to_string())?;
        let response: Value = serde_json::from_slice(&out)
            .map_err(|e| format!("validate answered invalid JSON: {e}"))?;
        check_mutation(request, &response)?;
        Ok(response)
    }

    /// Calls `op` with `payload` on a fresh instance; the guest's answer or its error.
    pub fn call(&self, op: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.instance()?
            .call(op, payload)
            .map_err(|e| e.to_string())
    }

    /// `validate` on a fresh instance, with the payload policy-server builds, on a host that grants
    /// no cluster access. A mutated object that does not decode as its kind's Kubernetes type is
    /// an error: the API server would refuse the patched object.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Value, String> {
        self.validate_with(request, settings, &ClusterAnswers::default())
    }

    /// The policy's answer to `settings`: Kubewarden's settings-validation response (`valid`,
    /// `message`).
    ///
    /// # Errors
    ///
    /// The call failed, or its answer is not JSON.
    pub fn validate_settings(&self, settings: &Value) -> Result<Value, String> {
        let out = self.call("validate_settings", settings.to_string().as_bytes())?;
        serde_json::from_slice(&out)
            .map_err(|e| format!("validate_settings answered invalid JSON: {e}"))
    }
}

/// A mutated object that does not decode as its kind's Kubernetes type is an error: the API
/// server would refuse the patched object.
fn check_mutation(request: &Value, response: &Value) -> Result<(), String> {
    if let Some(mutated) = response.get("mutated_object").filter(|m| !m.is_null()) {
        let kind = request["kind"]["kind"].as_str().unwrap_or_default();
        taintguard_kinds::valid_object(kind, &mutated.to_string())
            .map_err(|e| format!("validate mutated the object into an invalid one: {e}"))?;
    }
    Ok(())
}

/// Recorded answers to Kubewarden's `kubernetes` host capabilities, as `kwctl run
/// --allow-context-aware` and policy-server give them: the answer's JSON, or the host's error
/// text. An operation without an answer is refused, as a host that does not grant it refuses.
/// Every call is kept in `asked` as `(operation, request JSON)`.
///
/// Or a kwctl session ([`ClusterAnswers::replaying`]): each call must be the next one the session
/// recorded, and gets its answer, as `kwctl run --replay-host-capabilities-interactions` does.
///
/// Or a function of the operation and its request ([`ClusterAnswers::responding`]), as a test
/// suite's cluster answers: the nodes a selector selects, the SubjectAccessReview for a subject.
///
/// Each of the three is a [`Responder`]; with none, every operation is refused.
#[derive(Clone, Default)]
pub struct ClusterAnswers {
    /// Every call the policy made, as `(operation, request JSON)`, in order; shared by the clones.
    pub asked: Arc<Mutex<Vec<(String, Value)>>>,
    responder: Option<Arc<Responder>>,
}

/// Answers a `kubewarden/kubernetes` operation's request.
pub type Responder = dyn Fn(&str, &Value) -> Result<Value, String> + Send + Sync;

/// One recorded host call of a kwctl session: the operation, its request as the module sends it,
/// the answer.
#[derive(Debug)]
struct Exchange {
    operation: &'static str,
    request: Value,
    answer: Result<Value, String>,
}

/// A `kubewarden/kubernetes` operation as a kwctl session names it.
struct SessionOperation {
    /// The request's `!Variant` tag, without the `!`.
    tag: &'static str,
    operation: &'static str,
    /// `(session field, module field)` where the session names the payload otherwise.
    renamed: Option<(&'static str, &'static str)>,
}

const SESSION_OPERATIONS: [SessionOperation; 4] = [
    SessionOperation {
        tag: "KubernetesCanI",
        operation: "can_i",
        renamed: Some(("request", "subject_access_review")),
    },
    SessionOperation {
        tag: "KubernetesListResourceAll",
        operation: "list_resources_all",
        renamed: None,
    },
    SessionOperation {
        tag: "KubernetesGetResource",
        operation: "get_resource",
        renamed: None,
    },
    SessionOperation {
        tag: "KubernetesListResourceNamespace",
        operation: "list_resources_by_namespace",
        renamed: None,
    },
];

/// Nulls dropped: a session writes every optional field, a module may leave them out.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_nulls).collect()),
        other => other,
    }
}

/// What policy-server answers a call the policy's configuration does not grant.
fn not_granted(operation: &str) -> String {
    format!("Policy has not been granted access to the 'kubernetes/{operation}' host capability")
}

impl ClusterAnswers {
    /// A host that answers each listed operation with its recorded answer and refuses the others,
    /// as a host that does not grant them refuses.
    pub fn answering(answers: Vec<(&'static str, Result<Value, String>)>) -> ClusterAnswers {
        ClusterAnswers::responding(move |operation, _| {
            match answers.iter().find(|(op, _)| *op == operation) {
                Some((_, answer)) => answer.clone(),
                None => Err(not_granted(operation)),
            }
        })
    }

    /// A host that answers each call with `responder(operation, request)`.
    pub fn responding(
        responder: impl Fn(&str, &Value) -> Result<Value, String> + Send + Sync + 'static,
    ) -> ClusterAnswers {
        ClusterAnswers {
            responder: Some(Arc::new(responder)),
            ..ClusterAnswers::default()
        }
    }

    /// A kwctl host-capabilities session (the YAML `kwctl run
    /// --record-host-capabilities-interactions` writes and `--replay-…` reads): a list of
    /// `{request: "!Variant\n…", response: {type: Success, payload} | {type: Error, message}}`.
    ///
    /// # Errors
    ///
    /// A session that is not such a list, or records an operation the modules never call; the
    /// message names the entry.
    pub fn replaying(session: &str) -> Result<ClusterAnswers, String> {
        let entries: Vec<serde_yaml::Value> =
            serde_yaml::from_str(session).map_err(|e| format!("not a kwctl session: {e}"))?;
        let exchanges = (entries.iter().enumerate())
            .map(|(i, entry)| recorded_exchange(entry).map_err(|e| format!("entry {i}: {e}")))
            .collect::<Result<VecDeque<_>, _>>()?;
        let exchanges = Mutex::new(exchanges);
        Ok(ClusterAnswers::responding(move |operation, request| {
            let next = exchanges.lock().expect("not poisoned").pop_front();
            match next {
                None => Err("Replay error: the list of recorded responses is empty".into()),
                Some(exchange)
                    if exchange.operation == operation
                        && exchange.request == without_nulls(request.clone()) =>
                {
                    exchange.answer
                }
                Some(exchange) => Err(format!(
                    "Replay error: unexpected request. Was expecting {} {}, got {operation} \
                     {request} instead",
                    exchange.operation, exchange.request
                )),
            }
        }))
    }

    /// The answer to a call, or the refusal of a host that grants no cluster access.
    fn answer(&self, operation: &str, request: &Value) -> Result<Value, String> {
        match &self.responder {
            Some(responder) => responder(operation, request),
            None => Err(not_granted(operation)),
        }
    }

    /// The calls the policy has made so far, as `(operation, request JSON)`, in order.
    pub fn asked(&self) -> Vec<(String, Value)> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

/// One entry of a kwctl session: its request, read from the YAML text under the operation's
/// `!Variant` tag (renamed as the modules name it, nulls dropped), and its recorded answer.
fn recorded_exchange(entry: &serde_yaml::Value) -> Result<Exchange, String> {
    let text = entry["request"]
        .as_str()
        .ok_or("`request` must be the request's YAML text")?;
    let serde_yaml::Value::Tagged(tagged) =
        serde_yaml::from_str(text).map_err(|e| e.to_string())?
    else {
        return Err("`request` must start with its operation's tag".into());
    };
    let tag = tagged.tag.to_string();
    let known = SESSION_OPERATIONS
        .iter()
        .find(|known| tag == format!("!{}", known.tag))
        .ok_or_else(|| format!("{tag} is not a kubernetes operation"))?;
    let mut request: Value = serde_json::to_value(&tagged.value).map_err(|e| e.to_string())?;
    if let (Some((from, to)), Some(map)) = (known.renamed, request.as_object_mut()) {
        if let Some(payload) = map.remove(from) {
            map.insert(to.to_owned(), payload);
        }
    }
    let response = &entry["response"];
    let answer = match response["type"].as_str() {
        Some("Success") => {
            let payload = response["payload"]
                .as_str()
                .ok_or("`response.payload` must be JSON text")?;
            Ok(serde_json::from_str(payload).map_err(|e| e.to_string())?)
        }
        Some("Error") => Err(response["message"].as_str().unwrap_or_default().to_owned()),
        _ => return Err("`response.type` must be Success or Error".into()),
    };
    Ok(Exchange {
        operation: known.operation,
        request: without_nulls(request),
        answer,
    })
}

/// A guest's host call, as waPC's host callback receives it (after the instance's id).
struct HostCall<'a> {
    binding: &'a str,
    namespace: &'a str,
    operation: &'a str,
    payload: &'a [u8],
}

/// Host capabilities: logging is accepted like policy-server does; `kubernetes/*` calls get the
/// recorded answers; anything else is refused.
fn host_callback(
    answers: &ClusterAnswers,
    call: &HostCall<'_>,
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    let HostCall {
        binding,
        namespace,
        operation,
        payload,
    } = *call;
    match (binding, namespace) {
        ("kubewarden", "tracing") if operation == "log" => Ok(Vec::new()),
        ("kubewarden", "kubernetes") => {
            let request: Value = serde_json::from_slice(payload)
                .map_err(|e| format!("kubernetes/{operation}: the request is not JSON: {e}"))?;
            answers
                .asked
                .lock()
                .expect("not poisoned")
                .push((operation.to_owned(), request.clone()));
            match answers.answer(operation, &request) {
                Ok(answer) => Ok(answer.to_string().into_bytes()),
                Err(error) => Err(error.into()),
            }
        }
        _ => Err(format!("unknown capability {binding}/{namespace}/{operation}").into()),
    }
}

/// The AdmissionResponse policy-server would send for a `ValidationResponse`: the mutated object
/// becomes an RFC 6902 patch against the request's object.
pub fn admission_response(request: &Value, response: &Value) -> Value {
    let request = admission_request(request);
    let mut out = json!({
        "uid": request.get("uid").cloned().unwrap_or(Value::Null),
        "allowed": response["accepted"],
    });
    if response.get("message").is_some_and(|m| !m.is_null())
        || response.get("code").is_some_and(|c| !c.is_null())
    {
        out["status"] = json!({"message": response.get("message"), "code": response.get("code")});
    }
    if let Some(mutated) = response.get("mutated_object").filter(|m| !m.is_null()) {
        let patch = json_patch::diff(&request["object"], mutated);
        if !patch.0.is_empty() {
            out["patchType"] = json!("JSONPatch");
            out["patch"] = serde_json::to_value(&patch).expect("patches serialise");
        }
    }
    out["warnings"] = response.get("warnings").cloned().unwrap_or(Value::Null);
    out["auditAnnotations"] = response
        .get("audit_annotations")
        .cloned()
        .unwrap_or(Value::Null);
    out
}
