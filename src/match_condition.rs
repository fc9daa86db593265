//! A webhook's `matchConditions` entry: a CEL expression the API server (Kubernetes 1.28 and
//! later) evaluates before it calls the webhook, so that requests a policy would answer with a
//! plain accept never leave it. Each policy writes its own from its settings; its manifest ships
//! them and a test of the policy holds the two equal (docs/availability.md).

/// One entry of a webhook's `matchConditions`.
///
/// # Examples
///
/// ```
/// use taintguard::MatchCondition;
///
/// let condition = MatchCondition {
///     name: "updates-only",
///     expression: "request.operation == 'UPDATE'".to_owned(),
/// };
/// assert_eq!(condition.name, "updates-only");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchCondition {
    /// The entry's name, unique within the webhook.
    pub name: &'static str,
    /// A CEL expression over `object`, `oldObject` and `request` that is true when the webhook
    /// must be called.
    pub expression: String,
}
