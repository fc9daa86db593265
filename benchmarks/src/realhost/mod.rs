//! The policies the way users run them: Kubewarden's real policy-server on loopback, loaded with
//! `wrk`, each policy interleaved in time with a null module (accepts without reading: the host's
//! own cost), the parse-only baseline, and the anchor of its verdict on the same request and
//! settings: the walk-only module (reads the request, builds nothing, accepts) for an accepted or
//! rejected request, the mutate-only module (hands back the object with one member added) for a
//! mutation. The anchor is the least the verdict costs; the **answer** anchor (`answers.rs`) is
//! the least this answer costs: it reads the whole payload and returns the policy's own answer,
//! so policy ÷ answer is the policy's decision alone. A case whose policy reads its
//! Namespace from the cluster runs with a kube-apiserver on loopback holding it
//! ([`context`]), and its anchors ask for the Namespace the same way first (from policy-server's
//! cache, or fresh: [`crate::inputs::NamespaceReads`]); around each of its points the API server's
//! GETs of Namespaces are counted.

pub mod answers;
pub mod apiserver;
mod context;
pub mod felt;
mod http;
pub mod instructions;
mod load;
pub mod report;
mod server;
pub mod target;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use taintguard_control_plane::cluster::Cluster;
use wasm_tests::examples::Expect;

use crate::inputs::{Input, NamespaceReads};

/// The inputs measured here (policy, name in `inputs.rs`): the incidents' requests, the Pod and
/// DaemonSet CREATEs that get tolerations injected, the DaemonSet judged by a rule with a
/// JSONPath condition (the one member its path names read for it), kubelet status updates of a
/// 25 KB and a 200 KB Node, accepted and (a stale write) restored, and the two updates that
/// write the taint owner record (kured adding its taint, and removing it), a Pod CREATE
/// judged with its namespace's PodTolerationRestriction annotations, the Namespace read through
/// policy-server's cache (the default) and, the same request again, fresh from the API server
/// for every Pod, and the JSONPath case's twin, which its target is measured against
/// ([`target`]).
pub const CASES: [(&str, &str); 13] = [
    (
        "taint-preservation",
        "incident-1-stale-taint-patch [default]",
    ),
    (
        "taint-preservation",
        "incident-3-readd-uninitialized [default]",
    ),
    (
        "taint-preservation",
        "Node status update, 10 taints, 50 images",
    ),
    (
        "taint-preservation",
        "Node status update, 10 taints, 500 images",
    ),
    (
        "taint-preservation",
        "Node stale write, 10 taints, 50 images",
    ),
    ("taint-preservation", "kured-adds-reboot-taint [default]"),
    ("taint-preservation", "kured-removes-own-taint [default]"),
    (
        "toleration-injection",
        "hostpath-helper-pod [hostpath-provisioner]",
    ),
    (
        "toleration-injection",
        "flannel-v0.24.4-daemonset [default]",
    ),
    (
        "toleration-injection",
        "flannel-v0.24.4-daemonset [critical-daemonsets]",
    ),
    ("toleration-injection", crate::inputs::NAMESPACED_POD),
    ("toleration-injection", crate::inputs::NAMESPACED_POD_FRESH),
    ("toleration-injection", target::CONDITION_TWINS[0].2),
];

/// The inputs of [`CASES`] among `inputs`: what the real-host measurements run on.
pub fn cases(inputs: &[Input]) -> Vec<&Input> {
    inputs
        .iter()
        .filter(|i| CASES.iter().any(|&(p, n)| p == i.policy && n == i.name))
        .collect()
}

/// Connections: one per core of a 2-core machine (low), and enough to keep every worker busy
/// (saturated).
pub const CONNECTIONS: [u32; 2] = [2, 8];

/// How long each point runs; `--quick` shortens it to try the harness, not for results.
#[derive(Clone, Copy)]
pub struct Timing {
    pub seconds: u32,
    pub warm_up_seconds: u32,
    pub rounds: usize,
}

