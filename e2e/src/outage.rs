//! The availability account's promises (docs/availability.md), through the real API server:
//! a hung policy server ([`hung_policy_server`]), and the writes of a policy-server outage under
//! each failure setting, then what the records say once it is back ([`outage`]).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;
use taintguard_control_plane::cluster::wait_for;

use crate::env::Env;
use crate::helpers::{check, not_ready, refused, stored_taints_are, taint, told};
use crate::kubectl::*;
use crate::policies::{webhook_configuration, Deployed};

/// A listener that accepts connections and never answers: a policy server that hangs. The
/// connections are kept open for the rest of the run.
fn black_hole() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    Ok(port)
}

/// taint-preservation's webhook as shipped, selecting `variant`, with `failure_policy` and a
/// 2 s timeout.
fn shipped_webhook(env: &Env, variant: &str, failure_policy: &str) -> Result<Deployed, String> {
    let mut d = crate::deploy::taint_preservation_variant(&env.repo, variant)?;
    d.spec["failurePolicy"] = json!(failure_policy);
    d.spec["timeoutSeconds"] = json!(2);
    Ok(d)
}

/// A label write on `node` as the admin: how long it took and what kubectl said.
fn label(env: &Env, node: &str, value: &str, dry_run: bool) -> (Duration, Out) {
    let label = format!("e2e.taintguard.io/touched={value}");
    let mut args = vec!["label", "node", node, &label, "--overwrite"];
    if dry_run {
        args.push("--dry-run=server");
    }
    let start = Instant::now();
    let out = env.kubectl.run(None, &args, None);
    (start.elapsed(), out)
}

/// policy-server hung (accepting connections, never answering): with `Fail` a Node write fails
/// after two calls of the webhook's timeout each (the API server tries an update whose admission
/// failed once more, against a fresh read), with `Ignore` it completes after one; neither waits
/// longer.
pub fn hung_policy_server(env: &mut Env) -> Result<(), String> {
    let port = black_hole()?;
    let ca = std::fs::read(&env.cluster.webhook_ca).map_err(|e| e.to_string())?;
    let k = &env.kubectl;
    for (variant, failure_policy) in [("hung", "Fail"), ("hung-ignore", "Ignore")] {
        let name = format!("out-{variant}");
        let n = crate::helpers::node(&name, variant, &[]);
        k.ok(None, &["create", "-f", "-"], Some(&n.to_string()))?;
        let d = shipped_webhook(env, variant, failure_policy)?;
        k.apply(&webhook_configuration(&d, port, &ca))?;
        wait_for(
            &format!("the {variant} webhook"),
            Duration::from_secs(60),
            || label(env, &name, "probe", true).0 >= Duration::from_millis(1500),
        )?;
        let (took, out) = label(env, &name, "yes", false);
        let calls = if failure_policy == "Fail" { 2 } else { 1 };
        let within = took >= Duration::from_millis(1800 * calls)
            && took <= Duration::from_millis(2000 * calls + 3000);
        check(within, || {
            format!("{failure_policy}: the write took {took:?}; {calls} call(s) of a 2 s timeout")
        })?;
        match failure_policy {
            "Fail" => refused(
                &out,
                "failed calling webhook",
                "Fail with a hung policy server",
            )?,
            _ => check(out.ok, || {
                format!("Ignore: the write failed: {}", out.describe())
            })?,
        }
        println!("#   {failure_policy} against a hung policy server: answered in {took:.1?}");
        k.ok(
            None,
            &["delete", "mutatingwebhookconfiguration", &d.id],
            None,
        )?;
    }
    Ok(())
}

