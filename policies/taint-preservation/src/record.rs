//! The removal record of one-shot startup taints: which of them the policy has seen removed from
//! a node, kept in an annotation the policy owns.
//!
//! "Absent from `oldObject`" does not mean "removed before": Karpenter applies a NodePool's
//! startup taints in an UPDATE after registration. Only a removal the policy observed makes a
//! later addition a re-add (docs/incidents.md, incident 3).

use std::cmp::Ordering;

use super::findings::Finding;
use super::judging::{Gathered, Judging};
use taintguard::small_map::SmallSet;
use taintguard::taint::{Effect, Taint};

/// The annotation's entries, `key:Effect`, in the order they were recorded. Valid taint keys
/// and effects contain neither `,` nor `:`, so the comma-separated text reads back unambiguously.
#[derive(Debug, Clone, Default)]
pub struct RemovalRecord(Vec<String>);

/// The entry of `taint`; `None` for a taint the API server would refuse to store: its key has a
/// character no qualified name has, or its effect is unknown. Such an entry could not be read
/// back as written, and no node can carry such a taint.
pub(super) fn entry(taint: &Taint<'_>) -> Option<String> {
    let (key, effect) = taint.identity();
    has_entry(taint).then(|| [key, ":", effect].concat())
}

/// Whether `taint` has an entry ([`entry`]).
pub(super) fn has_entry(taint: &Taint<'_>) -> bool {
    let (key, effect) = taint.identity();
    Effect::try_from(effect).is_ok()
        && !key.is_empty()
        && taintguard::k8s_names::taint_key_characters(key)
}

/// How the entry `e` orders against `taint`'s, were it built: finding a taint's entry, most of
/// which are in no record, then builds no string (benchmarks/cost.md, "Decision work, measured
/// per function"). Whether `taint` has an entry at all is [`has_entry`]'s to say.
/// Compared a piece at a time, each by `memcmp`: the bytes of one chained iterator were compared
/// one by one, 1.4k guest instructions an owner record's lookup (kured removing its taint).
pub(super) fn entry_order(e: &str, taint: &Taint<'_>) -> Ordering {
    let (key, effect) = taint.identity();
    let e = e.as_bytes();
    let (head, tail) = e.split_at(e.len().min(key.len()));
    // `e` ends before the separator: before the entry, unless it differs first.
    let Some((separator, rest)) = tail.split_first() else {
        return head.cmp(key.as_bytes()).then(Ordering::Less);
    };
    (head.cmp(key.as_bytes()))
        .then(separator.cmp(&b':'))
        .then_with(|| rest.cmp(effect.as_bytes()))
}

impl RemovalRecord {
    /// Reads the annotation's value; absent is the empty record. Entries are trimmed and empty
    /// ones dropped, so a hand-edited record still reads as its author meant.
    pub fn parse(annotation: Option<&str>) -> RemovalRecord {
        let entries = annotation
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_owned);
        let mut record = RemovalRecord::default();
        for e in entries {
            if !record.0.contains(&e) {
                record.0.push(e);
            }
        }
        record
    }

    pub fn contains(&self, taint: &Taint<'_>) -> bool {
        has_entry(taint) && (self.0.iter()).any(|e| entry_order(e, taint).is_eq())
    }

    /// Records `taint`; whether it was new.
    pub fn insert(&mut self, taint: &Taint<'_>) -> bool {
        match entry(taint) {
            Some(e) if !self.0.contains(&e) => {
                self.0.push(e);
                true
            }
            _ => false,
        }
    }

    /// The same entries, in any order.
    pub fn same_entries(&self, other: &RemovalRecord) -> bool {
        self.0.len() == other.0.len() && self.0.iter().all(|e| other.0.contains(e))
    }

    /// The annotation's value; `None` (no annotation) for the empty record.
    pub fn to_annotation(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.0.join(","))
    }
}