pub const FULL: Timing = Timing {
    seconds: 2,
    warm_up_seconds: 1,
    rounds: 3,
};
pub const QUICK: Timing = Timing {
    seconds: 1,
    warm_up_seconds: 1,
    rounds: 1,
};

/// Where a run keeps policy-server's configuration, downloads and log, and the request bodies,
/// relative to the repository.
pub const RUN_DIR: &str = "target/bench/real-host";

/// The modules of one case, in the order each round runs them; `anchor` is the walk-only or a
/// mutate-only module, by the case's verdict ([`anchor`]); `answer` the case's answer anchor.
pub const MODULES: [&str; 5] = ["null", "policy", "baseline", "anchor", "answer"];

/// Where [`MODULES`] places each.
pub const POLICY: usize = 1;
pub const BASELINE: usize = 2;
pub const ANCHOR: usize = 3;
pub const ANSWER: usize = 4;

/// The anchor of a case's verdict: what the least module answering it must do, the Namespace's
/// read included, asked as the policy asks it, where the policy reads it. Only mutations have a
/// context-aware anchor.
pub fn anchor(input: &Input) -> Result<&'static str, String> {
    match (input.expect, input.namespace_reads()) {
        (Expect::Mutated, None) => Ok("mutate"),
        (Expect::Mutated, Some(reads)) => Ok(mutate_asking(reads)),
        (Expect::Accepted | Expect::Rejected, None) => Ok("walk"),
        (verdict, Some(_)) => Err(format!(
            "{} {}: no anchor reads the Namespace for a verdict {verdict:?}",
            input.policy, input.name
        )),
    }
}

/// The mutate anchor that asks for the Namespace as a policy reading it `reads` asks: its name,
/// and the prefix of its ids in policy-server.
fn mutate_asking(reads: NamespaceReads) -> &'static str {
    match reads {
        NamespaceReads::Cached => "mutate-namespace",
        NamespaceReads::Fresh => "mutate-namespace-fresh",
    }
}

/// Points of one module at one concurrency, one per round.
#[derive(Default)]
pub struct Series {
    pub requests_per_second: Vec<f64>,
    pub p99: Vec<f64>,
    /// policy-server's CPU time (user and kernel) per request, in microseconds.
    pub cpu_per_request: Vec<f64>,
    /// policy-server's peak resident memory during the point, in KiB.
    pub peak_memory_kib: Vec<f64>,
    /// The GETs of Namespaces the API server answered during the point, per 1,000 of the point's
    /// requests (whoever sent them: policy-server, or the API server itself); empty for a case
    /// that reads no Namespace.
    pub namespace_gets_per_1000: Vec<f64>,
}

pub struct Measured {
    pub connections: u32,
    /// Indexed as [`MODULES`].
    pub series: [Series; 5],
}

impl Measured {
    /// Per round, `module`'s req/s over the null module's in the same round.
    pub fn ratios(&self, module: usize) -> Vec<f64> {
        self.ratios_to(module, 0)
    }

    /// Per round, `module`'s req/s over `base`'s in the same round.
    pub fn ratios_to(&self, module: usize, base: usize) -> Vec<f64> {
        self.per_round((module, base), |s| &s.requests_per_second, |m, b| m / b)
    }

    /// Per round, `base`'s CPU time per request over `module`'s in the same round: the share of
    /// `base`'s throughput `module` keeps where policy-server's CPU is what limits it.
    pub fn cpu_ratios_to(&self, module: usize, base: usize) -> Vec<f64> {
        self.per_round((module, base), |s| &s.cpu_per_request, |m, b| b / m)
    }

