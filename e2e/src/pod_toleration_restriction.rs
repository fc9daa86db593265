//! PodTolerationRestriction side by side (docs/pod-toleration-restriction.md): the same
//! Namespaces and Pods sent to a reference kube-apiserver 1.20 running the upstream plugin with its
//! configuration file, and to the suite's API server, which runs without the plugin and with
//! toleration-injection's `podTolerationRestriction` through policy-server. What each stores or
//! refuses must agree, but for the documented differences, each asserted on its own.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::env::Env;
use crate::kubectl::{Actor, Kubectl, TENANT};
use crate::labels::VARIANT_LABEL;

const DEFAULTS: &str = "scheduler.alpha.kubernetes.io/defaultTolerations";
const WHITELIST: &str = "scheduler.alpha.kubernetes.io/tolerationsWhitelist";
/// The plugin's refusal, which the policy's message keeps.
const CONFLICT: &str =
    "pod tolerations (possibly merged with namespace default tolerations) conflict with its";

fn t(key: &str, operator: &str, value: &str, effect: &str) -> Value {
    let mut t = json!({"key": key});
    for (name, field) in [("operator", operator), ("value", value), ("effect", effect)] {
        if !field.is_empty() {
            t[name] = json!(field);
        }
    }
    t
}

/// What the DefaultTolerationSeconds plugin (on in both API servers) adds to every Pod.
fn not_ready() -> Value {
    t("node.kubernetes.io/not-ready", "Exists", "", "NoExecute")
}
fn unreachable() -> Value {
    t("node.kubernetes.io/unreachable", "Exists", "", "NoExecute")
}
/// The same as DefaultTolerationSeconds stores them, for 300 seconds.
fn stored(toleration: Value) -> Value {
    lasting(toleration, 300)
}
fn lasting(mut toleration: Value, seconds: u32) -> Value {
    toleration["tolerationSeconds"] = json!(seconds);
    toleration
}
fn memory_pressure() -> Value {
    t(
        "node.kubernetes.io/memory-pressure",
        "Exists",
        "",
        "NoSchedule",
    )
}

fn cluster_default() -> Vec<Value> {
    vec![t("dedicated", "Equal", "shared", "NoSchedule")]
}

/// The cluster whitelist names what Kubernetes adds, or the plugin would refuse every Pod.
fn cluster_whitelist() -> Vec<Value> {
    vec![
        t("dedicated", "Exists", "", ""),
        not_ready(),
        unreachable(),
        memory_pressure(),
    ]
}

/// The settings of the deployed `ptr` variant: the plugin configuration's lists, the gaps closed,
/// Namespaces read as by default (from policy-server's cache).
pub fn settings() -> Value {
    json!({"enabled": true, "default": cluster_default(), "whitelist": cluster_whitelist()})
}

/// The `ptr-fresh` variant's: the same, with every Pod's Namespace read from the API server.
pub fn fresh_settings() -> Value {
    let mut settings = settings();
    settings["namespaceReads"] = json!("fresh");
    settings
}

/// The reference API server's admission configuration: the plugin with the same lists.
fn admission_configuration() -> String {
    let configuration = json!({
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "AdmissionConfiguration",
        "plugins": [{
            "name": "PodTolerationRestriction",
            "configuration": {
                "apiVersion": "podtolerationrestriction.admission.k8s.io/v1alpha1",
                "kind": "Configuration",
                "default": cluster_default(),
                "whitelist": cluster_whitelist(),
            }
        }]
    });
    configuration.to_string()
}

/// One case: a Namespace's annotations and a Pod created in it.
struct Case {
    name: &'static str,
    annotations: &'static [(&'static str, &'static str)],
    tolerations: Vec<Value>,
    burstable: bool,
    want: Want,
}

