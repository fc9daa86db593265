//! The `matchConditions` that keep from the policy the writes it answers with a plain accept
//! (Kubernetes 1.28 and later; docs/availability.md), written from the settings. A workload's
//! CREATE and UPDATE, and a Pod's CREATE, always reach it: its rules, restrictions and aliases
//! may act on any. What it can leave alone are the writes an outage hurts most: a Pod UPDATE
//! (the Job controller's finalizer removal, labels, a `kubectl annotate`) when neither a
//! restriction nor PodTolerationRestriction judges Pod UPDATEs, or when the tolerations are
//! unchanged and only restrictions do; and a Namespace write (`namespaces/finalize` during a
//! deletion among them) unless the PodTolerationRestriction guard is on and the write changes
//! one of its two annotations. `judge_pod_update` and `judge_namespace` answer those with a
//! plain accept, so a cluster without the conditions gets the same answers.

use taintguard::MatchCondition;

use super::pod_toleration_restriction::{DEFAULTS, WHITELIST};
use super::settings::Settings;

impl Settings {
    /// The conditions of the policy's webhook.
    ///
    /// # Examples
    ///
    /// ```
    /// use toleration_injection::Settings;
    ///
    /// let conditions = Settings::default().match_conditions();
    /// assert!(conditions[0].expression.contains("request.kind.kind == 'Namespace'"));
    /// ```
    pub fn match_conditions(&self) -> Vec<MatchCondition> {
        let ptr = &self.pod_toleration_restriction;
        let namespace = if ptr.enabled && ptr.guard_annotations {
            format!(
                "['{DEFAULTS}', '{WHITELIST}'].exists(k, {} != {} || ({} && object.metadata.annotations[k] != oldObject.metadata.annotations[k]))",
                has_annotation("object"),
                has_annotation("oldObject"),
                has_annotation("oldObject"),
            )
        } else {
            "false".to_owned()
        };
        let pod_update = if ptr.enabled {
            "true".to_owned()
        } else if !self.restrictions.is_empty() {
            "(has(object.spec.tolerations) ? object.spec.tolerations : []) != \
             (has(oldObject.spec.tolerations) ? oldObject.spec.tolerations : [])"
                .to_owned()
        } else {
            "false".to_owned()
        };
        let expression = format!(
            "request.kind.kind == 'Namespace' ? {namespace} : (request.kind.kind != 'Pod' || \
             request.operation != 'UPDATE' || {pod_update})"
        );
        vec![MatchCondition {
            name: "may-act-on-the-write",
            expression,
        }]
    }
}

/// CEL: whether `object` (`oldObject` is `null` on a CREATE) carries annotation `k`.
fn has_annotation(object: &str) -> String {
    format!("({object} != null && has({object}.metadata.annotations) && k in {object}.metadata.annotations)")
}