    /// `ratio` of `module`'s and `base`'s `figure` in each round.
    fn per_round(
        &self,
        (module, base): (usize, usize),
        figure: fn(&Series) -> &Vec<f64>,
        ratio: fn(f64, f64) -> f64,
    ) -> Vec<f64> {
        let modules = figure(&self.series[module]).iter();
        modules
            .zip(figure(&self.series[base]))
            .map(|(m, b)| ratio(*m, *b))
            .collect()
    }
}

pub struct CaseResult {
    pub policy: &'static str,
    pub name: String,
    pub expect: Expect,
    pub anchor: &'static str,
    pub body_bytes: usize,
    pub points: Vec<Measured>,
    /// p99 at a fixed moderate rate, policy against null.
    pub fixed_rate: FixedRate,
}

/// The p99 latencies (microseconds) of the policy and the null module at one rate, open loop
/// (`felt.rs`): half the policy's saturated req/s, so the policy runs at about half load.
pub struct FixedRate {
    pub rate: f64,
    pub policy: f64,
    pub null: f64,
}

pub struct Run {
    pub version: String,
    pub args: Vec<String>,
    pub cores: usize,
    pub timing: Timing,
    pub cases: Vec<CaseResult>,
    /// Cases selected but not run, and why (no control plane for a context-aware one).
    pub not_run: Vec<(String, String)>,
    /// policy-server's start-up with both policies and with null modules.
    pub startup: felt::Startup,
    /// The webhooks' latency as the API server measures it.
    pub apiserver: apiserver::Outcome,
}

/// The section either ran or says in one line why not.
pub enum Outcome {
    Ran(Run),
    NotRun(String),
}

/// The modules policy-server loads for the measured cases.
pub struct Modules {
    pub null: PathBuf,
    pub baseline: PathBuf,
    /// The anchors: `benchmarks/walk-policy` and `benchmarks/mutate-policy`, and the latter
    /// built to ask for the request's Namespace first, from policy-server's cache (feature
    /// `namespace`) and fresh (`namespace-fresh`).
    pub walk: PathBuf,
    pub mutate: PathBuf,
    pub mutate_namespace: PathBuf,
    pub mutate_namespace_fresh: PathBuf,
    /// The answer anchors' folder (`answers.rs`).
    pub answers: PathBuf,
    /// `dist/`, holding `<policy>.wasm`.
    pub dist: PathBuf,
}

impl Modules {
    /// The module of [`mutate_asking`]`(reads)`.
    fn mutate_asking(&self, reads: NamespaceReads) -> &PathBuf {
        match reads {
            NamespaceReads::Cached => &self.mutate_namespace,
            NamespaceReads::Fresh => &self.mutate_namespace_fresh,
        }
    }
}

/// What policy-server answered, as one of the example verdicts.
fn verdict(answer: &Value) -> Result<Expect, String> {
    let response = &answer["response"];
    match response["allowed"].as_bool() {
        Some(false) => Ok(Expect::Rejected),
        Some(true) if response["patch"].is_string() => Ok(Expect::Mutated),
        Some(true) => Ok(Expect::Accepted),
        None => Err(format!("no AdmissionReview response: {answer}")),
    }
}

/// POSTs `body` to `url` once.
fn post(url: &str, body: &Path) -> Result<Value, String> {
    let out = Command::new("curl")
        .args([
            "-sS",
            "--fail-with-body",
            "-H",
            "Content-Type: application/json",
        ])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(url)
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "POST {url}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("POST {url}: {e}"))
}

/// A case ready to load: its policy ids and its AdmissionReview body on disk.
struct Prepared<'a> {
    input: &'a Input,
    anchor: &'static str,
    ids: [String; 5],
    body: PathBuf,
    body_bytes: usize,
}

