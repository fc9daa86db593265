//! Toleration injection: scoped add-if-missing tolerations for Pods and every pod template,
//! alias groups (control-plane / master), and restriction of dangerous tolerations.
//!
//! The rules' tolerations are only ever appended, never rewritten, and only when nothing the
//! workload already tolerates covers them: coverage is judged the way the scheduler matches, not
//! by equality. PodTolerationRestriction's merge on a Pod CREATE also replaces what its additions
//! cover, as the plugin does (docs/pod-toleration-restriction.md, "Merging"). Workloads are
//! handled at CREATE and UPDATE. A Pod gets its tolerations at CREATE;
//! a Pod UPDATE may only add tolerations (Kubernetes' pod update validation), and the scheduler
//! and the taint manager honour the added ones, so restrictions judge what an UPDATE adds
//! (docs/admission.md).

// The exports (`#[no_mangle]`, the OPA ones `unsafe extern "C"`) come from the adapters'
// `policy!` macros and are the adapters' code: the lint checks this crate's own source.
#![forbid(unsafe_code)]

#[cfg(feature = "wasm")]
mod exports;

mod conditions;
mod pod_toleration_restriction;
pub mod settings;
mod workload;

use std::cell::OnceCell;

use serde_json::Value;

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::cluster::{nodes_of_list, Cluster, ClusterError, ClusterNode};
use taintguard::json::Reached;
use taintguard::policy::{Asks, Half, Policy};
use taintguard::principal::Principal;
use taintguard::toleration::{Coverage, Operator, Toleration};
use taintguard::verdict::{quoted, Verdict};

use pod_toleration_restriction::{judge_namespace, Namespaces, Outcome, PluginToleration, Pod};
pub use settings::Settings;
use settings::{AliasKey, Match, NodeTaints, Restriction, Rule};
use workload::{Kind, Workload};

pub struct TolerationInjection;

impl Policy for TolerationInjection {
    const NAME: &'static str = "toleration-injection";
    type Settings = Settings;
    /// The nodes' taints, for `nodeTaints` rules; a Pod's Namespace, for
    /// `podTolerationRestriction`.
    const ASKS: Asks = Asks {
        nodes: true,
        access: false,
        namespaces: true,
    };

    /// Engines that cannot mutate only get the restrictions: computing the tolerations the
    /// mutating half would add, and the object with them, would be thrown away.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Verdict {
        judge_request(request, settings, half, cluster)
    }
}

fn judge_request(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    half: Half,
    cluster: &dyn Cluster,
) -> Verdict {
    if request.kind.kind.as_str() == "Namespace" && request.kind.group.as_str().is_empty() {
        return judge_namespace(request, &settings.pod_toleration_restriction);
    }
    let Some(kind) = Kind::of(request) else {
        return Verdict::accept();
    };
    if !matches!(request.operation, Operation::Create | Operation::Update) {
        return Verdict::accept();
    }
    let Some(object) = &request.object else {
        return malformed("the request has no object");
    };
    let workload = match Workload::read(object, kind, "object") {
        Ok(workload) => workload,
        Err(message) => return malformed(&message),
    };
    if kind == Kind::Pod && request.operation == Operation::Update {
        let Some(old) = &request.old_object else {
            return malformed("a Pod UPDATE without oldObject cannot be judged");
        };
        return match Workload::read(old, kind, "oldObject") {
            Ok(old) => match judge_pod_update(request, settings, &workload, &old.tolerations) {
                refused if !refused.accepted() => refused,
                _ => judge_plugin_update(request, settings, &workload, (half, cluster)),
            },
            Err(message) => malformed(&message),
        };
    }
    match matching(request, settings, &workload) {
        Ok(matched) => judge(&matched, half, cluster),
        Err(rejection) => rejection,
    }
}

fn malformed(message: &str) -> Verdict {
    Verdict::reject(400, format!("malformed request: {message}"))
}

/// The admitted object and its request, as the matchers see them.
struct Subject<'s> {
    workload: &'s Workload<'s>,
    namespace: &'s str,
    who: Principal<'s>,
    /// The object as a `Value`, parsed when the first JSONPath condition that needs it is
    /// evaluated and shared by the others; the parse error when it is not one: nesting deeper
    /// than serde_json's recursion limit (raw-value capture does not count it), or a string or
    /// number a `Value` cannot hold.
    object: OnceCell<Result<Value, String>>,
    /// The first such error in a member a path of member names reached.
    unreadable_member: OnceCell<String>,
}

