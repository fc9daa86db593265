//! Each policy's default settings written out in full, for `policies()`: `{}` means "every
//! default", which tells a user nothing about what they would be changing.
//!
//! They are the settings type's own `Default`, serialised, so they cannot drift from what the
//! policy reads `{}` as; the tests below check that they read back as `{}` does and that every
//! documented field is in them.

use serde_json::Value;
use taintguard::Policy;

pub fn defaults<P: Policy>() -> Value {
    serde_json::to_value(P::Settings::default()).expect("settings serialise to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use taint_preservation::TaintPreservation;
    use toleration_injection::TolerationInjection;

    /// Read back, the spelled-out defaults are the settings `{}` reads as.
    fn same_as_empty<P: Policy>()
    where
        P::Settings: PartialEq + std::fmt::Debug,
    {
        let full = taintguard::read_settings::<P>(&defaults::<P>().to_string())
            .expect("spelled-out defaults are valid settings");
        assert_eq!(
            full,
            taintguard::read_settings::<P>("{}").unwrap(),
            "{}",
            P::NAME
        );
    }

    #[test]
    fn spelled_out_defaults_are_the_defaults() {
        same_as_empty::<TaintPreservation>();
        same_as_empty::<TolerationInjection>();
    }

    /// In full: every settings field outside a list that `settings-fields.yml` documents (the
    /// list `buildtools/settings-ui` checks against the settings readers) is spelled out. A field left
    /// out still reads as its default, which the test above cannot notice (`rbac` once was).
    #[test]
    fn every_documented_field_is_spelled_out() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (policy, spelled_out) in [
            ("taint-preservation", defaults::<TaintPreservation>()),
            ("toleration-injection", defaults::<TolerationInjection>()),
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