/// One policy id per module and distinct (policy, settings): policy-server hands each module the
/// same settings, so its request to every module is the same size.
fn prepare<'a>(
    inputs: &'a [&'a Input],
    modules: &Modules,
    dir: &Path,
) -> Result<(Vec<Prepared<'a>>, Vec<server::Entry>), String> {
    let bodies = dir.join("bodies");
    std::fs::create_dir_all(&bodies).map_err(|e| format!("{}: {e}", bodies.display()))?;
    let mut configurations: Vec<(&str, &Value)> = Vec::new();
    let mut entries = Vec::new();
    let mut prepared = Vec::new();
    for (n, input) in inputs.iter().enumerate() {
        let key = (input.policy, &input.settings);
        let index = match configurations.iter().position(|c| *c == key) {
            Some(index) => index,
            None => {
                let index = configurations.len();
                configurations.push(key);
                entries.extend(module_entries(input, index, modules));
                index
            }
        };
        let (body, body_bytes) = write_body(input, &bodies.join(format!("{n}.json")))?;
        let anchor = anchor(input)?;
        entries.push(answer_entry(input, n, modules)?);
        prepared.push(Prepared {
            input,
            anchor,
            ids: MODULES.map(|module| match module {
                "anchor" => format!("{anchor}-{index}"),
                "answer" => format!("answer-{n}"),
                module => format!("{module}-{index}"),
            }),
            body,
            body_bytes,
        });
    }
    Ok((prepared, entries))
}

/// The entries of the `index`th distinct (policy, settings), first met in `input`: the null
/// module, the policy, the baseline and the anchors, with the anchor that asks for the Namespace
/// as the policy asks when it reads one.
fn module_entries(input: &Input, index: usize, modules: &Modules) -> Vec<server::Entry> {
    let policy = modules.dist.join(format!("{}.wasm", input.policy));
    let mut loaded = vec![
        ("null", &modules.null),
        ("policy", &policy),
        ("baseline", &modules.baseline),
        ("walk", &modules.walk),
        ("mutate", &modules.mutate),
    ];
    if let Some(reads) = input.namespace_reads() {
        loaded.push((mutate_asking(reads), modules.mutate_asking(reads)));
    }
    loaded
        .into_iter()
        .map(|(module, path)| server::Entry {
            id: format!("{module}-{index}"),
            module: path.clone(),
            settings: input.settings.clone(),
            reads_namespaces: input.namespace.is_some(),
        })
        .collect()
}

/// Writes `input`'s AdmissionReview to `body`: the file and its size.
fn write_body(input: &Input, body: &Path) -> Result<(PathBuf, usize), String> {
    let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                        "request": input.request});
    let text = serde_json::to_vec(&review).expect("JSON values serialise");
    std::fs::write(body, &text).map_err(|e| format!("{}: {e}", body.display()))?;
    Ok((body.to_owned(), text.len()))
}

/// The entry of the `n`th case's answer anchor, which `./build.sh bench` must have built.
fn answer_entry(input: &Input, n: usize, modules: &Modules) -> Result<server::Entry, String> {
    let answer = answers::module(&modules.answers, input);
    if !answer.is_file() {
        return Err(format!(
            "{}: no answer anchor for {} {} (`./build.sh bench` builds them)",
            answer.display(),
            input.policy,
            input.name
        ));
    }
    Ok(server::Entry {
        id: format!("answer-{n}"),
        module: answer,
        settings: input.settings.clone(),
        reads_namespaces: input.namespace.is_some(),
    })
}

/// Every module's answer to the case, once, before any load: the policy's and the anchor's must
/// be the expected verdict (the walk-only anchor accepts where the policy rejects) and the
/// floors' an acceptance, so no figure is of an error path; the answer anchor's AdmissionReview
/// must be the policy's, member for member.
fn check(server: &server::PolicyServer, case: &Prepared) -> Result<(), String> {
    let mut policy_answer = Value::Null;
    for (module, id) in MODULES.iter().zip(&case.ids) {
        let answer = post(&server.url(id), &case.body)?;
        if *module == "answer" && answer != policy_answer {
            return Err(format!(
                "{} {} in policy-server: the answer anchor answered {answer}, the policy {policy_answer}",
                case.input.policy, case.input.name
            ));
        }
        let got = verdict(&answer)?;
        let want = match (*module, case.input.expect) {
            ("policy" | "answer", expect) | ("anchor", expect @ Expect::Mutated) => expect,
            _ => Expect::Accepted,
        };
        if *module == "policy" {
            policy_answer = answer.clone();
        }
        if got != want {
            return Err(format!(
                "{} {} in policy-server: {module} answered {got:?} where {want:?} was expected: {answer}",
                case.input.policy, case.input.name
            ));
        }
    }
    Ok(())
}