impl Subject<'_> {
    /// A condition on an object that does not parse fails; `matching` then rejects the object,
    /// so that no `exists: false` condition holds on what could not be read.
    fn condition_holds(&self, c: &conditions::Condition) -> bool {
        if let Some(names) = c.member_names() {
            return match self.member_value(&names) {
                Ok(found) => c.holds_on(&Vec::from_iter(found.as_ref())),
                Err(e) => {
                    let _ = self.unreadable_member.set(e);
                    false
                }
            };
        }
        let object = self
            .object
            .get_or_init(|| serde_json::from_str(self.workload.text()).map_err(|e| e.to_string()));
        object.as_ref().is_ok_and(|object| c.holds(object))
    }

    /// The value a path of member `names` selects, read from the members on its way alone: a
    /// Pod's or template's spec is already read as members, so `$.spec.template.spec.x` parses
    /// only `x`, where the whole object parsed into a `Value` was most of what such a rule cost
    /// (benchmarks/cost.md, "JSONPath member paths").
    fn member_value(&self, names: &[&str]) -> Result<Option<Value>, String> {
        let (value, left) = match self.workload.object().follow(names) {
            None => return Ok(None),
            Some(Reached::Object(object)) => (serde_json::from_str(object.text()), 0),
            Some(Reached::Raw(text, left)) => (serde_json::from_str(text), left),
        };
        let value: Value = value.map_err(|e| e.to_string())?;
        let inside = &names[names.len() - left..];
        let found = inside
            .iter()
            .try_fold(&value, |at, name| at.as_object()?.get(*name));
        Ok(found.cloned())
    }

    fn name_matches(&self, m: &Match) -> bool {
        let name = self
            .workload
            .name
            .as_ref()
            .filter(|n| !n.as_str().is_empty())
            .or(self.workload.generate_name.as_ref());
        name.is_some_and(|n| m.names.iter().any(|g| g.matches(n.as_str())))
    }

    /// Cheap tests first; JSONPath conditions (which need the object parsed) last, so that the
    /// object is parsed only for a rule that matches otherwise.
    fn matches(&self, m: &Match) -> bool {
        (m.kinds.is_empty() || m.kinds.contains(&self.workload.kind))
            && (m.namespaces.is_empty() || m.namespaces.iter().any(|g| g.matches(self.namespace)))
            && m.principals.as_ref().is_none_or(|p| p.allows(&self.who))
            && m.labels
                .as_ref()
                .is_none_or(|s| s.matches(&self.workload.labels))
            && (m.names.is_empty() || self.name_matches(m))
            && m.conditions.iter().all(|c| self.condition_holds(c))
    }

    fn describe(&self) -> String {
        let name = self
            .workload
            .name
            .as_ref()
            .or(self.workload.generate_name.as_ref())
            .map_or("(unnamed)", |n| n.as_str());
        if self.namespace.is_empty() {
            format!("{} {name}", self.workload.kind.as_str())
        } else {
            format!("{} {}/{name}", self.workload.kind.as_str(), self.namespace)
        }
    }
}

/// A request's subject, the rules that match it and the settings they come from: what judging
/// a workload reads.
struct Matched<'s> {
    settings: &'s Settings,
    subject: Subject<'s>,
    rules: Vec<&'s Rule>,
}

/// The subject of a request and the rules that match it; the rejection of an object that
/// JSONPath conditions cannot read.
fn matching<'s>(
    request: &'s AdmissionRequest<'_>,
    settings: &'s Settings,
    workload: &'s Workload<'s>,
) -> Result<Matched<'s>, Verdict> {
    let namespace = request
        .namespace
        .as_ref()
        .or(workload.namespace.as_ref())
        .map_or("", |n| n.as_str());
    let subject = Subject {
        workload,
        namespace,
        who: request.principal(),
        object: OnceCell::new(),
        unreadable_member: OnceCell::new(),
    };
    let rules: Vec<&Rule> = settings
        .rules
        .iter()
        .filter(|r| subject.matches(&r.matcher))
        .collect();
    let unreadable = (subject.object.get())
        .and_then(|parsed| parsed.as_ref().err())
        .or(subject.unreadable_member.get());
    if let Some(problem) = unreadable {
        return Err(malformed(&format!(
            "object cannot be read for JSONPath conditions: {problem}"
        )));
    }
    Ok(Matched {
        settings,
        subject,
        rules,
    })
}

