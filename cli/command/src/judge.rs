//! The suites' judge in the hosts Kubewarden runs: the waPC module in the stack policy-server
//! 1.35 links (a fresh instance per request), and the gatekeeper build in an OPA host. Modules
//! are compiled once per run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::Value;
use taintguard_host::gatekeeper::GatekeeperPolicy;
use taintguard_host::wapc::{ClusterAnswers, WapcPolicy};
use taintguard_suite::cluster;
use taintguard_suite::run::{Judge, Violation};
use taintguard_suite::suite::{Cluster, Suite};

/// Compiled modules by path.
#[derive(Default)]
pub struct Modules {
    wapc: HashMap<PathBuf, Rc<WapcPolicy>>,
    gatekeeper: HashMap<PathBuf, Rc<GatekeeperPolicy>>,
}

impl Modules {
    /// The judge for `suite`: its policy, and its gatekeeper build (the one it names, else
    /// `<policy>.gatekeeper.wasm` beside the policy when there is one).
    ///
    /// # Errors
    ///
    /// A module that cannot be read or compiled.
    pub fn judge(&mut self, suite: &Suite) -> Result<HostJudge, String> {
        let wapc = cached(&mut self.wapc, &suite.policy, WapcPolicy::from_bytes)?;
        let beside = suite.policy.with_extension("gatekeeper.wasm");
        let gatekeeper = match &suite.gatekeeper {
            Some(path) => Some(path),
            None => Some(&beside).filter(|p| p.is_file()),
        }
        .map(|path| cached(&mut self.gatekeeper, path, GatekeeperPolicy::from_bytes))
        .transpose()?;
        Ok(HostJudge { wapc, gatekeeper })
    }
}

fn cached<T>(
    cache: &mut HashMap<PathBuf, Rc<T>>,
    path: &Path,
    compile: impl Fn(&[u8]) -> Result<T, String>,
) -> Result<Rc<T>, String> {
    if let Some(module) = cache.get(path) {
        return Ok(Rc::clone(module));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let module = Rc::new(compile(&bytes).map_err(|e| format!("{}: {e}", path.display()))?);
    cache.insert(path.to_owned(), Rc::clone(&module));
    Ok(module)
}

pub struct HostJudge {
    wapc: Rc<WapcPolicy>,
    gatekeeper: Option<Rc<GatekeeperPolicy>>,
}

impl HostJudge {
    /// The policy's waPC module alone, as policy-server runs it.
    pub fn wapc(policy: WapcPolicy) -> HostJudge {
        HostJudge {
            wapc: Rc::new(policy),
            gatekeeper: None,
        }
    }
}

/// The host's answers to the policy's cluster questions: a kwctl session replayed as kwctl
/// replays it, or the suite's nodes and RBAC answers.
fn answers(cluster: &Cluster) -> Result<ClusterAnswers, String> {
    if let Some(session) = &cluster.session {
        return ClusterAnswers::replaying(session).map_err(|e| format!("session: {e}"));
    }
    let cluster = cluster.clone();
    Ok(ClusterAnswers::responding(move |operation, request| {
        cluster::answer(&cluster, operation, request)
    }))
}

impl Judge for HostJudge {
    fn settings_error(&mut self, settings: &Value) -> Result<Option<String>, String> {
        let answer = self.wapc.validate_settings(settings)?;
        Ok((answer["valid"] != Value::Bool(true))
            .then(|| answer["message"].as_str().unwrap_or_default().to_owned()))
    }

    fn validate(
        &mut self,
        review: &Value,
        settings: &Value,
        cluster: &Cluster,
    ) -> Result<(Value, bool), String> {
        let answers = answers(cluster)?;
        let response = self.wapc.validate_with(review, settings, &answers)?;
        // What an inventory cannot hold: RBAC answers, and a session's recorded ones.
        let asked = answers.asked();
        let beyond_inventory = cluster.session.is_some() && !asked.is_empty()
            || asked.iter().any(|(operation, _)| operation == "can_i");
        Ok((response, beyond_inventory))
    }

    fn violations(
        &mut self,
        review: &Value,
        settings: &Value,
        cluster: &Cluster,
    ) -> Option<Result<Vec<Violation>, String>> {
        let gatekeeper = self.gatekeeper.as_ref()?;
        Some(gatekeeper.violations(review, settings, &cluster::inventory(cluster)))
    }
}
