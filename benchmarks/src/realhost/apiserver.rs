//! The policies as the API server calls them: kube-apiserver 1.20 on loopback (the end-to-end
//! suite's control plane) calls policy-server over TLS, as a cluster does, for streams of real
//! writes sent to the API server by `wrk`. Each stream passes two mutating webhooks on the same
//! requests: the policy's, with the `failurePolicy` and `timeoutSeconds` of its folder's
//! manifest, and the null module's (accepts without reading) with the same rules and settings.
//! The API server's own latency histogram of each webhook
//! (`apiserver_admission_webhook_admission_duration_seconds`), read before and after the
//! stream, is what the request waited for it: TLS, the review's encoding, policy-server and the
//! module. The policy beside the null module, in one run on the same requests, is what the policy
//! itself adds; the slowest bucket beside the timeout is the margin the failure settings
//! (docs/availability.md) are chosen with.

use std::ffi::OsStr;
use std::path::Path;

use serde_json::{json, Value};
use taintguard_control_plane::binaries::Binaries;
use taintguard_control_plane::cluster::{self, ApiRequest, Cluster};
use taintguard_control_plane::metrics::{histogram, label, Histogram};

use super::{load, server, Modules, Timing};
use crate::inputs::{self, Input};

/// The histogram each webhook call is timed in, in seconds.
const WEBHOOK_HISTOGRAM: &str = "apiserver_admission_webhook_admission_duration_seconds";
/// The histogram each request is timed in, from its arrival to its answer, in seconds.
const REQUEST_HISTOGRAM: &str = "apiserver_request_duration_seconds";
/// The input the Node streams write to, and the stale write they send: incident 1's.
const STALE: &str = "incident-1-stale-taint-patch [default]";
/// Connections of each stream: enough to keep policy-server's two workers busy.
pub const CONNECTIONS: u32 = 8;

/// A stream of writes: the policy judging them, the input its object and settings come from,
/// and what is sent.
struct Stream {
    name: &'static str,
    policy: &'static str,
    input: &'static str,
    method: &'static str,
    /// The verb and resource the API server counts the request under.
    verb: &'static str,
    resource: &'static str,
    path: String,
    content_type: &'static str,
    body: Value,
    /// The writer, impersonated: the input's user and first group. Who writes decides what the
    /// policy does (a controller's stale write is restored, a person's is permitted).
    user: String,
    group: String,
    /// The policy's webhook's failure settings, from its folder's manifest.
    failure: Failure,
}

/// A webhook's `failurePolicy` and `timeoutSeconds`, as the policy's folder manifest deploys
/// it (Kubernetes' defaults, `Fail` and 10 s, where it sets none).
#[derive(Clone)]
struct Failure {
    policy: String,
    timeout_seconds: u64,
}

/// One stream's figures.
pub struct Measured {
    pub stream: &'static str,
    pub policy: &'static str,
    pub requests: f64,
    pub requests_per_second: f64,
    /// wrk's p99 of the whole request, in milliseconds.
    pub p99_ms: f64,
    /// The API server's timing of the whole request.
    pub request: Histogram,
    pub failure_policy: String,
    pub timeout_seconds: u64,
    pub policy_webhook: Histogram,
    pub null_webhook: Histogram,
}

/// The section either ran or says in one line why not.
pub enum Outcome {
    Ran {
        apiserver: String,
        seconds: u32,
        measured: Vec<Measured>,
    },
    NotRun(String),
}

/// The input named `name` among `all`.
fn input<'a>(all: &'a [Input], name: &str) -> Result<&'a Input, String> {
    all.iter()
        .find(|i| i.name == name)
        .ok_or_else(|| format!("no benchmark input named {name}"))
}

/// `object` as a client creates it: no identity or version the API server assigns.
fn to_create(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        for assigned in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            metadata.remove(assigned);
        }
    }
    object
}