/// The rejection of tolerations that restrictions forbid. A request without a username is what
/// Kubewarden's background audit sends (the stored object, an empty `userInfo`): its message says
/// that the object is reported whoever created it.
fn refusal(subject: &Subject<'_>, violations: &[String], update: bool) -> Verdict {
    let what = subject.describe();
    let violations = violations.join("; ");
    let message = if subject.who.username.is_empty() {
        format!(
            "{what} tolerates {violations}, which only the namespaces and principals each \
             restriction allows may. The requester is unknown (a background audit judges the stored \
             object alone), so allowances by principal do not apply and the object is reported \
             whoever created it.",
        )
    } else {
        let attempt = if update {
            "may not add a toleration of"
        } else {
            "may not tolerate"
        };
        format!(
            "{what} (requested by {}) {attempt} {violations}. Only the namespaces and principals \
             each restriction allows may; ask a cluster administrator to add them to the policy \
             settings.",
            subject.who.describe(),
        )
    };
    Verdict::reject(403, message)
}

/// A Pod UPDATE: nothing is injected; restrictions judge the tolerations it adds. Tolerations
/// the Pod already had stay allowed, `tolerationSeconds` aside, which Kubernetes lets an UPDATE
/// change on an existing toleration.
fn judge_pod_update(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    workload: &Workload<'_>,
    before: &[Toleration<'_>],
) -> Verdict {
    let added = |t: &&Toleration<'_>| !before.iter().any(|b| b.same_but_seconds(t));
    if settings.restrictions.is_empty() || !workload.tolerations.iter().any(|t| added(&t)) {
        return Verdict::accept();
    }
    let matched = match matching(request, settings, workload) {
        Ok(matched) => matched,
        Err(rejection) => return rejection,
    };
    let violations = matched.restriction_violations(added);
    if violations.is_empty() {
        Verdict::accept()
    } else {
        refusal(&matched.subject, &violations, true)
    }
}

/// A Pod UPDATE under `podTolerationRestriction`: the plugin adds the memory-pressure toleration
/// to a Pod that is not BestEffort, and holds every toleration to the whitelist again.
fn judge_plugin_update(
    request: &AdmissionRequest<'_>,
    settings: &Settings,
    workload: &Workload<'_>,
    (half, cluster): (Half, &dyn Cluster),
) -> Verdict {
    if !settings.pod_toleration_restriction.enabled {
        return Verdict::accept();
    }
    let matched = match matching(request, settings, workload) {
        Ok(matched) => matched,
        Err(rejection) => return rejection,
    };
    let plugin = match matched.plugin_outcome(half, cluster, false) {
        Ok(plugin) => plugin,
        Err(refusal) => return refusal,
    };
    if half == Half::Validating || plugin.adds_nothing() {
        return Verdict::accept();
    }
    let texts: Vec<String> = plugin.added().map(|(t, _)| t.to_json()).collect();
    match workload.with_tolerations(&[], &texts) {
        Some(mutated) => mutation(mutated, &describe_plugin(&plugin), &[]),
        None => Verdict::accept(),
    }
}

/// A workload CREATE (or an UPDATE of a pod template): restrictions first, then the
/// PodTolerationRestriction whitelist, then, in the mutating half, the tolerations the plugin's
/// defaults and the matching rules add.
fn judge(matched: &Matched<'_>, half: Half, cluster: &dyn Cluster) -> Verdict {
    let violations = matched.restriction_violations(|_| true);
    if !violations.is_empty() {
        return refusal(&matched.subject, &violations, false);
    }
    let plugin = match matched.plugin_outcome(half, cluster, true) {
        Ok(plugin) => plugin,
        Err(refusal) => return refusal,
    };
    if half == Half::Validating {
        let mut verdict = not_injected(&matched.rules);
        match matched.not_injected_from_nodes(cluster) {
            Ok(warnings) => verdict.warnings.extend(warnings),
            Err(refusal) => return refusal,
        }
        verdict.warnings.extend(not_merged(&plugin));
        let withheld = plugin.withheld().iter();
        verdict.warnings.extend(withheld.map(|w| did_not_add(w)));
        return verdict;
    }
    matched.inject(cluster, &plugin)
}

impl Matched<'_> {
    /// What an engine that cannot mutate says of the `nodeTaints` rules, from the nodes it holds
    /// (a Gatekeeper-style inventory): each toleration the waPC build would add, and each a
    /// restriction withholds. Nothing where it holds no nodes (`not_injected` says the rule
    /// injects nothing here); the waPC build's refusal where the nodes it holds cannot be read.
    fn not_injected_from_nodes(&self, cluster: &dyn Cluster) -> Result<Vec<String>, Verdict> {
        let applicable = self.applicable_restrictions();
        let from_nodes = match node_tolerations(&self.rules, cluster, &applicable) {
            Ok(from_nodes) => from_nodes,
            Err(unanswered) if unanswered.unavailable => return Ok(Vec::new()),
            Err(unanswered) => return Err(unanswered.refusal),
        };
        let lacking = from_nodes.found.iter().map(|(t, why)| {
            format!(
                "this engine cannot mutate: the workload lacks toleration {} ({why}), which the \
                 Kubewarden waPC build adds",
                t.describe()
            )
        });
        let withheld = (from_nodes.withheld.iter()).map(|w| did_not_add(w));
        Ok(lacking.chain(withheld).collect())
    }

    /// What PodTolerationRestriction makes of a Pod (nothing for other kinds, or with it off);
    /// the refusal of a Pod its whitelist does not allow. Engines that cannot mutate read the
    /// Namespace where they hold it; where they hold none, the Pod is held to the cluster-wide
    /// whitelist alone.
    fn plugin_outcome(
        &self,
        half: Half,
        cluster: &dyn Cluster,
        create: bool,
    ) -> Result<Outcome, Verdict> {
        let plugin = &self.settings.pod_toleration_restriction;
        let workload = self.subject.workload;
        if !plugin.enabled || workload.kind != Kind::Pod {
            return Ok(Outcome::default());
        }
        let describe = || self.subject.describe();
        let (spec, tolerations) = workload.pod_spec();
        let applicable = self.applicable_restrictions();
        let forbidden = |t: &PluginToleration| restriction_hit(&applicable, &t.as_core());
        let pod = Pod {
            namespace: self.subject.namespace,
            describe: &describe,
            spec,
            tolerations,
            create,
            forbidden: &forbidden,
        };
        // Engines that cannot mutate answer from what they hold (a Gatekeeper-style inventory).
        let namespaces = match half {
            Half::Mutating => Namespaces::Asked(cluster),
            Half::Validating => Namespaces::WhereHeld(cluster),
        };
        let outcome = plugin.judge_pod(&pod, namespaces)?;
        let exempt = |t: &PluginToleration| self.own(&t.as_core());
        let twins = |t: &PluginToleration| {
            let group = alias_group(self.settings, &t.key).unwrap_or(&[]);
            let twin = |key: &AliasKey| PluginToleration {
                key: key.as_str().to_owned(),
                ..t.clone()
            };
            group
                .iter()
                .filter(|k| k.as_str() != t.key)
                .map(twin)
                .collect()
        };
        match outcome.whitelist_refusal(&pod, exempt, twins) {
            Some(refusal) => Err(refusal),
            None => Ok(outcome),
        }
    }
}