/// What both API servers must do, beyond agreeing.
enum Want {
    /// Store the Pod tolerating these, among others.
    Stores(Vec<Value>),
    /// Store the Pod tolerating these, in this order, and nothing else.
    StoresExactly(Vec<Value>),
    /// Refuse it, saying this.
    Refuses(&'static str),
}

fn namespace(name: &str, annotations: &[(&str, &str)]) -> Value {
    let annotations: BTreeMap<&str, &str> = annotations.iter().copied().collect();
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": name, "labels": {VARIANT_LABEL: "ptr"}, "annotations": annotations}})
}

fn pod(namespace: &str, tolerations: &[Value], burstable: bool) -> Value {
    let mut container = json!({"name": "app", "image": "registry.k8s.io/pause:3.9"});
    if burstable {
        container["resources"] = json!({"requests": {"cpu": "100m"}});
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "app", "namespace": namespace, "labels": {VARIANT_LABEL: "ptr"}},
        "spec": {"containers": [container], "tolerations": tolerations}})
}

/// How long after a Namespace changes a Pod may still be judged by its old annotations under
/// `namespaceReads: cached`: policy-server keeps a `get_resource` answer for five seconds, and
/// the GET that filled its cache may have been answered just before the change
/// (docs/context.md, "How old an answer may be"); one second more for that GET and for the
/// loaded machine.
pub const CACHED_READ_BOUND: Duration = Duration::from_secs(6);

/// A merge patch of a Namespace that sets its whitelist annotation to `tolerations`.
fn whitelist_patch(tolerations: &[Value]) -> String {
    let whitelist = Value::from(tolerations.to_vec()).to_string();
    json!({"metadata": {"annotations": {WHITELIST: whitelist}}}).to_string()
}

/// The stored Pod's tolerations, or the refusal's message.
type Outcome = Result<Vec<Value>, String>;

