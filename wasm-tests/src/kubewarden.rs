//! The waPC host stack Kubewarden's policy-server runs: `wapc` on `wasmtime-provider`, the module
//! compiled once and a fresh instance (with `wapc_init`) for every call.

use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use wapc::WapcHost;
use wasmtime_provider::{WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

pub struct WapcPolicy {
    pre: WasmtimeEngineProviderPre,
}

/// The request inside an AdmissionReview, or the value itself when it is a bare AdmissionRequest
/// (kwctl accepts both).
pub fn admission_request(value: &Value) -> &Value {
    if value.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
        &value["request"]
    } else {
        value
    }
}

impl WapcPolicy {
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
            host_callback(&answers, binding, namespace, op, payload)
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

    /// `validate` on a fresh instance, with the payload policy-server builds. A mutated object
    /// that does not decode as its kind's Kubernetes type is an error: the API server would
    /// refuse the patched object.
    pub fn validate(&self, request: &Value, settings: &Value) -> Result<Value, String> {
        let request = admission_request(request);
        let payload = json!({"request": request, "settings": settings});
        let out = self.call("validate", payload.to_string().as_bytes())?;
        let response: Value = serde_json::from_slice(&out)
            .map_err(|e| format!("validate answered invalid JSON: {e}"))?;
        check_mutation(request, &response)?;
        Ok(response)
    }

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
        taintguard_testkit::valid_object(kind, &mutated.to_string())
            .map_err(|e| format!("validate mutated the object into an invalid one: {e}"))?;
    }
    Ok(())
}

/// Recorded answers to Kubewarden's `kubernetes` host capabilities, as `kwctl run
/// --allow-context-aware` and policy-server give them: the answer's JSON, or the host's error
/// text. An operation without an answer is refused, as a host that does not grant it refuses.
/// Every call is kept in `asked` as `(operation, request JSON)`.
#[derive(Clone, Default)]
pub struct ClusterAnswers {
    pub answers: Vec<(&'static str, Result<Value, String>)>,
    pub asked: Arc<Mutex<Vec<(String, Value)>>>,
}

impl ClusterAnswers {
    pub fn answering(answers: Vec<(&'static str, Result<Value, String>)>) -> ClusterAnswers {
        ClusterAnswers {
            answers,
            ..ClusterAnswers::default()
        }
    }

    pub fn asked(&self) -> Vec<(String, Value)> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

/// Host capabilities: logging is accepted like policy-server does; `kubernetes/*` calls get the
/// recorded answers; anything else is refused.
fn host_callback(
    answers: &ClusterAnswers,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    match (binding, namespace) {
        ("kubewarden", "tracing") if operation == "log" => Ok(Vec::new()),
        ("kubewarden", "kubernetes") => {
            let request: Value = serde_json::from_slice(payload)
                .map_err(|e| format!("kubernetes/{operation}: the request is not JSON: {e}"))?;
            answers
                .asked
                .lock()
                .expect("not poisoned")
                .push((operation.to_owned(), request));
            match answers.answers.iter().find(|(op, _)| *op == operation) {
                Some((_, Ok(answer))) => Ok(answer.to_string().into_bytes()),
                Some((_, Err(error))) => Err(error.clone().into()),
                None => Err(format!(
                    "Policy has not been granted access to the 'kubernetes/{operation}' host capability"
                )
                .into()),
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
