//! Cordon ownership (docs/incidents.md, incident 2): who cordoned a node, kept in an annotation
//! the policy owns, and who may lift the cordon.

use super::findings::Finding;
use super::judging::Judging;

/// What the cordon owner record holds once the request is through.
#[derive(Debug, PartialEq, Eq)]
enum CordonOwner {
    /// Whatever the request wrote: the cordon did not change hands.
    AsWritten,
    /// This owner, or (`None`) no record.
    Is(Option<String>),
}

/// What cordon ownership makes of a request.
pub(super) struct CordonOutcome {
    /// The owner annotation's edit: its key, and the value to set (`None`: remove it).
    pub owner_edit: Option<(String, Option<String>)>,
    pub keep_cordoned: bool,
}

/// The stored and the written owner records, as the annotation holds them.
struct Owners {
    stored: Option<String>,
    written: Option<String>,
}

impl Judging<'_> {
    /// Cordon ownership: the policy decides the owner annotation's final value, and whether an
    /// uncordon is undone.
    pub(super) fn cordon<'j>(
        &'j self,
        findings: &mut Vec<Finding<'j>>,
    ) -> Result<CordonOutcome, String> {
        let cordon = &self.settings.cordon;
        if !cordon.enabled {
            return Ok(CordonOutcome {
                owner_edit: None,
                keep_cordoned: false,
            });
        }
        let key = cordon.owner_annotation.as_str();
        let owners = Owners {
            stored: match &self.old {
                Some(old) => old.annotation(key)?,
                None => None,
            },
            written: self.new.annotation(key)?,
        };
        let was = self.old.as_ref().is_some_and(|old| old.cordoned());
        let (owner, keep_cordoned) = match (was, self.new.cordoned()) {
            // A request without a requester (a background audit, docs/admission.md) names no
            // owner.
            (false, true) if !self.who.username.is_empty() => {
                (CordonOwner::Is(Some(self.who.username.to_owned())), false)
            }
            (true, false) => self.uncordon(&owners, findings),
            // The record changed while the cordon did not: on a cordoned node it decides who
            // may lift the cordon, and on an uncordoned one nothing but a forgery or a stale
            // copy writes it (docs/records.md).
            (was, now)
                if was == now
                    && self.old.is_some()
                    && owners.written != owners.stored
                    && !self.permission.cordon =>
            {
                findings.push(Finding::OwnerRewritten {
                    owner: owners.stored.clone(),
                });
                (CordonOwner::Is(owners.stored.clone()), false)
            }
            _ => (CordonOwner::AsWritten, false),
        };
        // Only write what differs from the incoming object.
        let owner_edit = match owner {
            CordonOwner::Is(owner) if owner != owners.written => Some((key.to_owned(), owner)),
            _ => None,
        };
        Ok(CordonOutcome {
            owner_edit,
            keep_cordoned,
        })
    }

    /// An uncordon: the recorded owner, a permitted principal, or for a cordon no record names
    /// one `cordon.unrecordedPermitted` lists, lifts it and the record goes; anyone else's is
    /// undone, with the record as stored. Whether the node stays cordoned.
    fn uncordon(&self, owners: &Owners, findings: &mut Vec<Finding<'_>>) -> (CordonOwner, bool) {
        let who = &self.who;
        let lifts_own = match owners.stored.as_deref() {
            Some(owner) => owner == who.username,
            None => self.settings.cordon.unrecorded_permitted.allows(who),
        };
        if self.permission.cordon || lifts_own {
            return (CordonOwner::Is(None), false);
        }
        findings.push(Finding::Uncordon {
            owner: owners.stored.clone(),
        });
        // Both attempts are named: the record is kept as well as the cordon.
        if owners.written != owners.stored {
            findings.push(Finding::OwnerRewritten {
                owner: owners.stored.clone(),
            });
        }
        (CordonOwner::Is(owners.stored.clone()), true)
    }
}
