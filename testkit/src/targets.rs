//! The fuzz targets' bodies, here so that `cargo test` replays the regression fixtures in
//! `fuzz/regressions/<target>/` through exactly the code the fuzzer ran.
//!
//! They check each policy's own invariants (`check_taint_preservation`,
//! `check_toleration_injection`), so they name the policies they fuzz: this is no list of every
//! policy, and a new policy is fuzzed once its generator and invariants are added here
//! (policies/README.md, "What a new policy does not get by itself").

use arbitrary::Unstructured;
use serde_json::Value;
use taintguard_opa::{evaluate, Entrypoint};

use super::{bundled_requests, bundled_settings, check_both, gen};
use super::{check_taint_preservation, check_toleration_injection, Checked};
use taint_preservation::TaintPreservation;
use taintguard::policy::read_settings;
use toleration_injection::TolerationInjection;

/// Both policies on arbitrary request text: the first byte picks one of the bundled settings,
/// the rest is the request.
pub fn validate_bytes(data: &[u8]) -> Checked {
    let Some((&choice, rest)) = data.split_first() else {
        return Ok(());
    };
    let Ok(request) = std::str::from_utf8(rest) else {
        return Ok(());
    };
    let settings = bundled_settings()[usize::from(choice) % bundled_settings().len()];
    check_both(request, settings)
        .map_err(|e| format!("{e}\nrequest: {request}\nsettings: {settings}"))
}

/// Structurally valid requests (Nodes or workloads) with hostile content and settings.
pub fn validate_structured(data: &[u8]) -> Checked {
    let mut u = Unstructured::new(data);
    let Ok(nodes) = u.arbitrary::<bool>() else {
        return Ok(());
    };
    let (case, check): (_, fn(&gen::Case) -> Checked) = if nodes {
        (gen::taint_preservation(&mut u), |c| {
            check_taint_preservation(&c.request, &c.settings)
        })
    } else {
        (gen::toleration_injection(&mut u), |c| {
            check_toleration_injection(&c.request, &c.settings, c.namespace.as_deref())
        })
    };
    let Ok(case) = case else {
        return Ok(());
    };
    check(&case).map_err(|e| format!("{e}\n{case}"))
}

/// Settings validation on arbitrary text; settings that validate must then judge the bundled
/// requests without breaking an invariant.
pub fn validate_settings(data: &[u8]) -> Checked {
    let Ok(settings) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let valid = [
        read_settings::<TaintPreservation>(settings).is_ok(),
        read_settings::<TolerationInjection>(settings).is_ok(),
    ];
    if valid.contains(&true) {
        for request in bundled_requests() {
            check_both(request, settings)
                .map_err(|e| format!("{e}\nrequest: {request}\nsettings: {settings}"))?;
        }
    }
    Ok(())
}

/// The OPA-ABI entry (`taintguard_opa::evaluate`, what `eval`/`opa_eval` answer) on arbitrary
/// input. The first byte picks the entrypoint, the policy and the data document (settings); the
/// rest is the input. Whatever the input, the answer must be a result set of the shape the hosts
/// read, since Kubewarden's gatekeeper mode allows a request whose result it cannot read.
pub fn opa_evaluate(data: &[u8]) -> Checked {
    let Some((&choice, input)) = data.split_first() else {
        return Ok(());
    };
    let entrypoint = if choice & 1 == 0 {
        Entrypoint::Violation
    } else {
        Entrypoint::Main
    };
    let settings = bundled_settings();
    let data_doc = match usize::from(choice >> 2) % (settings.len() + 1) {
        0 => None,
        i => Some(settings[i - 1].as_bytes()),
    };
    let answer = if choice & 2 == 0 {
        evaluate::<TaintPreservation>(entrypoint, Some(input), data_doc)
    } else {
        evaluate::<TolerationInjection>(entrypoint, Some(input), data_doc)
    };
    let set: Value =
        serde_json::from_str(&answer).map_err(|e| format!("not JSON ({e}): {answer}"))?;
    let result = &set[0]["result"];
    let readable = set.as_array().map(Vec::len) == Some(1)
        && match entrypoint {
            Entrypoint::Violation => result
                .as_array()
                .is_some_and(|list| list.iter().all(|v| v["msg"].is_string())),
            Entrypoint::Main => result["response"]["allowed"].is_boolean(),
        };
    if readable {
        Ok(())
    } else {
        Err(format!(
            "{entrypoint:?} answered a result set the hosts cannot read: {answer}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Target = fn(&[u8]) -> Checked;

    /// Every fuzz target, by the name of its `fuzz/fuzz_targets/<name>.rs`.
    const TARGETS: [(&str, Target); 4] = [
        ("validate_bytes", validate_bytes),
        ("validate_structured", validate_structured),
        ("validate_settings", validate_settings),
        ("opa_evaluate", opa_evaluate),
    ];

    /// Runs every file of `fuzz/<folder>/<target>/` through its target; how many ran.
    fn replay(folder: &str) -> usize {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fuzz")
            .join(folder);
        let mut replayed = 0;
        for (target, run) in TARGETS {
            let Ok(entries) = std::fs::read_dir(root.join(target)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                if let Err(broken) = run(&data) {
                    panic!("{}: {broken}", path.display());
                }
                replayed += 1;
            }
        }
        replayed
    }

    /// Every input a fuzz target ever crashed on, kept in `fuzz/regressions/<target>/`.
    #[test]
    fn fuzz_regressions_stay_fixed() {
        assert!(
            replay("regressions") >= 2,
            "the regression fixtures are missing"
        );
    }

    /// The seeds the fuzzer starts from (the bundled examples, as each target reads its bytes)
    /// pass their targets too.
    #[test]
    fn fuzz_seeds_pass() {
        assert!(replay("seeds") >= 40, "the seed corpora are missing");
    }

    /// Every target has a fuzz_targets file, and every fuzz_targets file is replayed here.
    #[test]
    fn every_fuzz_target_is_replayed() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/fuzz_targets");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().replace(".rs", ""))
            .collect();
        files.sort();
        let mut names: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
        names.sort();
        assert_eq!(files, names);
    }
}
