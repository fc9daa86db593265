//! The benchmark baseline for the gatekeeper artifacts: the minimal gatekeeper policy. Its
//! `policy/violation` parses the whole input (`{"parameters": …, "review": …}`) into
//! `serde_json::Value`s, as a policy written the usual way would, and reports no violation
//! (`[{"result": []}]`). Built by `./build.sh bench` exactly like `dist/*.gatekeeper.wasm`
//! (same `OPA_CARGO` flags, wasm32-unknown-unknown, release profile, imported memory, and the
//! same post-link finishing, applied by the harness).
//!
//! It runs on our own OPA-ABI adapter (`abi/opa`), not on a separate hand-written ABI, for the
//! same reason the waPC baseline uses wapc-guest: every gatekeeper artifact pays the adapter's
//! fixed costs (the bump heap, `opa_json_parse`'s validation of the input, splitting the input
//! envelope, writing the result set), so a baseline that shares them makes the ratio measure the
//! policy logic (settings, request views, rules) and nothing else. A leaner ABI in the baseline
//! would fold the adapter's costs into the ratio, where no policy change could remove them.
//! The adapter hands over `review` and `parameters` as the JSON text they are in the input; the
//! runner views the review as it does for every policy, and the baseline parses the settings and
//! the object and old object into `Value`s, which is nearly the whole input.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use serde::Serialize;
use taintguard::admission::AdmissionRequest;
use taintguard::policy::{Half, Policy};
use taintguard::settings::{At, PolicySettings, ReadSettings, Reader, SettingsError};
use taintguard::{Cluster, Verdict};

/// A [`Policy`] whose work is its own parse into `Value`s: the settings, and the object and old
/// object of the request the runner has viewed (the runner's borrowed view of the request
/// envelope is every policy's cost, so the baseline shares it).
pub struct Baseline;

/// Settings read as any JSON value, as a policy written the usual way would parse them.
#[derive(Default, Serialize)]
pub struct AnySettings(serde_json::Value);

impl ReadSettings for AnySettings {
    fn read(reader: &mut Reader<'_>, at: At<'_>) -> Result<Self, SettingsError> {
        serde_json::Value::read(reader, at).map(AnySettings)
    }
}

impl PolicySettings for AnySettings {}

impl Policy for Baseline {
    const NAME: &'static str = "baseline";
    type Settings = AnySettings;

    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &AnySettings,
        _: Half,
        _: &dyn Cluster,
    ) -> Verdict {
        // The core reads each object as its members; the baseline parses the whole of it.
        let parse = |object: &Option<taintguard::json::Object<'_>>| {
            object
                .as_ref()
                .map(|o| serde_json::from_str::<serde_json::Value>(o.text()))
        };
        let parsed = (parse(&request.object), parse(&request.old_object));
        // Looking at what was parsed keeps the parse from being optimised away.
        match parsed {
            (Some(Err(e)), _) | (_, Some(Err(e))) => Verdict::reject(400, e.to_string()),
            _ if settings.0.is_array() => Verdict::reject(400, "settings are a list"),
            _ => Verdict::accept(),
        }
    }
}

#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
taintguard_opa::policy!(Baseline);

#[cfg(test)]
mod tests {
    use super::Baseline;
    use taintguard_opa::{evaluate, Entrypoint};

    #[test]
    fn an_admission_request_gets_the_empty_violation_set() {
        let input =
            br#"{"parameters": {"mode": "deny"}, "review": {"uid": "1", "operation": "CREATE",
            "kind": {"kind": "Node"}, "userInfo": {"username": "alice"},
            "object": {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}}}"#;
        let answer = evaluate::<Baseline>(Entrypoint::Violation, Some(input), None);
        assert_eq!(answer, r#"[{"result":[]}]"#);
    }

    /// The baseline reads any settings, which the policies would refuse.
    #[test]
    fn the_adapter_runs_the_baseline_parse() {
        let input =
            br#"{"parameters": {"any": ["thing"]}, "review": {"uid": "1", "operation": "CREATE",
            "kind": {"kind": "Node"}, "userInfo": {}, "object": {"spec": {}}}}"#;
        let answer = evaluate::<Baseline>(Entrypoint::Violation, Some(input), None);
        assert_eq!(answer, r#"[{"result":[]}]"#);
    }

    #[test]
    fn input_that_is_no_request_is_a_violation() {
        let answer = evaluate::<Baseline>(Entrypoint::Violation, Some(br#"{"review": 1}"#), None);
        let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(value[0]["result"][0]["details"]["code"], 400, "{answer}");
    }
}