/// The streams: a label write and a stale whole-list taint write (incident 1) to one Node, and
/// Pod CREATEs in a Namespace whose annotations the policy reads; each policy's failure settings
/// read once from `repo`.
fn streams(all: &[Input], repo: &Path) -> Result<Vec<Stream>, String> {
    let stale = input(all, STALE)?;
    let node = stale.request["oldObject"]["metadata"]["name"]
        .as_str()
        .ok_or("incident 1 has no Node name")?;
    let pod = input(all, inputs::NAMESPACED_POD)?;
    let namespace = pod.request["namespace"].as_str().unwrap_or("default");
    let mut created = to_create(&pod.request["object"]);
    let name = created["metadata"]["name"].as_str().unwrap_or("pod");
    // A name per request: benchmarks/wrk/apiserver.lua numbers each `@SEQ@`.
    created["metadata"]["name"] = json!(format!("{name}-@SEQ@"));
    let writer = |input: &Input| {
        let user_info = &input.request["userInfo"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        (text(&user_info["username"]), text(&user_info["groups"][0]))
    };
    let (node_user, node_group) = writer(stale);
    let node_failure = failure_settings(repo, "taint-preservation")?;
    let node_patch = |name, input: &'static str, body| Stream {
        failure: node_failure.clone(),
        name,
        user: node_user.clone(),
        group: node_group.clone(),
        policy: "taint-preservation",
        input,
        method: "PATCH",
        verb: "PATCH",
        resource: "nodes",
        path: format!("/api/v1/nodes/{node}"),
        content_type: "application/merge-patch+json",
        body,
    };
    Ok(vec![
        node_patch(
            "Node label PATCH (accepted)",
            STALE,
            json!({"metadata": {"labels": {"bench.taintguard.io/touched": "true"}}}),
        ),
        node_patch(
            "Node taints PATCH from a stale cache (restored)",
            STALE,
            json!({"spec": {"taints": stale.request["object"]["spec"]["taints"]}}),
        ),
        Stream {
            name: "Pod CREATE, its Namespace's annotations read (tolerations injected)",
            policy: "toleration-injection",
            input: inputs::NAMESPACED_POD,
            method: "POST",
            verb: "POST",
            resource: "pods",
            path: format!("/api/v1/namespaces/{namespace}/pods"),
            content_type: "application/json",
            body: created,
            user: writer(pod).0,
            group: writer(pod).1,
            failure: failure_settings(repo, "toleration-injection")?,
        },
    ])
}

/// The failure settings of `policy`'s folder manifest, as its deployment writes them.
fn failure_settings(repo: &Path, policy: &str) -> Result<Failure, String> {
    let path = repo.join(format!("policies/{policy}/cluster-admission-policy.yaml"));
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: Value = serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let spec = &doc["spec"];
    Ok(Failure {
        policy: spec["failurePolicy"].as_str().unwrap_or("Fail").to_owned(),
        timeout_seconds: spec["timeoutSeconds"].as_u64().unwrap_or(10),
    })
}

/// The objects the streams write to: incident 1's Node as stored before its stale write, and
/// the Pods' Namespace.
fn create_objects(cluster: &Cluster, all: &[Input]) -> Result<(), String> {
    let stale = input(all, STALE)?;
    let pod = input(all, inputs::NAMESPACED_POD)?;
    let namespace = pod
        .namespace
        .as_ref()
        .ok_or("the Pod's input has no Namespace")?;
    for (path, object) in [
        ("/api/v1/nodes", to_create(&stale.request["oldObject"])),
        ("/api/v1/namespaces", to_create(namespace)),
    ] {
        (cluster.api(&ApiRequest {
            method: "POST",
            path,
            content_type: "application/json",
            body: &object.to_string(),
        }))
        .map_err(|e| format!("creating {}: {e}", object["metadata"]["name"]))?;
    }
    Ok(())
}

/// policy-server's policies: the null module and each stream's policy with its input's
/// settings, under the ids the webhooks' URLs name.
fn entries(
    all: &[Input],
    streams: &[Stream],
    modules: &Modules,
) -> Result<Vec<server::Entry>, String> {
    let mut entries: Vec<server::Entry> = Vec::new();
    for stream in streams {
        if entries.iter().any(|e| e.id == stream.policy) {
            continue;
        }
        let input = input(all, stream.input)?;
        for (id, module) in [
            (
                stream.policy.to_owned(),
                modules.dist.join(format!("{}.wasm", stream.policy)),
            ),
            (format!("null-{}", stream.policy), modules.null.clone()),
        ] {
            entries.push(server::Entry {
                id,
                module,
                settings: input.settings.clone(),
                reads_namespaces: input.namespace.is_some(),
            });
        }
    }
    Ok(entries)
}

