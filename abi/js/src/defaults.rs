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
    use crate::registry::POLICIES;

    /// Read back, the spelled-out defaults are the settings `{}` reads as.
    #[test]
    fn spelled_out_defaults_are_the_defaults() {
        for entry in POLICIES {
            let full = (entry.read_settings)(&(entry.default_settings)().to_string())
                .unwrap_or_else(|e| {
                    panic!("{}: spelled-out defaults are invalid: {e}", entry.name)
                });
            assert_eq!(Ok(full), (entry.read_settings)("{}"), "{}", entry.name);
        }
    }

    /// In full: every settings field outside a list that `settings-fields.yml` documents (the
    /// list `buildtools/settings-ui` checks against the settings readers) is spelled out. A field left
    /// out still reads as its default, which the test above cannot notice (`rbac` once was).
    #[test]
    fn every_documented_field_is_spelled_out() {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for entry in POLICIES {
            let policy = entry.folder;
            let spelled_out = (entry.default_settings)();
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
            assert!(!paths.is_empty(), "{}: no fields found", fields.display());
            for path in paths {
                let found = path
                    .split('.')
                    .try_fold(&spelled_out, |value, key| value.get(key));
                assert!(found.is_some(), "{policy}: `{path}` is not spelled out");
            }
        }
    }
}
