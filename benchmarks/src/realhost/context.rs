//! The cluster a context-aware case reads: etcd and kube-apiserver 1.20 on loopback, the
//! end-to-end suite's control plane (`e2e/control-plane`, docs/e2e.md says where its binaries
//! come from), holding the cases' Namespaces. policy-server reaches it with the admin's
//! kubeconfig, as the end-to-end suite runs it.

use taintguard_control_plane::binaries::Binaries;
use taintguard_control_plane::cluster::{self, ApiRequest, Cluster};

use crate::inputs::Input;

/// The cases that can run and what they read.
pub struct Context<'a> {
    pub cases: Vec<&'a Input>,
    /// The cluster holding their Namespaces; `None` when no case reads one.
    pub cluster: Option<Cluster>,
    /// Cases left out, and why.
    pub not_run: Vec<(String, String)>,
}

impl Context<'_> {
    /// The kubeconfig policy-server reaches the cluster with, if there is one.
    pub fn kubeconfig(&self) -> Option<&std::path::Path> {
        self.cluster.as_ref().map(|c| c.kubeconfig.as_path())
    }
}

/// The context of `cases`: a context-aware case is left out, with the reason, where the machine
/// has no control plane, so that the others still run.
///
/// # Errors
///
/// A control plane that is found but does not start, or refuses a Namespace.
pub fn start(cases: Vec<&Input>) -> Result<Context<'_>, String> {
    if cases.iter().all(|case| case.namespace.is_none()) {
        return Ok(Context {
            cases,
            cluster: None,
            not_run: Vec::new(),
        });
    }
    let bins = match Binaries::find() {
        Ok(bins) => bins,
        Err(missing) => {
            let (context_aware, rest): (Vec<&Input>, Vec<&Input>) =
                cases.into_iter().partition(|case| case.namespace.is_some());
            let not_run = context_aware
                .iter()
                .map(|case| (format!("{} {}", case.policy, case.name), missing.clone()))
                .collect();
            return Ok(Context {
                cases: rest,
                cluster: None,
                not_run,
            });
        }
    };
    cluster::clean_up_on_signals();
    let cluster = Cluster::start(&bins, "bench").map_err(|e| format!("control plane: {e}"))?;
    let mut created: Vec<&str> = Vec::new();
    for namespace in cases.iter().filter_map(|case| case.namespace.as_ref()) {
        let name = namespace["metadata"]["name"].as_str().unwrap_or_default();
        if created.contains(&name) {
            continue;
        }
        cluster
            .api(&ApiRequest {
                method: "POST",
                path: "/api/v1/namespaces",
                content_type: "application/json",
                body: &namespace.to_string(),
            })
            .map_err(|e| format!("creating Namespace {name}: {e}"))?;
        created.push(name);
    }
    eprintln!(
        "real host: kube-apiserver on 127.0.0.1:{} holds Namespace {}",
        cluster.api_port,
        created.join(", ")
    );
    Ok(Context {
        cases,
        cluster: Some(cluster),
        not_run: Vec::new(),
    })
}
