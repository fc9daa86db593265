//! The taint owner record: who added each protected taint of a node, kept in an annotation the
//! policy owns (docs/controllers.md). The adder may later change the taint's value or remove it.
//!
//! The annotation's value is a JSON object from `key:Effect` to the adder's username, keys
//! sorted: usernames may hold any character (`,`, `:`, `=`, quotes), and JSON reads back exactly
//! what was written, whatever they hold. Valid taint keys and effects hold no `:`, so the entry
//! key splits unambiguously too.

use super::record::entry;
use crate::json::{members, JsonStr};
use crate::taint::Taint;

/// Past this size a new owner is not recorded (the taint stays unowned, so protected as without
/// the record) rather than have the API server refuse the write: Kubernetes limits all of an
/// object's annotations together to 256 KiB.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// Entries (`key:Effect`, owner), sorted by entry key. A sorted vector rather than a map: a node
/// has a handful of owned taints, and the module reuses the object reader the other annotations
/// take instead of linking a map type and its deserialiser, which made the module 11 KB larger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnerRecord(Vec<(String, String)>);

impl OwnerRecord {
    /// Reads the annotation's value; absent is the empty record. A value that is not an object
    /// of strings was not written by the policy: it names no owner, so every taint it would
    /// cover is judged as an unowned one, never more leniently. Empty usernames own nothing.
    pub fn parse(annotation: Option<&str>) -> OwnerRecord {
        let read = |text: &str| -> Option<Vec<(String, String)>> {
            members(text)
                .ok()?
                .into_iter()
                .map(|(key, value)| {
                    let owner: JsonStr = serde_json::from_str(value.get()).ok()?;
                    Some((key.0.into_owned(), owner.0.into_owned()))
                })
                .collect()
        };
        let mut entries = annotation.and_then(read).unwrap_or_default();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        // The policy never writes a key twice: which of two owners was meant is unknowable.
        if entries.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return OwnerRecord::default();
        }
        entries.retain(|(_, owner)| !owner.is_empty());
        OwnerRecord(entries)
    }

    fn find(&self, entry: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(e, _)| e.as_str().cmp(entry))
    }

    /// The recorded owner of `taint`.
    pub fn owner(&self, taint: &Taint<'_>) -> Option<&str> {
        let e = entry(taint)?;
        self.find(&e).ok().map(|i| self.0[i].1.as_str())
    }

    /// Records `owner` as the adder of `taint`, unless the record would grow past
    /// [`MAX_RECORD_BYTES`]; whether it was recorded.
    pub fn set(&mut self, taint: &Taint<'_>, owner: &str) -> bool {
        let Some(e) = entry(taint) else {
            return false;
        };
        match self.find(&e) {
            Ok(i) => self.0[i].1 = owner.to_owned(),
            Err(i) => {
                if self.text_len() + e.len() + owner.len() + 8 > MAX_RECORD_BYTES {
                    return false;
                }
                self.0.insert(i, (e, owner.to_owned()));
            }
        }
        true
    }

    /// Keeps the entries of the taints `keep` says the node still carries.
    pub fn retain(&mut self, keep: impl Fn(&str, &str) -> bool) {
        self.0.retain(|(e, _)| {
            let (key, effect) = e.rsplit_once(':').unwrap_or((e, ""));
            keep(key, effect)
        });
    }

    /// An upper bound of the annotation value's length, cheap enough to ask per addition.
    fn text_len(&self) -> usize {
        self.0
            .iter()
            .map(|(k, v)| k.len() + v.len() + 8)
            .sum::<usize>()
            + 2
    }

    /// The annotation's value; `None` (no annotation) for the empty record.
    pub fn to_annotation(&self) -> Option<String> {
        if self.0.is_empty() {
            return None;
        }
        let mut out = String::from("{");
        for (i, (key, owner)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            crate::json::write_str(&mut out, key);
            out.push(':');
            crate::json::write_str(&mut out, owner);
        }
        out.push('}');
        Some(out)
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
        kept.retain(|key, _| key != "feature.node.kubernetes.io/gpu");
        assert_eq!(kept.owner(&nfd), None);
        assert!(kept.owner(&kured).is_some());
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
