//! Ownership records that controllers keep of their own taints, read from the stored Node
//! (docs/controllers.md, "Controllers' own records"). A taint such a record lists belongs to the
//! record's principals, including taints applied before this policy was installed, which the
//! policy's own owner record never saw being added.
//!
//! Each record is read only as its writer writes it; a value in another form lists nothing, so
//! a garbled record can only make the policy stricter.

use super::findings::Finding;
use super::judging::{Gathered, Judging};
use super::owners::OwnerRecord;
use super::settings::{ControllerRecord, RecordFormat};
use taintguard::glob;
use taintguard::principal::Identity;
use taintguard::small_map::SmallSet;
use taintguard::taint::Taint;
use taintguard::verdict::quoted;

/// What controllers' own records give the requester: the stored taints they list, by identity,
/// and everything they list, on the node or not yet. A controller lists a taint it wants, so its
/// re-add of one it lists is its own, whoever's removal the owner record keeps.
#[derive(Default)]
pub(super) struct ByController<'v> {
    pub stored: SmallSet<(&'v str, &'v str)>,
    pub listed: Vec<Listed>,
}

impl ByController<'_> {
    /// Whether a record the requester writes lists `taint`.
    pub fn lists(&self, taint: &Taint<'_>) -> bool {
        self.listed.iter().any(|listed| listed.lists(taint))
    }
}

/// The taints one controller record lists: `(key, Some(effect))`, or `(key, None)` for every
/// effect of the key.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listed(Vec<(String, Option<String>)>);

impl RecordFormat {
    /// Reads an annotation's value as this format writes it.
    pub fn read(self, text: &str) -> Listed {
        match self {
            // `key=value:Effect` or `key:Effect`, comma-separated: node-feature-discovery joins
            // `Taint.ToString()` with `,`; Cluster API joins sorted `key:Effect` with `,`.
            RecordFormat::Taints => Listed(
                text.split(',')
                    .map(str::trim)
                    .filter_map(|item| item.rsplit_once(':'))
                    .map(|(spec, effect)| {
                        let key = spec.split_once('=').map_or(spec, |(key, _)| key);
                        (key.to_owned(), Some(effect.to_owned()))
                    })
                    .filter(|(key, _)| !key.is_empty())
                    .collect(),
            ),
            // Talos: a JSON array of taint keys, every effect of each.
            RecordFormat::Keys => Listed(
                serde_json::from_str::<Vec<String>>(text)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|key| !key.is_empty())
                    .map(|key| (key, None))
                    .collect(),
            ),
        }
    }
}

impl Listed {
    pub fn lists(&self, taint: &Taint<'_>) -> bool {
        let (key, effect) = taint.identity();
        self.0
            .iter()
            .any(|(k, e)| k == key && e.as_deref().is_none_or(|e| e == effect))
    }
}

impl ControllerRecord {
    /// What this record, stored as `annotation` (absent: `None`), lists within its `keys`.
    pub fn listed(&self, annotation: Option<&str>) -> Listed {
        self.claimed(self.listed_anywhere(annotation))
    }

    /// What of `listed` lies within the record's `keys`.
    fn claimed(&self, mut listed: Listed) -> Listed {
        listed.0.retain(|(key, _)| self.claims(key));
        listed
    }

    /// What this record lists, its `keys` aside.
    fn listed_anywhere(&self, annotation: Option<&str>) -> Listed {
        annotation
            .map(|text| self.format.read(text))
            .unwrap_or_default()
    }

    /// The keys the record may claim, as a refusal names them.
    fn claimed_keys(&self) -> String {
        let globs: Vec<&str> = self.keys.iter().map(|g| g.as_str()).collect();
        format!(
            "its controllerRecords entry claims only keys {}",
            globs.join(", ")
        )
    }

    /// Whether the record may claim a taint of `key`: any key where it names no `keys`.
    pub fn claims(&self, key: &str) -> bool {
        self.keys.is_empty() || self.keys.iter().any(|glob| glob.matches(key))
    }
}

