//! `taintguard-e2e`: the policies through a real kube-apiserver and Kubewarden's policy-server,
//! the incidents replayed as the real actors send them, and what is stored checked
//! (docs/e2e.md). Prints one line per scenario and a closing `N passed, N failed`.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod context;
mod controllers;
mod deploy;
mod env;
mod helpers;
mod kubectl;
mod kwctl;
mod labels;
mod outage;
mod pod_toleration_restriction;
mod policies;
mod reads;
mod records;
mod scenarios;
mod sealed;
mod shapes;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use env::Env;
use kubectl::Kubectl;
use taintguard_control_plane::binaries::Binaries;
use taintguard_control_plane::cluster::{self, Cluster};

fn start(bins: Binaries) -> Result<Env, String> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("e2e/ is inside the repository")
        .to_path_buf();
    let deployed = deploy::deployments(&repo)?;
    let t = Instant::now();
    let mut cluster = Cluster::start(&bins, "e2e")?;
    println!(
        "# control plane up in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        cluster.dir.display()
    );
    std::fs::write(
        cluster.file("policies.yml"),
        policies::policies_yml(&deployed),
    )
    .map_err(|e| e.to_string())?;
    let t = Instant::now();
    cluster.start_policy_server(&bins)?;
    println!(
        "# policy-server up in {:.1} s, {} policies",
        t.elapsed().as_secs_f64(),
        deployed.len()
    );
    let kubectl = Kubectl {
        bin: bins.kubectl.clone(),
        kubeconfig: cluster.kubeconfig.clone(),
        cache_dir: cluster.file("kubectl-cache"),
    };
    let env = Env {
        repo,
        bins,
        cluster,
        kubectl,
    };
    scenarios::prepare(&env, &deployed)?;
    Ok(env)
}

fn main() -> ExitCode {
    let bins = match Binaries::find() {
        Ok(bins) => bins,
        Err(missing) => {
            eprintln!("e2e: {missing}");
            return ExitCode::from(2);
        }
    };
    cluster::clean_up_on_signals();
    let mut env = match start(bins) {
        Ok(env) => env,
        Err(e) => {
            eprintln!("e2e: setup failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for (i, scenario) in scenarios::SCENARIOS.iter().enumerate() {
        let t = Instant::now();
        match (scenario.run)(&mut env) {
            Ok(()) => {
                passed += 1;
                println!(
                    "ok   {:2} {} ({:.1} s)",
                    i + 1,
                    scenario.name,
                    t.elapsed().as_secs_f64()
                );
            }
            Err(why) => {
                failed += 1;
                println!(
                    "FAIL {:2} {}\n       {}",
                    i + 1,
                    scenario.name,
                    why.replace('\n', "\n       ")
                );
            }
        }
    }
    drop(env);
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