impl Matched<'_> {
    /// The workload with the tolerations it lacks appended (PodTolerationRestriction's, in
    /// `plugin`, then the rules'), and the warnings and audit annotation that say so.
    fn inject(&self, cluster: &dyn Cluster, plugin: &Outcome) -> Verdict {
        // A restriction bounds aliasing too: a twin of a toleration the workload brought along
        // is not added where a restriction forbids it, or a workload tolerating an unrestricted
        // key would be handed the restricted key of the same group. Twins of what rules inject
        // are the policy's own work and exempt, as in `restriction_violations`.
        let applicable = self.applicable_restrictions();
        let allowed_twin = |t: &Toleration<'_>| restriction_hit(&applicable, t).is_none();
        let from_nodes = match node_tolerations(&self.rules, cluster, &applicable) {
            Ok(found) => found,
            Err(unanswered) => return unanswered.refusal,
        };
        let plugin_core: Vec<Toleration<'_>> = plugin.added().map(|(t, _)| t.as_core()).collect();
        let replaced: Vec<usize> = plugin.replaced().iter().map(|(i, _)| *i).collect();
        let kept = self.subject.workload.tolerations_kept(&replaced);
        let added = self.additions([&kept, &plugin_core], &from_nodes.found, allowed_twin);
        let withheld_warnings = (plugin.withheld().iter())
            .chain(&from_nodes.withheld)
            .map(|w| did_not_add(w));
        if added.is_empty() && plugin.adds_nothing() {
            let mut verdict = Verdict::accept();
            verdict.warnings.extend(withheld_warnings);
            return verdict;
        }
        // The plugin's tolerations are written as given (an empty operator stays empty, as the
        // plugin stores it), before the rules'.
        let plugin_texts = plugin.added().map(|(t, _)| t.to_json());
        let texts: Vec<String> = plugin_texts
            .chain(added.iter().map(|(t, _)| t.to_json()))
            .collect();
        let Some(mutated) = self.subject.workload.with_tolerations(&replaced, &texts) else {
            return Verdict::accept();
        };
        let mut verdict = mutation(mutated, &describe_plugin(plugin), &describe_added(&added));
        verdict.warnings.extend(withheld_warnings);
        verdict
    }
}

