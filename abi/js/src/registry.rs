//! The policies the package ships. Adding one is one `entry!` line.

use serde_json::Value;
use taintguard::admission::AdmissionRequest;
use taintguard::taint_preservation::TaintPreservation;
use taintguard::toleration_injection::TolerationInjection;
use taintguard::{Policy, Verdict};

use crate::defaults;

/// One policy, with its trait methods turned into plain function pointers so that policies of
/// different settings types can sit in one table.
pub struct Entry {
    pub name: &'static str,
    /// The policy's Kubewarden `metadata.yml`, for its description and whether it mutates.
    pub metadata: &'static str,
    pub default_settings: fn() -> Value,
    /// Request and settings text in; the verdict, or an error message naming the bad field.
    pub evaluate: fn(&str, &str) -> Result<Verdict, String>,
    pub validate_settings: fn(&str) -> Result<(), String>,
}

macro_rules! entry {
    ($policy:ty, $dir:literal, $defaults:path) => {
        Entry {
            name: <$policy as Policy>::NAME,
            metadata: include_str!(concat!("../../../policies/", $dir, "/metadata.yml")),
            default_settings: $defaults,
            evaluate: evaluate::<$policy>,
            validate_settings: validate_settings::<$policy>,
        }
    };
}

pub static POLICIES: &[Entry] = &[
    entry!(
        TaintPreservation,
        "taint-preservation",
        defaults::taint_preservation
    ),
    entry!(
        TolerationInjection,
        "toleration-injection",
        defaults::toleration_injection
    ),
];

pub fn find(name: &str) -> Result<&'static Entry, String> {
    POLICIES.iter().find(|p| p.name == name).ok_or_else(|| {
        let names: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
        format!(
            "unknown policy {name:?}; expected one of {}",
            names.join(", ")
        )
    })
}

/// `Policy::validate` turns bad settings and malformed requests into 400 verdicts, because an
/// engine can only show a verdict. A library caller is better served by an exception, so the
/// two steps are done here and their errors returned; the messages are the ones the Kubewarden
/// build puts in its 400 rejections.
fn evaluate<P: Policy>(request: &str, settings: &str) -> Result<Verdict, String> {
    let settings = P::settings(settings).map_err(|e| format!("{}: invalid {e}", P::NAME))?;
    let request = AdmissionRequest::parse(request).map_err(|e| format!("{}: {e}", P::NAME))?;
    Ok(P::evaluate(&request, &settings))
}

fn validate_settings<P: Policy>(settings: &str) -> Result<(), String> {
    P::validate_settings(settings).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_their_folders() {
        for (i, entry) in POLICIES.iter().enumerate() {
            assert!(POLICIES[..i].iter().all(|p| p.name != entry.name));
            assert!(
                entry
                    .metadata
                    .contains(&format!("io.kubewarden.policy.title: {}", entry.name)),
                "{} embeds another policy's metadata",
                entry.name
            );
        }
    }

    #[test]
    fn unknown_policy_lists_the_known_ones() {
        let err = find("nope").err().unwrap();
        assert_eq!(
            err,
            "unknown policy \"nope\"; expected one of taint-preservation, toleration-injection"
        );
    }

    /// The errors are those of the core's own 400 verdicts, so both builds say the same thing.
    #[test]
    fn errors_match_the_core_rejections() {
        let request = r#"{"uid":"u","kind":{"kind":"Node"},"operation":"UPDATE"}"#;
        let cases = [
            (request, r#"{"mode":"sometimes"}"#),
            (request, "{}"),
            ("[]", "{}"),
        ];
        for entry in POLICIES {
            for (request, settings) in cases {
                let core = match entry.name {
                    "taint-preservation" => TaintPreservation::validate(request, settings),
                    _ => TolerationInjection::validate(request, settings),
                };
                if core.code == Some(400) {
                    let err = (entry.evaluate)(request, settings).unwrap_err();
                    assert_eq!(Some(err), core.message, "{} {settings}", entry.name);
                } else {
                    assert_eq!((entry.evaluate)(request, settings), Ok(core));
                }
            }
        }
    }
}
