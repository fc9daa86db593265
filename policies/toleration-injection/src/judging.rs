//! One workload request judged: the context every step reads, built once (the settings, the
//! subject, the rules that match it, the restrictions that apply to it, and what the engine can
//! do), and the two questions every step asks of it: what restrictions forbid, and what is the
//! policy's own work. The steps live with what they do: `drop_in.rs` (PodTolerationRestriction),
//! `injection.rs` (the mutating half), `unmutated.rs` (engines that cannot mutate).

use taintguard::admission::AdmissionRequest;
use taintguard::cluster::Cluster;
use taintguard::policy::Half;
use taintguard::toleration::Toleration;
use taintguard::verdict::Verdict;

use crate::restriction;
use crate::settings::{Restriction, Rule, Settings};
use crate::subject::Subject;
use crate::verdicts::malformed;
use crate::workload::Workload;

/// What the engine running the policy can do: mutate or not (`half`), and the cluster it can
/// ask (host calls, an inventory, or a test's answers).
#[derive(Clone, Copy)]
pub struct Engine<'c> {
    pub half: Half,
    pub cluster: &'c dyn Cluster,
}

/// A workload request to judge, read once: what every step of the judgement needs.
pub struct Judging<'s> {
    pub settings: &'s Settings,
    pub subject: Subject<'s>,
    /// The rules that match the subject, in the settings' order.
    pub rules: Vec<&'s Rule>,
    /// The restrictions that apply to the subject's namespace and requester.
    pub restrictions: Vec<&'s Restriction>,
    pub engine: Engine<'s>,
}

impl<'s> Judging<'s> {
    /// The subject of `request` and what of `settings` applies to it.
    ///
    /// # Errors
    ///
    /// The rejection (400) of an object that a matching rule's JSONPath conditions cannot read.
    pub fn read(
        request: &'s AdmissionRequest<'_>,
        settings: &'s Settings,
        workload: &'s Workload<'s>,
        engine: Engine<'s>,
    ) -> Result<Judging<'s>, Verdict> {
        let subject = Subject::of(request, workload);
        let rules: Vec<&Rule> = settings
            .rules
            .iter()
            .filter(|r| subject.matches(&r.matcher))
            .collect();
        if let Some(problem) = subject.unreadable() {
            return Err(malformed(&format!(
                "object cannot be read for JSONPath conditions: {problem}"
            )));
        }
        let restrictions = restriction::applicable(&settings.restrictions, &subject);
        Ok(Judging {
            settings,
            subject,
            rules,
            restrictions,
            engine,
        })
    }

    /// Tolerations the object has, among those `judged` selects, that a restriction forbids
    /// here. Tolerations that the matching rules inject (or their alias twins) are exempt: the
    /// policy never denies its own work, which an UPDATE of a workload it mutated earlier
    /// carries.
    pub fn violations(&self, judged: impl Fn(&&Toleration<'_>) -> bool) -> Vec<String> {
        if self.restrictions.is_empty() {
            return Vec::new();
        }
        self.subject
            .workload
            .tolerations
            .iter()
            .filter(judged)
            .filter(|t| !self.own(t))
            .filter_map(|t| restriction::hit(&self.restrictions, t))
            .collect()
    }

    /// Whether `t` is a toleration the matching rules inject, or an alias twin of one: the
    /// policy's own work, which neither restrictions nor the whitelist refuse.
    pub fn own(&self, t: &Toleration<'_>) -> bool {
        let aliases = &self.settings.aliases;
        self.rules.iter().flat_map(|r| &r.tolerations).any(|i| {
            let twin_keys = aliases.group_of(&i.key).unwrap_or(&[]);
            *i == *t || twin_keys.iter().any(|k| i.with_key(k) == *t)
        })
    }
}