/// The mutation that makes the changes `plugin` (PodTolerationRestriction's) and `rules` (the
/// injection rules' and alias twins') describe. The rules' are warnings too, printed by kubectl
/// for the requester to see what their workload lacked; the plugin's are what the plugin does
/// silently to every Pod of a namespace (a warning on each would be printed by every rollout),
/// so they go only where an auditor looks. Kubewarden's monitor mode drops the patch and passes
/// warnings and audit annotations on: both say what the patch does, never that it was done.
/// `mutated` is the object's text and how many levels it nests at most.
fn mutation((mutated, nesting): (String, usize), plugin: &[String], rules: &[String]) -> Verdict {
    // Each text sized once and written piece by piece: `concat` and `join` walk their pieces
    // twice, a loop turn each that policy-server pays its timeout check for (benchmarks/cost.md,
    // "The timeout's checks").
    // Each warning named as it is written: the core would copy it once more to name it (it
    // keeps a message that starts with the policy's name as it is).
    const NAME: &str = TolerationInjection::NAME;
    const BEFORE: &str = ": missing toleration ";
    const AFTER: &str = "; this policy's patch adds it unless the policy runs in monitor mode";
    let warning = |d: &String| {
        let length = NAME.len() + BEFORE.len() + d.len() + AFTER.len();
        let mut warning = String::with_capacity(length);
        warning.push_str(NAME);
        warning.push_str(BEFORE);
        warning.push_str(d);
        warning.push_str(AFTER);
        warning
    };
    let mut audit_annotations = Vec::with_capacity(2);
    for (key, described) in [("missing-tolerations", rules), (PLUGIN_ANNOTATION, plugin)] {
        if !described.is_empty() {
            audit_annotations.push((key.to_owned(), joined(described)));
        }
    }
    Verdict {
        warnings: rules.iter().map(warning).collect(),
        audit_annotations,
        ..Verdict::mutate_nesting(mutated, Some(nesting))
    }
}

/// The audit annotation that says what PodTolerationRestriction added to a Pod and replaced.
const PLUGIN_ANNOTATION: &str = "pod-toleration-restriction";

/// `described`, each after the other, `; ` between.
fn joined(described: &[String]) -> String {
    const BETWEEN: &str = "; ";
    let length = described.iter().map(|d| d.len() + BETWEEN.len()).sum();
    let mut joined = String::with_capacity(length);
    for (i, d) in described.iter().enumerate() {
        if i > 0 {
            joined.push_str(BETWEEN);
        }
        joined.push_str(d);
    }
    joined
}

/// What PodTolerationRestriction appends, each with why, then what that replaces.
fn describe_plugin(plugin: &Outcome) -> Vec<String> {
    let added = plugin
        .added()
        .map(|(t, why)| with_reason(t.describe(), why));
    let replaced = (plugin.replaced().iter()).map(|(_, t)| {
        [
            "replaced ",
            &t.describe(),
            ", which an added toleration covers",
        ]
        .concat()
    });
    added.chain(replaced).collect()
}

/// Each added toleration with why, as warnings and the audit annotation name it.
fn describe_added(added: &[Explained<'_>]) -> Vec<String> {
    added
        .iter()
        .map(|(t, why)| with_reason(t.describe(), why))
        .collect()
}

/// An added toleration's description followed by why it is added: `key:Effect (Exists) (why)`.
fn with_reason(mut described: String, why: &str) -> String {
    described.reserve(why.len() + 3);
    described.push_str(" (");
    described.push_str(why);
    described.push(')');
    described
}

/// What an engine that cannot mutate says of PodTolerationRestriction's work: why it did not
/// read the Pod's Namespace, or what the Pod lacks that the waPC build would add.
fn not_merged(plugin: &Outcome) -> Option<String> {
    if let Some(why) = plugin.unread() {
        return Some(format!(
            "podTolerationRestriction: this engine cannot read the Pod's Namespace ({why}); the \
             Pod is held to podTolerationRestriction.whitelist alone and gets no default toleration"
        ));
    }
    if plugin.adds_nothing() {
        return None;
    }
    Some(format!(
        "podTolerationRestriction: this engine cannot mutate: the Pod lacks {}; the Kubewarden \
         waPC build adds them",
        joined(&describe_plugin(plugin))
    ))
}

/// The validating half's acceptance: it injects nothing, and says so for each rule that matched
/// (OPA mode returns warnings; without them a rule would seem to work where it cannot).
fn not_injected(rules: &[&Rule]) -> Verdict {
    let mut verdict = Verdict::accept();
    verdict.warnings = rules
        .iter()
        .map(|rule| {
            format!(
                "rule {:?} matches, but this engine cannot mutate: no toleration is injected \
                 (the Kubewarden waPC build injects them)",
                rule.name
            )
        })
        .collect();
    verdict
}

/// The alias group `key` belongs to.
fn alias_group<'s>(settings: &'s Settings, key: &str) -> Option<&'s [AliasKey]> {
    settings
        .aliases
        .in_force()
        .iter()
        .find(|g| g.iter().any(|k| k.as_str() == key))
        .map(|g| &g[..])
}