/// How the API server reaches policy-server.
struct WebhookClient<'a> {
    /// policy-server's port on loopback.
    port: u16,
    /// The CA that signed policy-server's certificate, PEM in base64.
    ca: &'a str,
}

/// The webhook `id` of policy-server for `stream`'s resource and operation.
fn webhook(client: &WebhookClient<'_>, id: &str, stream: &Stream) -> Value {
    let operation = if stream.method == "POST" {
        "CREATE"
    } else {
        "UPDATE"
    };
    json!({
        "name": format!("{id}.{}.bench.taintguard.io", stream.resource),
        "clientConfig": {
            "url": format!("https://127.0.0.1:{}/validate/{id}", client.port),
            "caBundle": client.ca,
        },
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": [stream.resource],
                   "operations": [operation]}],
        "failurePolicy": stream.failure.policy,
        "timeoutSeconds": stream.failure.timeout_seconds,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

/// One MutatingWebhookConfiguration: per stream, the null module's webhook and then the
/// policy's.
fn register_webhooks(cluster: &Cluster, streams: &[Stream]) -> Result<(), String> {
    use base64::Engine as _;
    let pem = std::fs::read(&cluster.webhook_ca).map_err(|e| e.to_string())?;
    let ca = base64::engine::general_purpose::STANDARD.encode(pem);
    let client = WebhookClient {
        port: cluster.policy_server_port,
        ca: &ca,
    };
    let mut webhooks: Vec<Value> = Vec::new();
    for stream in streams {
        for id in [format!("null-{}", stream.policy), stream.policy.to_owned()] {
            let hook = webhook(&client, &id, stream);
            if !webhooks.iter().any(|w| w["name"] == hook["name"]) {
                webhooks.push(hook);
            }
        }
    }
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "taintguard-bench"},
        "webhooks": webhooks,
    });
    cluster
        .api(&ApiRequest {
            method: "POST",
            path: "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
            content_type: "application/json",
            body: &configuration.to_string(),
        })
        .map(drop)
}

/// The API server's histograms of `stream`: its request, and the two webhooks' calls.
fn snapshot(cluster: &Cluster, stream: &Stream) -> Result<[Histogram; 3], String> {
    let metrics = cluster.api(&ApiRequest {
        method: "GET",
        path: "/metrics",
        content_type: "text/plain",
        body: "",
    })?;
    let webhook = |id: String| {
        let name = format!("{id}.{}.bench.taintguard.io", stream.resource);
        histogram(&metrics, WEBHOOK_HISTOGRAM, &|labels| {
            label(labels, "name") == Some(name.as_str())
        })
    };
    let request = histogram(&metrics, REQUEST_HISTOGRAM, &|labels| {
        label(labels, "verb") == Some(stream.verb)
            && label(labels, "resource") == Some(stream.resource)
            && label(labels, "subresource").unwrap_or_default().is_empty()
    });
    Ok([
        request,
        webhook(stream.policy.to_owned()),
        webhook(format!("null-{}", stream.policy)),
    ])
}

