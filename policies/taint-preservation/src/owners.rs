//! The taint owner record: who added each protected taint of a node, and which owned taints were
//! removed for good, kept in an annotation the policy owns (docs/controllers.md). The adder may
//! later change the taint's value or remove it; once a removal of an owned taint stands, only its
//! owner (or a permitted principal, or a person) may put it back.
//!
//! The annotation's value is a JSON object from `key:Effect`, keys sorted, to either the adder's
//! username (the node carries the taint) or `{"owner": <username>, "removed": true}` (the taint
//! was removed and stays removed against other writers). Usernames may hold any character (`,`,
//! `:`, `=`, quotes), and JSON reads back exactly what was written, whatever they hold. Valid
//! taint keys and effects hold no `:`, so the entry key splits unambiguously too.

use serde::Deserialize;

use super::controllers::ByController;
use super::findings::Finding;
use super::judging::{Gathered, Judging};
use super::node::NodeView;
use super::record::{entry, entry_order, has_entry};
use taintguard::json::{members, JsonStr};
use taintguard::small_map::SmallSet;
use taintguard::taint::Taint;

/// Past this size a new owner or removal is not recorded (the taint stays unowned, so protected
/// as without the record; a removal is then forgotten) rather than have the API server refuse the
/// write: Kubernetes limits all of an object's annotations together to 256 KiB.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// What the record says of one taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub owner: String,
    /// The taint's removal by its owner or a permitted principal stood: other writers that put
    /// it back are stale, and their re-add is stripped (or denied).
    pub removed: bool,
}

/// A removal entry as the annotation holds it; anything else in an object is not the policy's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemovedEntry<'a> {
    #[serde(borrow)]
    owner: JsonStr<'a>,
    removed: bool,
}

/// Entries (`key:Effect`, claim), sorted by entry key. A sorted vector rather than a map: a node
/// has a handful of owned taints, and the module reuses the object reader the other annotations
/// take instead of linking a map type and its deserialiser, which made the module 11 KB larger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnerRecord(Vec<(String, Claim)>);

/// Bytes a removal entry takes beyond a live one: `{"owner":` and `,"removed":true}`.
const REMOVED_OVERHEAD: usize = 26;

