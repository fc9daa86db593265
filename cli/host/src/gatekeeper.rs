//! The gatekeeper builds (`dist/<policy>.gatekeeper.wasm`, OPA ABI) evaluated as Kubewarden's
//! gatekeeper execution mode evaluates them: a new instance per request, entrypoint 0 with input
//! `{"parameters": settings, "review": request}` and the data document Kubewarden passes, the
//! inventory of the policy's context-aware resources or `{}` (docs/abi.md).

use opa_wasm::wasmtime::{Config, Engine, Module, Store};
use opa_wasm::Runtime;
use serde_json::{json, Value};
use taintguard_suite::review::admission_request;

/// One violation the module reported: its message and the HTTP code its details carry.
pub use taintguard_suite::run::Violation;

/// A compiled gatekeeper module.
pub struct GatekeeperPolicy {
    engine: Engine,
    module: Module,
}

impl GatekeeperPolicy {
    /// Compiles the module.
    ///
    /// # Errors
    ///
    /// Bytes that are not a module wasmtime compiles.
    pub fn from_bytes(bytes: &[u8]) -> Result<GatekeeperPolicy, String> {
        let config = Config::new();
        let engine = Engine::new(&config).map_err(|e| format!("cannot start wasmtime: {e}"))?;
        let module =
            Module::new(&engine, bytes).map_err(|e| format!("cannot compile module: {e}"))?;
        Ok(GatekeeperPolicy { engine, module })
    }

    /// The violations entrypoint 0 reports for `request` (an AdmissionReview or a bare
    /// AdmissionRequest) under `settings`, with `data` as the data document; none means the
    /// request is allowed.
    ///
    /// # Errors
    ///
    /// The module failed to load or evaluate, or answered something other than the result set
    /// of one violation list.
    pub fn violations(
        &self,
        request: &Value,
        settings: &Value,
        data: &Value,
    ) -> Result<Vec<Violation>, String> {
        let input = json!({"parameters": settings, "review": admission_request(request)});
        let result_set: Value = futures_executor::block_on(async {
            let mut store = Store::new(&self.engine, ());
            let runtime = Runtime::new(&mut store, &self.module).await?;
            let entrypoint = runtime
                .default_entrypoint()
                .ok_or_else(|| opa_wasm::wasmtime::Error::msg("the module has no entrypoint 0"))?
                .to_owned();
            let policy = runtime.with_data(&mut store, data).await?;
            policy.evaluate(&mut store, &entrypoint, &input).await
        })
        .map_err(|e| format!("gatekeeper evaluation failed: {e:#}"))?;
        let list = match result_set.as_array().map(Vec::as_slice) {
            Some([one]) => one["result"].as_array(),
            _ => None,
        }
        .ok_or_else(|| format!("the module answered {result_set}, not one violation list"))?;
        list.iter()
            .map(|violation| {
                let message = violation["msg"]
                    .as_str()
                    .ok_or_else(|| format!("a violation without `msg`: {violation}"))?;
                Ok(Violation {
                    message: message.to_owned(),
                    code: violation["details"]["code"].as_u64(),
                })
            })
            .collect()
    }
}