impl Judging<'_> {
    /// What controllers' records give the requester, and a finding, with the stored value to
    /// keep, for each record that a requester neither its writer nor permitted changed. A CREATE
    /// has no stored records.
    pub(super) fn controller_records(
        &self,
        owners: &OwnerRecord,
        gathered: &mut Gathered<'_>,
    ) -> Result<ByController<'_>, String> {
        let mut owned = ByController::default();
        let Some(old) = &self.old else {
            return Ok(owned);
        };
        for record in self.settings.controller_records.iter() {
            let writer = record.owner.allows(&self.who);
            // A permitted principal may change any record and needs none: nothing to read.
            if !writer && self.permission.taints {
                continue;
            }
            let key = record.annotation.as_str();
            let stored = old.annotation(key)?;
            if writer {
                let listed = record.listed_anywhere(stored.as_deref());
                for taint in old.taints.iter().filter(|t| listed.lists(t)) {
                    let refused = if record.claims(taint.key.as_str()) {
                        (self.owned_by_another(owners, taint)).map(|owner| {
                            [
                                &quoted("the taint owner record names ", owner),
                                " its owner",
                            ]
                            .concat()
                        })
                    } else {
                        Some(record.claimed_keys())
                    };
                    match refused {
                        Some(why) => gathered
                            .warnings
                            .extend(self.disowned_warning(key, taint, &why)),
                        None => {
                            owned.stored.insert(taint.identity(), ());
                        }
                    }
                }
                owned.listed.push(record.claimed(listed));
            } else if self.new.annotation(key)? != stored {
                gathered.findings.push(Finding::ControllerRecordRewritten {
                    annotation: key.to_owned(),
                    naming: self.naming_the_requester(),
                });
                gathered.annotations.push((key.to_owned(), stored));
            }
        }
        Ok(owned)
    }

    /// The principal the owner record names for `taint` when that is neither the requester nor
    /// another identity of its controller. A controller's record grants only the taints its
    /// writer added and those nobody is recorded to own (docs/records.md, "What a controller's
    /// record grants"): listing a person's taint, which node-feature-discovery does for any
    /// `NodeFeatureRule` that names it, is no deed to it.
    fn owned_by_another<'o>(&self, owners: &'o OwnerRecord, taint: &Taint<'_>) -> Option<&'o str> {
        owners
            .owner(taint)
            .filter(|owner| *owner != self.who.username && !self.same_controller(owner))
    }

    /// A warning when the request removes or changes a taint its writer's record `key` lists
    /// but may not claim (`why`: it is another's, or outside the entry's `keys`): the record is
    /// ignored for that taint, so the change is judged as anyone's.
    fn disowned_warning(&self, key: &str, taint: &Taint<'_>, why: &str) -> Option<String> {
        let written = (self.new.taints.iter()).find(|t| t.identity() == taint.identity());
        if written.is_some_and(|t| t.value == taint.value) {
            return None;
        }
        Some(format!(
            "the controller record {key} lists {}, but {why}: the record grants {} nothing for \
             that taint",
            taint.describe(),
            self.who.describe()
        ))
    }

    /// The change to a `controllerRecords` entry's `owner` that names the requester: a service
    /// account by `namespace/name`, anyone else by username.
    fn naming_the_requester(&self) -> String {
        // Escaped, so that a name holding glob characters matches only itself.
        match self.who.identity() {
            Identity::ServiceAccount { namespace, name } => [
                &quoted("add ", &glob::escape(&format!("{namespace}/{name}"))),
                " to owner.serviceAccounts",
            ]
            .concat(),
            _ => [
                &quoted("add ", &glob::escape(self.who.username)),
                " to owner.users",
            ]
            .concat(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_writers_form() {
        let gpu = Taint::of("feature.node.kubernetes.io/gpu", "NoSchedule");
        let gpu_exec = Taint::of("feature.node.kubernetes.io/gpu", "NoExecute");
        let capi = Taint::of("example.com/pool", "NoSchedule");
        // (format, stored value, lists [gpu, gpu NoExecute, pool])
        let cases: &[(RecordFormat, &str, [bool; 3])] = &[
            // node-feature-discovery 0.19: `Taint.ToString()` joined with `,`, rule order.
            (
                RecordFormat::Taints,
                "feature.node.kubernetes.io/gpu=a100:NoSchedule,example.com/pool:NoSchedule",
                [true, false, true],
            ),
            // Cluster API 1.12: sorted `key:Effect`; `""` once initialised with nothing owned.
            (
                RecordFormat::Taints,
                "example.com/pool:NoSchedule",
                [false, false, true],
            ),
            (RecordFormat::Taints, "", [false, false, false]),
            (
                RecordFormat::Taints,
                "feature.node.kubernetes.io/gpu",
                [false, false, false],
            ),
            (RecordFormat::Taints, "=x:NoSchedule", [false, false, false]),
            // Talos: a JSON array of keys; every effect of a key.
            (
                RecordFormat::Keys,
                r#"["feature.node.kubernetes.io/gpu"]"#,
                [true, true, false],
            ),
            (
                RecordFormat::Keys,
                "feature.node.kubernetes.io/gpu",
                [false, false, false],
            ),
            (RecordFormat::Keys, r#"{"a": 1}"#, [false, false, false]),
        ];
        for (format, text, want) in cases {
            let listed = format.read(text);
            let got = [
                listed.lists(&gpu),
                listed.lists(&gpu_exec),
                listed.lists(&capi),
            ];
            assert_eq!(got, *want, "{format:?} {text:?}");
        }
    }
}