impl OwnerRecord {
    /// Reads the annotation's value; absent is the empty record. A value that is not an object
    /// of the two entry forms was not written by the policy: it names no owner and no removal,
    /// so every taint it would cover is judged as an unowned one. Empty usernames own nothing.
    pub fn parse(annotation: Option<&str>) -> OwnerRecord {
        let claim = |value: &str| -> Option<Claim> {
            if let Ok(owner) = JsonStr::read(value) {
                return Some(Claim {
                    owner: owner.0.into_owned(),
                    removed: false,
                });
            }
            let entry: RemovedEntry<'_> = serde_json::from_str(value).ok()?;
            entry.removed.then(|| Claim {
                owner: entry.owner.0.into_owned(),
                removed: true,
            })
        };
        let read = |text: &str| -> Option<Vec<(String, Claim)>> {
            members(text)
                .ok()?
                .into_iter()
                .map(|(key, value)| Some((key.0.into_owned(), claim(value)?)))
                .collect()
        };
        let mut entries = annotation.and_then(read).unwrap_or_default();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        // The policy never writes a key twice: which of two owners was meant is unknowable.
        if entries.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return OwnerRecord::default();
        }
        entries.retain(|(_, claim)| !claim.owner.is_empty());
        OwnerRecord(entries)
    }

    /// The record `view` carries under `key`; the empty record without a key (taint ownership
    /// off).
    ///
    /// # Errors
    ///
    /// An annotation the view cannot read.
    pub fn on(view: &NodeView<'_>, key: Option<&str>) -> Result<OwnerRecord, String> {
        match key {
            Some(key) => Ok(OwnerRecord::parse(view.annotation(key)?.as_deref())),
            None => Ok(OwnerRecord::default()),
        }
    }

    fn find(&self, entry: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(e, _)| e.as_str().cmp(entry))
    }

    /// What the record says of `taint`.
    pub fn claim(&self, taint: &Taint<'_>) -> Option<&Claim> {
        if self.0.is_empty() || !has_entry(taint) {
            return None;
        }
        let i = (self.0.binary_search_by(|(e, _)| entry_order(e, taint))).ok()?;
        Some(&self.0[i].1)
    }

    /// The recorded owner of `taint`, carried or removed: the owner of a removed taint that a
    /// stale write slipped back (monitor mode) may still remove it.
    pub fn owner(&self, taint: &Taint<'_>) -> Option<&str> {
        self.claim(taint).map(|c| c.owner.as_str())
    }

    /// The owner whose taint's removal stands, when the record keeps one for `taint`.
    pub fn removed_by(&self, taint: &Taint<'_>) -> Option<&str> {
        self.claim(taint)
            .filter(|c| c.removed)
            .map(|c| c.owner.as_str())
    }

    /// Records `owner` as the adder of `taint` (a removal entry becomes a live one), unless the
    /// record would grow past [`MAX_RECORD_BYTES`]; whether it was recorded.
    pub fn set(&mut self, taint: &Taint<'_>, owner: &str) -> bool {
        let Some(e) = entry(taint) else {
            return false;
        };
        let claim = Claim {
            owner: owner.to_owned(),
            removed: false,
        };
        match self.find(&e) {
            Ok(i) => self.0[i].1 = claim,
            Err(i) => {
                if self.text_len() + e.len() + owner.len() + 8 > MAX_RECORD_BYTES {
                    return false;
                }
                self.0.insert(i, (e, claim));
            }
        }
        true
    }

    /// Marks the owned taint `key:effect` removed, keeping its owner; a record that would grow
    /// past [`MAX_RECORD_BYTES`] forgets the entry instead. Whether the removal was recorded.
    pub fn mark_removed(&mut self, key: &str, effect: &str) -> bool {
        let Ok(i) = self.find(&[key, ":", effect].concat()) else {
            return false;
        };
        if self.0[i].1.removed {
            return true;
        }
        if self.text_len() + REMOVED_OVERHEAD > MAX_RECORD_BYTES {
            self.0.remove(i);
            return false;
        }
        self.0[i].1.removed = true;
        true
    }

    /// Keeps the entries `keep` says to keep, given each entry's key, effect and claim.
    pub fn retain(&mut self, keep: impl Fn(&str, &str, &Claim) -> bool) {
        self.0.retain(|(e, claim)| {
            let (key, effect) = e.rsplit_once(':').unwrap_or((e, ""));
            keep(key, effect, claim)
        });
    }

    /// An upper bound of the annotation value's length, cheap enough to ask per addition.
    fn text_len(&self) -> usize {
        self.0
            .iter()
            .map(|(k, c)| k.len() + c.owner.len() + 8 + usize::from(c.removed) * REMOVED_OVERHEAD)
            .sum::<usize>()
            + 2
    }

    /// The annotation's value; `None` (no annotation) for the empty record.
    pub fn to_annotation(&self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let mut out = String::from("{");
        for (i, (key, claim)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            taintguard::json::write_str(&mut out, key);
            out.push(':');
            if claim.removed {
                out.push_str("{\"owner\":");
                taintguard::json::write_str(&mut out, &claim.owner);
                out.push_str(",\"removed\":true}");
            } else {
                taintguard::json::write_str(&mut out, &claim.owner);
            }
        }
        out.push('}');
        Some(out)
    }
}

/// The taint owner record a request leaves, what it added, and the removals a full record
/// could not keep.
struct OwnersAfter {
    record: OwnerRecord,
    /// Each protected taint the request added, with whether the record names the requester as
    /// its owner (`false`: the record is full) or, when it does not, whether a controller record
    /// the requester writes lists it, which still makes it the requester's.
    added: Vec<(String, Recorded)>,
    /// Owned taints whose standing removal the full record could not keep.
    forgotten: Vec<String>,
}

