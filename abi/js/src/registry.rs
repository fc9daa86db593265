//! The policies the package ships: every folder of `policies/` that carries a `metadata.yml`,
//! found by build.rs, which writes one `entry!` per folder; the one thing a policy adds outside
//! its folder is its dependency line in abi/js/Cargo.toml, and the build fails naming a folder
//! without it (policies/README.md).

use serde_json::Value;
use taintguard::cluster::Cluster;
use taintguard::policy::Half;
use taintguard::{read_settings, try_run, NoCluster, Policy, Verdict};

use crate::defaults::defaults;

/// What the package reports from a policy's Kubewarden `metadata.yml` (read by build.rs).
pub struct Facts {
    /// The `io.kubewarden.policy.title` annotation.
    pub title: &'static str,
    /// The `io.kubewarden.policy.description` annotation.
    pub description: &'static str,
    /// Whether the metadata says the policy mutates (`mutating: true`).
    pub mutating: bool,
}

/// One policy, with its trait methods turned into plain function pointers so that policies of
/// different settings types can sit in one table.
pub struct Entry {
    /// The policy's name, as requests and the package's functions name it.
    pub name: &'static str,
    /// Its folder under `policies/`.
    pub folder: &'static str,
    /// What the package reports from the policy's `metadata.yml`.
    pub facts: Facts,
    /// The policy's settings with every default spelled out, as JSON.
    pub default_settings: fn() -> Value,
    /// Request and settings text in, and the cluster the policy may ask; the verdict, or an
    /// error message naming the bad field.
    pub evaluate: fn(&str, &str, &dyn Cluster) -> Result<Verdict, String>,
    /// `Ok` when the policy takes the settings text, or the message naming the bad field.
    pub validate_settings: fn(&str) -> Result<(), String>,
    /// The settings read and written back as JSON (every default spelled out), or the error
    /// message naming the bad field: the policy's own settings reader, for the tests of those
    /// who describe settings (abi/js/src/defaults.rs, buildtools/settings-ui/tests).
    pub read_settings: fn(&str) -> Result<String, String>,
    /// The core's own run, for the test that the package says what the core says.
    #[cfg(test)]
    pub run: fn(&str, &str, Half, &dyn Cluster) -> Verdict,
}

macro_rules! entry {
    ($policy:ty, $dir:literal) => {
        Entry {
            name: <$policy as Policy>::NAME,
            folder: $dir,
            facts: include!(concat!(env!("OUT_DIR"), "/", $dir, ".rs")),
            default_settings: defaults::<$policy>,
            evaluate: evaluate::<$policy>,
            validate_settings: validate_settings::<$policy>,
            read_settings: settings_read_back::<$policy>,
            #[cfg(test)]
            run: taintguard::run::<$policy>,
        }
    };
}

/// `entry!(<crate>::<Type>, "<folder>")` for each policy folder, sorted (build.rs).
pub static POLICIES: &[Entry] = include!(concat!(env!("OUT_DIR"), "/policies.rs"));

/// The policy called `name`.
///
/// # Errors
///
/// No policy of the package has that name; the message lists those it has.
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

fn settings_read_back<P: Policy>(settings: &str) -> Result<String, String> {
    let read = read_settings::<P>(settings).map_err(|e| e.to_string())?;
    serde_json::to_string(&read).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folders of `policies/` that carry a `metadata.yml`, as build.sh's `policies` finds
    /// them.
    fn folders() -> Vec<String> {
        let policies = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
        taintguard_wasm_metadata::metadata::policy_folders(&policies).unwrap()
    }

    #[test]
    fn every_policy_folder_is_in_the_package() {
        let shipped: Vec<&str> = POLICIES.iter().map(|p| p.folder).collect();
        assert_eq!(shipped, folders());
    }

    #[test]
    fn names_are_unique_and_match_their_folders() {
        for (i, entry) in POLICIES.iter().enumerate() {
            assert!(POLICIES[..i].iter().all(|p| p.name != entry.name));
            assert_eq!(
                entry.name, entry.folder,
                "policies/{}: its Policy::NAME is not its folder's name",
                entry.folder
            );
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
            format!(
                "unknown policy \"nope\"; expected one of {}",
                folders().join(", ")
            )
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
                let core = (entry.run)(request, settings, Half::Mutating, &NO_CLUSTER);
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
