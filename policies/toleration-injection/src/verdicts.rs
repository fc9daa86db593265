//! What the policy's verdicts say: the mutation with its warnings and audit annotations, the
//! descriptions of what is added and why, and the words of engines that cannot mutate.

use taintguard::verdict::Verdict;

use crate::pod_toleration_restriction::Outcome;
use crate::settings::Rule;
use crate::tolerated::Explained;

/// The policy's name (`TolerationInjection::NAME`), which starts every warning it writes.
pub const POLICY_NAME: &str = "toleration-injection";

/// The rejection (400) of a request that cannot be read, naming what is wrong.
pub fn malformed(message: &str) -> Verdict {
    Verdict::reject(400, format!("malformed request: {message}"))
}

/// The mutation that makes the changes `plugin` (PodTolerationRestriction's) and `rules` (the
/// injection rules' and alias twins') describe. The rules' are warnings too, printed by kubectl
/// for the requester to see what their workload lacked; the plugin's are what the plugin does
/// silently to every Pod of a namespace (a warning on each would be printed by every rollout),
/// so they go only where an auditor looks. Kubewarden's monitor mode drops the patch and passes
/// warnings and audit annotations on: both say what the patch does, never that it was done.
/// `mutated` is the object's text and how many levels it nests at most.
pub fn mutation(
    (mutated, nesting): (String, usize),
    plugin: &[String],
    rules: &[String],
) -> Verdict {
    // Each text sized once and written piece by piece: `concat` and `join` walk their pieces
    // twice, a loop turn each that policy-server pays its timeout check for (benchmarks/cost.md,
    // "The timeout's checks").
    // Each warning named as it is written: the core would copy it once more to name it (it
    // keeps a message that starts with the policy's name as it is).
    const NAME: &str = POLICY_NAME;
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
pub fn describe_plugin(plugin: &Outcome) -> Vec<String> {
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
pub fn describe_added(added: &[Explained<'_>]) -> Vec<String> {
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

/// What an engine that cannot mutate says of PodTolerationRestriction's work: what the Pod
/// lacks that the waPC build would add.
pub fn not_merged(plugin: &Outcome) -> Option<String> {
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
pub fn not_injected(rules: &[&Rule]) -> Verdict {
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
