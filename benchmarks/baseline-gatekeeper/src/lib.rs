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
//! baseline parses both, which is the whole input but for the two-key envelope the adapter has
//! already walked.

use taintguard::policy::{Half, PolicyExt};
use taintguard::settings::SettingsError;
use taintguard::{Cluster, Verdict};

/// Not a [`taintguard::Policy`]: it implements what the adapter calls directly, so that its
/// work is its own parse into `Value`s and not the policies' readers.
pub struct Baseline;

impl PolicyExt for Baseline {
    const NAME: &'static str = "baseline";

    fn validate_settings(_: &str) -> Result<(), SettingsError> {
        Ok(())
    }

    fn try_validate(
        request: &str,
        settings: &str,
        _: Half,
        _: &dyn Cluster,
    ) -> Result<Verdict, String> {
        let parsed = (
            serde_json::from_str::<serde_json::Value>(request),
            serde_json::from_str::<serde_json::Value>(settings),
        );
        // Looking at one field keeps the parse from being optimised away and mirrors a policy's
        // first look; a request that is not even JSON is the one thing the baseline refuses.
        match parsed {
            (Ok(request), Ok(_)) if request.get("operation").is_some() => Ok(Verdict::accept()),
            _ => Err("baseline: the review is not an AdmissionRequest".to_owned()),
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
            "object": {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}}}"#;
        let answer = evaluate::<Baseline>(Entrypoint::Violation, Some(input), None);
        assert_eq!(answer, r#"[{"result":[]}]"#);
    }

    /// The baseline's work is its own parse into `Value`s, not the policies' request reader
    /// (which would refuse a review without `userInfo`).
    #[test]
    fn the_adapter_runs_the_baseline_parse() {
        let input = br#"{"parameters": {"any": ["thing"]}, "review": {"operation": "CREATE"}}"#;
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