/// What the cases are measured in and how long.
struct Bench<'a> {
    /// The policy-server loaded with every case's modules.
    server: &'a server::PolicyServer,
    /// wrk's script that POSTs a case's body.
    script: &'a Path,
    timing: Timing,
}

/// Every module of `case` at `connections`, round after round. `cluster`, for a case that reads
/// its Namespace: the API server whose GETs of Namespaces each point counts.
fn measure(
    bench: &Bench<'_>,
    case: &Prepared,
    connections: u32,
    cluster: Option<&Cluster>,
) -> Result<Measured, String> {
    let Bench {
        server,
        script,
        timing,
    } = *bench;
    let urls = case.ids.clone().map(|id| server.url(&id));
    let point = |url: &str, seconds| {
        let load = load::Load {
            script,
            script_args: &[case.body.as_os_str()],
            connections,
            seconds,
        };
        load::run(url, &load).map_err(|e| format!("{e}\n{}", server.log_tail()))
    };
    for url in &urls {
        point(url, timing.warm_up_seconds)?;
    }
    let namespace_gets = || {
        cluster
            .map(|cluster| cluster.requests_served("GET", "namespaces"))
            .transpose()
    };
    let mut series: [Series; 5] = Default::default();
    for _ in 0..timing.rounds {
        for (url, series) in urls.iter().zip(&mut series) {
            let gets_before = namespace_gets()?;
            server.reset_peak_memory()?;
            let cpu_before = server.cpu_seconds()?;
            let p = point(url, timing.seconds)?;
            let cpu = server.cpu_seconds()? - cpu_before;
            series.requests_per_second.push(p.requests_per_second);
            series.p99.push(p.p99);
            series.cpu_per_request.push(cpu * 1e6 / p.requests);
            series.peak_memory_kib.push(server.peak_memory_kib()?);
            if let (Some(before), Some(after)) = (gets_before, namespace_gets()?) {
                series
                    .namespace_gets_per_1000
                    .push((after - before) * 1000.0 / p.requests);
            }
        }
    }
    Ok(Measured {
        connections,
        series,
    })
}

/// The policy's and the null module's p99 at half the policy's saturated req/s (median over
/// rounds), `2 × timing.seconds` each.
fn fixed_rate(
    server: &server::PolicyServer,
    case: &Prepared,
    points: &[Measured],
    timing: Timing,
) -> Result<FixedRate, String> {
    let saturated = points
        .iter()
        .max_by_key(|m| m.connections)
        .ok_or("no load point measured")?;
    let rps = report::median(&saturated.series[POLICY].requests_per_second);
    let rate = (rps / 2.0 / 10.0).floor().max(1.0) * 10.0;
    let body = std::fs::read(&case.body).map_err(|e| format!("{}: {e}", case.body.display()))?;
    let seconds = f64::from(2 * timing.seconds);
    let p99 = |module: usize| {
        let path = format!("/validate/{}", case.ids[module]);
        let target = felt::Target {
            port: server.port,
            path: &path,
            body: &body,
        };
        felt::p99_at(&target, rate, seconds)
    };
    Ok(FixedRate {
        rate,
        null: p99(0)?,
        policy: p99(POLICY)?,
    })
}

