//! The policies the package ships. Adding one is one `entry!` line.

use serde_json::Value;
use taint_preservation::TaintPreservation;
use taintguard::cluster::Cluster;
use taintguard::policy::Half;
use taintguard::{read_settings, try_run, NoCluster, Policy, Verdict};
use toleration_injection::TolerationInjection;

use crate::defaults::defaults;

/// What the package reports from a policy's Kubewarden `metadata.yml` (read by build.rs).
pub struct Facts {
    /// The `io.kubewarden.policy.title` annotation.
    pub title: &'static str,
    /// The `io.kubewarden.policy.description` annotation.
    pub description: &'static str,
    pub mutating: bool,
}

/// One policy, with its trait methods turned into plain function pointers so that policies of
/// different settings types can sit in one table.
pub struct Entry {
    pub name: &'static str,
    pub facts: Facts,
    pub default_settings: fn() -> Value,
    /// Request and settings text in, and the cluster the policy may ask; the verdict, or an
    /// error message naming the bad field.
    pub evaluate: fn(&str, &str, &dyn Cluster) -> Result<Verdict, String>,
    pub validate_settings: fn(&str) -> Result<(), String>,
}

macro_rules! entry {
    ($policy:ty, $dir:literal) => {
        Entry {
            name: <$policy as Policy>::NAME,
            facts: include!(concat!(env!("OUT_DIR"), "/", $dir, ".rs")),
            default_settings: defaults::<$policy>,
            evaluate: evaluate::<$policy>,
            validate_settings: validate_settings::<$policy>,
        }
    };
}

pub static POLICIES: &[Entry] = &[
    entry!(TaintPreservation, "taint-preservation"),
    entry!(TolerationInjection, "toleration-injection"),
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

/// Without a cluster from the caller, rules that ask one are answered with this reason.
pub const NO_CLUSTER: NoCluster = NoCluster(
    "no cluster was given to answer it (pass `evaluate` a cluster of namespaces, nodes and canI \
     answers, as a test suite's `cluster:`; in a cluster, the Kubewarden build asks \
     policy-server; docs/context.md)",
);

/// Engines get bad settings and malformed requests as 400 verdicts, because they can only show
/// a verdict; a library caller is better served by an exception with the same message.
fn evaluate<P: Policy>(
    request: &str,
    settings: &str,
    cluster: &dyn Cluster,
) -> Result<Verdict, String> {
    try_run::<P>(request, settings, Half::Mutating, cluster)
}

fn validate_settings<P: Policy>(settings: &str) -> Result<(), String> {
    read_settings::<P>(settings)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_their_folders() {
        for (i, entry) in POLICIES.iter().enumerate() {
            assert!(POLICIES[..i].iter().all(|p| p.name != entry.name));
            assert_eq!(
                entry.facts.title, entry.name,
                "{} reports another policy's metadata",
                entry.name
            );
            assert!(!entry.facts.description.is_empty(), "{}", entry.name);
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
                    "taint-preservation" => taintguard::run::<TaintPreservation>(
                        request,
                        settings,
                        Half::Mutating,
                        &NO_CLUSTER,
                    ),
                    "toleration-injection" => taintguard::run::<TolerationInjection>(
                        request,
                        settings,
                        Half::Mutating,
                        &NO_CLUSTER,
                    ),
                    other => panic!("{other}: give this test the policy's core run"),
                };
                if core.code() == Some(400) {
                    let err = (entry.evaluate)(request, settings, &NO_CLUSTER).unwrap_err();
                    assert_eq!(
                        Some(err.as_str()),
                        core.message(),
                        "{} {settings}",
                        entry.name
                    );
                } else {
                    assert_eq!((entry.evaluate)(request, settings, &NO_CLUSTER), Ok(core));
                }
            }
        }
    }
}