fn create(k: &Kubectl, object: &Value) -> Outcome {
    let out = k.run(
        None,
        &["create", "-f", "-", "-o", "json"],
        Some(&object.to_string()),
    );
    if !out.ok {
        return Err(out.stderr.trim().to_owned());
    }
    let stored: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
    Ok(stored["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default())
}

/// The Namespace and Pod of `case` created through `k`, in namespace `ns`.
fn run_case(k: &Kubectl, ns: &str, case: &Case) -> Result<Outcome, String> {
    create(k, &namespace(ns, case.annotations)).map_err(|e| format!("namespace {ns}: {e}"))?;
    Ok(create(k, &pod(ns, &case.tolerations, case.burstable)))
}

/// `case` in namespace `ns` through the reference API server's plugin (`upstream`), then through
/// the policy: the two outcomes, in that order.
fn through_both(
    upstream: &Kubectl,
    policy: &Kubectl,
    ns: &str,
    case: &Case,
) -> Result<(Outcome, Outcome), String> {
    Ok((run_case(upstream, ns, case)?, run_case(policy, ns, case)?))
}

/// The cases, in order: the defaults' first, then the whitelists'.
fn cases() -> Vec<Case> {
    let mut cases = defaults_cases();
    cases.extend(whitelist_cases());
    cases
}

/// The cases of the namespace and cluster defaults: which tolerations a Pod gets.
fn defaults_cases() -> Vec<Case> {
    let team_a = t("dedicated", "Equal", "team-a", "NoSchedule");
    vec![
        Case {
            name: "no annotations: the cluster default",
            annotations: &[],
            tolerations: vec![],
            burstable: false,
            want: Want::Stores(vec![t("dedicated", "Equal", "shared", "NoSchedule")]),
        },
        Case {
            name: "namespace defaults and whitelist, a Burstable Pod",
            annotations: &[
                (
                    DEFAULTS,
                    r#"[{"key":"dedicated","operator":"Equal","value":"team-a","effect":"NoSchedule"}]"#,
                ),
                (
                    WHITELIST,
                    r#"[{"key":"dedicated","operator":"Exists"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"},{"key":"node.kubernetes.io/memory-pressure","operator":"Exists","effect":"NoSchedule"}]"#,
                ),
            ],
            tolerations: vec![],
            burstable: true,
            want: Want::Stores(vec![team_a.clone(), memory_pressure()]),
        },
        Case {
            name: "an empty defaults annotation: no default at all",
            annotations: &[(DEFAULTS, "[]")],
            tolerations: vec![],
            burstable: false,
            want: Want::Stores(vec![stored(not_ready()), stored(unreachable())]),
        },
        Case {
            // The taint-eviction controller takes the first toleration matching a taint: the
            // default replaces DefaultTolerationSeconds' shorter one, or the Pod would still be
            // evicted from a not-ready node after 300 s.
            name: "a namespace default that lengthens not-ready",
            annotations: &[(
                DEFAULTS,
                r#"[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":600}]"#,
            )],
            tolerations: vec![],
            burstable: false,
            want: Want::StoresExactly(vec![stored(unreachable()), lasting(not_ready(), 600)]),
        },
        Case {
            name: "the same default for a Burstable Pod",
            annotations: &[(
                DEFAULTS,
                r#"[{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":600}]"#,
            )],
            tolerations: vec![],
            burstable: true,
            want: Want::StoresExactly(vec![
                stored(unreachable()),
                lasting(not_ready(), 600),
                memory_pressure(),
            ]),
        },
    ]
}

/// The cases of the namespace and cluster whitelists, and of an annotation that does not parse.
fn whitelist_cases() -> Vec<Case> {
    vec![
        Case {
            name: "an empty whitelist annotation allows anything",
            annotations: &[(WHITELIST, "")],
            tolerations: vec![t("nvidia.com/gpu", "Exists", "", "NoSchedule")],
            burstable: false,
            want: Want::Stores(vec![t("nvidia.com/gpu", "Exists", "", "NoSchedule")]),
        },
        Case {
            name: "a toleration outside the namespace whitelist",
            annotations: &[(
                WHITELIST,
                r#"[{"Key":"dedicated","Operator":"Equal","Value":"team-a","Effect":"NoSchedule"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}]"#,
            )],
            tolerations: vec![t("dedicated", "Equal", "team-b", "NoSchedule")],
            burstable: false,
            want: Want::Refuses("conflict with its namespace whitelist"),
        },
        Case {
            name: "a toleration outside the cluster whitelist",
            annotations: &[],
            tolerations: vec![t("nvidia.com/gpu", "Exists", "", "NoSchedule")],
            burstable: false,
            want: Want::Refuses("conflict with its cluster whitelist"),
        },
        Case {
            name: "an annotation that is not a list of tolerations",
            annotations: &[(DEFAULTS, "{")],
            tolerations: vec![],
            burstable: false,
            want: Want::Refuses(""),
        },
        Case {
            name: "a toleration without an operator is not covered by an Equal one",
            annotations: &[(
                WHITELIST,
                r#"[{"key":"foo","operator":"Equal","value":"bar","effect":"NoSchedule"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}]"#,
            )],
            tolerations: vec![t("foo", "", "bar", "NoSchedule")],
            burstable: false,
            want: Want::Refuses("conflict with its namespace whitelist"),
        },
    ]
}

fn check_want(case: &Case, outcome: &Outcome) -> Result<(), String> {
    match (&case.want, outcome) {
        (Want::Stores(wanted), Ok(stored)) => match wanted.iter().find(|w| !stored.contains(w)) {
            Some(missing) => Err(format!("stored {stored:?}, without {missing}")),
            None => Ok(()),
        },
        (Want::StoresExactly(wanted), Ok(stored)) if stored == wanted => Ok(()),
        (Want::Refuses(text), Err(message)) if message.contains(text) => Ok(()),
        (_, outcome) => Err(format!("got {outcome:?}")),
    }
}

/// Refusals agree when both refuse: the plugin's whitelist refusal is a 500 and the policy's a
/// 403, and a JSON error is worded by Go or by serde_json (docs/pod-toleration-restriction.md,
/// "Differences"); the whitelist sentence is checked by `check_want`.
fn agree(upstream: &Outcome, policy: &Outcome) -> bool {
    match (upstream, policy) {
        (Ok(a), Ok(b)) => a == b,
        (Err(_), Err(_)) => true,
        _ => false,
    }
}

pub fn side_by_side(env: &mut Env) -> Result<(), String> {
    let config = env.cluster.file("admission-configuration.json");
    std::fs::write(&config, admission_configuration()).map_err(|e| e.to_string())?;
    let kubeconfig = env.cluster.start_reference_apiserver(
        &env.bins,
        &[
            "--enable-admission-plugins=PodTolerationRestriction".to_owned(),
            format!("--admission-control-config-file={}", config.display()),
            format!(
                "--audit-log-path={}",
                env.cluster.file("audit-reference.log").display()
            ),
        ],
    )?;
    let upstream = Kubectl {
        bin: env.kubectl.bin.clone(),
        kubeconfig,
        cache_dir: env.cluster.file("kubectl-cache-reference"),
    };
    grant_tenant_namespaces(&upstream)?;
    let policy = &env.kubectl;
    let mut problems = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let ns = format!("ptr-{i}");
        let (a, b) = through_both(&upstream, policy, &ns, case)?;
        if !agree(&a, &b) {
            problems.push(format!("{}: plugin {a:?}, policy {b:?}", case.name));
        }
        for (who, outcome) in [("plugin", &a), ("policy", &b)] {
            if let Err(e) = check_want(case, outcome) {
                problems.push(format!("{} ({who}): {e}", case.name));
            }
        }
    }
    problems.extend(update_rejudged(&upstream, policy)?);
    problems.extend(gaps(&upstream, policy)?);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The tenant may update Namespaces in the reference cluster too, so that only admission differs.
fn grant_tenant_namespaces(k: &Kubectl) -> Result<(), String> {
    k.ok(
        None,
        &[
            "create",
            "clusterrole",
            "e2e-namespaces",
            "--verb=get,update,patch",
            "--resource=namespaces",
        ],
        None,
    )?;
    k.ok(
        None,
        &[
            "create",
            "clusterrolebinding",
            "e2e-namespaces",
            "--clusterrole=e2e-namespaces",
            &format!("--user={}", TENANT.user),
        ],
        None,
    )
    .map(drop)
}

/// A Pod admitted under a wide whitelist; the whitelist narrowed by an administrator; an UPDATE
/// of the Pod (a label) is then refused by both, as the plugin judges every UPDATE again.
fn update_rejudged(upstream: &Kubectl, policy: &Kubectl) -> Result<Vec<String>, String> {
    let ns = "ptr-update";
    let case = Case {
        name: "UPDATE after the whitelist narrows",
        annotations: &[(
            WHITELIST,
            r#"[{"key":"dedicated","operator":"Exists"},{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute"},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute"}]"#,
        )],
        tolerations: vec![t("dedicated", "Equal", "team-b", "NoSchedule")],
        burstable: false,
        want: Want::Stores(vec![t("dedicated", "Equal", "team-b", "NoSchedule")]),
    };
    let narrowed = whitelist_patch(&[
        t("dedicated", "Equal", "team-a", ""),
        not_ready(),
        unreachable(),
    ]);
    let mut problems = Vec::new();
    for (who, k) in [("plugin", upstream), ("policy", policy)] {
        let created = run_case(k, ns, &case)?;
        if let Err(e) = check_want(&case, &created) {
            problems.push(format!("{} (create, {who}): {e}", case.name));
        }
        k.ok(
            None,
            &["patch", "namespace", ns, "--type", "merge", "-p", &narrowed],
            None,
        )?;
        if who == "policy" {
            // The deployed variant reads Namespaces from policy-server's cache; the plugin's
            // informer is a moment behind too. Past the bound the narrowed whitelist is in force.
            std::thread::sleep(CACHED_READ_BOUND);
        }
        let label = k.run(None, &["label", "pod", "app", "-n", ns, "tier=web"], None);
        if label.ok || !label.stderr.contains(CONFLICT) {
            problems.push(format!(
                "{} ({who}): the label UPDATE was not refused: {}",
                case.name,
                label.describe()
            ));
        }
    }
    Ok(problems)
}

/// The documented differences, each asserted as such.
fn gaps(upstream: &Kubectl, policy: &Kubectl) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    implicit_whitelist(upstream, policy, &mut problems)?;
    covered_toleration_kept(upstream, policy, &mut problems)?;
    update_adding_a_covering_toleration(upstream, policy, &mut problems)?;
    tenant_widening(upstream, policy, &mut problems);
    Ok(problems)
}

/// A toleration of key foo, and one covering it: `foo=bar:NoSchedule` and `foo:NoSchedule`.
fn narrow_and_wide() -> (Value, Value) {
    (
        t("foo", "Equal", "bar", "NoSchedule"),
        t("foo", "Exists", "", "NoSchedule"),
    )
}

/// Gap #64616 through the plugin (`upstream`) and the policy; a difference goes to `problems`.
fn implicit_whitelist(
    upstream: &Kubectl,
    policy: &Kubectl,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    // kubernetes#64616: a whitelist without DefaultTolerationSeconds' tolerations refuses every
    // Pod upstream; the policy whitelists them implicitly.
    let implicit = Case {
        name: "gap #64616: what Kubernetes adds is whitelisted",
        annotations: &[
            (DEFAULTS, "[]"),
            (WHITELIST, r#"[{"key":"dedicated","operator":"Exists"}]"#),
        ],
        tolerations: vec![t("dedicated", "Equal", "team-a", "NoSchedule")],
        burstable: false,
        want: Want::Stores(vec![]),
    };
    let (a, b) = through_both(upstream, policy, "ptr-gap-implicit", &implicit)?;
    if !matches!(&a, Err(e) if e.contains(CONFLICT))
        || !matches!(&b, Ok(t) if t.contains(&stored(not_ready())) && t.contains(&stored(unreachable())))
    {
        problems.push(format!("{}: plugin {a:?}, policy {b:?}", implicit.name));
    }
    Ok(())
}

/// A Pod's covered toleration, dropped by the plugin and kept by the policy; a difference goes
/// to `problems`.
fn covered_toleration_kept(
    upstream: &Kubectl,
    policy: &Kubectl,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    // The plugin's merge drops a Pod's toleration that another covers; the policy appends only.
    let (narrow, wide) = narrow_and_wide();
    let redundant = Case {
        name: "difference: a covered toleration of the Pod is kept",
        annotations: &[(WHITELIST, "[]")],
        tolerations: vec![narrow.clone(), wide.clone()],
        burstable: false,
        want: Want::Stores(vec![]),
    };
    let (a, b) = through_both(upstream, policy, "ptr-gap-merge", &redundant)?;
    let dropped = matches!(&a, Ok(t) if !t.contains(&narrow) && t.contains(&wide));
    let kept = matches!(&b, Ok(t) if t[..2] == [narrow.clone(), wide.clone()]);
    if !dropped || !kept {
        problems.push(format!("{}: plugin {a:?}, policy {b:?}", redundant.name));
    }
    Ok(())
}

/// Gap #97850: an UPDATE adding a covering toleration, refused as invalid upstream and admitted
/// by the policy; a difference goes to `problems`.
fn update_adding_a_covering_toleration(
    upstream: &Kubectl,
    policy: &Kubectl,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let (narrow, wide) = narrow_and_wide();
    // kubernetes#97850: an UPDATE adds a toleration covering one the Pod has; the plugin's merge
    // (memory-pressure, the Pod being Burstable) drops the covered one, which pod validation
    // refuses as a change of an existing toleration; the policy replaces nothing on UPDATE.
    let covered = Case {
        name: "difference: an UPDATE adding a covering toleration",
        annotations: &[(WHITELIST, "[]")],
        tolerations: vec![narrow.clone()],
        burstable: true,
        want: Want::Stores(vec![narrow.clone(), memory_pressure()]),
    };
    let add_wide = json!([{"op": "add", "path": "/spec/tolerations/-", "value": wide}]).to_string();
    let mut outcomes = Vec::new();
    for (who, k) in [("plugin", upstream), ("policy", policy)] {
        let created = run_case(k, "ptr-gap-update", &covered)?;
        if let Err(e) = check_want(&covered, &created) {
            problems.push(format!("{} (create, {who}): {e}", covered.name));
        }
        let args = [
            "patch",
            "pod",
            "app",
            "-n",
            "ptr-gap-update",
            "--type",
            "json",
            "-p",
        ];
        outcomes.push(k.run(None, &[&args[..], &[add_wide.as_str()]].concat(), None));
    }
    let refused_as_invalid = !outcomes[0].ok
        && outcomes[0]
            .stderr
            .contains("existing toleration can not be modified");
    if !refused_as_invalid || !outcomes[1].ok {
        problems.push(format!(
            "{}: plugin {}, policy {}",
            covered.name,
            outcomes[0].describe(),
            outcomes[1].describe()
        ));
    }
    Ok(())
}

/// Gap #59366: the tenant's widening of its own whitelist, admitted upstream and refused by the
/// policy; a difference goes to `problems`.
fn tenant_widening(upstream: &Kubectl, policy: &Kubectl, problems: &mut Vec<String>) {
    // kubernetes#59366: a tenant widens its own whitelist upstream; the policy refuses it.
    let widen = whitelist_patch(&[]);
    let tenant_patch = |k: &Kubectl, who: Actor| {
        k.run(
            Some(who),
            &[
                "patch",
                "namespace",
                "ptr-4",
                "--type",
                "merge",
                "-p",
                &widen,
            ],
            None,
        )
    };
    let (a, b) = (tenant_patch(upstream, TENANT), tenant_patch(policy, TENANT));
    if !a.ok
        || b.ok
        || !b
            .stderr
            .contains("podTolerationRestriction.annotationEditors")
    {
        problems.push(format!(
            "gap #59366: the tenant's widening: plugin {}, policy {}",
            a.describe(),
            b.describe()
        ));
    }
}

/// The annotation guard alone: a tenant may not set, change or remove the annotations; the
/// platform team (system:masters, the default editors) may; other annotations are anyone's.
pub fn annotation_guard(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let ns = "ptr-guard";
    k.apply(&namespace(
        ns,
        &[(WHITELIST, r#"[{"key":"dedicated","operator":"Exists"}]"#)],
    ))?;
    let patch = |who: Option<Actor>, annotations: Value| {
        let body = json!({"metadata": {"annotations": annotations}}).to_string();
        k.run(
            who,
            &["patch", "namespace", ns, "--type", "merge", "-p", &body],
            None,
        )
    };
    let mut problems = Vec::new();
    let refused = [
        ("change", json!({WHITELIST: "[]"})),
        ("remove", json!({WHITELIST: null})),
        (
            "set",
            json!({DEFAULTS: r#"[{"key":"nvidia.com/gpu","operator":"Exists"}]"#}),
        ),
    ];
    for (how, annotations) in refused {
        let out = patch(Some(TENANT), annotations);
        let said = format!("may not {how} the annotation");
        if out.ok || !out.stderr.contains(&said) {
            problems.push(format!("the tenant's {how}: {}", out.describe()));
        }
    }
    let other = patch(Some(TENANT), json!({"team": "a"}));
    if !other.ok {
        problems.push(format!("the tenant's own annotation: {}", other.describe()));
    }
    let admin = patch(None, json!({WHITELIST: "[]"}));
    if !admin.ok {
        problems.push(format!("the admin's change: {}", admin.describe()));
    }
    let stored = k.get("namespace", ns, None)?;
    if stored["metadata"]["annotations"][WHITELIST] != "[]" {
        problems.push(format!(
            "stored annotations: {}",
            stored["metadata"]["annotations"]
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// How old a Namespace the policy judges Pods by may be (docs/context.md, "How old an answer may
/// be"), replayed per variant: Pods created in a burst under a wide namespace whitelist, the
/// whitelist narrowed by an administrator, then Pods the narrowed whitelist refuses created until
/// one is refused. With `namespaceReads: cached` (the default) the first refusal comes within
/// [`CACHED_READ_BOUND`] and the burst costs the API server one GET of the Namespace, or two
/// where it spans policy-server's five seconds; with `fresh` the very next Pod is refused, and
/// every Pod costs a GET. The GETs are counted by the API server's own metrics; nothing else
/// GETs a Namespace meanwhile (kubectl's creates and patches do not).
pub fn namespace_reads(env: &mut Env) -> Result<(), String> {
    let mut problems = Vec::new();
    for (variant, fresh) in [("ptr", false), ("ptr-fresh", true)] {
        variant_reads(env, variant, fresh, &mut problems)?;
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// How many Pods a burst creates.
const BURST: usize = 5;

/// The Pods of one variant's replay, created one after another in its Namespace, named `app-1`,
/// `app-2`, ...: each tolerates `dedicated=team-b`, which the narrowed whitelist does not.
struct VariantPods<'a> {
    /// Who creates them: the admin.
    k: &'a Kubectl,
    /// Their Namespace.
    ns: &'a str,
    /// The variant whose label they carry.
    variant: &'a str,
    /// Whether the variant reads Namespaces fresh (`namespaceReads: fresh`).
    fresh: bool,
    /// How many were created.
    serial: usize,
}

impl VariantPods<'_> {
    /// The next Pod created.
    fn create(&mut self) -> Outcome {
        let team_b = [t("dedicated", "Equal", "team-b", "NoSchedule")];
        self.serial += 1;
        let mut pod = pod(self.ns, &team_b, false);
        pod["metadata"]["name"] = json!(format!("app-{}", self.serial));
        pod["metadata"]["labels"][VARIANT_LABEL] = json!(self.variant);
        create(self.k, &pod)
    }
}

/// The replay for `variant` (`fresh` with `namespaceReads: fresh`): its Namespace under a wide
/// whitelist, a burst of Pods, the whitelist narrowed, Pods until one is refused. What is not as
/// documented goes to `problems`.
fn variant_reads(
    env: &Env,
    variant: &str,
    fresh: bool,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let k = &env.kubectl;
    let wide = r#"[{"key":"dedicated","operator":"Exists"}]"#;
    let ns = format!("{variant}-reads");
    create(k, &namespace(&ns, &[(WHITELIST, wide)])).map_err(|e| format!("namespace {ns}: {e}"))?;
    let mut pods = VariantPods {
        k,
        ns: &ns,
        variant,
        fresh,
        serial: 0,
    };
    let gets = wide_burst(env, &mut pods, problems)?;
    after_the_narrowing(&mut pods, gets, problems)
}

/// A burst of [`BURST`] Pods under the wide whitelist, each to be admitted, and the GETs of their
/// Namespace policy-server sent meanwhile, which it returns: too many or too few go to
/// `problems`.
fn wide_burst(
    env: &Env,
    pods: &mut VariantPods,
    problems: &mut Vec<String>,
) -> Result<usize, String> {
    let (variant, fresh) = (pods.variant, pods.fresh);
    let gets_before = policy_server_gets(env, pods.ns)?;
    let burst = Instant::now();
    for _ in 0..BURST {
        if let Err(e) = pods.create() {
            problems.push(format!("{variant}: a Pod under the wide whitelist: {e}"));
        }
    }
    let gets = policy_server_gets(env, pods.ns)? - gets_before;
    // Cached: one or two GETs for each 5 s period of policy-server's cache the burst spans
    // (one period on an idle machine; a loaded one can stretch the burst past it).
    let periods = 1 + burst.elapsed().as_secs() / 5;
    let expected = if fresh {
        BURST..=BURST
    } else {
        1..=2 * periods as usize
    };
    if !expected.contains(&gets) {
        problems.push(format!(
            "{variant}: {BURST} Pods in {:.1} s cost {gets} GETs of their Namespace, expected \
             {expected:?}",
            burst.elapsed().as_secs_f64()
        ));
    }
    Ok(gets)
}

/// The whitelist narrowed by the admin, then Pods until one is refused: within the bound of the
/// variant's reads, printed with the burst's `gets`, or the delay goes to `problems`.
fn after_the_narrowing(
    pods: &mut VariantPods,
    gets: usize,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let (variant, fresh) = (pods.variant, pods.fresh);
    let narrowed = whitelist_patch(&[t("dedicated", "Equal", "team-a", "")]);
    pods.k.ok(
        None,
        &[
            "patch",
            "namespace",
            pods.ns,
            "--type",
            "merge",
            "-p",
            &narrowed,
        ],
        None,
    )?;
    let narrowed_at = Instant::now();
    let bound = if fresh {
        Duration::ZERO
    } else {
        CACHED_READ_BOUND
    };
    let refused_after = loop {
        match pods.create() {
            Err(e) if e.contains(CONFLICT) => break Some(narrowed_at.elapsed()),
            Err(e) => return Err(format!("{variant}: a Pod after the narrowing: {e}")),
            Ok(_) if narrowed_at.elapsed() > bound => break None,
            Ok(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    };
    match refused_after {
        Some(after) => println!(
            "#   {variant}: the narrowed whitelist refused a Pod {:.1} s after the patch; \
             {BURST} Pods cost {gets} GET(s) of their Namespace",
            after.as_secs_f64()
        ),
        None => problems.push(format!(
            "{variant}: Pods outside the narrowed whitelist still admitted {:.1} s after it \
             was narrowed (bound {:.0} s)",
            narrowed_at.elapsed().as_secs_f64(),
            bound.as_secs_f64()
        )),
    }
    Ok(())
}

/// The GETs of Namespace `ns` policy-server has sent (as the admin), from the API server's audit
/// log: the API server's own reads (NamespaceLifecycle's, while its informer lags on a loaded
/// machine) and other clients' are not the policy's cost. The log is written as each request
/// completes, a moment after its response: the count is read until it holds still for 300 ms.
fn policy_server_gets(env: &Env, ns: &str) -> Result<usize, String> {
    let count = || -> Result<usize, String> {
        let log = std::fs::read_to_string(&env.cluster.audit_log)
            .map_err(|e| format!("audit log: {e}"))?;
        Ok(log
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| {
                e["verb"] == "get"
                    && e["stage"] == "ResponseComplete"
                    && e["objectRef"]["resource"] == "namespaces"
                    && e["objectRef"]["name"] == ns
                    && e["user"]["username"] == "admin"
            })
            .count())
    };
    let mut last = count()?;
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = count()?;
        if now == last {
            return Ok(now);
        }
        last = now;
    }
}

/// The gatekeeper build with `podTolerationRestriction`, deployed through policy-server with its
/// `contextAwareResources` (variant `ptr-gatekeeper`), beside the waPC build (variant `ptr`):
/// policy-server's gatekeeper mode hands it the Namespaces as its inventory, and it refuses a Pod
/// outside its namespace's whitelist annotation and admits one inside it, as the waPC build
/// does (docs/context.md, "Which engine answers which question, from where"). The inventory is
/// rebuilt when a listed kind changes, through a watch: the first Pods after the Namespace's
/// creation may still be refused (500, the Namespace not yet held), so each is retried for a
/// few seconds.
pub fn gatekeeper_reads_the_inventory(env: &mut Env) -> Result<(), String> {
    let k = &env.kubectl;
    let ns = "ptr-inventory";
    let whitelist = r#"[{"key":"dedicated","operator":"Equal","value":"team-a"}]"#;
    // No defaults: the cluster default the settings give is outside this whitelist.
    create(
        k,
        &namespace(ns, &[(DEFAULTS, "[]"), (WHITELIST, whitelist)]),
    )
    .map_err(|e| format!("namespace {ns}: {e}"))?;
    let mut problems = Vec::new();
    for variant in ["ptr-gatekeeper", "ptr"] {
        let mut serial = 0;
        let mut attempt = |tolerations: &[Value]| -> Outcome {
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                serial += 1;
                let mut pod = pod(ns, tolerations, false);
                pod["metadata"]["name"] = json!(format!("{variant}-{serial}"));
                pod["metadata"]["labels"][VARIANT_LABEL] = json!(variant);
                let outcome = create(k, &pod);
                let not_yet_held = matches!(&outcome, Err(e) if e.contains("cannot be read"));
                if !not_yet_held || Instant::now() > deadline {
                    return outcome;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        };
        let inside = attempt(&[t("dedicated", "Equal", "team-a", "NoSchedule")]);
        if let Err(e) = &inside {
            problems.push(format!(
                "{variant}: a Pod inside the namespace whitelist: {e}"
            ));
        }
        let outside = attempt(&[t("dedicated", "Equal", "team-b", "NoSchedule")]);
        let said = "conflict with its namespace whitelist: dedicated=team-b:NoSchedule is not \
                    covered by the annotation scheduler.alpha.kubernetes.io/tolerationsWhitelist \
                    of namespace \"ptr-inventory\"";
        if !matches!(&outside, Err(e) if e.contains(said)) {
            problems.push(format!(
                "{variant}: a Pod outside the namespace whitelist: {outside:?}"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}
