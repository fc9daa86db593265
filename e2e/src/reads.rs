//! The open cluster contract through policy-server: a policy made from the `reads` template
//! (`./build.sh new-policy NAME reads`, policies/README.md "Reading the cluster: a worked
//! example") lists the ConfigMaps of a Pod's namespace. Its waPC module asks policy-server's
//! `kubernetes/list_resources_by_namespace`, its gatekeeper module reads the namespaced inventory
//! policy-server's gatekeeper mode builds (`data.inventory.namespace`), both from the
//! `contextAwareResources` the build wrote from the policy's `Asks`. `./build.sh e2e` builds the
//! two modules into `target/e2e/` (they are no artifacts of `dist/`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::env::Env;
use crate::labels::VARIANT_LABEL;
use crate::policies::{cluster_admission_policy, Deployed};

/// The variants: the waPC module and the gatekeeper module.
const VARIANTS: [(&str, &str); 2] = [
    ("reads", "template-reads.wasm"),
    ("reads-gatekeeper", "template-reads.gatekeeper.wasm"),
];

/// The namespace the scenario's Pods are created in.
const NAMESPACE: &str = "reads-team-a";

/// Both variants, from the template's own `cluster-admission-policy.yaml` (its
/// `contextAwareResources` and settings), each selecting the Pods labelled with its name.
///
/// # Errors
///
/// The manifest or a module is missing.
pub fn deployments(repo: &Path) -> Result<Vec<Deployed>, String> {
    let path = repo.join("templates/reads/cluster-admission-policy.yaml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let manifest: Value =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut deployed = Vec::new();
    for (variant, file) in VARIANTS {
        let module = repo.join("target/e2e").join(file);
        if !module.is_file() {
            return Err(format!(
                "{} is missing: ./build.sh e2e builds it",
                module.display()
            ));
        }
        let mut spec = manifest["spec"].clone();
        spec["module"] = json!(format!("file://{}", module.display()));
        spec["objectSelector"] = json!({"matchLabels": {VARIANT_LABEL: variant}});
        deployed.push(cluster_admission_policy(
            &format!("template-{variant}"),
            spec,
        ));
    }
    Ok(deployed)
}

/// A ConfigMap of the scenario's namespace: `required` lists the label keys it requires, and
/// `selected` gives it the label the policy's default `configMapSelector` selects.
fn config_map(name: &str, required: &str, selected: bool) -> Value {
    let labels = match selected {
        true => json!({"taintguard.io/required-labels": "true"}),
        false => json!({}),
    };
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
           "data": {"labels": required}})
}

/// The Pods one variant's policy judges, numbered as they are created.
struct Pods<'e> {
    /// Who creates them: the admin.
    env: &'e Env,
    /// The variant whose label they carry.
    variant: &'e str,
    /// How many were created.
    serial: usize,
}

impl Pods<'_> {
    /// The outcome of creating the next Pod with `labels`: `Ok` if stored, else the refusal.
    fn create(&mut self, labels: &Value) -> Result<(), String> {
        self.serial += 1;
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{}-{}", self.variant, self.serial),
                         "namespace": NAMESPACE, "labels": labels},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}});
        pod["metadata"]["labels"][VARIANT_LABEL] = json!(self.variant);
        let out = (self.env.kubectl).run(None, &["create", "-f", "-"], Some(&pod.to_string()));
        match out.ok {
            true => Ok(()),
            false => Err(out.stderr.trim().to_owned()),
        }
    }

    /// Pods with `labels` created every 250 ms until `done` holds for the outcome, for at most
    /// 10 s (the list's watch, or the gatekeeper inventory's rebuild, follows a change a moment
    /// later); the last outcome.
    fn until(
        &mut self,
        labels: &Value,
        done: impl Fn(&Result<(), String>) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let outcome = self.create(labels);
            if done(&outcome) || Instant::now() > deadline {
                return outcome;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A ConfigMap requiring `team` refuses, in both modules, the Pod without it and admits the one
/// with it, naming the ConfigMap; an unselected ConfigMap requires nothing; once the selected
/// ConfigMap is gone, the Pod without the label is admitted.
pub fn config_maps_decide(env: &mut Env) -> Result<(), String> {
    let env = &*env;
    let k = &env.kubectl;
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    k.apply(&namespace)?;
    k.apply(&config_map("required-labels", "team", true))?;
    k.apply(&config_map("not-selected", "cost-center", false))?;
    let said = r#"the Pod lacks labels that ConfigMaps of namespace "reads-team-a" require: team (ConfigMap "required-labels")"#;
    let unlabelled = json!({});
    let labelled = json!({"team": "a"});
    let mut problems = Vec::new();
    let mut variants = VARIANTS.map(|(variant, _)| Pods {
        env,
        variant,
        serial: 0,
    });
    for pods in &mut variants {
        // The gatekeeper inventory may not hold the new ConfigMaps at once (500, naming the sync).
        let refused = pods.until(&unlabelled, |o| matches!(o, Err(e) if e.contains(said)));
        if !matches!(&refused, Err(e) if e.contains(said)) {
            problems.push(format!(
                "{}: a Pod without `team`: {refused:?}",
                pods.variant
            ));
        }
        if let Err(e) = pods.create(&labelled) {
            problems.push(format!(
                "{}: a Pod with `team` (the unselected ConfigMap's cost-center is not \
                 required): {e}",
                pods.variant
            ));
        }
    }
    let delete = ["delete", "configmap", "required-labels", "-n", NAMESPACE];
    env.kubectl.ok(None, &delete, None)?;
    for pods in &mut variants {
        if let Err(e) = pods.until(&unlabelled, |o| o.is_ok()) {
            problems.push(format!(
                "{}: a Pod without `team` after the ConfigMap was deleted: {e}",
                pods.variant
            ));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}
