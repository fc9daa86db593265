//! The fuzz targets' bodies, here so that `cargo test` replays the regression fixtures in
//! `fuzz/regressions/<target>/` through exactly the code the fuzzer ran.

use arbitrary::Unstructured;

use super::{bundled_requests, bundled_settings, check_both, gen};
use super::{check_taint_preservation, check_toleration_injection, Checked};
use crate::policy::PolicyExt;
use crate::taint_preservation::TaintPreservation;
use crate::toleration_injection::TolerationInjection;

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
    let (case, check): (_, fn(&str, &str) -> Checked) = if nodes {
        (gen::taint_preservation(&mut u), check_taint_preservation)
    } else {
        (
            gen::toleration_injection(&mut u),
            check_toleration_injection,
        )
    };
    let Ok((request, settings)) = case else {
        return Ok(());
    };
    check(&request, &settings).map_err(|e| format!("{e}\nrequest: {request}\nsettings: {settings}"))
}

/// Settings validation on arbitrary text; settings that validate must then judge the bundled
/// requests without breaking an invariant.
pub fn validate_settings(data: &[u8]) -> Checked {
    let Ok(settings) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let valid = [
        TaintPreservation::validate_settings(settings).is_ok(),
        TolerationInjection::validate_settings(settings).is_ok(),
    ];
    if valid.contains(&true) {
        for request in bundled_requests() {
            check_both(request, settings)
                .map_err(|e| format!("{e}\nrequest: {request}\nsettings: {settings}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input a fuzz target ever crashed on, kept in `fuzz/regressions/<target>/`.
    #[test]
    fn fuzz_regressions_stay_fixed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
        type Target = fn(&[u8]) -> Checked;
        let targets: [(&str, Target); 3] = [
            ("validate_bytes", validate_bytes),
            ("validate_structured", validate_structured),
            ("validate_settings", validate_settings),
        ];
        let mut replayed = 0;
        for (target, run) in targets {
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
        assert!(replayed >= 2, "the regression fixtures are missing");
    }
}
