//! One request judged: the context every step reads (settings, requester, mode, permission,
//! the stored and the written Node), what the steps gather, and the verdict made of it. The steps
//! live with what they judge: taint changes in `taints.rs`, each record in its own module
//! (`record.rs`, `owners.rs`, `controllers.rs`, `cordon.rs`), the words in `findings.rs`.

use super::findings::Finding;
use super::node::{NodeEdits, NodeView};
use super::owners::OwnerRecord;
use super::record::RemovalRecord;
use super::settings::{Mode, Settings};
use super::taints::Records;
use super::{Judgement, Permission};
use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::principal::Principal;
use taintguard::verdict::Verdict;

/// A request to judge, read once: what every step of the judgement needs.
pub(super) struct Judging<'a> {
    pub settings: &'a Settings,
    pub who: Principal<'a>,
    pub mode: Mode,
    /// What the requester may do beyond the per-rule lists (the settings, or RBAC).
    pub permission: Permission,
    /// The stored Node; `None` for a CREATE.
    pub old: Option<NodeView<'a>>,
    /// The Node as the request writes it.
    pub new: NodeView<'a>,
    /// How messages name the node.
    pub node_name: String,
}

/// What judging a request gathers on its way to a verdict.
#[derive(Default)]
pub(super) struct Gathered<'a> {
    pub findings: Vec<Finding<'a>>,
    /// Record annotations to set (`Some`) or remove (`None`), by key.
    pub annotations: Vec<(String, Option<String>)>,
    /// Audit annotations of what the records learn.
    pub audit: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

impl<'a> Judging<'a> {
    /// Reads the Node views of a CREATE or UPDATE of a Node.
    ///
    /// # Errors
    ///
    /// A request without an object, an UPDATE without `oldObject`, or a Node the views cannot
    /// read, named by field.
    pub fn read(
        request: &'a AdmissionRequest<'a>,
        settings: &'a Settings,
        mode: Mode,
        permission: Permission,
    ) -> Result<Judging<'a>, String> {
        let object = request.object.as_ref().ok_or("the request has no object")?;
        let new = NodeView::read(object, "object")?;
        let old = match request.operation {
            Operation::Update => Some(NodeView::read(
                request
                    .old_object
                    .as_ref()
                    .ok_or("an UPDATE without oldObject cannot be judged")?,
                "oldObject",
            )?),
            _ => None,
        };
        let node_name = new
            .name
            .as_ref()
            .map(|n| n.as_str().to_owned())
            .or_else(|| request.name.as_ref().map(|n| n.as_str().to_owned()))
            .unwrap_or_else(|| "(unnamed)".to_owned());
        Ok(Judging {
            settings,
            who: request.principal(),
            mode,
            permission,
            old,
            new,
            node_name,
        })
    }

    /// Every step in turn, then the verdict on what they found.
    ///
    /// # Errors
    ///
    /// An annotation or taint list the views cannot read.
    pub fn judge(&self) -> Result<Judgement, String> {
        let owners_before = match &self.old {
            Some(old) => OwnerRecord::on(old, self.settings.taint_owners.key())?,
            None => OwnerRecord::default(),
        };
        let mut gathered = Gathered::default();
        let by_controller = self.controller_records(&mut gathered)?;
        if let Some(old) = &self.old {
            let key = self.settings.one_shot_record_annotation.as_str();
            let removals = RemovalRecord::parse(old.annotation(key)?.as_deref());
            if !self.permission.taints {
                let records = Records {
                    removals: &removals,
                    owners: &owners_before,
                    by_controller: &by_controller,
                };
                self.taint_findings(records, &mut gathered.findings);
            }
            self.one_shot_record(removals, &mut gathered)?;
        }
        self.owner_record(&owners_before, &by_controller, &mut gathered)?;
        let cordon = self.cordon(&mut gathered.findings)?;
        gathered.annotations.extend(cordon.owner_edit);
        self.respond(cordon.keep_cordoned, gathered)
    }

    /// The verdict on what was gathered: in deny mode a refusal naming every finding; else the
    /// request with the protected state and the records spliced back in, and a warning per
    /// finding.
    fn respond(&self, keep_cordoned: bool, gathered: Gathered<'_>) -> Result<Judgement, String> {
        let Gathered {
            findings,
            annotations,
            audit,
            warnings,
        } = gathered;
        let wants = Permission {
            taints: findings.iter().any(Finding::wants_untaint),
            cordon: findings.iter().any(|f| !f.wants_untaint()),
        };
        // Said in the warnings or the rejection, and in the audit annotations: written once.
        let attempted: Vec<String> = findings
            .iter()
            .map(|f| f.attempted(&self.node_name))
            .collect();
        let mut verdict = if self.mode == Mode::Deny && !findings.is_empty() {
            Verdict::reject(403, self.deny_message(&attempted, wants))
        } else {
            let edits = NodeEdits {
                taints: self.restored_taints(&findings),
                unschedulable: keep_cordoned.then_some(true),
                annotations,
            };
            let mut verdict = if edits.is_empty() {
                Verdict::accept()
            } else {
                Verdict::mutate_nesting(self.new.apply(&edits)?, Some(self.edited_nesting()))
            };
            verdict.warnings = self.warnings(&findings, &attempted);
            verdict
        };
        verdict.warnings.extend(warnings);
        verdict.audit_annotations = self.audit_annotations(&findings, attempted, audit);
        Ok(Judgement {
            verdict,
            wants,
            node: self.node_name.clone(),
        })
    }

    /// How many levels the node with this policy's edits nests at most: the edits copy taints
    /// from the request's two objects into `spec.taints` (a list at level 3, each taint where it
    /// was), and write strings into `metadata.annotations` (level 3) beside values the node had,
    /// and a boolean into `spec`. So no deeper than either object, or 3.
    fn edited_nesting(&self) -> usize {
        let old = self.old.as_ref().map_or(0, NodeView::nesting);
        self.new.nesting().max(old).max(3)
    }

    /// A warning per finding: who may not do what, and what the patch does about it.
    fn warnings(&self, findings: &[Finding<'_>], attempted: &[String]) -> Vec<String> {
        // Concatenated, not `format!`ted: each warning then costs a copy, not the formatting
        // machinery and a growing buffer; the requester described once, and only when there is
        // something to warn of (benchmarks/cost.md).
        let requester = if findings.is_empty() {
            String::new()
        } else {
            self.who.describe()
        };
        findings
            .iter()
            .zip(attempted)
            .map(|(f, attempted)| {
                [
                    &requester,
                    " may not ",
                    attempted,
                    "; ",
                    f.remedy(),
                    " unless the policy runs in monitor mode",
                ]
                .concat()
            })
            .collect()
    }
}
