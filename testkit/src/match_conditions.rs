//! A webhook's `matchConditions` evaluated with cel-rust, as the API server (Kubernetes 1.28 and
//! later) evaluates them before it calls the webhook: what the policies' soundness tests use
//! (docs/availability.md).

use serde_json::Value;
use taintguard::{MatchCondition, Verdict};

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

/// Whether a verdict does anything but accept the request untouched and silently: what no
/// condition may keep from the policy.
pub fn acts(verdict: &Verdict) -> bool {
    !verdict.accepted()
        || verdict.mutated_object().is_some()
        || !verdict.warnings.is_empty()
        || !verdict.audit_annotations.is_empty()
}
