//! The context-aware rules (docs/context.md) through the real API server: policy-server asks it
//! for SubjectAccessReviews and lists of Nodes, `kwctl run --allow-context-aware` for lists of
//! Nodes, and kwctl replays sessions of its RBAC answers; RBAC grants and node taints are made
//! with kubectl as an operator would.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::env::Env;
use crate::helpers::*;
use crate::kubectl::*;
use crate::kwctl;
use crate::labels::POOL_LABEL;
use taintguard_control_plane::cluster::wait_for;

/// The break-glass grant as a platform team writes it: the policy's verbs on the policy's
/// resource in its API group, for one node.
fn break_glass(node: &str) -> (Value, Value) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "taintguard-break-glass"},
        "rules": [{"apiGroups": ["taintguard.io"], "resources": ["nodes"],
                   "resourceNames": [node], "verbs": ["untaint", "uncordon"]}]
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "taintguard-break-glass"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "taintguard-break-glass"},
        "subjects": [{"kind": "User", "name": GPU_OPERATOR.user, "apiGroup": "rbac.authorization.k8s.io"}]
    });
    (role, binding)
}

/// A protected taint removed by a service account the settings lists do not permit: restored
/// until a ClusterRole grants it `untaint` on that node, kept removed while the grant stands,
/// restored again once the binding is deleted. No policy is redeployed.
pub fn rbac_permission(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let name = "ctx-rbac";
    k.apply(&node(name, "rbac", &[dedicated()]))?;
    restored_without_a_grant(k, name)?;
    removed_with_the_grant(k, name)?;
    restored_for_another_principal(k, name)?;
    restored_after_the_revocation(k, name)
}

/// `who`'s merge patch of node `name` removing every taint; requires the write to succeed.
fn try_remove(k: &Kubectl, who: Actor, name: &str) -> Result<Out, String> {
    let remove = patch(&[]);
    k.ok(
        Some(who),
        &["patch", "node", name, "--type", "merge", "-p", &remove],
        None,
    )
}

/// Without a grant, gpu-operator's removal is told and the taint restored.
fn restored_without_a_grant(k: &Kubectl, name: &str) -> Result<(), String> {
    let out = try_remove(k, GPU_OPERATOR, name)?;
    told(
        &out,
        "may not remove protected taint example.com/dedicated=gpu:NoSchedule; this policy's patch puts it back",
        "without a grant",
    )?;
    stored_taints_are(
        "without a grant",
        &k.get("node", name, None)?,
        &[dedicated()],
    )
}

/// The break-glass grant applied, gpu-operator's removal is kept, told as granted by RBAC.
fn removed_with_the_grant(k: &Kubectl, name: &str) -> Result<(), String> {
    let (role, binding) = break_glass(name);
    k.apply(&role)?;
    k.apply(&binding)?;
    // RBAC changes reach the API server's authorizer through an informer: wait for the grant.
    let mut last = String::new();
    wait_for("the break-glass grant", Duration::from_secs(30), || {
        let out = try_remove(k, GPU_OPERATOR, name);
        last = out.as_ref().map_or_else(Clone::clone, Out::describe);
        out.is_ok_and(|o| {
            o.stderr
                .contains("may untaint nodes/ctx-rbac in API group \"taintguard.io\" by RBAC")
        })
    })
    .map_err(|e| format!("{e}; last answer: {last}"))?;
    stored_taints_are("with the grant", &k.get("node", name, None)?, &[])
}

/// The grant is for this principal only: the admin puts the taint back, and another service
/// account's removal is restored.
fn restored_for_another_principal(k: &Kubectl, name: &str) -> Result<(), String> {
    k.ok(
        None,
        &[
            "patch",
            "node",
            name,
            "--type",
            "merge",
            "-p",
            &patch(&[dedicated()]),
        ],
        None,
    )?;
    let out = try_remove(k, NODE_CONTROLLER, name)?;
    told(
        &out,
        "this policy's patch puts it back",
        "another service account",
    )?;
    stored_taints_are(
        "another service account",
        &k.get("node", name, None)?,
        &[dedicated()],
    )
}

/// The binding deleted, gpu-operator's removal is restored again.
fn restored_after_the_revocation(k: &Kubectl, name: &str) -> Result<(), String> {
    k.ok(
        None,
        &["delete", "clusterrolebinding", "taintguard-break-glass"],
        None,
    )?;
    wait_for("the revocation", Duration::from_secs(30), || {
        try_remove(k, GPU_OPERATOR, name)
            .is_ok_and(|o| o.stderr.contains("this policy's patch puts it back"))
    })?;
    stored_taints_are(
        "after the revocation",
        &k.get("node", name, None)?,
        &[dedicated()],
    )
}

