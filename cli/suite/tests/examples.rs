//! The builder against the project's own example requests: each, rebuilt from its parts (the
//! operation, the requester, the objects), is the example but for what no part says (its uid,
//! the requester's uid and extra, the options' field manager).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use taintguard_suite::review::{review, Operation, Parts, Requester};

fn examples() -> Vec<PathBuf> {
    let policies = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies");
    let mut found = Vec::new();
    // Every policy folder (one that carries a metadata.yml, as build.sh's `policies` finds them).
    for policy in taintguard_wasm_metadata::metadata::policy_folders(&policies).unwrap() {
        let dir = policies.join(policy).join("examples/requests");
        if !dir.is_dir() {
            continue;
        }
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
