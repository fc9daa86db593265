//! The policy-catalog charts `./build.sh` writes into dist/charts/ (docs/settings-ui.md), read as
//! the Kubewarden UI reads them and linted, packaged and rendered by a real Helm 3: buildtools/helm's
//! (`./build.sh test` installs it; `HELM` overrides it).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}; run ./build.sh first", path.display()))
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

fn helm(args: &[&str]) -> String {
    let helm = std::env::var_os("HELM")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("buildtools/helm/node_modules/.bin/helm"));
    let home = repo().join("target/helm");
    let out = Command::new(&helm)
        .args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; `./build.sh test` installs Helm from buildtools/helm (or set HELM)",
                helm.display()
            )
        });
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "helm {}: {}{}",
        args.join(" "),
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Every artifact `./build.sh` wrote manifests for: (artifact, policy folder).
fn artifacts() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(repo().join("dist")).expect("dist/: run ./build.sh first") {
        let path = entry.unwrap().path();
        if path.join("cluster-admission-policy.yaml").is_file() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let policy = name.trim_end_matches("-gatekeeper").to_owned();
            found.push((name, policy));
        }
    }
    found.sort();
    assert_eq!(found.len(), 4, "{found:?}");
    found
}

/// The annotation holding YAML text, parsed.
fn annotation_yaml(chart: &Value, key: &str) -> Value {
    yaml(
        chart["annotations"][key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key}")),
    )
}

/// What the UI reads of a chart agrees with the ClusterAdmissionPolicy and the Artifact Hub
/// package `./build.sh` wrote for the same artifact.
#[test]
fn charts_say_what_the_ui_reads() {
    let dist = repo().join("dist");
    for (name, policy) in artifacts() {
        let dir = dist.join("charts").join(&name);
        let chart = yaml(&read(&dir.join("Chart.yaml")));
        let values = yaml(&read(&dir.join("values.yaml")));
        let cap = yaml(&read(
            &dist.join(&name).join("cluster-admission-policy.yaml"),
        ));
        let pkg = yaml(&read(&dist.join(&name).join("artifacthub-pkg.yml")));
        let spec = &cap["spec"];
        let a = |key: &str| chart["annotations"][key].as_str().map(str::to_owned);
        assert_eq!(
            a("catalog.cattle.io/type").as_deref(),
            Some("kubewarden-policy"),
            "{name}"
        );
        assert_eq!(chart["name"].as_str(), Some(name.as_str()));
        assert_eq!(chart["version"], pkg["version"], "{name}");
        assert_eq!(
            a("kubewarden/displayName").as_ref(),
            pkg["displayName"].as_str().map(str::to_owned).as_ref()
        );
        assert_eq!(
            annotation_yaml(&chart, "kubewarden/rules"),
            spec["rules"],
            "{name}"
        );
        assert_eq!(
            a("kubewarden/mutation"),
            spec["mutating"].as_bool().map(|m| m.to_string()),
            "{name}"
        );
        match spec.get("contextAwareResources") {
            Some(resources) => {
                assert_eq!(
                    &annotation_yaml(&chart, "kubewarden/contextAwareResources"),
                    resources
                )
            }
            None => assert_eq!(a("kubewarden/contextAwareResources"), None, "{name}"),
        }
        assert_eq!(
            a("kubewarden/resources"),
            pkg["annotations"]["kubewarden/resources"]
                .as_str()
                .map(str::to_owned)
        );
        // The module the UI composes, from values.yaml and from the older annotations alike.
        let module = spec["module"].as_str().unwrap();
        let from_values = format!(
            "registry://{}/{}:{}",
            values["global"]["cattle"]["systemDefaultRegistry"]
                .as_str()
                .unwrap(),
            values["module"]["repository"].as_str().unwrap(),
            values["module"]["tag"].as_str().unwrap()
        );
        let from_annotations = format!(
            "registry://{}/{}:{}",
            a("kubewarden/registry").unwrap(),
            a("kubewarden/repository").unwrap(),
            a("kubewarden/tag").unwrap()
        );
        assert_eq!(
            (from_values.as_str(), from_annotations.as_str()),
            (module, module),
            "{name}"
        );
        // The settings form is the policy's questions-ui.yml, unchanged.
        assert_eq!(
            read(&dir.join("questions.yaml")),
            read(
                &repo()
                    .join("policies")
                    .join(&policy)
                    .join("questions-ui.yml")
            ),
            "{name}"
        );
        assert_eq!(
            read(&dir.join("README.md")),
            read(&dist.join(&name).join("README.md"))
        );
    }
}

