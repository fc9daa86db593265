//! The availability account's promises (docs/availability.md), through the real API server:
//! a hung policy server ([`hung_policy_server`]), and the writes of a policy-server outage under
//! each failure setting, then what the records say once it is back ([`outage`]).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;
use taintguard_control_plane::cluster::wait_for;

use crate::env::Env;
use crate::helpers::{check, not_ready, refused, taint, taints, told};
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
/// no matchConditions, so they are sent) and stored under `Ignore`, replayed and then by the real
/// controller. Then, policy-server back: the controller taints the `Fail` Node once the runbook
/// touches it; kured's taint added during the outage has no owner entry, so its removal is put
/// back, and `taintguard what-if` names it; the runbook's owner entry lets kured remove it.
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
    let add = json!([{"op": "add", "path": "/spec/taints/-", "value": reboot()}]);
    k.patch_node(KURED, "reg-ignore", NodePatch::json(&add.to_string()))?;

    let controller = env.bins.kube_controller_manager.clone();
    if let Some(binary) = &controller {
        env.cluster.start_node_lifecycle_controller(binary)?;
        lifecycle_while_down(env)?;
    } else {
        println!(
            "#   the real node lifecycle controller: not run (no kube-controller-manager beside \
             kube-apiserver: install-control-plane --with-controller-manager); its PATCH was replayed"
        );
    }
    env.cluster.start_policy_server(&env.bins)?;
    if controller.is_some() {
        lifecycle_after(env)?;
    }
    records_after(env)
}

/// policy-server back: kube-controller-manager 1.20 logs its refused NoSchedule taint and does
/// not queue it again, so the Node stays untainted until it changes; the runbook's touch (any
/// write of the Node) makes the controller taint it (docs/availability.md).
fn lifecycle_after(env: &Env) -> Result<(), String> {
    std::thread::sleep(Duration::from_secs(5));
    let untouched = if unreachable(env, "nlc-fail") {
        "tainted"
    } else {
        "still untainted"
    };
    let touch = json!({"metadata": {"annotations": {"taintguard.io/touched": "after-outage"}}});
    env.kubectl.ok(
        None,
        &[
            "patch",
            "node",
            "nlc-fail",
            "--type",
            "merge",
            "-p",
            &touch.to_string(),
        ],
        None,
    )?;
    let start = Instant::now();
    wait_for(
        "the controller's taint of nlc-fail after the touch",
        Duration::from_secs(30),
        || unreachable(env, "nlc-fail"),
    )?;
    println!(
        "#   policy-server back: nlc-fail {untouched} 5 s later; tainted {:.1?} after the runbook's touch",
        start.elapsed()
    );
    Ok(())
}

/// The node lifecycle controller marks both Nodes, which never posted a status, unreachable:
/// its taint PATCH is stored under `Ignore`, refused under `Fail` (its log says so).
fn lifecycle_while_down(env: &Env) -> Result<(), String> {
    wait_for(
        "the controller's taint of nlc-ignore",
        Duration::from_secs(45),
        || unreachable(env, "nlc-ignore"),
    )?;
    // The controller tries nlc-fail in the same pass, and every second after.
    std::thread::sleep(Duration::from_secs(3));
    check(!unreachable(env, "nlc-fail"), || {
        "the controller's taint of nlc-fail was stored with policy-server down".to_owned()
    })?;
    let log = std::fs::read_to_string(env.cluster.log_of("kube-controller-manager"))
        .map_err(|e| e.to_string())?;
    check(log.contains("failed calling webhook"), || {
        "kube-controller-manager's log shows no refused webhook call".to_owned()
    })?;
    println!(
        "#   policy-server down: the node lifecycle controller tainted nlc-ignore, not nlc-fail"
    );
    Ok(())
}

/// Whether `node` carries the node lifecycle controller's `unreachable` taint.
fn unreachable(env: &Env, node: &str) -> bool {
    env.kubectl.get("node", node, None).is_ok_and(|n| {
        taints(&n)
            .iter()
            .any(|t| t.starts_with("node.kubernetes.io/unreachable:"))
    })
}

fn reboot() -> serde_json::Value {
    taint("weave.works/kured-node-reboot", "", "PreferNoSchedule")
}

/// kured's taint added during the outage: unowned, so its removal is put back and what-if names
/// it; once the runbook's owner entry is written, kured's removal stands.
fn records_after(env: &Env) -> Result<(), String> {
    let k = &env.kubectl;
    let report = what_if(env, &k.get("node", "reg-ignore", None)?)?;
    check(
        report.contains("unowned  weave.works/kured-node-reboot:PreferNoSchedule"),
        || format!("what-if does not name kured's unowned taint:\n{report}"),
    )?;
    let carries_reboot = || -> Result<bool, String> {
        let node = k.get("node", "reg-ignore", None)?;
        Ok(taints(&node).contains(&"weave.works/kured-node-reboot:PreferNoSchedule".to_owned()))
    };
    let remove = |node: &str| -> Result<Out, String> {
        let stored = k.get("node", node, None)?;
        let at = (stored["spec"]["taints"].as_array().into_iter().flatten())
            .position(|t| t["key"] == "weave.works/kured-node-reboot")
            .ok_or("kured's taint is not on the node")?;
        let ops = json!([{"op": "test", "path": format!("/spec/taints/{at}"), "value": reboot()},
                         {"op": "remove", "path": format!("/spec/taints/{at}")}]);
        k.patch_node(KURED, node, NodePatch::json(&ops.to_string()))
    };
    told(
        &remove("reg-ignore")?,
        "may not remove protected taint weave.works/kured-node-reboot",
        "kured",
    )?;
    check(carries_reboot()?, || {
        "kured's removal of its unowned taint stood".to_owned()
    })?;
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
    remove("reg-ignore")?;
    check(!carries_reboot()?, || {
        "kured's removal did not stand after the runbook's owner entry".to_owned()
    })
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
