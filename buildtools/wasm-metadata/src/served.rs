//! Which API group versions current Kubernetes no longer serves.
//!
//! Kubewarden's audit scanner maps every group, version and resource of a policy's rules through
//! the cluster's REST mapper and skips the whole policy, as errored, when one of them is unknown;
//! the API server accepts a webhook rule naming anything. So a rule naming a removed API costs
//! nothing at admission and silently turns the background audit off (docs/admission.md). Shipped
//! rules name only what current Kubernetes serves; a cluster older than that adds its own rule.

use serde_json::Value;

/// `(group, version, the Kubernetes release that removed it)`: every group version of the
/// upstream deprecation guide that no release serves any more (each of these served nothing else
/// by then). The core group's `v1` and every GA version are current.
const REMOVED: [(&str, &str, &str); 25] = [
    ("apps", "v1beta1", "1.16"),
    ("apps", "v1beta2", "1.16"),
    ("extensions", "v1beta1", "1.22"),
    ("admissionregistration.k8s.io", "v1beta1", "1.22"),
    ("apiextensions.k8s.io", "v1beta1", "1.22"),
    ("apiregistration.k8s.io", "v1beta1", "1.22"),
    ("authentication.k8s.io", "v1beta1", "1.22"),
    ("authorization.k8s.io", "v1beta1", "1.22"),
    ("certificates.k8s.io", "v1beta1", "1.22"),
    ("coordination.k8s.io", "v1beta1", "1.22"),
    ("networking.k8s.io", "v1beta1", "1.22"),
    ("rbac.authorization.k8s.io", "v1beta1", "1.22"),
    ("scheduling.k8s.io", "v1beta1", "1.22"),
    ("batch", "v1beta1", "1.25"),
    ("batch", "v2alpha1", "1.21"),
    ("discovery.k8s.io", "v1beta1", "1.25"),
    ("events.k8s.io", "v1beta1", "1.25"),
    ("autoscaling", "v2beta1", "1.25"),
    ("node.k8s.io", "v1beta1", "1.25"),
    ("policy", "v1beta1", "1.25"),
    ("autoscaling", "v2beta2", "1.26"),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "1.26"),
    ("storage.k8s.io", "v1beta1", "1.27"),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "1.29"),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "1.32"),
];

/// The release that removed `group/version`, if one did.
pub fn removed_in(group: &str, version: &str) -> Option<&'static str> {
    REMOVED
        .iter()
        .find(|(g, v, _)| *g == group && *v == version)
        .map(|(_, _, release)| *release)
}

/// Checks admission rules (`rules` of `metadata.yml` or of a policy resource's spec) name no
/// removed API.
///
/// # Errors
///
/// The first rule naming a removed group version, as `rules[i]: group/version ...`.
///
/// # Examples
///
/// ```
/// use serde_json::json;
/// use taintguard_wasm_metadata::served::check_rules;
///
/// let current = json!([{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs"]}]);
/// assert!(check_rules(current.as_array().unwrap()).is_ok());
/// let removed = json!([{"apiGroups": ["batch"], "apiVersions": ["v1", "v1beta1"], "resources": ["cronjobs"]}]);
/// let err = check_rules(removed.as_array().unwrap()).unwrap_err();
/// assert!(err.starts_with("rules[0]: batch/v1beta1 is served by no Kubernetes since 1.25"));
/// ```
pub fn check_rules(rules: &[Value]) -> Result<(), String> {
    let strings = |rule: &Value, key: &str| -> Vec<String> {
        rule[key]
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    for (i, rule) in rules.iter().enumerate() {
        for group in strings(rule, "apiGroups") {
            for version in strings(rule, "apiVersions") {
                if let Some(release) = removed_in(&group, &version) {
                    let shown = if group.is_empty() {
                        version.clone()
                    } else {
                        format!("{group}/{version}")
                    };
                    return Err(format!(
                        "rules[{i}]: {shown} is served by no Kubernetes since {release}, and \
                         Kubewarden's audit scanner skips a policy whose rules name an API the \
                         cluster does not serve; name only current versions (docs/admission.md)"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removed_and_current_versions() {
        let cases = [
            ("batch", "v1beta1", Some("1.25")),
            ("batch", "v1", None),
            ("apps", "v1beta2", Some("1.16")),
            ("apps", "v1", None),
            ("", "v1", None),
            ("policy", "v1", None),
            ("example.com", "v1beta1", None),
            ("*", "*", None),
        ];
        for (group, version, want) in cases {
            assert_eq!(removed_in(group, version), want, "{group}/{version}");
        }
    }

    #[test]
    fn names_the_rule() {
        let rules = json!([
            {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]},
            {"apiGroups": ["apps", "extensions"], "apiVersions": ["v1beta1"], "resources": ["deployments"]}
        ]);
        let err = check_rules(rules.as_array().unwrap()).unwrap_err();
        assert!(err.starts_with("rules[1]: apps/v1beta1 "), "{err}");
    }
}
