//! What a request does to protected taints: removals and value changes a requester may not
//! make, re-adds after a recorded removal, and the `spec.taints` the restore writes instead.

use super::controllers::ByController;
use super::findings::Finding;
use super::judging::Judging;
use super::node::NodeView;
use super::owners::OwnerRecord;
use super::record::RemovalRecord;
use taintguard::json::append_items;
use taintguard::principal::{Identity, Principal};
use taintguard::small_map::{SmallMap, SmallSet};
use taintguard::taint::Taint;

/// The records a request's taint changes are judged against, as stored before it.
#[derive(Clone, Copy)]
pub(super) struct Records<'r> {
    pub removals: &'r RemovalRecord,
    pub owners: &'r OwnerRecord,
    pub by_controller: &'r ByController<'r>,
}

impl<'a> Judging<'a> {
    /// Protected taints removed or changed by a requester whom neither the rule nor an owner
    /// record permits, and taints re-added after a recorded removal. Only an UPDATE has any.
    pub(super) fn taint_findings<'j>(
        &'j self,
        records: Records<'_>,
        findings: &mut Vec<Finding<'j>>,
    ) {
        let Some(old) = &self.old else {
            return;
        };
        // Kubernetes refuses duplicate (key, effect) pairs; the first of each is judged.
        let judged = self.removed_or_changed(old, records, findings);
        self.readded(&judged, records, findings);
    }

    /// Removals and value changes of protected taints the requester may not make; the
    /// identities of the stored taints.
    fn removed_or_changed<'j>(
        &'j self,
        old: &'j NodeView<'a>,
        records: Records<'_>,
        findings: &mut Vec<Finding<'j>>,
    ) -> SmallSet<(&'j str, &'j str)> {
        let who = &self.who;
        // The record never names the empty username (`OwnerRecord::parse`), so a request
        // without a requester owns nothing.
        let owned = |t: &Taint<'_>| {
            records.owners.owner(t) == Some(who.username)
                || records.by_controller.stored.contains(&t.identity())
        };
        // Indexed by identity: a Node of etcd's 1.5 MiB limit holds ~25,000 taints, and
        // pairwise comparison took seconds, past the policy timeout.
        let mut written: SmallMap<(&str, &str), usize> = SmallMap::default();
        for (at, t) in self.new.taints.iter().enumerate() {
            written.entry(t.identity(), at);
        }
        let mut seen = SmallSet::default();
        for old_taint in &old.taints {
            if !seen.insert(old_taint.identity(), ()) {
                continue;
            }
            let Some(rule) = self.settings.protecting_rule(old_taint) else {
                continue;
            };
            if rule.permitted.allows(who) || owned(old_taint) {
                continue;
            }
            match written.get(&old_taint.identity()).copied() {
                None => findings.push(Finding::RemovedTaint(old_taint)),
                Some(at) if self.new.taints[at].value != old_taint.value => {
                    findings.push(Finding::ChangedTaint {
                        old: old_taint,
                        new: &self.new.taints[at],
                        at,
                    })
                }
                Some(_) => {}
            }
        }
        seen
    }

    /// Taints the request adds whose removal a record keeps, from a requester that may not put
    /// them back. A one-shot taint added by an UPDATE is a re-add when only registration sets
    /// it, or when the removal record holds it. An owned protected taint whose removal the owner
    /// record keeps may come back from its owner, from a principal its rule permits, or from a
    /// person (a person never writes from a controller's stale cache, so their re-add is
    /// deliberate); from anyone else it is a stale re-add.
    fn readded<'j>(
        &'j self,
        stored: &SmallSet<(&str, &str)>,
        records: Records<'_>,
        findings: &mut Vec<Finding<'j>>,
    ) {
        let who = &self.who;
        let person = who.identity() == Identity::Person;
        for (at, taint) in self.new.taints.iter().enumerate() {
            if stored.contains(&taint.identity()) {
                continue;
            }
            let owner = match self.settings.one_shot_rule(taint) {
                Some(rule) if rule.only_at_registration || records.removals.contains(taint) => None,
                Some(_) => continue,
                None => match records.owners.removed_by(taint) {
                    Some(owner) if owner != who.username && !person => {
                        // No longer protected, or its rule permits the requester: it may
                        // come back.
                        let rule = self.settings.protecting_rule(taint);
                        if rule.is_none_or(|r| r.permitted.allows(who)) {
                            continue;
                        }
                        // The controller that removed it, under another of its identities, or
                        // a controller whose own record wants it (docs/controllers.md, "A
                        // removal and the controller's own record").
                        if self.same_controller(owner) || records.by_controller.lists(taint) {
                            continue;
                        }
                        Some(owner.to_owned())
                    }
                    _ => continue,
                },
            };
            findings.push(Finding::Readded { taint, at, owner });
        }
    }

    /// Whether `username` and the requester are one controller: identities one
    /// `controllerRecords` entry names as its writer (by user or service account; a recorded
    /// username carries no groups), as a controller installed once with kustomize and once with
    /// Helm is known by two.
    pub(super) fn same_controller(&self, username: &str) -> bool {
        let other = Principal::new(username, &[]);
        (self.settings.controller_records.iter())
            .any(|record| record.owner.allows(&self.who) && record.owner.allows(&other))
    }

    /// The `spec.taints` text with protected taints put back and re-added ones stripped;
    /// `None` when the findings do not touch taints. Entries are copied verbatim.
    pub(super) fn restored_taints(&self, findings: &[Finding<'_>]) -> Option<String> {
        if !findings.iter().any(Finding::touches_taints) {
            return None;
        }
        // What replaces each written entry a finding is about, by its index.
        let mut replaced: SmallMap<usize, Option<&str>> = SmallMap::default();
        for finding in findings {
            match finding {
                Finding::ChangedTaint { old, at, .. } => {
                    replaced.insert(*at, Some(old.raw));
                }
                Finding::Readded { at, .. } => {
                    replaced.insert(*at, None);
                }
                _ => {}
            }
        }
        let taints = &self.new.taints;
        let mut entries: Vec<&str> = Vec::with_capacity(taints.len() + findings.len());
        for (at, taint) in taints.iter().enumerate() {
            match replaced.get(&at) {
                Some(entry) => entries.extend(*entry),
                None => entries.push(taint.raw),
            }
        }
        for finding in findings {
            if let Finding::RemovedTaint(old) = finding {
                entries.push(old.raw);
            }
        }
        // Not `format!`ted around a join: the formatting machinery took 2% of incident 1's
        // guest instructions (benchmarks/cost.md, "Decision work, measured per function").
        Some(append_items("[]", &entries))
    }
}