/// With policy-server stopped (the failure-policy scenario stopped it): kubelet's registration
/// and the node lifecycle controller's taint PATCH are refused under `Fail` (this API server has
/// no matchConditions, so they are sent) and stored under `Ignore`. Then, policy-server back:
/// kured's taint added during the outage has no owner entry, so its removal is put back, and
/// `taintguard what-if` names it; the runbook's owner entry lets kured remove it.
pub fn outage(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let registration = |variant: &str| {
        let n = crate::helpers::node(&format!("reg-{variant}"), variant, &[]);
        k.run(
            Some(kubelet_of(variant)),
            &["create", "-f", "-"],
            Some(&n.to_string()),
        )
    };
    let lifecycle = json!({"spec": {"taints": [not_ready("NoSchedule"), not_ready("NoExecute")]}});
    let swap = |node: &str| {
        k.run(
            Some(NODE_CONTROLLER),
            &[
                "patch",
                "node",
                node,
                "--type",
                "strategic",
                "-p",
                &lifecycle.to_string(),
            ],
            None,
        )
    };
    refused(
        &registration("restore"),
        "failed calling webhook",
        "registration under Fail",
    )?;
    refused(
        &swap("inc2"),
        "failed calling webhook",
        "the lifecycle swap under Fail",
    )?;
    let out = registration("ignore");
    check(out.ok, || {
        format!("registration under Ignore: {}", out.describe())
    })?;
    let out = swap("reg-ignore");
    check(out.ok, || {
        format!("the lifecycle swap under Ignore: {}", out.describe())
    })?;
    let reboot = taint("weave.works/kured-node-reboot", "", "PreferNoSchedule");
    let add = json!([{"op": "add", "path": "/spec/taints/-", "value": reboot}]);
    k.patch_node(KURED, "reg-ignore", "json", &add.to_string())?;

    env.cluster.start_policy_server(&env.bins)?;
    let k = &env.kubectl;
    let stored = k.get("node", "reg-ignore", None)?;
    let report = what_if(env, &stored)?;
    check(
        report.contains("unowned  weave.works/kured-node-reboot:PreferNoSchedule"),
        || format!("what-if does not name kured's unowned taint:\n{report}"),
    )?;
    let remove = json!([{"op": "remove", "path": "/spec/taints/2"}]);
    let out = k.patch_node(KURED, "reg-ignore", "json", &remove.to_string())?;
    told(
        &out,
        "may not remove protected taint weave.works/kured-node-reboot",
        "kured",
    )?;
    let expected = [
        not_ready("NoSchedule"),
        not_ready("NoExecute"),
        reboot.clone(),
    ];
    stored_taints_are(
        "after kured's removal",
        &k.get("node", "reg-ignore", None)?,
        &expected,
    )?;
    // The runbook: a permitted principal writes the owner the outage left out.
    let owner = json!({"weave.works/kured-node-reboot:PreferNoSchedule": KURED.user}).to_string();
    let entry = json!({"metadata": {"annotations": {"taintguard.io/taint-owners": owner}}});
    k.ok(
        None,
        &[
            "patch",
            "node",
            "reg-ignore",
            "--type",
            "merge",
            "-p",
            &entry.to_string(),
        ],
        None,
    )?;
    k.patch_node(KURED, "reg-ignore", "json", &remove.to_string())?;
    let after = k.get("node", "reg-ignore", None)?;
    stored_taints_are(
        "after the runbook",
        &after,
        &[not_ready("NoSchedule"), not_ready("NoExecute")],
    )
}

fn kubelet_of(variant: &str) -> Actor {
    kubelet(Box::leak(format!("reg-{variant}").into_boxed_str()))
}

/// `taintguard what-if` over `node`, as the runbook runs it.
fn what_if(env: &Env, node: &serde_json::Value) -> Result<String, String> {
    let file = env.cluster.file("what-if-nodes.json");
    std::fs::write(&file, node.to_string()).map_err(|e| e.to_string())?;
    let bin = env.repo.join("target/debug/taintguard");
    let module = env.repo.join("dist/taint-preservation.wasm");
    let out = std::process::Command::new(&bin)
        .args(["what-if", "--policy"])
        .arg(&module)
        .arg(&file)
        .output()
        .map_err(|e| format!("{}: {e} (./build.sh e2e builds it)", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    check(out.status.success(), || {
        format!(
            "what-if failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    Ok(text)
}