fn pool_node(name: &str, pool: Option<&str>, taints: &[Value]) -> Value {
    let mut n = node(name, "context", taints);
    if let Some(pool) = pool {
        n["metadata"]["labels"][POOL_LABEL] = json!(pool);
    }
    n
}

/// The settings of the `nodes` variant, deployed by `deploy` and given to kwctl here: DaemonSets
/// in kube-system tolerate every taint the pool's nodes carry, except `dedicated`.
pub fn node_taints_settings() -> Value {
    json!({"rules": [{
        "name": "system-daemonsets",
        "match": {"kinds": ["DaemonSet"], "namespaces": ["kube-system"]},
        "nodeTaints": {"nodeSelector": {"matchLabels": {POOL_LABEL: "context"}}, "except": ["dedicated"]}
    }]})
}

fn the_pool() -> [Value; 3] {
    [
        pool_node(
            "ctx-gpu",
            Some("context"),
            &[
                taint("nvidia.com/gpu", "present", "NoSchedule"),
                taint("dedicated", "ml", "NoSchedule"),
            ],
        ),
        pool_node(
            "ctx-edge",
            Some("context"),
            &[taint("example.com/edge", "", "NoExecute")],
        ),
        pool_node(
            "ctx-other",
            None,
            &[taint("other.example.com/elsewhere", "", "NoSchedule")],
        ),
    ]
}

/// A CNI DaemonSet created in kube-system tolerates every taint the pool's nodes carry but
/// `dedicated`, and none of a node outside the pool; a taint added to a node later is tolerated
/// by the next DaemonSet (the nodes are read on every request).
pub fn node_taints(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    for n in the_pool() {
        k.apply(&n)?;
    }
    let out = k.ok(
        None,
        &["apply", "-f", "-"],
        Some(&cni_daemonset("ctx-cni").to_string()),
    )?;
    told(
        &out,
        "(rule \"system-daemonsets\", node ctx-edge carries it)",
        "the DaemonSet's creator",
    )?;
    let stored = k.get("daemonset", "ctx-cni", Some("kube-system"))?;
    same_set(
        "ctx-cni",
        &toleration_keys(&stored["spec"]["template"]["spec"]),
        &["nvidia.com/gpu".into(), "example.com/edge".into()],
    )?;

    k.ok(
        None,
        &[
            "taint",
            "node",
            "ctx-edge",
            "example.com/maintenance=planned:NoSchedule",
        ],
        None,
    )?;
    k.ok(
        None,
        &["apply", "-f", "-"],
        Some(&cni_daemonset("ctx-cni-2").to_string()),
    )?;
    let stored = k.get("daemonset", "ctx-cni-2", Some("kube-system"))?;
    same_set(
        "ctx-cni-2, after a node was tainted",
        &toleration_keys(&stored["spec"]["template"]["spec"]),
        &[
            "nvidia.com/gpu".into(),
            "example.com/edge".into(),
            "example.com/maintenance".into(),
        ],
    )
}

/// `kwctl run --allow-context-aware` with the e2e kubeconfig: the same node list policy-server
/// got, from the same API server; without the flag the list is refused and so is the request.
pub fn kwctl_context_aware(env: &mut Env) -> Result<(), String> {
    let kwctl = kwctl::find(env)?;
    for n in the_pool() {
        env.kubectl.apply(&n)?;
    }
    let dir = env.cluster.file("kwctl-context");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let run = |name: &str, module: &str, request: Value, settings: Value, allow: bool| {
        let path = dir.join(format!("{name}.json"));
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
        std::fs::write(&path, review.to_string()).map_err(|e| e.to_string())?;
        let flags: &[&str] = if allow {
            &["--allow-context-aware"]
        } else {
            &[]
        };
        kwctl::run(
            &kwctl,
            kwctl::Run {
                flags,
                kubeconfig: Some(&env.cluster.kubeconfig),
                module: &env.repo.join("dist").join(module),
                request: &path,
                settings: &settings,
            },
        )
    };

    let daemonset = json!({"uid": "k1", "kind": {"group": "apps", "version": "v1", "kind": "DaemonSet"},
        "resource": {"group": "apps", "version": "v1", "resource": "daemonsets"},
        "namespace": "kube-system", "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:helm", "groups": []},
        "object": cni_daemonset("kwctl-cni")});
    let answer = run(
        "daemonset",
        "toleration-injection.wasm",
        daemonset.clone(),
        node_taints_settings(),
        true,
    )?;
    injected_the_pools_taints(&answer)?;
    let refused_answer = run(
        "daemonset-denied",
        "toleration-injection.wasm",
        daemonset,
        node_taints_settings(),
        false,
    )?;
    check(
        refused_answer["allowed"] == false
            && refused_answer["status"]["code"] == 500
            && refused_answer["status"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Nothing was injected")),
        || format!("kwctl run without --allow-context-aware: {refused_answer}"),
    )
}

