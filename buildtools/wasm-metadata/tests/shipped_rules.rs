//! No rule the project ships names an API current Kubernetes no longer serves (`served`): the
//! policies' metadata, their example resources, the docs' examples, and what `./build.sh` wrote
//! into dist/ (manifests, Artifact Hub packages, Helm charts) when it is there.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use taintguard_wasm_metadata::served::check_rules;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "node_modules" && name != "js" {
                yaml_files(&path, out);
            }
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            out.push(path);
        }
    }
}

/// Every `rules` list in a document: the metadata's own, a policy resource's `spec.rules`, each
/// member's of a policy group, and the rules an Artifact Hub package or a chart carries as
/// YAML text (`kubewarden/rules`).
fn rule_lists(doc: &Value, out: &mut Vec<Value>) {
    match doc {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "rules" && value.is_array() {
                    out.push(value.clone());
                } else if key == "kubewarden/rules" {
                    if let Some(text) = value.as_str() {
                        out.push(serde_yaml::from_str(text).expect("kubewarden/rules is YAML"));
                    }
                } else {
                    rule_lists(value, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| rule_lists(item, out)),
        _ => {}
    }
}

#[test]
fn no_shipped_rule_names_a_removed_api() {
    let root = repo();
    let mut files = Vec::new();
    for dir in ["policies", "docs", "examples", "dist"] {
        yaml_files(&root.join(dir), &mut files);
    }
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        // Helm templates are not YAML until rendered; their rules come from the chart's
        // values.yaml and Chart.yaml, which are checked here.
        if file.components().any(|c| c.as_os_str() == "templates") {
            continue;
        }
        for document in serde_yaml::Deserializer::from_str(&text) {
            let doc =
                Value::deserialize(document).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            // Settings forms have rules of their own (toleration-injection's settings).
            if file.ends_with("questions-ui.yml") || file.ends_with("settings-fields.yml") {
                continue;
            }
            let mut lists = Vec::new();
            rule_lists(&doc, &mut lists);
            for rules in lists {
                // Settings' injection rules are objects without API versions: not admission rules.
                let admission = rules
                    .as_array()
                    .is_some_and(|r| r.iter().any(|rule| rule.get("apiVersions").is_some()));
                if admission {
                    check_rules(rules.as_array().unwrap())
                        .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                    checked += 1;
                }
            }
        }
    }
    // The two policies' metadata.yml and cluster-admission-policy.yaml at least.
    assert!(checked >= 4, "only {checked} rule lists found");
}
