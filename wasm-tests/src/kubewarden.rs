//! The waPC host stack Kubewarden's policy-server runs: `wapc` on `wasmtime-provider`, the module
//! compiled once and a fresh instance (with `wapc_init`) for every call.

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
        let engine = self
            .pre
            .rehydrate(None)
            .map_err(|e| format!("cannot instantiate: {e}"))?;
        WapcHost::new(Box::new(engine), Some(Box::new(host_callback)))
            .map_err(|e| format!("waPC init failed: {e}"))
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
        if let Some(mutated) = response.get("mutated_object").filter(|m| !m.is_null()) {
            let kind = request["kind"]["kind"].as_str().unwrap_or_default();
            taintguard_testkit::valid_object(kind, &mutated.to_string())
                .map_err(|e| format!("validate mutated the object into an invalid one: {e}"))?;
        }
        Ok(response)
    }

    pub fn validate_settings(&self, settings: &Value) -> Result<Value, String> {
        let out = self.call("validate_settings", settings.to_string().as_bytes())?;
        serde_json::from_slice(&out)
            .map_err(|e| format!("validate_settings answered invalid JSON: {e}"))
    }
}

/// Host capabilities: logging is accepted like policy-server does; nothing else is offered.
fn host_callback(
    _id: u64,
    binding: &str,
    namespace: &str,
    operation: &str,
    _payload: &[u8],
) -> Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>> {
    match (binding, namespace, operation) {
        ("kubewarden", "tracing", "log") => Ok(Vec::new()),
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
