//! The `matchConditions` that keep a request the policy would answer with a plain accept from
//! ever leaving the API server (Kubernetes 1.28 and later; docs/records.md and
//! docs/availability.md). They are written from the settings, and the policy answers by the same
//! rule: a Node UPDATE that leaves every judged taint, the cordon and every record as stored is
//! accepted untouched ([`Judging::changes_nothing_judged`]), so a cluster that honours the
//! conditions and one that does not get the same answers.

use taintguard::json::JsonStr;
use taintguard::taint::{Effect, Taint};
use taintguard::MatchCondition;

use super::judging::Judging;
use super::node::NodeView;
use super::settings::Settings;

/// The node lifecycle controller's taints: it adds and removes them as node conditions change,
/// and under the default settings the policy never acts on them (they are unprotected and not
/// one-shot). Its swaps are the busiest Node writes of an outage, so they must not wait for the
/// policy server.
pub const NODE_LIFECYCLE_TAINTS: &[&str] = &[
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/memory-pressure",
    "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",
    "node.kubernetes.io/network-unavailable",
];

impl Settings {
    /// The keys of [`NODE_LIFECYCLE_TAINTS`] these settings leave to their controller.
    pub fn ignored_taint_keys(&self) -> Vec<&'static str> {
        NODE_LIFECYCLE_TAINTS
            .iter()
            .copied()
            .filter(|key| self.leaves_alone(key))
            .collect()
    }

    /// Whether `key` is one of [`NODE_LIFECYCLE_TAINTS`] and these settings leave it to its
    /// controller: neither protected nor one-shot, with any effect. The one rule both the
    /// generated conditions and the policy's own short cut apply; the settings' rules are asked
    /// only about a lifecycle key.
    fn leaves_alone(&self, key: &str) -> bool {
        NODE_LIFECYCLE_TAINTS.contains(&key)
            && Effect::ALL.iter().all(|effect| {
                let taint = Taint {
                    key: JsonStr::borrowed(key),
                    value: JsonStr::default(),
                    effect: JsonStr::borrowed(effect.as_str()),
                    raw: "",
                };
                self.protecting_rule(&taint).is_none() && self.one_shot_rule(&taint).is_none()
            })
    }

    /// The conditions of the policy's webhook on `nodes`: a CREATE, or an UPDATE that changes a
    /// taint other than [`Settings::ignored_taint_keys`], the cordon or a record.
    ///
    /// # Examples
    ///
    /// ```
    /// use taint_preservation::Settings;
    ///
    /// let conditions = Settings::default().match_conditions();
    /// assert!(conditions[0].expression.contains("'node.kubernetes.io/unreachable'"));
    /// ```
    pub fn match_conditions(&self) -> Vec<MatchCondition> {
        let ignored = cel_list(&self.ignored_taint_keys());
        let judged = |object: &str| {
            format!(
                "(has({object}.spec.taints) ? {object}.spec.taints : []).filter(t, !(t.key in {ignored}))"
            )
        };
        let cordoned = |object: &str| {
            format!("(has({object}.spec.unschedulable) && {object}.spec.unschedulable)")
        };
        let expression = format!(
            "request.operation != 'UPDATE' || {} != {} || {} != {} || {}",
            judged("object"),
            judged("oldObject"),
            cordoned("object"),
            cordoned("oldObject"),
            self.records_changed()
        );
        vec![MatchCondition {
            name: "changes-taints-cordon-or-records",
            expression,
        }]
    }

    /// The conditions of the `nodes/status` guard: a status write that changes a record.
    pub fn status_match_conditions(&self) -> Vec<MatchCondition> {
        vec![MatchCondition {
            name: "changes-a-taintguard-record",
            expression: self.records_changed(),
        }]
    }

    /// CEL: whether the request adds, removes or changes one of the record annotations.
    fn records_changed(&self) -> String {
        let has = |object: &str| {
            format!("(has({object}.metadata.annotations) && k in {object}.metadata.annotations)")
        };
        format!(
            "{}.exists(k, {} != {} || ({} && object.metadata.annotations[k] != \
             oldObject.metadata.annotations[k]))",
            cel_list(&self.record_annotations()),
            has("object"),
            has("oldObject"),
            has("object"),
        )
    }
}

/// A CEL list literal of strings. Annotation keys and taint keys hold no `'` or `\`
/// (qualified names), so each is written as it is.
fn cel_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("'{item}'")).collect();
    format!("[{}]", quoted.join(", "))
}

impl Judging<'_> {
    /// Whether an UPDATE leaves every taint the policy judges (all but
    /// [`Settings::ignored_taint_keys`]), the cordon and every record as stored: then the policy
    /// has nothing to judge, and the generated conditions keep the request from it.
    ///
    /// # Errors
    ///
    /// Annotations the views cannot read.
    pub fn changes_nothing_judged<'a>(&'a self) -> Result<bool, String> {
        let Some(old) = &self.old else {
            return Ok(false);
        };
        let judged = |view: &'a NodeView<'_>| {
            (view.taints.iter())
                .filter(|t| !self.settings.leaves_alone(t.key.as_str()))
                .map(|t| (t.key.as_str(), t.value.as_str(), t.effect.as_str()))
        };
        if !judged(old).eq(judged(&self.new)) || old.cordoned() != self.new.cordoned() {
            return Ok(false);
        }
        for key in self.settings.record_annotations() {
            if old.annotation(key)? != self.new.annotation(key)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