/// Every document of a multi-document YAML text, by `metadata.name`.
fn documents(text: &str) -> Vec<(String, Value)> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("{e}:\n{text}")))
        .filter(|doc| !doc.is_null())
        .map(|doc| {
            (
                doc["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                doc,
            )
        })
        .collect()
}

/// A manifest `./build.sh` wrote beside the chart, as `helm template` must render it (the chart
/// says the default mode out loud; the manifest leaves it to Kubewarden).
fn without_mode(mut doc: Value) -> Value {
    doc["spec"].as_mapping_mut().unwrap().remove("mode");
    doc
}

/// `helm lint --strict`, and `helm template` renders the ClusterAdmissionPolicy `./build.sh`
/// wrote and its companions (taint-preservation's `nodes/status` guard), then the values a
/// `helm install` user sets: name, mode, module, settings, the webhook fields, a companion off.
#[test]
fn helm_lints_and_renders_the_policy() {
    let dist = repo().join("dist");
    for (name, _) in artifacts() {
        let dir = dist.join("charts").join(&name);
        let dir = dir.to_str().unwrap();
        let lint = helm(&["lint", "--strict", dir]);
        assert!(lint.contains("0 chart(s) failed"), "{lint}");

        let mut written: Vec<(String, Value)> = Vec::new();
        for entry in std::fs::read_dir(dist.join(&name)).unwrap().flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.starts_with("cluster-admission-policy") {
                let doc = yaml(&read(&entry.path()));
                written.push((doc["metadata"]["name"].as_str().unwrap().to_owned(), doc));
            }
        }
        written.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rendered = documents(&helm(&["template", dir]));
        rendered.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(rendered.len(), written.len(), "{name}: {rendered:?}");
        for ((rendered_name, got), (_, want)) in rendered.into_iter().zip(&written) {
            assert_eq!(
                got["spec"]["mode"].as_str(),
                Some("protect"),
                "{rendered_name}"
            );
            assert_eq!(
                without_mode(got),
                without_mode(want.clone()),
                "{rendered_name}"
            );
        }
        let main = written
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, d)| d)
            .unwrap();
        if name.starts_with("taint-preservation") {
            assert_eq!(
                main["spec"]["failurePolicy"].as_str(),
                Some("Fail"),
                "{name}"
            );
            assert!(main["spec"]["matchConditions"].is_sequence(), "{name}");
            assert_eq!(
                written.len(),
                2,
                "{name}: the nodes/status guard is shipped beside it"
            );
        }

        let custom = documents(&helm(&[
            "template",
            dir,
            "--set",
            "policy.name=custom,policy.mode=monitor,module.tag=v9.9.9,policy.failurePolicy=Ignore,policy.timeoutSeconds=3",
            "--set",
            "companions.status.enabled=false",
            "--set-json",
            r#"policy.settings={"a":{"b":[1,"two"]}}"#,
            "--set-json",
            "policy.matchConditions=[]",
        ]));
        assert_eq!(custom.len(), 1, "{name}: {custom:?}");
        let custom = &custom[0].1;
        let want = [
            (&custom["metadata"]["name"], "custom"),
            (&custom["spec"]["mode"], "monitor"),
            (&custom["spec"]["failurePolicy"], "Ignore"),
        ];
        for (got, want) in want {
            assert_eq!(got.as_str(), Some(want), "{name}");
        }
        assert_eq!(custom["spec"]["timeoutSeconds"].as_u64(), Some(3), "{name}");
        assert!(custom["spec"].get("matchConditions").is_none(), "{name}");
        assert!(custom["spec"]["module"]
            .as_str()
            .unwrap()
            .ends_with(":v9.9.9"));
        assert_eq!(custom["spec"]["settings"], yaml(r#"{"a":{"b":[1,"two"]}}"#));
    }
}

/// The Helm repository: one packaged chart per artifact, indexed with the chart's own metadata.
#[test]
fn the_repository_indexes_every_chart() {
    let charts = repo().join("dist/charts");
    let index = yaml(&read(&charts.join("repo/index.yaml")));
    for (name, _) in artifacts() {
        let chart = yaml(&read(&charts.join(&name).join("Chart.yaml")));
        let entry = &index["entries"][name.as_str()][0];
        let version = chart["version"].as_str().unwrap();
        assert_eq!(entry["version"].as_str(), Some(version), "{name}");
        assert_eq!(entry["annotations"], chart["annotations"], "{name}");
        assert!(entry["urls"][0]
            .as_str()
            .unwrap()
            .ends_with(&format!("/{name}-{version}.tgz")));
        let package = charts.join(format!("repo/{name}-{version}.tgz"));
        let shown = yaml(&helm(&["show", "chart", package.to_str().unwrap()]));
        assert_eq!(shown["annotations"], chart["annotations"], "{name}");
    }
}
