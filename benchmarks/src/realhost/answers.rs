//! The answer anchors (`benchmarks/answer-policy`): for each measured case, the policy's own
//! answer, written by `bench --answers DIR` for `./build.sh bench` to build one module per case
//! around, and where the measurement finds each module. The answer is what the policy's guest
//! returns on a fresh instance in the waPC host policy-server runs, to the payload built as
//! policy-server builds it; a context-aware case's Namespace is answered from the case itself
//! (only to write the answer: the measurement asks a real API server). Before any load the
//! measurement checks that policy-server answers the policy and its answer anchor alike.

use std::path::{Path, PathBuf};

use wasm_tests::kubewarden::{ClusterAnswers, WapcPolicy};

use crate::inputs::Input;

/// The answer module of `input` in `dir`.
pub fn module(dir: &Path, input: &Input) -> PathBuf {
    dir.join(format!("{}.wasm", input.slug()))
}

/// Writes `<slug>.json`, the policy's answer, for every case of [`super::CASES`] in `inputs`, and
/// `<slug>.asks-namespace` beside it where the case reads its Namespace, holding the cargo feature
/// its module is built with so that it asks as the policy does (`namespace` or `namespace-fresh`:
/// [`crate::inputs::NamespaceReads::feature`]). `dist` holds the policies.
///
/// # Errors
///
/// A policy that cannot be loaded or does not answer, or a file that cannot be written.
pub fn write(inputs: &[Input], dist: &Path, dir: &Path) -> Result<(), String> {
    let io = |path: &Path, e: std::io::Error| format!("{}: {e}", path.display());
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| io(dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    // Each policy compiled once, for all its cases.
    let mut compiled: Vec<(&str, WapcPolicy)> = Vec::new();
    for input in super::cases(inputs) {
        let policy = match compiled.iter().position(|(name, _)| *name == input.policy) {
            Some(i) => &compiled[i].1,
            None => {
                let path = dist.join(format!("{}.wasm", input.policy));
                let bytes = std::fs::read(&path).map_err(|e| io(&path, e))?;
                compiled.push((input.policy, WapcPolicy::from_bytes(&bytes)?));
                &compiled[compiled.len() - 1].1
            }
        };
        let cluster = match &input.namespace {
            Some(namespace) => {
                ClusterAnswers::answering(vec![("get_resource", Ok(namespace.clone()))])
            }
            None => ClusterAnswers::default(),
        };
        let answer = policy
            .instance_with(&cluster)?
            .call("validate", &input.payload)
            .map_err(|e| format!("{} {}: {e}", input.policy, input.name))?;
        let file = dir.join(format!("{}.json", input.slug()));
        std::fs::write(&file, answer).map_err(|e| io(&file, e))?;
        if let Some(reads) = input.namespace_reads() {
            let marker = dir.join(format!("{}.asks-namespace", input.slug()));
            std::fs::write(&marker, reads.feature()).map_err(|e| io(&marker, e))?;
        }
    }
    Ok(())
}
