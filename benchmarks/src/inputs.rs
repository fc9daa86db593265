//! The requests each policy is measured on: generated objects of growing size, shaped like what
//! real clusters send, and the bundled example (incident) requests of each policy.

use std::path::Path;

use serde_json::{json, Value};
use wasm_tests::examples::Expect;
use wasm_tests::kubewarden::admission_request;

pub struct Input {
    pub policy: &'static str,
    /// A family of generated inputs that grow along one axis (plotted as one line), or `None`
    /// for an example request.
    pub family: Option<&'static str>,
    pub name: String,
    /// The `validate` payload, built as policy-server builds it.
    pub payload: Vec<u8>,
    /// The AdmissionRequest and the settings the payload holds.
    pub request: Value,
    pub settings: Value,
    /// The verdict the policy must give: what makes a figure one of the case it names.
    pub expect: Expect,
    /// The Namespace the policy reads from the cluster for this request, if it reads one: the
    /// real-host benchmark creates it in a kube-apiserver policy-server reaches.
    pub namespace: Option<Value>,
}

fn payload(request: &Value, settings: &Value) -> Vec<u8> {
    let envelope = json!({"request": admission_request(request), "settings": settings});
    serde_json::to_vec(&envelope).expect("JSON values serialise")
}

/// A request as a policy judges it: under which settings, and with which verdict.
struct Judged<'a> {
    /// An AdmissionReview or a bare AdmissionRequest.
    request: &'a Value,
    settings: &'a Value,
    /// The verdict the policy must give.
    expect: Expect,
}

impl Input {
    /// The input `name` of `policy` (in `family`, if generated), judged as `judged` says.
    fn new(
        policy: &'static str,
        family: Option<&'static str>,
        name: String,
        judged: Judged<'_>,
    ) -> Input {
        let Judged {
            request,
            settings,
            expect,
        } = judged;
        Input {
            policy,
            family,
            name,
            payload: payload(request, settings),
            request: admission_request(request).clone(),
            settings: settings.clone(),
            expect,
            namespace: None,
        }
    }

    /// A file name for the input, without extension: its policy and name, one `-` for anything
    /// but letters and digits.
    pub fn slug(&self) -> String {
        format!("{} {}", self.policy, self.name)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    }

    /// How the policy reads the request's Namespace, if it reads one: the one place a case says
    /// which build of the context-aware anchors asks as its policy asks
    /// ([`NamespaceReads::feature`]).
    pub fn namespace_reads(&self) -> Option<NamespaceReads> {
        self.namespace.as_ref()?;
        let reads = &self.settings["podTolerationRestriction"]["namespaceReads"];
        Some(match reads.as_str() {
            Some("fresh") => NamespaceReads::Fresh,
            // The policy's default (`cached`).
            _ => NamespaceReads::Cached,
        })
    }

    /// The input Kubewarden's gatekeeper mode gives entrypoint 0, serialised as burrego does
    /// (`json!` into a `serde_json::Value`, then `serde_json::to_vec`).
    pub fn gatekeeper_input(&self) -> Vec<u8> {
        let input = json!({"parameters": self.settings, "review": self.request});
        serde_json::to_vec(&input).expect("JSON values serialise")
    }

    /// The waPC payload with the settings that make the waPC build judge as the gatekeeper
    /// build does (it always denies what it cannot repair): `wasm-tests`' `wapc-verdicts`
    /// rule, which the OPA SDK tests compare against.
    pub fn deny_mode_payload(&self) -> Vec<u8> {
        let mut settings = self.settings.clone();
        if self.policy == "taint-preservation" {
            settings["mode"] = json!("deny");
        }
        payload(&self.request, &settings)
    }
}

/// How a context-aware case's policy asks for the Namespace: toleration-injection's
/// `podTolerationRestriction.namespaceReads` (docs/context.md, "How old an answer may be").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceReads {
    /// `cached`, the default: `disable_cache: false`, policy-server answers from its five-second
    /// cache.
    Cached,
    /// `fresh`: `disable_cache: true`, a GET of the API server per request.
    Fresh,
}

impl NamespaceReads {
    /// The cargo feature of `benchmarks/mutate-policy` and `benchmarks/answer-policy` that asks
    /// this way (`benchmarks/ask-namespace`).
    pub fn feature(self) -> &'static str {
        match self {
            NamespaceReads::Cached => "namespace",
            NamespaceReads::Fresh => "namespace-fresh",
        }
    }
}