/// A toleration to add, and why.
type Explained<'a> = (Toleration<'a>, String);

/// What `nodeTaints` rules take from the nodes: tolerations to add, each with why (the rule and
/// a node carrying the taint), and those withheld because a restriction forbids them here.
#[derive(Default)]
struct FromNodes {
    found: Vec<Explained<'static>>,
    withheld: Vec<String>,
}

impl FromNodes {
    /// The tolerations of the taints `nodes` carry that `rule`'s `source` selects.
    fn take(
        &mut self,
        (rule, source): (&Rule, &NodeTaints),
        nodes: &[ClusterNode<'_>],
        restrictions: &[&Restriction],
    ) {
        for node in nodes {
            for taint in &node.taints {
                let (key, effect) = taint.identity();
                if !source.selects(key, effect) {
                    continue;
                }
                let toleration = Toleration::exists(key, effect);
                if self.found.iter().any(|(t, _)| *t == toleration) {
                    continue;
                }
                let why = format!("rule {:?}, node {} carries it", rule.name, node.name);
                if let Some(hit) = restriction_hit(restrictions, &toleration) {
                    let message = format!("{hit}, which {}", &why[..]);
                    if !self.withheld.contains(&message) {
                        self.withheld.push(message);
                    }
                    continue;
                }
                self.found.push((toleration, why));
            }
        }
    }
}

/// The `nodeTaints` rules among `rules`, each with its source and node selector query.
fn node_sources<'r>(rules: &[&'r Rule]) -> Vec<(&'r Rule, &'r NodeTaints, String)> {
    rules
        .iter()
        .filter_map(|rule| {
            let source = rule.node_taints.as_ref()?;
            let query = source
                .nodes
                .as_ref()
                .map(taintguard::label_selector::LabelSelector::to_query)
                .unwrap_or_default();
            Some((*rule, source, query))
        })
        .collect()
}

/// The tolerations the matching rules take from the taints nodes carry. One list call per
/// distinct node selector. A call that fails refuses the request (500): a rule that promised
/// these tolerations must not let the workload through without them (docs/context.md).
fn node_tolerations(
    rules: &[&Rule],
    cluster: &dyn Cluster,
    restrictions: &[&Restriction],
) -> Result<FromNodes, NodesUnanswered> {
    let mut from_nodes = FromNodes::default();
    let sources = node_sources(rules);
    // Each distinct selector is listed and read once, when the first rule with it is judged,
    // whichever rules share it. The nodes borrow the list's text, so both have a cell per
    // selector, set once.
    let mut queries: Vec<&str> = Vec::new();
    for (_, _, query) in &sources {
        if !queries.contains(&query.as_str()) {
            queries.push(query);
        }
    }
    let texts: Vec<OnceCell<String>> = queries.iter().map(|_| OnceCell::new()).collect();
    let lists: Vec<OnceCell<Vec<ClusterNode<'_>>>> =
        queries.iter().map(|_| OnceCell::new()).collect();
    for (rule, source, query) in &sources {
        let refused = |e: ClusterError| NodesUnanswered {
            unavailable: matches!(e, ClusterError::Unavailable(_)),
            refusal: Verdict::reject(
                500,
                format!(
                    "rule {:?} tolerates the taints of {}, but {e}. Nothing was \
                     injected; the request is refused rather than admitted without \
                     the tolerations the rule promises.",
                    rule.name,
                    describe_nodes(query),
                ),
            ),
        };
        let listed = queries
            .iter()
            .position(|q| q == query)
            .expect("every query is listed");
        let nodes = match lists[listed].get() {
            Some(nodes) => nodes,
            None => {
                let selector = (!query.is_empty()).then_some(query.as_str());
                let text = cluster.list_nodes(selector).map_err(refused)?;
                let nodes = nodes_of_list(texts[listed].get_or_init(|| text)).map_err(refused)?;
                lists[listed].get_or_init(|| nodes)
            }
        };
        from_nodes.take((rule, source), nodes, restrictions);
    }
    Ok(from_nodes)
}

