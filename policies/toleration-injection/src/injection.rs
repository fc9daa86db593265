//! The mutating half: the tolerations a workload lacks appended (PodTolerationRestriction's,
//! the rules', those from nodes' taints, then alias twins), each only when nothing the workload
//! tolerates covers it.

use taintguard::toleration::{Operator, Toleration};
use taintguard::verdict::{quoted, Verdict};

use crate::from_nodes::node_tolerations;
use crate::judging::Judging;
use crate::pod_toleration_restriction::Outcome;
use crate::restriction::{self, did_not_add};
use crate::tolerated::{Explained, Tolerated};
use crate::verdicts::{describe_added, describe_plugin, mutation};

impl Judging<'_> {
    /// The workload with the tolerations it lacks appended (PodTolerationRestriction's, in
    /// `plugin`, then the rules'), and the warnings and audit annotation that say so.
    pub fn inject(&self, plugin: &Outcome) -> Verdict {
        // A restriction bounds aliasing too: a twin of a toleration the workload brought along
        // is not added where a restriction forbids it, or a workload tolerating an unrestricted
        // key would be handed the restricted key of the same group. Twins of what rules inject
        // are the policy's own work and exempt, as in `Judging::violations`.
        let allowed_twin = |t: &Toleration<'_>| restriction::hit(&self.restrictions, t).is_none();
        let from_nodes =
            match node_tolerations(&self.rules, self.engine.cluster, &self.restrictions) {
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
            let Some(group) = self.settings.aliases.group_of(&t.key) else {
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
}