/// The input judged with its namespace's PodTolerationRestriction annotations, the Namespace read
/// as the policy reads it by default (from policy-server's cache).
pub const NAMESPACED_POD: &str = "Pod CREATE with namespace annotations [podTolerationRestriction]";
/// The same request judged with the same annotations, the Namespace read fresh for every Pod
/// (`namespaceReads: fresh`).
pub const NAMESPACED_POD_FRESH: &str =
    "Pod CREATE with namespace annotations [podTolerationRestriction, fresh reads]";

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// A Node as the kubelet reports it: labels, a few annotations, `taints` protected taints,
/// conditions, and `images` entries in `status.images` (the field that makes real Nodes large).
fn node(taints: usize, images: usize, heartbeat: &str) -> Value {
    let taints: Vec<Value> = (0..taints)
        .map(|i| {
            json!({"key": format!("example.com/taint-{i}"), "value": format!("v{i}"),
                        "effect": TAINT_EFFECTS[i % 3]})
        })
        .collect();
    let images: Vec<Value> = (0..images)
        .map(|i| {
            let repo = format!("registry.example.com/team-{}/service-{i}", i % 17);
            json!({"names": [format!("{repo}@sha256:{i:064x}"), format!("{repo}:v1.{i}.0")],
                   "sizeBytes": 10_000_000 + i * 7919})
        })
        .collect();
    let conditions: Vec<Value> = ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        .iter()
        .map(|c| json!({"type": c, "status": if *c == "Ready" {"True"} else {"False"},
                        "lastHeartbeatTime": heartbeat, "lastTransitionTime": "2025-04-10T08:00:03Z",
                        "reason": format!("Kubelet{c}"), "message": format!("kubelet reports {c}")}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": "worker-1", "uid": "6f0c1c1e-5b1e-4c7e-9d1e-2b8f4f0d9a11",
            "resourceVersion": "184467", "creationTimestamp": "2025-04-10T07:58:12Z",
            "labels": {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "worker-1",
                       "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m5.xlarge",
                       "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a"},
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                            "csi.volume.kubernetes.io/nodeid": "{\"ebs.csi.aws.com\":\"i-0abc123def4567890\"}"}
        },
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"],
                 "providerID": "aws:///eu-west-1a/i-0abc123def4567890", "taints": taints},
        "status": {
            "capacity": {"cpu": "4", "memory": "16069856Ki", "pods": "58", "ephemeral-storage": "83873772Ki"},
            "allocatable": {"cpu": "3920m", "memory": "15052000Ki", "pods": "58", "ephemeral-storage": "76224326324"},
            "conditions": conditions,
            "addresses": [{"type": "InternalIP", "address": "10.0.1.17"}, {"type": "Hostname", "address": "worker-1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "ec2a8f", "systemUUID": "ec2a8f", "bootID": "b00t", "kernelVersion": "6.1.0",
                         "osImage": "Amazon Linux 2023", "containerRuntimeVersion": "containerd://1.7.11",
                         "kubeletVersion": "v1.31.0", "kubeProxyVersion": "v1.31.0",
                         "operatingSystem": "linux", "architecture": "amd64"},
            "images": images
        }
    })
}

