//! The builder against the project's own example requests: each, rebuilt from its parts (the
//! operation, the requester, the objects), is the example but for what no part says (its uid,
//! the requester's uid and extra, the options' field manager).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use taintguard_cli::review::{review, Operation, Parts, Requester};

fn examples() -> Vec<PathBuf> {
    let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
    let mut found = Vec::new();
    for policy in ["taint-preservation", "toleration-injection"] {
        let dir = policies.join(policy).join("examples/requests");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// What the parts cannot say, left out of both sides; an absent object is `null`, as the API
/// server writes it.
fn comparable(mut review: Value) -> Value {
    let request = review["request"].as_object_mut().unwrap();
    request.remove("uid");
    for object in ["object", "oldObject"] {
        request.entry(object).or_insert(Value::Null);
    }
    let user = request["userInfo"].as_object_mut().unwrap();
    user.remove("uid");
    user.remove("extra");
    let options_kind = request.get("options").map(|o| o["kind"].clone());
    request.insert("options".into(), json!({"kind": options_kind}));
    review
}

#[test]
fn example_requests_rebuild_from_their_parts() {
    let mut rebuilt = 0;
    for path in examples() {
        let example: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let request = &example["request"];
        let Ok(operation) = Operation::try_from(request["operation"].as_str().unwrap()) else {
            continue; // CONNECT: not an operation these policies judge
        };
        // The audit scanner's own shape (its kind name as the resource, no options): not a
        // request the API server sends, so not one this builder writes.
        if request.get("options").is_none() && request["userInfo"] == json!({}) {
            continue;
        }
        let user = &request["userInfo"];
        let requester = match user["username"].as_str() {
            None => Requester::Nobody,
            Some(name) => Requester::User {
                name: name.to_owned(),
                groups: user["groups"]
                    .as_array()
                    .map(|g| g.iter().map(|g| g.as_str().unwrap().to_owned()).collect())
                    .unwrap_or_default(),
            },
        };
        let present = |v: &Value| (!v.is_null()).then(|| v.clone());
        let parts = Parts {
            operation,
            requester,
            object: present(&request["object"]),
            old_object: present(&request["oldObject"]),
            sub_resource: request["subResource"].as_str().map(str::to_owned),
            patch: request["options"]["kind"] == "PatchOptions",
            uid: "u".to_owned(),
        };
        let mut built = review(&parts).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // An example without `system:authenticated` (a node, an anonymous audit) keeps its groups.
        built["request"]["userInfo"]["groups"] = request["userInfo"]["groups"].clone();
        if request["userInfo"]["groups"].is_null() {
            built["request"]["userInfo"]
                .as_object_mut()
                .unwrap()
                .remove("groups");
        }
        assert_eq!(
            comparable(built),
            comparable(example.clone()),
            "{}",
            path.display()
        );
        rebuilt += 1;
    }
    assert!(rebuilt >= 20, "only {rebuilt} examples rebuilt");
}

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
        (&["request", "--object", node], "--operation is required"),
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