/// `stream` for `timing.seconds` after a warm-up, measured.
fn measure(
    cluster: &Cluster,
    repo: &Path,
    stream: &Stream,
    timing: Timing,
) -> Result<Measured, String> {
    let dir = cluster.file("bench-bodies");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let body = dir.join(format!("{}.json", stream.resource));
    std::fs::write(&body, stream.body.to_string()).map_err(|e| e.to_string())?;
    let script = repo.join("benchmarks/wrk/apiserver.lua");
    let url = format!("https://127.0.0.1:{}{}", cluster.api_port, stream.path);
    // The warm-up's objects and the stream's are named apart (`w-N`, `m-N`).
    let args = |tag: &'static str| {
        [
            body.as_os_str(),
            OsStr::new(stream.method),
            OsStr::new(stream.content_type),
            OsStr::new(&cluster.token),
            OsStr::new(tag),
            OsStr::new(&stream.user),
            OsStr::new(&stream.group),
        ]
    };
    let warm_up = load::Load {
        script: &script,
        script_args: &args("w"),
        connections: CONNECTIONS,
        seconds: timing.warm_up_seconds,
    };
    load::run(&url, &warm_up)?;
    let before = snapshot(cluster, stream)?;
    let load = load::Load {
        script: &script,
        script_args: &args("m"),
        connections: CONNECTIONS,
        seconds: timing.seconds,
    };
    let point = load::run(&url, &load)?;
    let after = snapshot(cluster, stream)?;
    let [request, policy_webhook, null_webhook] = [0, 1, 2].map(|i| after[i].since(&before[i]));
    if policy_webhook.count == 0.0 || null_webhook.count == 0.0 {
        return Err(format!("{}: the API server called no webhook", stream.name));
    }
    Ok(Measured {
        stream: stream.name,
        policy: stream.policy,
        requests: point.requests,
        requests_per_second: point.requests_per_second,
        p99_ms: point.p99 / 1000.0,
        request,
        failure_policy: stream.failure.policy.clone(),
        timeout_seconds: stream.failure.timeout_seconds,
        policy_webhook,
        null_webhook,
    })
}

/// The taints of incident 1's Node the stale stream must have left stored: the policy acted.
fn check_restored(cluster: &Cluster, all: &[Input]) -> Result<(), String> {
    let stale = input(all, STALE)?;
    let old = &stale.request["oldObject"];
    let name = old["metadata"]["name"].as_str().unwrap_or_default();
    let stored: Value = serde_json::from_str(&cluster.api(&ApiRequest {
        method: "GET",
        path: &format!("/api/v1/nodes/{name}"),
        content_type: "application/json",
        body: "",
    })?)
    .map_err(|e| e.to_string())?;
    for taint in old["spec"]["taints"].as_array().into_iter().flatten() {
        let kept = (stored["spec"]["taints"].as_array().into_iter().flatten())
            .any(|t| t["key"] == taint["key"] && t["effect"] == taint["effect"]);
        if !kept {
            return Err(format!(
                "the stale stream removed {taint}: the policy did not restore it"
            ));
        }
    }
    Ok(())
}

/// Every stream through a fresh control plane; `NotRun` where the machine has none.
///
/// # Errors
///
/// A control plane, policy-server or stream that fails.
pub fn run(repo: &Path, modules: &Modules, timing: Timing) -> Result<Outcome, String> {
    let bins = match Binaries::find() {
        Ok(bins) => bins,
        Err(missing) => return Ok(Outcome::NotRun(missing)),
    };
    let all = inputs::all(repo)?;
    let streams = streams(&all, repo)?;
    cluster::clean_up_on_signals();
    let mut cluster = Cluster::start(&bins, "bench-apiserver")?;
    create_objects(&cluster, &all)?;
    let policies = server::policies_yml(&entries(&all, &streams, modules)?)?;
    std::fs::write(cluster.file("policies.yml"), policies).map_err(|e| e.to_string())?;
    cluster.start_policy_server(&bins)?;
    register_webhooks(&cluster, &streams)?;
    let seconds = 5 * timing.seconds;
    let mut measured = Vec::new();
    for stream in &streams {
        let m = measure(&cluster, repo, stream, Timing { seconds, ..timing })?;
        eprintln!(
            "api server: {:<66} {:.0} req/s, webhook mean {:.2} ms policy / {:.2} ms null",
            m.stream,
            m.requests_per_second,
            m.policy_webhook.mean_ms(),
            m.null_webhook.mean_ms()
        );
        measured.push(m);
    }
    check_restored(&cluster, &all)?;
    Ok(Outcome::Ran {
        apiserver: server::version(&bins.kube_apiserver)?,
        seconds,
        measured,
    })
}