/// A status UPDATE by the kubelet. `stale`: the kubelet writes from a cache that lacks the last
/// protected taint (docs/incidents.md, incident 1), so the policy restores it by splicing.
fn node_update(taints: usize, images: usize, stale: bool) -> Value {
    let old = node(taints, images, "2025-04-10T09:00:00Z");
    let mut new = node(taints, images, "2025-04-10T09:00:40Z");
    if stale {
        new["spec"]["taints"].as_array_mut().expect("taints").pop();
    }
    json!({
        "uid": "b5e3a2f4-0000-4000-8000-000000000001",
        "kind": {"group": "", "version": "v1", "kind": "Node"},
        "resource": {"group": "", "version": "v1", "resource": "nodes"},
        "name": "worker-1", "operation": "UPDATE",
        "userInfo": {"username": "system:node:worker-1", "groups": ["system:nodes", "system:authenticated"]},
        "object": new, "oldObject": old, "dryRun": false,
        "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    })
}

/// `count` tolerations; the first tolerates the legacy master taint, so default settings add its
/// control-plane twin (a spliced mutation).
fn tolerations(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| match i {
            0 => json!({"key": "node-role.kubernetes.io/master", "operator": "Exists", "effect": "NoSchedule"}),
            _ => json!({"key": format!("example.com/toleration-{i}"), "operator": "Equal",
                        "value": format!("v{i}"), "effect": TAINT_EFFECTS[i % 3]}),
        })
        .collect()
}

fn pod_spec(tolerations: Vec<Value>) -> Value {
    let container = |name: &str| {
        json!({"name": name, "image": format!("registry.example.com/{name}:1.2.3"),
               "args": ["--port=8080", "--log-level=info"],
               "env": [{"name": "MODE", "value": "production"}, {"name": "POD_NAME",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
               "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
               "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}],
               "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10}})
    };
    json!({"containers": [container("app"), container("sidecar")],
           "volumes": [{"name": "config", "configMap": {"name": "app-config"}}],
           "priorityClassName": "system-node-critical", "serviceAccountName": "agent",
           "tolerations": tolerations})
}

fn workload_create(kind: &str, group: &str, object: Value) -> Value {
    json!({
        "uid": "c0ffee00-0000-4000-8000-000000000001",
        "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": format!("{}s", kind.to_lowercase())},
        "namespace": "kube-system", "operation": "CREATE",
        "userInfo": {"username": "system:serviceaccount:kube-system:replicaset-controller",
                     "groups": ["system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"]},
        "object": object, "dryRun": false,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    })
}

fn pod(count: usize) -> Value {
    workload_create(
        "Pod",
        "",
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "agent-7d9f", "namespace": "kube-system", "labels": {"app": "agent"}},
            "spec": pod_spec(tolerations(count))
        }),
    )
}

fn deployment(count: usize) -> Value {
    workload_create(
        "Deployment",
        "apps",
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "agent", "namespace": "kube-system", "labels": {"app": "agent"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": pod_spec(tolerations(count))}}
        }),
    )
}

/// The Namespace of [`namespaced_pod`], annotated as PodTolerationRestriction reads it: a default
/// toleration for its dedicated nodes and a whitelist of what its Pods may tolerate.
fn team_namespace() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"},
                     "annotations": {
                         "scheduler.alpha.kubernetes.io/defaultTolerations":
                             r#"[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"}]"#,
                         "scheduler.alpha.kubernetes.io/tolerationsWhitelist":
                             r#"[{"key":"dedicated","operator":"Equal","value":"team-a"},{"key":"example.com/gpu","operator":"Exists"}]"#}}
    })
}

/// A Deployment's Pod CREATE in `team-a` tolerating the GPU taint, judged by
/// PodTolerationRestriction: the namespace's default toleration and the memory-pressure one
/// (a Burstable Pod) are added, and all three are inside the namespace's whitelist (with the
/// implicit tolerations).
fn namespaced_pod() -> Value {
    let gpu = json!({"key": "example.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    let mut request = workload_create(
        "Pod",
        "",
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "trainer-5c8f", "namespace": "team-a", "labels": {"app": "trainer"}},
            "spec": pod_spec(vec![gpu])
        }),
    );
    request["namespace"] = json!("team-a");
    request
}

/// Every policy folder (`wasm_tests::policies`), found once for the run: an input names its
/// policy for as long as the run lasts.
fn policy_folders() -> &'static [String] {
    static FOLDERS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    FOLDERS.get_or_init(wasm_tests::policies)
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every input, for the policies found in `repo/policies`.
pub fn all(repo: &Path) -> Result<Vec<Input>, String> {
    let mut inputs = node_updates();
    inputs.extend(workloads(repo)?);
    inputs.extend(namespaced());
    inputs.extend(examples(repo)?);
    let twins = condition_twins(&inputs);
    inputs.extend(twins);
    Ok(inputs)
}

