//! The `taintguard` command as users run it: its exit codes, what it prints, and what it says when
//! something is wrong.

use std::process::Command;

use serde_json::Value;

#[test]
fn the_command_writes_the_review_or_says_what_is_wrong() {
    let dir = std::env::temp_dir().join(format!("taintguard-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let node = dir.join("node.yaml");
    std::fs::write(&node, "apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\nspec:\n  taints:\n  - key: dedicated\n    value: gpu\n    effect: NoSchedule\n").unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_taintguard"))
            .args(args)
            .output()
            .unwrap()
    };
    let node = node.to_str().unwrap();
    let out = run(&[
        "request",
        "--operation",
        "UPDATE",
        "--patch",
        "--service-account",
        "kube-system/node-controller",
        "--object",
        node,
        "--old-object",
        node,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let review: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(review["request"]["name"], "worker-1");
    assert_eq!(review["request"]["options"]["kind"], "PatchOptions");
    assert_eq!(
        review["request"]["object"]["spec"]["taints"][0]["key"],
        "dedicated"
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["request", "--operation", "UPDATE", "--object", node],
            "UPDATE needs the old object",
        ),
        (&["request", "--object", node], "--operation <OPERATION>"),
        (
            &["request", "--operation", "PATCH"],
            "unknown operation \"PATCH\"",
        ),
        (
            &[
                "request",
                "--operation",
                "CREATE",
                "--object",
                "/nonexistent.yaml",
            ],
            "/nonexistent.yaml",
        ),
    ];
    for (args, want) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn taintguard(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_taintguard"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_examples_pass_in_both_builds() {
    let (code, stdout, stderr) = taintguard(&["test", "../../policies"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let (last, cases) = lines.split_last().unwrap();
    assert!(last.ends_with(" passed, 0 failed"), "{last}");
    assert!(cases.iter().all(|l| l.starts_with("pass  ")), "{stdout}");
    assert!(cases.len() >= 70, "only {} cases", cases.len());
    let both = cases
        .iter()
        .filter(|l| l.ends_with("(waPC + gatekeeper)"))
        .count();
    assert!(
        both >= 30,
        "only {both} cases checked in the gatekeeper build"
    );
}

#[test]
fn a_failing_suite_fails_with_a_line_per_difference() {
    let (code, stdout, _) = taintguard(&["test", "tests/suites/failing.yml"]);
    assert_eq!(code, Some(1), "{stdout}");
    let want = [
        "FAIL  failing / wrong verdict\n        verdict: expected accepted, got mutated\n",
        "FAIL  failing / wrong taints after\n        patchedObject.spec.taints: expected [], got \
         [{\"effect\":\"NoSchedule\",\"key\":\"example.com/dedicated\",\"value\":\"gpu\"}]\n",
        "FAIL  failing / wrong message (waPC + gatekeeper)\n        message: expected it to \
         contain \"may remove\", got \"taint-preservation: ",
        "FAIL  failing / unlisted warning\n        warnings[0]: not expected, got",
        "FAIL  failing / second step fails\n        step 2 (\"another controller uncordons\"): \
         verdict: expected accepted, got mutated\n",
        "skip  failing / skipped on purpose: shows the skip line\n",
        "pass  failing / right\n",
        "1 passed, 5 failed, 1 skipped\n",
    ];
    for fragment in want {
        assert!(stdout.contains(fragment), "{fragment:?} not in:\n{stdout}");
    }

    let (code, xml, stderr) = taintguard(&["test", "--output", "junit", "tests/suites"]);
    assert_eq!(code, Some(1));
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains(
            "<testsuites name=\"taintguard test\" tests=\"8\" failures=\"6\" skipped=\"1\">"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("<failure type=\"taintguard-builds-disagree\""),
        "{xml}"
    );
    assert!(
        xml.contains("<skipped message=\"shows the skip line\"/>"),
        "{xml}"
    );
    assert_eq!(stderr.trim(), "1 passed, 6 failed, 1 skipped");
}

/// A suite is known by parsing it, so JSON written on one line (as `JSON.stringify` or `jq -c`
/// writes it) is one, named or found in a directory.
#[test]
fn a_json_suite_on_one_line_runs() {
    let dir = std::env::temp_dir().join(format!("taintguard-json-suite-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/taint-preservation.wasm"
    );
    let suite = serde_json::json!({
        "apiVersion": "taintguard.io/v1alpha1", "kind": "TestSuite", "name": "one line",
        "policy": policy,
        "cases": [{"name": "a new node", "operation": "CREATE",
            "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            "expect": {"verdict": "accepted"}}]
    });
    let file = dir.join("suite.json");
    std::fs::write(&file, suite.to_string()).unwrap();
    for path in [&file, &dir] {
        let (code, stdout, stderr) = taintguard(&["test", path.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{}: {stdout}{stderr}", path.display());
        assert!(stdout.contains("pass  one line / a new node"), "{stdout}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn builds_that_disagree_are_taintguards_failure() {
    let (code, stdout, _) = taintguard(&["test", "tests/suites/disagreeing.yml"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.starts_with("FAIL [builds disagree]  disagreeing / a stale patch in deny mode"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the fault is taintguard's, not the suite's"),
        "{stdout}"
    );
    assert!(!stdout.contains("taintguard bug"), "{stdout}");
}

/// Without the Pod's Namespace every build refuses (500), the gatekeeper build with an inventory
/// that holds no Namespaces too: each case is judged by both, and they agree.
#[test]
fn without_namespaces_both_builds_refuse_the_pod() {
    let suite =
        "../../policies/toleration-injection/examples/pod-toleration-restriction/no-namespaces.yml";
    let (code, stdout, stderr) = taintguard(&["test", suite]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let (last, cases) = lines.split_last().unwrap();
    assert_eq!(*last, "6 passed, 0 failed", "{stdout}");
    for line in cases {
        assert!(
            line.starts_with("pass  ") && line.ends_with("(waPC + gatekeeper)"),
            "{stdout}"
        );
    }
}

/// `expect.gatekeeper`: where the builds differ by design, the gatekeeper build is held against
/// what the case says it answers, not compared; a wrong one fails the case, and one that says
/// what a violation list cannot is refused with the suite.
#[test]
fn a_gatekeeper_expectation_judges_the_gatekeeper_build() {
    let dir = std::env::temp_dir().join(format!("taintguard-gatekeeper-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dist/toleration-injection.wasm"
    );
    let suite = |gatekeeper: Value| {
        serde_json::json!({
            "apiVersion": "taintguard.io/v1alpha1", "kind": "TestSuite", "name": "gatekeeper",
            "policy": policy,
            "settings": {"podTolerationRestriction": {"enabled": true}},
            "cases": [{"name": "no Namespaces", "operation": "CREATE", "user": "alice",
                "object": {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "web", "namespace": "team-a"},
                           "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
                "expect": {"verdict": "rejected", "code": 500, "gatekeeper": gatekeeper}}]
        })
    };
    let run = |gatekeeper: Value| {
        let file = dir.join("suite.json");
        std::fs::write(&file, suite(gatekeeper).to_string()).unwrap();
        taintguard(&["test", file.to_str().unwrap()])
    };
    // (the case's expect.gatekeeper, the exit code, what the report says)
    let cases = [
        (
            serde_json::json!({"verdict": "rejected", "code": 500,
                               "message": "holds no v1/Namespace objects"}),
            0,
            &["pass  gatekeeper / no Namespaces (waPC + gatekeeper)"][..],
        ),
        (
            serde_json::json!({"verdict": "accepted"}),
            1,
            &[
                "FAIL  gatekeeper / no Namespaces",
                "gatekeeper build: verdict: expected accepted, got rejected: ",
            ],
        ),
        (
            serde_json::json!({"verdict": "mutated"}),
            1,
            &["expect.gatekeeper.verdict: the gatekeeper build accepts or rejects"],
        ),
    ];
    for (gatekeeper, want_code, says) in cases {
        let (code, stdout, stderr) = run(gatekeeper.clone());
        assert_eq!(code, Some(want_code), "{gatekeeper}: {stdout}{stderr}");
        for fragment in says {
            assert!(
                stdout.contains(fragment),
                "{gatekeeper}: {fragment:?} in {stdout}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--output json`: every request's verdict, as engines are compared (allowed, code, patch,
/// warnings), the counts on standard error.
#[test]
fn the_json_report_gives_every_requests_verdict() {
    let (code, stdout, stderr) = taintguard(&["test", "--output", "json", "tests/suites"]);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert_eq!(stderr.trim(), "1 passed, 6 failed, 1 skipped");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (&report["passed"], &report["failed"], &report["skipped"]),
        (&Value::from(1), &Value::from(6), &Value::from(1))
    );
    let case = |name: &str| {
        let cases = report["cases"].as_array().unwrap();
        cases.iter().find(|c| c["case"] == name).unwrap().clone()
    };
    let cases: [(&str, &str, usize); 4] = [
        ("wrong verdict", "fail", 1),
        ("second step fails", "fail", 2),
        ("skipped on purpose", "skip", 0),
        ("a stale patch in deny mode", "disagree", 1),
    ];
    for (name, outcome, requests) in cases {
        let got = case(name);
        assert_eq!(got["outcome"], outcome, "{name}: {got:#}");
        assert_eq!(
            got["verdicts"].as_array().unwrap().len(),
            requests,
            "{name}"
        );
        for verdict in got["verdicts"].as_array().unwrap() {
            let keys: Vec<&String> = verdict.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["allowed", "code", "patch", "warnings"], "{name}");
        }
    }
    let mutated = &case("wrong verdict")["verdicts"][0];
    assert_eq!(mutated["allowed"], true, "{mutated}");
    assert_eq!(mutated["code"], Value::Null, "{mutated}");
    assert!(
        mutated["patch"].as_array().is_some_and(|p| !p.is_empty()),
        "{mutated}"
    );
    assert!(mutated["warnings"].is_array(), "{mutated}");
    let refused = &case("a stale patch in deny mode")["verdicts"][0];
    assert_eq!(
        (&refused["allowed"], &refused["code"], &refused["patch"]),
        (&Value::Bool(false), &Value::from(403), &Value::Null),
        "{refused}"
    );
}

#[test]
fn bad_suites_name_the_file_the_case_and_the_field() {
    let dir = std::env::temp_dir().join(format!("taintguard-suites-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let head = "apiVersion: taintguard.io/v1alpha1\nkind: TestSuite\npolicy: x.wasm\ncases:\n";
    let create =
        "    operation: CREATE\n    object: {apiVersion: v1, kind: Node, metadata: {name: n}}\n";
    let cases: [(&str, String, &str); 10] = [
        (
            "no-expect",
            format!("{head}  - name: one\n{create}"),
            "case \"one\": expect: required: a case without an expectation proves nothing",
        ),
        (
            "misspelt",
            format!("{head}  - name: one\n{create}    expect: {{verdict: accepted, mesage: x}}\n"),
            "cases[0].expect: unknown field `mesage`",
        ),
        (
            "verdict",
            format!("{head}  - name: one\n{create}    expect: {{verdict: acepted}}\n"),
            "cases[0].expect.verdict: unknown variant `acepted`",
        ),
        (
            "version",
            "apiVersion: v1\nkind: TestSuite\npolicy: x.wasm\ncases: []\n".to_owned(),
            "apiVersion: \"v1\" is not \"taintguard.io/v1alpha1\"",
        ),
        (
            "missing-file",
            format!("{head}  - name: one\n    operation: CREATE\n    object: node.yaml\n    expect: {{verdict: accepted}}\n"),
            "case \"one\": object: ",
        ),
        (
            "two-writes",
            format!("{head}  - name: one\n{create}    mergePatch: {{}}\n    expect: {{verdict: accepted}}\n"),
            "case \"one\": give one of `object`, `mergePatch` and `jsonPatch`",
        ),
        (
            "step",
            format!("{head}  - name: one\n    steps:\n      - name: first\n        operation: CREAT\n"),
            "case \"one\": steps[0] (\"first\"): operation: unknown operation \"CREAT\"",
        ),
        (
            "unjudged-alone",
            format!("{head}  - name: one\n{create}    unjudged: the policy server is down\n"),
            "case \"one\": unjudged: a case of one write the policy does not judge proves nothing",
        ),
        (
            "unjudged-expect",
            format!("{head}  - name: one\n    steps:\n      - name: first\n        operation: CREATE\n        object: {{apiVersion: v1, kind: Node, metadata: {{name: n}}}}\n        unjudged: down\n        expect: {{verdict: accepted}}\n"),
            "case \"one\": steps[0] (\"first\"): expect: an unjudged write gets no answer to expect",
        ),
        (
            "message-on-accept",
            format!("{head}  - name: one\n{create}    expect: {{verdict: accepted, message: x}}\n"),
            "case \"one\": expect.message: only a rejection has a message",
        ),
    ];
    for (name, text, want) in &cases {
        let path = dir.join(format!("{name}.yml"));
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let (code, stdout, _) = taintguard(&["test", path]);
        assert_eq!(code, Some(1), "{name}: {stdout}");
        assert!(
            stdout.contains(&format!("{path}: {want}")),
            "{name}: {want:?} not in {stdout}"
        );
    }
    let (code, _, stderr) = taintguard(&["test", dir.join("none").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let (code, _, stderr) = taintguard(&["test", dir.join("empty").to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no test suite"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_if_judges_stored_objects_as_the_audit_scanner_does() {
    let pod = |name: &str, tolerations: serde_json::Value| {
        serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "tenant-a", "uid": format!("uid-{name}")},
            "spec": {"containers": [{"name": "c", "image": "nginx"}], "tolerations": tolerations}})
    };
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
        pod("web", serde_json::json!([])),
        pod("gpu-job", serde_json::json!([{"key": "dedicated", "operator": "Exists"}])),
    ]});
    let path = std::env::temp_dir().join(format!("taintguard-what-if-{}.json", std::process::id()));
    std::fs::write(&path, list.to_string()).unwrap();
    let settings = "../../policies/toleration-injection/examples/settings/tenant-restriction.json";
    let (code, stdout, stderr) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/toleration-injection.wasm",
        "-s",
        settings,
        path.to_str().unwrap(),
    ]);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "accepted  Pod tenant-a/web", "{stdout}");
    assert!(
        lines[1].starts_with("rejected  Pod tenant-a/gpu-job: toleration-injection: "),
        "{stdout}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"2 objects: 1 accepted, 0 mutated, 1 rejected"
    );
}

/// PodTolerationRestriction before the install: stored Pods judged with their Namespaces'
/// annotations, as `kubectl get pods,namespaces -o json` lists them.
#[test]
fn what_if_over_pods_reads_their_namespaces() {
    let examples = "../../policies/toleration-injection/examples";
    let (code, stdout, stderr) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/toleration-injection.wasm",
        "-s",
        &format!("{examples}/what-if/settings.json"),
        "--namespaces",
        &format!("{examples}/what-if/namespaces.json"),
        &format!("{examples}/what-if/pods.json"),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "accepted  Pod team-a/web-0", "{stdout}");
    assert!(
        lines[1].starts_with("rejected  Pod team-a/batch-0: toleration-injection: Pod team-a/batch-0: pod tolerations (possibly merged with namespace default tolerations) conflict with its namespace whitelist: dedicated=team-b:NoSchedule"),
        "{stdout}"
    );
    assert_eq!(lines[2], "mutated   Pod team-b/gpu-0", "{stdout}");
    assert!(
        lines[3].trim_start().starts_with("{\"op\":\"add\"")
            && lines[3].contains("node.kubernetes.io/memory-pressure"),
        "{stdout}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &"3 objects: 1 accepted, 1 mutated, 1 rejected"
    );
    // Without the namespaces, every Pod is refused: the module cannot read them.
    let (code, stdout, _) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/toleration-injection.wasm",
        "-s",
        &format!("{examples}/what-if/settings.json"),
        &format!("{examples}/what-if/pods.json"),
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(
        stdout.lines().last().unwrap(),
        "3 objects: 0 accepted, 0 mutated, 3 rejected",
        "{stdout}"
    );
}

/// Before the install: the owners of the protected taints of Nodes as `kubectl get nodes -o json`
/// lists them, with `managedFields`, and what would let each taint's writer keep managing it.
#[test]
fn what_if_over_nodes_names_the_taints_without_an_owner() {
    let (code, stdout, stderr) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/taint-preservation.wasm",
        "../../policies/taint-preservation/examples/objects/nodes-before-install.json",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let owners = &stdout[stdout.find("\nNode ").unwrap_or_else(|| panic!("{stdout}")) + 1..];
    let wanted = [
        "Node worker-1",
        "  owned    feature.node.kubernetes.io/gpu=a100:NoSchedule: the writer of nfd.node.kubernetes.io/taints",
        "  owned    weave.works/kured-node-reboot:PreferNoSchedule: \"system:serviceaccount:kube-system:kured\" (the policy's record)",
        "  record   nfd.node.kubernetes.io/taints: written by \"nfd-master\" (Update, 2026-11-21T10:00:00Z): by default the service account node-feature-discovery/nfd-master, which controllerRecords names",
        "           if it runs as another (another namespace or Helm release), name that one: {\"annotation\":\"nfd.node.kubernetes.io/taints\",\"format\":\"taints\",\"owner\":{\"groups\":[],\"people\":false,\"serviceAccounts\":[\"node-feature-discovery/nfd-master\",\"node-feature-discovery/nfd-node-feature-discovery\",\"<namespace>/<name>\"],\"users\":[]}}",
        "Node worker-2",
        "  unowned  example.com/pool=batch:NoSchedule: only permitted principals may remove or change it",
        "           spec.taints is managed by \"pool-operator\" (Update, 2026-11-10T12:00:00Z): if that writer manages this taint, permit its service account: {\"effects\":[\"NoSchedule\"],\"key\":\"example.com/pool\",\"permitted\":{\"serviceAccounts\":[\"<namespace>/<name>\"]}}",
        "Node worker-3",
        "  unowned  example.com/maintenance=planned:NoSchedule: only permitted principals may remove or change it",
        "           spec.taints is managed by \"kubectl-taint\" (Update, 2026-11-12T15:30:00Z): a person with kubectl, whom the settings permit to remove it",
        "Node worker-4",
        "  unowned  company.io/reboot-needed:PreferNoSchedule: only permitted principals may remove or change it",
        "           spec.taints is managed by \"kured\" (Update, 2026-11-25T03:00:00Z): by default the service account kube-system/kured",
        "  or, as a permitted principal, record those owners:",
        "    kubectl annotate node worker-4 --overwrite taintguard.io/taint-owners='{\"company.io/reboot-needed:PreferNoSchedule\":\"system:serviceaccount:kube-system:kured\"}'",
        "settings that let those writers keep managing their taints (before the rule that protects them, `{\"key\": \"*\"}` by default):",
        "  \"protectedTaints\": [{\"effects\":[\"PreferNoSchedule\"],\"key\":\"company.io/reboot-needed\",\"permitted\":{\"serviceAccounts\":[\"kube-system/kured\"]}}]",
        "5 protected taints: 2 owned, 3 without an owner",
    ];
    assert_eq!(owners.lines().collect::<Vec<_>>(), wanted, "{stdout}");
    // The suggested settings are settings the policy takes, and they let kured remove its taint.
    let (code, stdout, _) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/taint-preservation.wasm",
        "-s",
        "tests/suites/what-if-suggested.json",
        "../../policies/taint-preservation/examples/objects/nodes-before-install.json",
    ]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "\"kured\" (Update, 2026-11-25T03:00:00Z): by default the service account \
             kube-system/kured, which the settings permit to remove it\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("kubectl annotate node worker-4"),
        "{stdout}"
    );
    // Settings whose NFD entry does not name the record's last writer: the entry that would.
    let (code, stdout, _) = taintguard(&[
        "what-if",
        "--policy",
        "../../dist/taint-preservation.wasm",
        "-s",
        "../../policies/taint-preservation/examples/settings/nfd-in-namespace-nfd.json",
        "../../policies/taint-preservation/examples/objects/nodes-before-install.json",
    ]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains(
            "  record   nfd.node.kubernetes.io/taints: written by \"nfd-master\" (Update, \
             2026-11-21T10:00:00Z): by default the service account \
             node-feature-discovery/nfd-master, which controllerRecords does not name, so its \
             record writes would be undone: {\"annotation\":\"nfd.node.kubernetes.io/taints\",\
             \"format\":\"taints\",\"owner\":{\"groups\":[],\"people\":false,\
             \"serviceAccounts\":[\"nfd/nfd-node-feature-discovery\",\
             \"node-feature-discovery/nfd-master\"],\"users\":[]}}\n"
        ),
        "{stdout}"
    );
}

/// The README's worked examples, as a user would run them: a node without protected taints and
/// flannel's DaemonSet as `kubectl get -o yaml` gives them, and the suites as the README writes
/// them.
#[test]
fn the_readme_suites_pass() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(repo.join("README.md")).unwrap();
    let section = &readme[readme.find("## Testing your settings").unwrap()..];
    let section = &section[..section.find("\n## ").unwrap()];
    let suites: Vec<&str> = section
        .split("```yaml\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .collect();
    assert_eq!(suites.len(), 2, "{section}");
    let dir = std::env::temp_dir().join(format!("taintguard-readme-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    let examples = repo.join("policies");
    let node =
        std::fs::read_to_string(examples.join("taint-preservation/examples/objects/worker-1.yaml"))
            .unwrap();
    let node = node.replace(
        "  taints:\n  - key: example.com/dedicated\n    value: gpu\n    effect: NoSchedule\n",
        "",
    );
    assert!(!node.contains("taints"), "{node}");
    std::fs::write(dir.join("tests/worker-1.yaml"), node).unwrap();
    std::fs::copy(
        examples.join("toleration-injection/examples/objects/flannel-daemonset.yaml"),
        dir.join("tests/flannel.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("settings.json"), "{}").unwrap();
    std::os::unix::fs::symlink(repo.join("dist").canonicalize().unwrap(), dir.join("dist"))
        .unwrap();
    for (i, suite) in suites.iter().enumerate() {
        std::fs::write(dir.join(format!("tests/suite-{i}.yml")), suite).unwrap();
    }
    let (code, stdout, stderr) = taintguard(&["test", dir.join("tests").to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.ends_with("3 passed, 0 failed\n"), "{stdout}");
}