/// `case` at each number of connections, then at a fixed rate, each point printed as it is
/// measured so a long run shows its progress.
fn measure_case(
    bench: &Bench<'_>,
    case: &Prepared,
    cluster: Option<&Cluster>,
) -> Result<CaseResult, String> {
    let mut points = Vec::new();
    for connections in CONNECTIONS {
        let measured = measure(bench, case, connections, cluster)?;
        eprintln!(
            "{:<22} {:<46} {connections} connections: {}",
            case.input.policy,
            case.input.name,
            report::line(&measured)
        );
        points.push(measured);
    }
    let fixed_rate = fixed_rate(bench.server, case, &points, bench.timing)?;
    eprintln!(
        "{:<22} {:<46} at {:.0} req/s: p99 policy {:.2} ms, null {:.2} ms",
        case.input.policy,
        case.input.name,
        fixed_rate.rate,
        fixed_rate.policy / 1000.0,
        fixed_rate.null / 1000.0
    );
    Ok(CaseResult {
        policy: case.input.policy,
        name: case.input.name.clone(),
        expect: case.input.expect,
        anchor: case.anchor,
        body_bytes: case.body_bytes,
        points,
        fixed_rate,
    })
}

/// The cases of `inputs` named in [`CASES`], measured in one policy-server; `NotRun` when there
/// is no policy-server to run.
pub fn run(
    repo: &Path,
    inputs: &[Input],
    modules: &Modules,
    timing: Timing,
) -> Result<Outcome, String> {
    let binary = match server::find() {
        Ok(binary) => binary,
        Err(why) => return Ok(Outcome::NotRun(why)),
    };
    let cases = cases(inputs);
    if cases.is_empty() {
        return Ok(Outcome::NotRun("no real-host input selected".to_owned()));
    }
    let dir = repo.join(RUN_DIR);
    let context = context::start(cases)?;
    if context.cases.is_empty() {
        let why: Vec<String> = context
            .not_run
            .iter()
            .map(|(c, why)| format!("{c}: {why}"))
            .collect();
        return Ok(Outcome::NotRun(why.join("; ")));
    }
    let (prepared, entries) = prepare(&context.cases, modules, &dir)?;
    let script = repo.join("benchmarks/wrk/post.lua");
    let per_case = timing.warm_up_seconds as usize + timing.rounds * timing.seconds as usize;
    eprintln!(
        "real host: {} inputs in {}, about {} s of load",
        prepared.len(),
        binary.display(),
        prepared.len() * CONNECTIONS.len() * MODULES.len() * per_case
    );
    let server = server::PolicyServer::start(&binary, &dir, &entries, context.kubeconfig())?;
    for case in &prepared {
        check(&server, case)?;
    }
    let bench = Bench {
        server: &server,
        script: &script,
        timing,
    };
    let mut results = Vec::new();
    for case in &prepared {
        let cluster = context
            .cluster
            .as_ref()
            .filter(|_| case.input.namespace.is_some());
        results.push(measure_case(&bench, case, cluster)?);
    }
    let (version, args) = (server.version.clone(), server.args.clone());
    // Alone on the machine's cores: the start-ups are timed with nothing else loaded.
    drop(server);
    let startup = felt::startup(&binary, &dir.join("startup"), modules, timing.rounds)?;
    let apiserver = apiserver::run(repo, modules, timing)?;
    Ok(Outcome::Ran(Run {
        version,
        args,
        cores: std::thread::available_parallelism().map_or(1, usize::from),
        timing,
        cases: results,
        not_run: context.not_run,
        startup,
        apiserver,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};
    use wasm_tests::examples::Expect;

    use super::{anchor, Measured, Series, CASES, POLICY};
    use crate::inputs::Input;

    /// The anchor asks for the Namespace as the policy does: not at all, through policy-server's
    /// cache (the default, and `namespaceReads: cached`), or fresh; a verdict other than a
    /// mutation has no anchor that asks.
    #[test]
    fn the_anchor_asks_as_the_policy_asks() {
        let input = |expect, namespace: Option<Value>, settings: Value| Input {
            policy: "toleration-injection",
            family: None,
            name: "case".to_owned(),
            payload: Vec::new(),
            request: json!({}),
            settings,
            expect,
            namespace,
        };
        let team = || Some(json!({"metadata": {"name": "team-a"}}));
        let restriction = |reads: Value| json!({"podTolerationRestriction": {"enabled": true, "namespaceReads": reads}});
        // (verdict, Namespace, settings, anchor, or None for none)
        let cases = [
            (Expect::Mutated, None, json!({}), Some("mutate")),
            (Expect::Accepted, None, json!({}), Some("walk")),
            (Expect::Rejected, None, json!({}), Some("walk")),
            (
                Expect::Mutated,
                team(),
                json!({"podTolerationRestriction": {"enabled": true}}),
                Some("mutate-namespace"),
            ),
            (
                Expect::Mutated,
                team(),
                restriction(json!("cached")),
                Some("mutate-namespace"),
            ),
            (
                Expect::Mutated,
                team(),
                restriction(json!("fresh")),
                Some("mutate-namespace-fresh"),
            ),
            // Settings that name fresh reads for a case that reads no Namespace ask nothing.
            (
                Expect::Mutated,
                None,
                restriction(json!("fresh")),
                Some("mutate"),
            ),
            (Expect::Accepted, team(), restriction(json!("fresh")), None),
        ];
        for (expect, namespace, settings, want) in cases {
            let input = input(expect, namespace, settings);
            let got = anchor(&input).ok();
            assert_eq!(
                got, want,
                "{expect:?} {:?} {}",
                input.namespace, input.settings
            );
        }
    }

    /// Every real-host case is one input; the two Pods judged with their Namespace's annotations
    /// are the same request on the same Namespace, one read through the cache and one fresh, and
    /// their answer anchors are built with the feature that asks so.
    #[test]
    fn every_case_is_one_input_and_the_namespaced_pods_differ_only_in_their_reads() {
        let inputs = crate::inputs::all(&wasm_tests::repo_root()).unwrap();
        for (policy, name) in CASES {
            let found = inputs
                .iter()
                .filter(|i| i.policy == policy && i.name == name)
                .count();
            assert_eq!(found, 1, "{policy} {name}");
        }
        let find = |name: &str| inputs.iter().find(|i| i.name == name).unwrap();
        let cached = find(crate::inputs::NAMESPACED_POD);
        let fresh = find(crate::inputs::NAMESPACED_POD_FRESH);
        assert_eq!(cached.request, fresh.request);
        assert_eq!(cached.namespace, fresh.namespace);
        assert_eq!(
            [cached, fresh].map(|i| i.namespace_reads().map(|r| r.feature())),
            [Some("namespace"), Some("namespace-fresh")]
        );
        assert_eq!(
            [anchor(cached), anchor(fresh)],
            [Ok("mutate-namespace"), Ok("mutate-namespace-fresh")]
        );
    }

    /// Both ratios say how much of the base's throughput the module keeps: req/s module ÷ base,
    /// CPU per request base ÷ module, round by round.
    #[test]
    fn ratios_pair_each_round_with_the_same_round() {
        let series = |requests_per_second: [f64; 2], cpu_per_request: [f64; 2]| Series {
            requests_per_second: requests_per_second.to_vec(),
            cpu_per_request: cpu_per_request.to_vec(),
            ..Series::default()
        };
        let measured = Measured {
            connections: 8,
            series: [
                series([100.0, 200.0], [10.0, 20.0]),
                series([50.0, 150.0], [20.0, 25.0]),
                Series::default(),
                Series::default(),
                Series::default(),
            ],
        };
        assert_eq!(measured.ratios(POLICY), [0.5, 0.75]);
        assert_eq!(measured.cpu_ratios_to(POLICY, 0), [0.5, 0.8]);
    }
}