/// taint-preservation's generated Node updates: a status update and a stale write of Nodes
/// growing in taints and images.
fn node_updates() -> Vec<Input> {
    let mut inputs = Vec::new();
    let empty = json!({});
    for taints in [1, 10, 100] {
        for images in [0, 50, 500] {
            for (stale, family, expect) in [
                (false, "Node status update", Expect::Accepted),
                (true, "Node stale write", Expect::Mutated),
            ] {
                inputs.push(Input::new(
                    "taint-preservation",
                    Some(family),
                    format!("{family}, {taints} taints, {images} images"),
                    Judged {
                        request: &node_update(taints, images, stale),
                        settings: &empty,
                        expect,
                    },
                ));
            }
        }
    }
    inputs
}

/// toleration-injection's generated Pods and Deployments of growing toleration lists, the
/// Deployments also under a rule with a JSONPath condition.
fn workloads(repo: &Path) -> Result<Vec<Input>, String> {
    let mut inputs = Vec::new();
    let empty = json!({});
    let critical = read_json(
        &repo.join("policies/toleration-injection/examples/settings/critical-daemonsets.json"),
    )?;
    for count in [1, 10, 100] {
        let cases = [
            ("Pod", pod(count), &empty),
            ("Deployment", deployment(count), &empty),
            ("Deployment, JSONPath rule", deployment(count), &critical),
        ];
        for (family, request, settings) in cases {
            inputs.push(Input::new(
                "toleration-injection",
                Some(family),
                format!("{family}, {count} tolerations"),
                Judged {
                    request: &request,
                    settings,
                    // The legacy master toleration gets its control-plane twin.
                    expect: Expect::Mutated,
                },
            ));
        }
    }
    Ok(inputs)
}

/// The Pod judged with its Namespace's PodTolerationRestriction annotations, the Namespace read
/// from policy-server's cache and fresh.
fn namespaced() -> Vec<Input> {
    let restriction = [
        (NAMESPACED_POD, json!({"enabled": true})),
        (
            NAMESPACED_POD_FRESH,
            json!({"enabled": true, "namespaceReads": "fresh"}),
        ),
    ];
    restriction
        .into_iter()
        .map(|(name, restriction)| {
            let mut namespaced = Input::new(
                "toleration-injection",
                None,
                name.to_owned(),
                Judged {
                    request: &namespaced_pod(),
                    settings: &json!({"podTolerationRestriction": restriction}),
                    expect: Expect::Mutated,
                },
            );
            namespaced.namespace = Some(team_namespace());
            namespaced
        })
        .collect()
}

/// Every policy's bundled examples that ask the cluster nothing.
fn examples(repo: &Path) -> Result<Vec<Input>, String> {
    let mut inputs = Vec::new();
    for policy in policy_folders() {
        let policy = policy.as_str();
        for example in wasm_tests::examples::load(&repo.join("policies").join(policy))? {
            // A case that asks the cluster needs its session's answers, which no benchmark host
            // gives (and a recorded answer would measure the session, not the policy).
            if example.session.is_some() {
                continue;
            }
            inputs.push(Input::new(
                policy,
                None,
                example.name,
                Judged {
                    request: &example.request,
                    settings: &example.settings,
                    expect: example.expect,
                },
            ));
        }
    }
    Ok(inputs)
}

/// The twin of each case in `inputs` that [`crate::realhost::target::CONDITION_TWINS`] names:
/// the same request, judged without its rules' JSONPath conditions.
fn condition_twins(inputs: &[Input]) -> Vec<Input> {
    let mut twins = Vec::new();
    for (policy, name, twin) in crate::realhost::target::CONDITION_TWINS {
        let twin = inputs
            .iter()
            .find(|i| i.policy == policy && i.name == name)
            .map(|case| {
                let settings = without_conditions(&case.settings);
                let mut twin = Input::new(
                    policy,
                    None,
                    twin.to_owned(),
                    Judged {
                        request: &case.request,
                        settings: &settings,
                        expect: case.expect,
                    },
                );
                twin.namespace = case.namespace.clone();
                twin
            });
        twins.extend(twin);
    }
    twins
}

/// `settings` with every rule's `match.jsonPath` left out: the twin of a case judged by a rule
/// with a JSONPath condition (`realhost::target`).
pub fn without_conditions(settings: &Value) -> Value {
    let mut settings = settings.clone();
    if let Some(rules) = settings["rules"].as_array_mut() {
        for rule in rules {
            if let Some(matcher) = rule["match"].as_object_mut() {
                matcher.remove("jsonPath");
            }
        }
    }
    settings
}
