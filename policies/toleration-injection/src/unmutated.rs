//! Engines that cannot mutate (the validating half): the workload is admitted as it is, with a
//! warning for each toleration the Kubewarden waPC build would add and each a restriction
//! withholds, so that no rule seems to work where it cannot.

use taintguard::verdict::Verdict;

use crate::from_nodes::node_tolerations;
use crate::judging::Judging;
use crate::pod_toleration_restriction::Outcome;
use crate::restriction::did_not_add;
use crate::verdicts::{not_injected, not_merged};

impl Judging<'_> {
    /// The acceptance of what the restrictions and the whitelist allowed, saying what the
    /// matching rules, the nodes' taints and PodTolerationRestriction (`plugin`) would add.
    pub fn unmutated(&self, plugin: &Outcome) -> Verdict {
        let mut verdict = not_injected(&self.rules);
        match self.not_injected_from_nodes() {
            Ok(warnings) => verdict.warnings.extend(warnings),
            Err(refusal) => return refusal,
        }
        verdict.warnings.extend(not_merged(plugin));
        let withheld = plugin.withheld().iter();
        verdict.warnings.extend(withheld.map(|w| did_not_add(w)));
        verdict
    }

    /// What an engine that cannot mutate says of the `nodeTaints` rules, from the nodes it holds
    /// (a Gatekeeper-style inventory): each toleration the waPC build would add, and each a
    /// restriction withholds. Nothing where it holds no nodes (`not_injected` says the rule
    /// injects nothing here); the waPC build's refusal where the nodes it holds cannot be read.
    fn not_injected_from_nodes(&self) -> Result<Vec<String>, Verdict> {
        let cluster = self.engine.cluster;
        let from_nodes = match node_tolerations(&self.rules, cluster, &self.restrictions) {
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
}