/// kwctl's `answer` with the node list allows the DaemonSet and patches in tolerations of the
/// pool's taints but `dedicated`.
fn injected_the_pools_taints(answer: &Value) -> Result<(), String> {
    let patch = answer["patch"].as_str().unwrap_or_default();
    let patch = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, patch)
            .map_err(|e| format!("kwctl's patch is not base64: {e}; {answer}"))?,
    )
    .unwrap_or_default();
    check(
        answer["allowed"] == true
            && patch.contains("nvidia.com/gpu")
            && patch.contains("example.com/edge")
            && !patch.contains("\"dedicated\""),
        || format!("kwctl run --allow-context-aware: {answer}, patch {patch}"),
    )
}

/// The `kubernetes/can_i` request taint-preservation sends for `verb` on node `name`, as a kwctl
/// session writes it (`!KubernetesCanI`), with `answer` as the host's reply.
fn can_i_session(who: Actor, name: &str, verb: &str, answer: &Value) -> Result<String, String> {
    let request = json!({
        "request": {"user": who.user, "groups": who.groups,
                    "resource_attributes": {"group": "taintguard.io", "resource": "nodes",
                                            "name": name, "verb": verb}},
        "disable_cache": true});
    let text = format!(
        "!KubernetesCanI\n{}",
        serde_yaml::to_string(&request).map_err(|e| e.to_string())?
    );
    serde_yaml::to_string(&json!([{"type": "Exchange", "request": text,
        "response": {"type": "Success", "payload": answer.to_string()}}]))
    .map_err(|e| e.to_string())
}

/// RBAC through kwctl. taint-preservation declares no resource, so kwctl cannot ask a live
/// cluster on its behalf (docs/context.md): it replays kwctl sessions. The API server's own
/// SubjectAccessReview answers for a granted and an ungranted requester, replayed, give the
/// verdicts policy-server gives (scenario "RBAC permission"); every bundled case with a session
/// gets the verdict the examples suite (`examples/cases.yml`) expects, in kwctl as in
/// `taintguard test`.
pub fn kwctl_rbac_sessions(env: &mut Env) -> Result<(), String> {
    let kwctl = kwctl::find(env)?;
    let dir = env.cluster.file("kwctl-sessions");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let module = env.repo.join("dist/taint-preservation.wasm");
    let replay = |name: &str, request: &Value, settings: &Value, session: &str| {
        let request_path = dir.join(format!("{name}.json"));
        let session_path = dir.join(format!("{name}.yml"));
        std::fs::write(&request_path, request.to_string()).map_err(|e| e.to_string())?;
        std::fs::write(&session_path, session).map_err(|e| e.to_string())?;
        let session_path = session_path.display().to_string();
        kwctl::run(
            &kwctl,
            kwctl::Run {
                flags: &["--replay-host-capabilities-interactions", &session_path],
                kubeconfig: None,
                module: &module,
                request: &request_path,
                settings,
            },
        )
    };

    let mut problems = rbac_answers_replayed(env, &replay)?;
    problems.extend(bundled_sessions_replayed(env, &replay)?);
    check(problems.is_empty(), || problems.join("\n"))
}

/// The API server's own SubjectAccessReview answers for a granted and an ungranted requester of
/// the break-glass grant, replayed by `replay`, give policy-server's verdicts; what differs.
fn rbac_answers_replayed(env: &Env, replay: &Replay) -> Result<Vec<String>, String> {
    let (role, binding) = break_glass("kwctl-node");
    env.kubectl.apply(&role)?;
    env.kubectl.apply(&binding)?;
    let settings = json!({"rbac": {"enabled": true}});
    let mut problems = Vec::new();
    for (who, granted) in [(GPU_OPERATOR, true), (NODE_CONTROLLER, false)] {
        let mut status = Value::Null;
        wait_for(
            "the API server's RBAC answer",
            Duration::from_secs(30),
            || {
                status = rbac_answer(&env.kubectl, who).unwrap_or_else(|e| json!(e));
                status["allowed"] == granted
            },
        )
        .map_err(|e| format!("{e}: {} got {status}", who.user))?;
        let session = can_i_session(who, "kwctl-node", "untaint", &status)?;
        let answer = replay(
            who.user.rsplit(':').next().unwrap_or("who"),
            &kwctl_node_update(who),
            &settings,
            &session,
        )?;
        let kept = answer.get("patch").is_some_and(|p| !p.is_null());
        if answer["allowed"] != true || kept == granted {
            problems.push(format!(
                "{} (RBAC answered allowed={granted}): kwctl replaying it answered {answer}",
                who.user
            ));
        }
    }
    env.kubectl.ok(
        None,
        &["delete", "clusterrolebinding", "taintguard-break-glass"],
        None,
    )?;
    Ok(problems)
}

