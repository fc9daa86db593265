//! What a request attempted that its requester may not do, and the words for each finding that the
//! warnings, the refusal and the audit annotations (`respond.rs`) are made of. Every text says what
//! the request attempted and what the policy's answer does, never that something was done, so it
//! stays true in Kubewarden's monitor mode, which passes warnings and audit annotations on and
//! drops the answer.

use taintguard::principal::Principal;
use taintguard::taint::Taint;
use taintguard::verdict::quoted;

/// Something the requester may not do. A finding about an entry of the written object's
/// `spec.taints` carries its index there, which the restore splices by.
#[derive(Debug)]
pub(super) enum Finding<'a> {
    RemovedTaint(&'a Taint<'a>),
    ChangedTaint {
        old: &'a Taint<'a>,
        new: &'a Taint<'a>,
        at: usize,
    },
    /// A taint whose removal the policy recorded, put back by a requester that may not: a
    /// one-shot startup taint (`owner: None`), or an owned taint its owner removed.
    Readded {
        taint: &'a Taint<'a>,
        at: usize,
        owner: Option<String>,
    },
    Uncordon {
        owner: Option<String>,
    },
    OwnerRewritten {
        owner: Option<String>,
    },
    RecordRewritten,
    OwnersRewritten,
    /// A controller's own ownership record, changed by a requester that is neither its writer
    /// nor permitted.
    ControllerRecordRewritten {
        annotation: String,
        /// The settings change that names the requester as the record's writer, should it be
        /// that controller installed under another identity (`add ... to ...`).
        naming: String,
    },
}

impl Finding<'_> {
    /// Whether the `untaint` permission covers this (else it is about a cordon).
    pub(super) fn wants_untaint(&self) -> bool {
        !matches!(
            self,
            Finding::Uncordon { .. } | Finding::OwnerRewritten { .. }
        )
    }

    /// Whether the restore splices `spec.taints` for it.
    pub(super) fn touches_taints(&self) -> bool {
        matches!(
            self,
            Finding::RemovedTaint(_) | Finding::ChangedTaint { .. } | Finding::Readded { .. }
        )
    }

    /// What was attempted, as the end of "may not …".
    pub(super) fn attempted(&self, node: &str) -> String {
        match self {
            Finding::RemovedTaint(t) => ["remove protected taint ", &t.describe()].concat(),
            Finding::ChangedTaint { old, new, .. } => {
                format!(
                    "change protected taint {} to {}",
                    old.describe(),
                    new.describe()
                )
            }
            Finding::Readded {
                taint, owner: None, ..
            } => ["re-add one-shot startup taint ", &taint.describe()].concat(),
            Finding::Readded {
                taint,
                owner: Some(owner),
                ..
            } => [
                "re-add protected taint ",
                &taint.describe(),
                &quoted(", which its owner ", owner),
                " removed",
            ]
            .concat(),
            Finding::Uncordon { owner } => format!("uncordon node {node} ({})", owner_text(owner)),
            Finding::OwnerRewritten { owner } => {
                format!(
                    "rewrite the cordon owner record of node {node} ({})",
                    owner_text(owner)
                )
            }
            Finding::RecordRewritten => {
                format!("rewrite the one-shot taint removal record of node {node}")
            }
            Finding::OwnersRewritten => {
                format!("rewrite the taint owner record of node {node}")
            }
            Finding::ControllerRecordRewritten { annotation, naming } => {
                format!(
                    "rewrite the controller's taint record {annotation} of node {node} (only \
                     the writers its controllerRecords entry names may: if the requester is \
                     that controller, installed under another identity, {naming} of the \
                     entry for {annotation})"
                )
            }
        }
    }

    /// What the restore mode's patch does about it. Kubewarden's monitor mode drops the patch
    /// but passes warnings on, so the words say what the patch does, not what happened.
    pub(super) fn remedy(&self) -> &'static str {
        match self {
            Finding::RemovedTaint(_) => "this policy's patch puts it back",
            Finding::ChangedTaint { .. } => "this policy's patch keeps the old value",
            Finding::Readded { .. } => "this policy's patch strips it",
            Finding::Uncordon { .. } => "this policy's patch keeps the node cordoned",
            Finding::OwnerRewritten { .. }
            | Finding::RecordRewritten
            | Finding::OwnersRewritten => {
                "this policy's patch keeps the record as the policy keeps it"
            }
            Finding::ControllerRecordRewritten { .. } => {
                "this policy's patch keeps the record as it was"
            }
        }
    }

    /// The audit annotation this finding is listed under. Keys and values say what the request
    /// attempted, which stays true in every mode; the `answer` key says what the policy answered.
    pub(super) fn audit_key(&self) -> &'static str {
        match self {
            Finding::RemovedTaint(_)
            | Finding::ChangedTaint { .. }
            | Finding::Readded { owner: Some(_), .. } => "protected-taints",
            Finding::Readded { owner: None, .. } => "one-shot-taints",
            Finding::Uncordon { .. } => "cordon",
            Finding::OwnerRewritten { .. }
            | Finding::RecordRewritten
            | Finding::OwnersRewritten
            | Finding::ControllerRecordRewritten { .. } => "records",
        }
    }
}

fn owner_text(owner: &Option<String>) -> String {
    match owner {
        Some(owner) => quoted("cordoned by ", owner),
        None => "no cordon owner recorded".to_owned(),
    }
}

pub(super) fn requested_by(who: &Principal<'_>) -> (String, String) {
    ("requested-by".to_owned(), who.username.to_owned())
}