/// Why the nodes' taints could not be read: whether the engine offers no way to read them, and
/// the refusal the request gets where a rule needs them.
struct NodesUnanswered {
    unavailable: bool,
    refusal: Verdict,
}

fn describe_nodes(query: &str) -> String {
    if query.is_empty() {
        "every node".to_owned()
    } else {
        format!("the nodes selected by {query:?}")
    }
}

/// What the workload will tolerate, growing as tolerations are added: what it brings borrowed,
/// a toleration is copied only once chosen, not each time it is judged.
struct Tolerated<'g, 'a> {
    /// The workload's tolerations, then those PodTolerationRestriction appends.
    given: [&'g [Toleration<'a>]; 2],
    /// What is added, with why; `why` is only written for what is added.
    added: Vec<(Toleration<'a>, String)>,
    /// All of them indexed, once they are more than [`FEW`].
    coverage: Option<Coverage<'a>>,
}

/// Up to this many tolerations, one is judged against each in turn: the index's tables
/// (fingerprinted keys, their strings cloned in) cost flannel's DaemonSet 5.2k guest
/// instructions for five tolerations and two questions (benchmarks/cost.md, "Few
/// tolerations"). Past it, the index keeps a pod template of thousands linear.
const FEW: usize = 16;

impl<'g, 'a> Tolerated<'g, 'a> {
    fn new(given: [&'g [Toleration<'a>]; 2]) -> Self {
        let mut tolerated = Tolerated {
            given,
            added: Vec::new(),
            coverage: None,
        };
        tolerated.index_if_many();
        tolerated
    }

    fn len(&self) -> usize {
        self.given[0].len() + self.given[1].len() + self.added.len()
    }

    /// The `i`th toleration, in the order of [`Tolerated::iter`].
    fn get(&self, i: usize) -> Option<&Toleration<'a>> {
        let [workload, plugin] = self.given;
        let Some(i) = i.checked_sub(workload.len()) else {
            return workload.get(i);
        };
        let Some(i) = i.checked_sub(plugin.len()) else {
            return plugin.get(i);
        };
        self.added.get(i).map(|(t, _)| t)
    }

    /// Everything tolerated: what is given, then what is added.
    fn iter(&self) -> impl Iterator<Item = &Toleration<'a>> {
        let [workload, plugin] = self.given;
        let added = self.added.iter().map(|(t, _)| t);
        workload.iter().chain(plugin).chain(added)
    }

    /// Whether something tolerated already covers `t`.
    fn covers(&self, t: &Toleration<'_>) -> bool {
        match &self.coverage {
            Some(coverage) => coverage.covers(t),
            None => self.iter().any(|held| held.covers(t)),
        }
    }

    /// Adds `t`, unless something tolerated already covers it.
    fn add(&mut self, t: Toleration<'a>, why: impl FnOnce() -> String) {
        if self.covers(&t) {
            return;
        }
        if let Some(coverage) = &mut self.coverage {
            coverage.insert(&t);
        }
        self.added.push((t, why()));
        self.index_if_many();
    }

    /// Indexes what is tolerated once it is more than [`FEW`].
    fn index_if_many(&mut self) {
        if self.coverage.is_none() && self.len() > FEW {
            let mut coverage = Coverage::default();
            for t in self.iter() {
                coverage.insert(t);
            }
            self.coverage = Some(coverage);
        }
    }

    /// What was added, borrowing from the settings and the request as it did: made owned, the
    /// hostpath Pod's four copied their strings and freed them again, 2.4k guest instructions
    /// (benchmarks/cost.md, "JSONPath's text, a rule's reason and the arena's fitting path").
    fn into_added(self) -> Vec<Explained<'a>> {
        self.added
    }
}

