//! Each policy's default settings written out in full, for `policies()`: `{}` means "every
//! default", which tells a user nothing about what they would be changing.
//!
//! Built from the core's constants where it has them; the test below reads each object back
//! with the core and checks it yields exactly the settings `{}` yields, so these cannot drift.

use serde_json::{json, Value};
use taintguard::taint_preservation::settings::{
    DEFAULT_ONE_SHOT_RECORD_ANNOTATION, DEFAULT_ONE_SHOT_TAINTS, DEFAULT_OWNER_ANNOTATION,
    DEFAULT_RBAC_API_GROUP, DEFAULT_RBAC_RESOURCE, DEFAULT_TAINT_OWNERS_ANNOTATION,
    DEFAULT_UNCORDON_VERB, DEFAULT_UNPROTECTED_TAINTS, DEFAULT_UNTAINT_VERB,
};
use taintguard::toleration_injection::settings::DEFAULT_ALIAS_GROUP;

pub fn taint_preservation() -> Value {
    let one_shot: Vec<Value> = DEFAULT_ONE_SHOT_TAINTS
        .iter()
        .map(|d| {
            json!({"key": d.key, "except": d.except, "onlyAtRegistration": d.only_at_registration})
        })
        .collect();
    json!({
        "mode": "restore",
        "protectedTaints": [{"key": "*"}],
        "unprotectedTaints": DEFAULT_UNPROTECTED_TAINTS,
        "oneShotTaints": one_shot,
        "oneShotRecordAnnotation": DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
        "permitted": {"people": true, "users": [], "groups": ["system:masters"], "serviceAccounts": []},
        "cordon": {"enabled": true, "ownerAnnotation": DEFAULT_OWNER_ANNOTATION},
        "taintOwners": {"enabled": true, "annotation": DEFAULT_TAINT_OWNERS_ANNOTATION},
        "rbac": {"enabled": false, "apiGroup": DEFAULT_RBAC_API_GROUP,
                 "resource": DEFAULT_RBAC_RESOURCE, "untaintVerb": DEFAULT_UNTAINT_VERB,
                 "uncordonVerb": DEFAULT_UNCORDON_VERB},
    })
}

pub fn toleration_injection() -> Value {
    json!({
        "rules": [],
        "aliases": {"enabled": true, "groups": [DEFAULT_ALIAS_GROUP]},
        "restrictions": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use taintguard::taint_preservation::TaintPreservation;
    use taintguard::toleration_injection::TolerationInjection;
    use taintguard::Policy;

    /// Settings types have no equality, but their Debug output covers every field.
    fn same_as_empty<P: Policy>(spelled_out: Value)
    where
        P::Settings: std::fmt::Debug,
    {
        let full =
            P::settings(&spelled_out.to_string()).expect("spelled-out defaults are valid settings");
        let empty = P::settings("{}").unwrap();
        assert_eq!(format!("{full:?}"), format!("{empty:?}"), "{}", P::NAME);
    }

    #[test]
    fn spelled_out_defaults_are_the_defaults() {
        same_as_empty::<TaintPreservation>(taint_preservation());
        same_as_empty::<TolerationInjection>(toleration_injection());
    }

    /// In full: every settings field outside a list that `settings-fields.yml` documents (the
    /// list `tools/settings-ui` checks against the settings readers) is spelled out. A field left
    /// out still reads as its default, which the test above cannot notice (`rbac` once was).
    #[test]
    fn every_documented_field_is_spelled_out() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (policy, spelled_out) in [
            ("taint-preservation", taint_preservation()),
            ("toleration-injection", toleration_injection()),
        ] {
            let fields = repo
                .join("policies")
                .join(policy)
                .join("settings-fields.yml");
            let source = taintguard_settings_ui::Source::read(&fields).unwrap();
            let paths: Vec<&str> = source
                .fields
                .iter()
                .map(|field| field.path.as_str())
                .filter(|path| !path.contains("[]"))
                .collect();
            assert!(paths.len() >= 3, "{}: no fields found", fields.display());
            for path in paths {
                let found = path
                    .split('.')
                    .try_fold(&spelled_out, |value, key| value.get(key));
                assert!(found.is_some(), "{policy}: `{path}` is not spelled out");
            }
        }
    }
}