/// The bundled sessions, replayed by `replay`, get the verdicts the examples suite (a
/// `taintguard test` suite) expects; what differs, and too few sessions.
fn bundled_sessions_replayed(env: &Env, replay: &Replay) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let examples = env
        .repo
        .join("policies/taint-preservation/examples/cases.yml");
    let suite = taintguard_suite::suite::load(&taintguard_suite::files::Disk, &examples)?;
    let mut replayed = 0;
    for (i, case) in suite.cases.iter().enumerate() {
        let (Some(session), taintguard_suite::suite::Requests::Review { review, expect }) =
            (&case.cluster.session, &case.requests)
        else {
            continue;
        };
        let answer = replay(&format!("case-{i}"), review, &case.settings, session)?;
        let got = if answer["allowed"] != true {
            "rejected"
        } else if answer.get("patch").is_some_and(|p| !p.is_null()) {
            "mutated"
        } else {
            "accepted"
        };
        if got != expect.verdict.to_string() {
            problems.push(format!(
                "{}: kwctl answered {got}, the examples suite expects {}: {answer}",
                case.name, expect.verdict
            ));
        }
        replayed += 1;
    }
    if replayed < 3 {
        problems.push(format!("only {replayed} bundled cases have a session"));
    }
    Ok(problems)
}

/// A kwctl replay of taint-preservation: the AdmissionReview `request` with `settings` and the
/// session of host answers, files named after the first argument; the AdmissionResponse.
type Replay<'a> = dyn Fn(&str, &Value, &Value, &str) -> Result<Value, String> + 'a;

/// Node kwctl-node as the replays' reviews carry it, with `taints`.
fn kwctl_node(taints: &[Value]) -> Value {
    let mut n = pool_node("kwctl-node", None, taints);
    n["apiVersion"] = json!("v1");
    n
}

/// `who`'s UPDATE of kwctl-node removing `dedicated`, as an AdmissionReview.
fn kwctl_node_update(who: Actor) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "k2", "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"}, "name": "kwctl-node",
        "operation": "UPDATE", "userInfo": {"username": who.user, "groups": who.groups},
        "object": kwctl_node(&[]), "oldObject": kwctl_node(&[dedicated()])}})
}

/// The API server's answer (a SubjectAccessReview's status) to whether `who` may untaint
/// kwctl-node.
fn rbac_answer(k: &Kubectl, who: Actor) -> Result<Value, String> {
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": who.user, "groups": who.groups,
                 "resourceAttributes": {"group": "taintguard.io", "resource": "nodes",
                                        "name": "kwctl-node", "verb": "untaint"}}});
    let out = k.ok(
        None,
        &["create", "-f", "-", "-o", "json"],
        Some(&sar.to_string()),
    )?;
    let answer: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
    Ok(answer["status"].clone())
}

/// The policies, as build.sh finds them: the folders of `policies/` that hold a `metadata.yml`.
fn policy_folders(repo: &std::path::Path) -> Result<Vec<String>, String> {
    taintguard_wasm_metadata::metadata::policy_folders(&repo.join("policies"))
}

/// `kwctl inspect` of every artifact, and `kwctl annotate` of each waPC module with its
/// metadata.yml, print no warning: the declared host capabilities are the ones the modules call.
pub fn kwctl_declarations(env: &mut Env) -> Result<(), String> {
    let kwctl = kwctl::find(env)?;
    let dist = env.repo.join("dist");
    let mut problems = Vec::new();
    let warned = |out: &std::process::Output| {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (!out.status.success() || text.contains("WARN")).then_some(text)
    };
    let policies = policy_folders(&env.repo)?;
    let artifacts = (policies.iter()).flat_map(|policy| {
        [
            format!("{policy}.wasm"),
            format!("{policy}.gatekeeper.wasm"),
        ]
    });
    for artifact in artifacts {
        let out = Command::new(&kwctl)
            .env("NO_COLOR", "1")
            .arg("inspect")
            .arg(dist.join(&artifact))
            .output()
            .map_err(|e| e.to_string())?;
        if let Some(text) = warned(&out) {
            problems.push(format!("kwctl inspect {artifact}: {text}"));
        }
    }
    for policy in &policies {
        let output = env.cluster.file(&format!("annotated-{policy}.wasm"));
        let out = Command::new(&kwctl)
            .env("NO_COLOR", "1")
            .args(["annotate", "-m"])
            .arg(env.repo.join("policies").join(policy).join("metadata.yml"))
            .arg("-o")
            .arg(&output)
            .arg(dist.join(format!("{policy}.wasm")))
            .output()
            .map_err(|e| e.to_string())?;
        if let Some(text) = warned(&out) {
            problems.push(format!("kwctl annotate {policy}: {text}"));
        }
    }
    check(problems.is_empty(), || problems.join("\n"))
}

