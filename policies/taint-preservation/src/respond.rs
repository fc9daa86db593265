//! The verdict on what judging a request gathered: in deny mode a refusal naming every
//! finding; else the request with the protected state and the records spliced back in, a warning
//! per finding, and the audit annotations.

use super::findings::{requested_by, Finding};
use super::judging::{Gathered, Judgement, Judging, Permission};
use super::node::{NodeEdits, NodeView};
use super::settings::Mode;
use taintguard::verdict::Verdict;

impl Judging<'_> {
    /// The verdict on what was gathered: in deny mode a refusal naming every finding; else the
    /// request with the protected state and the records spliced back in, and a warning per
    /// finding.
    pub(super) fn respond(
        &self,
        keep_cordoned: bool,
        gathered: Gathered<'_>,
    ) -> Result<Judgement, String> {
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
                annotations: self.settled(annotations)?,
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

    /// The record edits, each key edited once: where two steps edit one record (the seal's
    /// repair, then the step that keeps the record), the last says what it holds, and no edit is
    /// left where that is what the request already writes. A key edited once is left as its step
    /// wrote it.
    fn settled(
        &self,
        edits: Vec<(String, Option<String>)>,
    ) -> Result<Vec<(String, Option<String>)>, String> {
        let mut settled: Vec<(String, Option<String>, bool)> = Vec::with_capacity(edits.len());
        for (key, value) in edits {
            match settled.iter_mut().find(|(k, _, _)| *k == key) {
                Some(edit) => (edit.1, edit.2) = (value, true),
                None => settled.push((key, value, false)),
            }
        }
        let mut kept = Vec::with_capacity(settled.len());
        for (key, value, twice) in settled {
            if !twice || self.new.stored_annotation(&key)? != value {
                kept.push((key, value));
            }
        }
        Ok(kept)
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

    /// The response's audit annotations: what the request attempted that the requester may
    /// not do, under one key per kind, the policy's `answer`, what the policy's records learn
    /// (`records`), and who asked.
    fn audit_annotations(
        &self,
        findings: &[Finding<'_>],
        attempted: Vec<String>,
        records: Vec<(String, String)>,
    ) -> Vec<(String, String)> {
        let mut audit: Vec<(String, String)> = Vec::new();
        for (finding, text) in findings.iter().zip(attempted) {
            match audit.iter_mut().find(|(k, _)| k == finding.audit_key()) {
                Some((_, value)) => {
                    value.push_str("; ");
                    value.push_str(&text);
                }
                None => audit.push((finding.audit_key().to_owned(), text)),
            }
        }
        if !findings.is_empty() {
            let answer = match self.mode {
                Mode::Restore => {
                    "restore: a patch that keeps the protected state (monitor mode drops it)"
                }
                Mode::Deny => {
                    "deny: rejected with code 403 (monitor mode lets the request through)"
                }
            };
            audit.push(("answer".to_owned(), answer.to_owned()));
        }
        audit.extend(records);
        if !audit.is_empty() {
            audit.push(requested_by(&self.who));
        }
        audit
    }

    /// The refusal's message: who may not do what, and how to get permission.
    fn deny_message(&self, attempted: &[String], wants: Permission) -> String {
        let rbac = &self.settings.rbac;
        let mut message = format!(
            "{} may not {}. Have a permitted principal make this change (by default any person, \
             or a member of system:masters), or add the requester to the policy settings \
             `permitted` (or to the `permitted` list of the matching `protectedTaints` rule)",
            self.who.describe(),
            attempted.join("; ")
        );
        if rbac.enabled {
            let verbs: Vec<String> = [
                (wants.taints, rbac.untaint_verb.as_str()),
                (wants.cordon, rbac.uncordon_verb.as_str()),
            ]
            .iter()
            .filter(|(wanted, _)| *wanted)
            .map(|(_, verb)| rbac.describe(verb, &self.node_name))
            .collect();
            message.push_str(", or grant the requester by RBAC: ");
            message.push_str(&verbs.join(" and "));
        }
        message.push('.');
        message
    }
}