impl Matched<'_> {
    /// Tolerations to append, each with why: the matching rules' tolerations, those taken from
    /// node taints, then the alias twins of everything the workload will tolerate, each only
    /// when nothing already covers it. `given` is what the workload tolerates before: its own
    /// tolerations PodTolerationRestriction keeps, then those it appends.
    fn additions<'b>(
        &'b self,
        given: [&'b [Toleration<'b>]; 2],
        from_nodes: &'b [Explained<'b>],
        allowed_twin: impl Fn(&Toleration<'_>) -> bool,
    ) -> Vec<Explained<'b>> {
        let mut tolerated = Tolerated::new(given);
        for rule in &self.rules {
            // Written once per rule and copied for each of its tolerations added: quoting the
            // name (a check of each byte, then a join) cost each the hostpath rule's three 1k
            // guest instructions (benchmarks/cost.md, "JSONPath's text, a rule's reason and the
            // arena's fitting path").
            let mut why: Option<String> = None;
            for t in &rule.tolerations {
                tolerated.add(t.borrowed(), || {
                    why.get_or_insert_with(|| quoted("rule ", &rule.name))
                        .clone()
                });
            }
        }
        for (t, why) in from_nodes {
            tolerated.add(t.borrowed(), || why.clone());
        }
        self.add_twins(&mut tolerated, allowed_twin);
        tolerated.into_added()
    }

    /// The alias twins of everything tolerated. Twins of twins are covered by construction (a
    /// group is one set), so one growing pass ends.
    fn add_twins(
        &self,
        tolerated: &mut Tolerated<'_, '_>,
        allowed_twin: impl Fn(&Toleration<'_>) -> bool,
    ) {
        let mut i = 0;
        while let Some(t) = tolerated.get(i) {
            i += 1;
            if t.operator == Operator::Unknown {
                continue;
            }
            let Some(group) = alias_group(self.settings, &t.key) else {
                continue;
            };
            let own = self.rules.iter().any(|r| r.tolerations.contains(t));
            let twins: Vec<Toleration<'static>> = group
                .iter()
                .filter(|k| k.as_str() != t.key)
                .map(|key| t.with_key(key))
                .filter(|twin| own || allowed_twin(twin))
                .collect();
            if twins.is_empty() {
                continue;
            }
            // Written once for the twins of `t`, which `add` borrows `all` away from.
            let why = ["alias of ", &t.key].concat();
            for twin in twins {
                tolerated.add(twin, || why.clone());
            }
        }
    }

    /// The restrictions that apply to this namespace and requester.
    fn applicable_restrictions(&self) -> Vec<&Restriction> {
        let subject = &self.subject;
        self.settings
            .restrictions
            .iter()
            .filter(|r| {
                !r.allowed_namespaces
                    .iter()
                    .any(|g| g.matches(subject.namespace))
                    && !r.allowed_principals.allows(&subject.who)
            })
            .collect()
    }

    /// Tolerations the object has, among those `judged` selects, that a restriction forbids
    /// here. Tolerations that the matching rules inject (or their alias twins) are exempt: the
    /// policy never denies its own work, which an UPDATE of a workload it mutated earlier
    /// carries.
    fn restriction_violations(&self, judged: impl Fn(&&Toleration<'_>) -> bool) -> Vec<String> {
        let applicable = self.applicable_restrictions();
        if applicable.is_empty() {
            return Vec::new();
        }
        self.subject
            .workload
            .tolerations
            .iter()
            .filter(judged)
            .filter(|t| !self.own(t))
            .filter_map(|t| restriction_hit(&applicable, t))
            .collect()
    }

    /// Whether `t` is a toleration the matching rules inject, or an alias twin of one: the
    /// policy's own work, which neither restrictions nor the whitelist refuse.
    fn own(&self, t: &Toleration<'_>) -> bool {
        self.rules.iter().flat_map(|r| &r.tolerations).any(|i| {
            let twin_keys = alias_group(self.settings, &i.key).unwrap_or(&[]);
            *i == *t || twin_keys.iter().any(|k| i.with_key(k) == *t)
        })
    }
}

/// The warning for a toleration a restriction withheld (`withheld`: the toleration and the
/// restriction, as [`restriction_hit`] describes them).
fn did_not_add(withheld: &str) -> String {
    ["did not add toleration ", withheld].concat()
}

/// Why `t` may not be tolerated under `restrictions`, if it may not.
fn restriction_hit(restrictions: &[&Restriction], t: &Toleration<'_>) -> Option<String> {
    restrictions.iter().find_map(|restriction| {
        let selector = restriction.taints.iter().find(|s| {
            let key = if t.key.is_empty() {
                t.operator == Operator::Exists
            } else {
                s.key.matches(&t.key)
            };
            let effect = t.effect.is_empty()
                || s.effects.is_empty()
                || s.effects.iter().any(|e| e.as_str() == t.effect);
            key && effect
        })?;
        Some(format!(
            "{} (restriction {:?} protects taints {})",
            t.describe(),
            restriction.name,
            selector.key.as_str()
        ))
    })
}

#[cfg(test)]
mod tests;