/// Whether an added taint's owner is recorded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recorded {
    Yes,
    /// The record is full, but a controller record the adder writes lists the taint.
    InControllerRecord,
    /// The record is full.
    No,
}

/// Taint identities, as a request's taints borrow them.
type Identities<'t> = SmallSet<(&'t str, &'t str)>;

impl Judging<'_> {
    /// The owner record's edit, its audit annotation and its warnings; `before` is the stored
    /// record, `by_controller` the stored taints controllers' records give the requester.
    pub(super) fn owner_record(
        &self,
        before: &OwnerRecord,
        by_controller: &ByController<'_>,
        gathered: &mut Gathered<'_>,
    ) -> Result<(), String> {
        let Some(key) = self.settings.taint_owners.key() else {
            return Ok(());
        };
        let written = OwnerRecord::on(&self.new, Some(key))?;
        // The audit scanner's review of a stored Node (a CREATE without a requester; the API
        // server always names one) rewrites nothing: the record it carries is the one stored.
        let permitted =
            self.permission.taints || (self.old.is_none() && self.who.username.is_empty());
        let base = if permitted { &written } else { before }.clone();
        let after = self.owners_after(base, &gathered.findings, by_controller);
        if !permitted && written != *before && written != after.record {
            gathered.findings.push(Finding::OwnersRewritten);
        }
        if after.record != written {
            gathered
                .annotations
                .push((key.to_owned(), after.record.to_annotation()));
        }
        self.report_owners(key, after, gathered);
        Ok(())
    }

    /// The audit annotation of the taints the record names the requester the owner of, and a
    /// warning for each addition or removal the full record could not take.
    fn report_owners(&self, key: &str, after: OwnersAfter, gathered: &mut Gathered<'_>) {
        let owned: Vec<&str> = (after.added.iter())
            .filter(|(_, recorded)| *recorded == Recorded::Yes)
            .map(|(t, _)| t.as_str())
            .collect();
        if !owned.is_empty() {
            gathered
                .audit
                .push(("added-protected-taints".to_owned(), owned.join("; ")));
        }
        let unrecorded = after.added.iter().filter(|(_, r)| *r != Recorded::Yes);
        gathered.warnings.extend(unrecorded.map(|(t, recorded)| {
            let who = if *recorded == Recorded::InControllerRecord {
                "the writers of the controller record that lists it, and permitted principals,"
            } else {
                "only permitted principals"
            };
            format!(
                "the taint owner record {key:?} is full, so {} is not recorded as the owner \
                 of {t}: {who} may remove or change it",
                self.who.describe()
            )
        }));
        gathered.warnings.extend(after.forgotten.iter().map(|t| {
            format!(
                "the taint owner record {key:?} is full, so the removal of {t} is not kept: a \
                 later re-add by another writer is not stripped"
            )
        }));
    }

    /// The record this request leaves, from `record` (the stored one, or a permitted
    /// principal's edit; docs/controllers.md). It follows the taints: an entry stays while its
    /// taint is carried (restored taints stay, stripped ones never get one), becomes a removal
    /// when an owned taint's removal stands, and the adder of a protected taint becomes its
    /// owner, the owner's own re-add after a removal included.
    fn owners_after(
        &self,
        mut record: OwnerRecord,
        findings: &[Finding<'_>],
        by_controller: &ByController<'_>,
    ) -> OwnersAfter {
        let (carried, stripped) = self.carried(findings);
        let had = self.had();
        // The entries of taints the Node neither carried nor carries go before anything is
        // recorded: a record filled with them must still take this request's removals and
        // additions, or the next write, finding room, would record them (the fuzzer's record
        // near its bound, docs/fuzzing.md).
        record.retain(|key, effect, claim| {
            let id = (key, effect);
            claim.removed || carried.contains(&id) || had.contains(&id)
        });
        let forgotten = self.keep_removals(&mut record, &carried, by_controller);
        record.retain(|key, effect, claim| claim.removed || carried.contains(&(key, effect)));
        // Neither a taint the Node had nor one stripped is the requester's addition.
        let not_added = |id: &(&str, &str)| had.contains(id) || stripped.contains(id);
        let added = self.additions(&mut record, not_added, by_controller);
        OwnersAfter {
            record,
            added,
            forgotten,
        }
    }

    /// The taints the stored Node carried.
    fn had(&self) -> Identities<'_> {
        (self.old.iter())
            .flat_map(|old| &old.taints)
            .map(|t| (t.identity(), ()))
            .collect()
    }

    /// The taints the Node carries after the request (restored ones included, stripped ones
    /// not), and those stripped.
    fn carried<'j>(&'j self, findings: &[Finding<'j>]) -> (Identities<'j>, Identities<'j>) {
        let stripped: Identities<'_> = findings
            .iter()
            .filter_map(|f| match f {
                Finding::Readded { taint, .. } => Some((taint.identity(), ())),
                _ => None,
            })
            .collect();
        let mut carried: Identities<'_> = self
            .new
            .taints
            .iter()
            .map(Taint::identity)
            .filter(|id| !stripped.contains(id))
            .map(|id| (id, ()))
            .collect();
        for finding in findings {
            if let Finding::RemovedTaint(t) = finding {
                carried.insert(t.identity(), ());
            }
        }
        (carried, stripped)
    }

    /// Marks the owned taints whose removal stands as removed; what the full record could not
    /// keep.
    fn keep_removals(
        &self,
        record: &mut OwnerRecord,
        carried: &Identities<'_>,
        by_controller: &ByController<'_>,
    ) -> Vec<String> {
        let Some(old) = &self.old else {
            return Vec::new();
        };
        let mut forgotten = Vec::new();
        for taint in &old.taints {
            let id = taint.identity();
            if carried.contains(&id) {
                continue;
            }
            let claim = record.claim(taint).map(|c| c.removed);
            // The controller whose own record lists the taint removed it: the removal is kept
            // in its name, so that it, which re-adds the taint when its rule matches again, may.
            let by_record = claim != Some(true)
                && !self.who.username.is_empty()
                && by_controller.stored.contains(&id)
                && self.settings.protecting_rule(taint).is_some();
            if by_record && !record.set(taint, self.who.username) {
                forgotten.push(taint.describe());
                continue;
            }
            if (claim == Some(false) || by_record) && !record.mark_removed(id.0, id.1) {
                forgotten.push(taint.describe());
            }
        }
        forgotten
    }

    /// Records the requester as the owner of each protected taint it adds (those `not_added`
    /// selects aside); each added taint, with whether the record took it.
    fn additions(
        &self,
        record: &mut OwnerRecord,
        not_added: impl Fn(&(&str, &str)) -> bool,
        by_controller: &ByController<'_>,
    ) -> Vec<(String, Recorded)> {
        if self.who.username.is_empty() {
            return Vec::new();
        }
        let mut added = Vec::new();
        for taint in &self.new.taints {
            let id = taint.identity();
            if not_added(&id) || self.settings.protecting_rule(taint).is_none() {
                continue;
            }
            let recorded = if record.set(taint, self.who.username) {
                Recorded::Yes
            } else if by_controller.lists(taint) {
                Recorded::InControllerRecord
            } else {
                Recorded::No
            };
            added.push((taint.describe(), recorded));
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes_whatever_a_username_holds() {
        let kured = Taint::of("weave.works/kured-node-reboot", "PreferNoSchedule");
        let nfd = Taint::of("feature.node.kubernetes.io/gpu", "NoSchedule");
        let odd = r#"oidc:"ops", team=a:b,c\d {}"#;
        let mut record = OwnerRecord::default();
        assert_eq!(record.to_annotation(), None);
        assert!(record.set(&kured, "system:serviceaccount:kube-system:kured"));
        assert!(record.set(&nfd, odd));
        let text = record.to_annotation().unwrap();
        let read = OwnerRecord::parse(Some(&text));
        assert_eq!(read, record);
        assert_eq!(read.owner(&nfd), Some(odd));
        assert_eq!(
            read.owner(&kured),
            Some("system:serviceaccount:kube-system:kured")
        );
        assert_eq!(
            read.owner(&Taint::of("weave.works/kured-node-reboot", "NoSchedule")),
            None
        );
        let mut kept = read.clone();
        kept.retain(|key, _, _| key != "feature.node.kubernetes.io/gpu");
        assert_eq!(kept.owner(&nfd), None);
        assert!(kept.owner(&kured).is_some());
    }

    #[test]
    fn a_removal_keeps_its_owner_and_reads_back() {
        let kured = Taint::of("weave.works/kured-node-reboot", "PreferNoSchedule");
        let nfd = Taint::of("feature.node.kubernetes.io/gpu", "NoSchedule");
        let mut record = OwnerRecord::default();
        assert!(record.set(&kured, "system:serviceaccount:kube-system:kured"));
        assert!(record.set(&nfd, "nfd"));
        assert!(record.mark_removed("weave.works/kured-node-reboot", "PreferNoSchedule"));
        assert!(!record.mark_removed("example.com/never-owned", "NoSchedule"));
        let text = record.to_annotation().unwrap();
        assert_eq!(
            text,
            r#"{"feature.node.kubernetes.io/gpu:NoSchedule":"nfd","weave.works/kured-node-reboot:PreferNoSchedule":{"owner":"system:serviceaccount:kube-system:kured","removed":true}}"#
        );
        let read = OwnerRecord::parse(Some(&text));
        assert_eq!(read, record);
        assert_eq!(
            read.removed_by(&kured),
            Some("system:serviceaccount:kube-system:kured")
        );
        assert_eq!(read.owner(&kured), read.removed_by(&kured));
        assert_eq!(read.removed_by(&nfd), None);
        // The owner's re-add makes the entry live again.
        let mut readded = read.clone();
        assert!(readded.set(&kured, "system:serviceaccount:kube-system:kured"));
        assert_eq!(readded.removed_by(&kured), None);
        // Anything but the two forms is not the policy's: no owner, no removal.
        for foreign in [
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule":{"owner":"kured","removed":false}}"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule":{"owner":"kured"}}"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule":{"owner":"kured","removed":true,"by":"x"}}"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule":{"owner":"","removed":true}}"#,
        ] {
            assert_eq!(
                OwnerRecord::parse(Some(foreign)).claim(&kured),
                None,
                "{foreign}"
            );
        }
    }

    #[test]
    fn a_record_the_policy_did_not_write_names_no_owner() {
        let kured = Taint::of("weave.works/kured-node-reboot", "PreferNoSchedule");
        for text in [
            "",
            "kured",
            "[]",
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule": 1}"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule": ""}"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule": "a",
                "weave.works/kured-node-reboot:PreferNoSchedule": "b"}"#,
            // One object and then anything else is not JSON, nor a record.
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule": "kured"} garbage"#,
            r#"{"weave.works/kured-node-reboot:PreferNoSchedule": "kured"}{}"#,
            r#"{"weave\u002eworks/kured-node-reboot:PreferNoSchedule": "kured"} x"#,
        ] {
            assert_eq!(
                OwnerRecord::parse(Some(text)).owner(&kured),
                None,
                "{text:?}"
            );
        }
        let mut record = OwnerRecord::default();
        for unstorable in [Taint::of("a:b", "NoSchedule"), Taint::of("a", "Sometimes")] {
            assert!(!record.set(&unstorable, "alice"), "{unstorable:?}");
        }
    }

    #[test]
    fn stops_growing_before_the_annotation_limit() {
        let keys: Vec<&'static str> = (0..4000)
            .map(|i| &*Box::leak(format!("example.com/t{i}").into_boxed_str()))
            .collect();
        let mut record = OwnerRecord::default();
        let recorded = keys
            .iter()
            .filter(|k| {
                record.set(
                    &Taint::of(k, "NoSchedule"),
                    "system:serviceaccount:ns:writer",
                )
            })
            .count();
        assert!(recorded > 100 && recorded < keys.len(), "{recorded}");
        assert!(record.to_annotation().unwrap().len() <= MAX_RECORD_BYTES);
    }
}