impl Judging<'_> {
    /// The one-shot removal record after the request: the policy owns it, so a permitted
    /// principal may edit it and anyone else's edit is undone; the removals this request makes
    /// are added whoever made them. `before` is the stored record.
    pub(super) fn one_shot_record(
        &self,
        before: RemovalRecord,
        gathered: &mut Gathered<'_>,
    ) -> Result<(), String> {
        let key = self.settings.one_shot_record_annotation.as_str();
        let written = RemovalRecord::parse(self.new.annotation(key)?.as_deref());
        let permitted = self.permission.taints;
        let mut after = if permitted {
            written.clone()
        } else {
            before.clone()
        };
        let recorded: Vec<String> = self
            .removed_one_shot_taints()
            .into_iter()
            .filter(|taint| after.insert(taint))
            .map(Taint::describe)
            .collect();
        if !permitted && !written.same_entries(&before) && !written.same_entries(&after) {
            gathered.findings.push(Finding::RecordRewritten);
        }
        if !after.same_entries(&written) {
            gathered
                .annotations
                .push((key.to_owned(), after.to_annotation()));
        }
        if !recorded.is_empty() {
            gathered
                .audit
                .push(("removed-one-shot-taints".to_owned(), recorded.join("; ")));
        }
        Ok(())
    }

    /// The stored one-shot taints the request removes, whose removal the record keeps. Those
    /// only registration sets need no record: any later addition of theirs is a re-add.
    fn removed_one_shot_taints(&self) -> Vec<&Taint<'_>> {
        let Some(old) = &self.old else {
            return Vec::new();
        };
        let kept: SmallSet<(&str, &str)> =
            self.new.taints.iter().map(|t| (t.identity(), ())).collect();
        old.taints
            .iter()
            .filter(|t| !kept.contains(&t.identity()))
            .filter(|t| {
                self.settings
                    .one_shot_rule(t)
                    .is_some_and(|r| !r.only_at_registration)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order of the entry `key:effect` would have as a string, whatever the lengths and
    /// wherever they differ.
    #[test]
    fn entries_order_as_their_strings() {
        let texts = [
            "",
            "a",
            "a:",
            "a:N",
            "a:NoExecute",
            "a:NoSchedule",
            "ab",
            "a/b:NoExecute",
            "a;b",
            "b:NoExecute",
            "a:NoExecutes",
            "a:No",
        ];
        let taints = [
            ("a", "NoExecute"),
            ("a", "No"),
            ("a", ""),
            ("", ""),
            ("ab", "NoExecute"),
            ("a/b", "NoExecute"),
            ("b", ""),
        ];
        for e in texts {
            for (key, effect) in taints {
                let want = e.cmp([key, ":", effect].concat().as_str());
                assert_eq!(
                    entry_order(e, &Taint::of(key, effect)),
                    want,
                    "{e:?} {key}:{effect}"
                );
            }
        }
    }

    #[test]
    fn reads_writes_and_compares() {
        let ebs = Taint::of("ebs.csi.aws.com/agent-not-ready", "NoExecute");
        let efs = Taint::of("efs.csi.aws.com/agent-not-ready", "NoExecute");
        let cases: &[(Option<&str>, &[bool; 2], Option<&str>)] = &[
            (None, &[false, false], None),
            (Some(""), &[false, false], None),
            (
                Some(" ebs.csi.aws.com/agent-not-ready:NoExecute ,, "),
                &[true, false],
                Some("ebs.csi.aws.com/agent-not-ready:NoExecute"),
            ),
            (
                Some("ebs.csi.aws.com/agent-not-ready:NoSchedule"),
                &[false, false],
                Some("ebs.csi.aws.com/agent-not-ready:NoSchedule"),
            ),
        ];
        for (text, holds, written) in cases {
            let record = RemovalRecord::parse(*text);
            assert_eq!(
                [record.contains(&ebs), record.contains(&efs)],
                **holds,
                "{text:?}"
            );
            assert_eq!(record.to_annotation().as_deref(), *written, "{text:?}");
        }
        let mut record = RemovalRecord::parse(Some("efs.csi.aws.com/agent-not-ready:NoExecute"));
        assert!(record.insert(&ebs));
        assert!(!record.insert(&ebs));
        assert_eq!(
            record.to_annotation().as_deref(),
            Some("efs.csi.aws.com/agent-not-ready:NoExecute,ebs.csi.aws.com/agent-not-ready:NoExecute")
        );
        let reordered = RemovalRecord::parse(Some(
            "ebs.csi.aws.com/agent-not-ready:NoExecute,efs.csi.aws.com/agent-not-ready:NoExecute,ebs.csi.aws.com/agent-not-ready:NoExecute",
        ));
        assert!(record.same_entries(&reordered));
        assert!(!record.same_entries(&RemovalRecord::default()));
        for unstorable in [
            Taint::of("a,b", "NoExecute"),
            Taint::of("a:b", "NoExecute"),
            Taint::of("a", ","),
            Taint::of("", "NoExecute"),
        ] {
            assert!(!record.insert(&unstorable), "{unstorable:?}");
            assert!(!record.contains(&unstorable), "{unstorable:?}");
        }
    }
}
