//! PodTolerationRestriction's drop-in on a judged Pod: the plugin's outcome (its own module,
//! `pod_toleration_restriction/`) bounded by this policy's restrictions and aliases, and the
//! mutation a Pod UPDATE gets from it.

use taintguard::verdict::Verdict;

use crate::judging::Judging;
use crate::pod_toleration_restriction::{Outcome, PluginToleration, Pod};
use crate::restriction;
use crate::settings::AliasKey;
use crate::verdicts::{describe_plugin, mutation};
use crate::workload::Kind;

impl Judging<'_> {
    /// What PodTolerationRestriction makes of a Pod (nothing for other kinds, or with it off);
    /// the refusal of a Pod its whitelist does not allow, or whose Namespace the engine cannot
    /// read (an engine that cannot mutate reads it where it holds it: a Gatekeeper-style
    /// inventory). `create`: the request is a CREATE, which the plugin's defaults apply to.
    pub fn plugin_outcome(&self, create: bool) -> Result<Outcome, Verdict> {
        let plugin = &self.settings.pod_toleration_restriction;
        let workload = self.subject.workload;
        if !plugin.enabled || workload.kind != Kind::Pod {
            return Ok(Outcome::default());
        }
        let describe = || self.subject.describe();
        let (spec, tolerations) = workload.pod_spec();
        let forbidden = |t: &PluginToleration| restriction::hit(&self.restrictions, &t.as_core());
        let pod = Pod {
            namespace: self.subject.namespace,
            describe: &describe,
            spec,
            tolerations,
            create,
            forbidden: &forbidden,
        };
        let outcome = plugin.judge_pod(&pod, self.engine.cluster)?;
        let exempt = |t: &PluginToleration| self.own(&t.as_core());
        let twins = |t: &PluginToleration| self.alias_twins(t);
        match outcome.whitelist_refusal(&pod, exempt, twins) {
            Some(refusal) => Err(refusal),
            None => Ok(outcome),
        }
    }

    /// The other keys of `t`'s alias group, each as `t` tolerates its own.
    fn alias_twins(&self, t: &PluginToleration) -> Vec<PluginToleration> {
        let group = self.settings.aliases.group_of(&t.key).unwrap_or(&[]);
        let twin = |key: &AliasKey| PluginToleration {
            key: key.as_str().to_owned(),
            ..t.clone()
        };
        group
            .iter()
            .filter(|k| k.as_str() != t.key)
            .map(twin)
            .collect()
    }

    /// A Pod UPDATE under `podTolerationRestriction`, in the mutating half: the plugin adds the
    /// memory-pressure toleration to a Pod that is not BestEffort (`plugin`), after holding
    /// every toleration to the whitelist again.
    pub fn plugin_mutation(&self, plugin: &Outcome) -> Verdict {
        if plugin.adds_nothing() {
            return Verdict::accept();
        }
        let texts: Vec<String> = plugin.added().map(|(t, _)| t.to_json()).collect();
        match self.subject.workload.with_tolerations(&[], &texts) {
            Some(mutated) => mutation(mutated, &describe_plugin(plugin), &[]),
            None => Verdict::accept(),
        }
    }
}
