//! Whether a Pod is BestEffort, the one QoS question the plugin asks: every other Pod gets the
//! memory-pressure toleration (docs/pod-toleration-restriction.md, "What the plugin adds").

use taintguard::json::error::message;
use taintguard::json::{any_item_field, field, Object, Raw};

/// Whether a quantity's JSON is above zero: a string (`"500m"`, `"1Gi"`, `"0.5"`, `"1e3"`) with
/// a non-zero digit before its suffix and no minus sign, or a number above zero.
fn positive(quantity: &str) -> bool {
    let text = quantity.trim_matches('"').trim();
    let mantissa_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let mantissa = &text[..mantissa_end];
    !mantissa.starts_with('-') && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// The member `key` of the JSON object `object`, unless absent or `null`.
fn member<'a>(object: &'a str, key: &str) -> Result<Option<&'a str>, String> {
    field(object, key)
        .map(|raw| raw.value())
        .map_err(|e| format!("{key}: {}", message(&e)))
}

/// Any CPU or memory request or limit above zero in a `resources` object; other resources do
/// not count.
fn requests_cpu_or_memory(resources: &str) -> Result<bool, String> {
    for list in ["requests", "limits"] {
        let Some(list) = member(resources, list)? else {
            continue;
        };
        for name in ["cpu", "memory"] {
            if member(list, name)?.is_some_and(positive) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether the Pod is BestEffort: neither its pod-level resources nor any container or init
/// container requests or limits CPU or memory. Computed from the spec, as Kubernetes 1.20 does;
/// current Kubernetes first reads `status.qosClass`, which agrees for every stored Pod (the API
/// server writes it after admission, and a resize keeps the class), so this reads no status.
///
/// # Errors
///
/// A pod spec whose containers or resources are not the shapes Kubernetes writes.
pub fn best_effort(pod_spec: Option<&Object<'_>>) -> Result<bool, String> {
    let Some(spec) = pod_spec else {
        return Ok(true);
    };
    let in_spec = |key: &str| spec.get(key).map(|raw| raw.value());
    if let Some(resources) = in_spec("resources")? {
        if requests_cpu_or_memory(resources)? {
            return Ok(false);
        }
    }
    // The first container that asks answers: the others are not read.
    let asks = |resources: Raw<'_>| resources.value().map_or(Ok(false), requests_cpu_or_memory);
    for list in ["containers", "initContainers"] {
        let Some(array) = in_spec(list)? else {
            continue;
        };
        if any_item_field(array, "resources", asks).map_err(|e| format!("{list}: {e}"))? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_effort_is_no_cpu_or_memory_anywhere() {
        let cases = [
            (r#"{"containers":[{"name":"a"}]}"#, true),
            (r#"{"containers":[{"name":"a","resources":{}}]}"#, true),
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"500m"},"limits":{"cpu":"1"}}}]}"#,
                false,
            ),
            (
                r#"{"containers":[{"resources":{"limits":{"memory":"1Gi"}}}]}"#,
                false,
            ),
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"0","memory":"0Gi"}}}]}"#,
                true,
            ),
            (
                r#"{"containers":[{"resources":{"requests":{"ephemeral-storage":"1Gi","nvidia.com/gpu":"1"}}}]}"#,
                true,
            ),
            (
                r#"{"containers":[{}],"initContainers":[{"resources":{"requests":{"cpu":"0.1"}}}]}"#,
                false,
            ),
            (
                r#"{"containers":[{}],"resources":{"limits":{"memory":"64Mi"}}}"#,
                false,
            ),
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":1}}}]}"#,
                false,
            ),
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"-1"}}}]}"#,
                true,
            ),
            (
                r#"{"containers":[{"resources":{"requests":{"cpu":"1e3"}}}]}"#,
                false,
            ),
        ];
        let read = |spec| Object::parse(spec).unwrap();
        for (spec, want) in cases {
            assert_eq!(best_effort(Some(&read(spec))), Ok(want), "{spec}");
        }
        assert!(best_effort(Some(&read(r#"{"containers":7}"#))).is_err());
    }
}
