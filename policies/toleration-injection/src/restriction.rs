//! Restrictions: which apply to a workload's namespace and requester, what each forbids, and the
//! words of a refusal or a withheld toleration.

use taintguard::toleration::{Operator, Toleration};
use taintguard::verdict::Verdict;

use crate::settings::Restriction;
use crate::subject::Subject;

/// The restrictions that apply to `subject`'s namespace and requester.
pub fn applicable<'s>(
    restrictions: &'s [Restriction],
    subject: &Subject<'_>,
) -> Vec<&'s Restriction> {
    restrictions
        .iter()
        .filter(|r| {
            !r.allowed_namespaces
                .iter()
                .any(|g| g.matches(subject.namespace))
                && !r.allowed_principals.allows(&subject.who)
        })
        .collect()
}

/// Why `t` may not be tolerated under `restrictions`, if it may not.
pub fn hit(restrictions: &[&Restriction], t: &Toleration<'_>) -> Option<String> {
    restrictions.iter().find_map(|restriction| {
        let selector = restriction.taints.iter().find(|s| {
            let key = if t.key.is_empty() {
                t.operator == Operator::Exists
            } else {
                s.key.matches(&t.key)
            };
            let effect = t.effect.is_empty()
                || s.effects.is_empty()
                || s.effects.iter().any(|e| e.as_str() == t.effect);
            key && effect
        })?;
        Some(format!(
            "{} (restriction {:?} protects taints {})",
            t.describe(),
            restriction.name,
            selector.key.as_str()
        ))
    })
}

/// The warning for a toleration a restriction withheld (`withheld`: the toleration and the
/// restriction, as [`hit`] describes them).
pub fn did_not_add(withheld: &str) -> String {
    ["did not add toleration ", withheld].concat()
}

/// The rejection of tolerations that restrictions forbid. A request without a username is what
/// Kubewarden's background audit sends (the stored object, an empty `userInfo`): its message says
/// that the object is reported whoever created it.
pub fn refusal(subject: &Subject<'_>, violations: &[String], update: bool) -> Verdict {
    let what = subject.describe();
    let violations = violations.join("; ");
    let message = if subject.who.username.is_empty() {
        format!(
            "{what} tolerates {violations}, which only the namespaces and principals each \
             restriction allows may. The requester is unknown (a background audit judges the stored \
             object alone), so allowances by principal do not apply and the object is reported \
             whoever created it.",
        )
    } else {
        let attempt = if update {
            "may not add a toleration of"
        } else {
            "may not tolerate"
        };
        format!(
            "{what} (requested by {}) {attempt} {violations}. Only the namespaces and principals \
             each restriction allows may; ask a cluster administrator to add them to the policy \
             settings.",
            subject.who.describe(),
        )
    };
    Verdict::reject(403, message)
}