/// `kwctl scaffold artifacthub` on each artifact's embedded metadata (as `kwctl inspect` reads
/// it) writes the package `./build.sh` wrote in `dist/<artifact>/artifacthub-pkg.yml`: every
/// field but the creation time and the install text, the annotations' YAML compared as YAML.
pub fn kwctl_artifacthub(env: &mut Env) -> Result<(), String> {
    let kwctl = kwctl::find(env)?;
    let dist = env.repo.join("dist");
    let dir = env.cluster.file("artifacthub");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut problems = Vec::new();
    let policies = policy_folders(&env.repo)?;
    let modules =
        (policies.iter()).flat_map(|policy| [policy.clone(), format!("{policy}.gatekeeper")]);
    for module in modules {
        let module = module.as_str();
        let policy = module.split('.').next().unwrap_or(module);
        let wasm = dist.join(format!("{module}.wasm"));
        let metadata = kwctl_output(
            &kwctl,
            &[
                "inspect".as_ref(),
                "-o".as_ref(),
                "yaml".as_ref(),
                wasm.as_os_str(),
            ],
        )?;
        let metadata_path = dir.join(format!("{module}.yml"));
        std::fs::write(&metadata_path, metadata).map_err(|e| e.to_string())?;
        let questions = env
            .repo
            .join("policies")
            .join(policy)
            .join("questions-ui.yml");
        let scaffolded = kwctl_output(
            &kwctl,
            &[
                "scaffold".as_ref(),
                "artifacthub".as_ref(),
                "--metadata-path".as_ref(),
                metadata_path.as_os_str(),
                "--questions-path".as_ref(),
                questions.as_os_str(),
            ],
        )?;
        let mut theirs = parse_yaml(&scaffolded, "kwctl scaffold artifacthub")?;
        let ours_path = dist
            .join(module.replace('.', "-"))
            .join("artifacthub-pkg.yml");
        let ours_text = std::fs::read_to_string(&ours_path)
            .map_err(|e| format!("{}: {e}", ours_path.display()))?;
        let mut ours = parse_yaml(&ours_text, "artifacthub-pkg.yml")?;
        for package in [&mut theirs, &mut ours] {
            comparable(package)?;
        }
        if theirs != ours {
            problems.push(format!(
                "{module}: kwctl scaffold artifacthub wrote\n{}\nbut dist has\n{}",
                serde_yaml::to_string(&theirs).unwrap_or_default(),
                serde_yaml::to_string(&ours).unwrap_or_default()
            ));
        }
    }
    check(problems.is_empty(), || problems.join("\n"))
}

/// `text` as YAML, an error naming `what` if it is not.
fn parse_yaml(text: &str, what: &str) -> Result<serde_yaml::Value, String> {
    serde_yaml::from_str(text).map_err(|e| format!("{what}: {e}"))
}

/// What `kwctl <args>` prints, or what it says on failure.
fn kwctl_output(kwctl: &std::path::Path, args: &[&std::ffi::OsStr]) -> Result<String, String> {
    let out = Command::new(kwctl)
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "kwctl {:?}: {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// An Artifact Hub package made comparable: without its creation time and install text, and with
/// the annotations that hold YAML parsed.
fn comparable(package: &mut serde_yaml::Value) -> Result<(), String> {
    let Some(map) = package.as_mapping_mut() else {
        return Ok(());
    };
    map.remove("createdAt");
    map.remove("install");
    if let Some(annotations) = map.get_mut("annotations").and_then(|a| a.as_mapping_mut()) {
        for key in ["kubewarden/rules", "kubewarden/contextAwareResources"] {
            if let Some(text) = annotations
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
            {
                annotations.insert(key.into(), parse_yaml(&text, key)?);
            }
        }
    }
    Ok(())
}
