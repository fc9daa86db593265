//! A cluster that answers from recorded answers, and remembers what it was asked: the core's
//! and the policies' tests judge requests against it. The engines' own answerers are tested in
//! `wasm-tests` and `e2e`.

use std::cell::RefCell;

use super::*;

/// Recorded answers, and the questions asked.
#[derive(Default)]
pub struct Recorded {
    /// The answer to every list of `v1/Node`; other kinds' lists are unavailable.
    pub nodes: Option<Result<String, ClusterError>>,
    /// `(user, verb)` pairs RBAC allows; `can_i_error` instead answers every question.
    pub grants: Vec<(&'static str, &'static str)>,
    /// The error every `can_i` answers, when set.
    pub can_i_error: Option<ClusterError>,
    /// The Namespaces a get finds, as `(name, object text)`.
    pub namespaces: Vec<(&'static str, String)>,
    /// The other objects a get finds, as `(kind, namespace, name, object text)`.
    pub objects: Vec<(
        ResourceKind<'static>,
        Option<&'static str>,
        &'static str,
        String,
    )>,
    /// One line per question: `list <kind> <selector>`,
    /// `can_i <user> <verb> <group> <resource>/<name>` or
    /// `get <kind> <namespace>/<name> <freshness>` (no `<namespace>/` for a cluster-scoped one).
    pub asked: RefCell<Vec<String>>,
}

impl Recorded {
    /// The object `q` names, if recorded.
    fn find(&self, q: &Get<'_>) -> Option<String> {
        if q.kind == ResourceKind::NAMESPACE && q.namespace.is_none() {
            let found = self.namespaces.iter().find(|(n, _)| *n == q.name);
            return found.map(|(_, text)| text.clone());
        }
        (self.objects.iter())
            .find(|(kind, namespace, name, _)| {
                *kind == q.kind && *namespace == q.namespace && *name == q.name
            })
            .map(|(.., text)| text.clone())
    }
}

impl Cluster for Recorded {
    fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
        let at = q.namespace.map(|ns| format!("{ns}/")).unwrap_or_default();
        self.asked.borrow_mut().push(format!(
            "get {} {at}{} {}",
            q.kind,
            q.name,
            q.freshness.as_str()
        ));
        self.find(q)
            .ok_or_else(|| ClusterError::Failed(format!("{} {at}{} not found", q.kind, q.name)))
    }

    fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
        self.asked.borrow_mut().push(format!(
            "list {} {}",
            q.kind,
            q.label_selector.unwrap_or("")
        ));
        match (q.kind == ResourceKind::NODE, &self.nodes) {
            (true, Some(answer)) => answer.clone(),
            _ => Err(ClusterError::Unavailable(format!(
                "no list of {} recorded",
                q.kind
            ))),
        }
    }

    fn can_i(&self, q: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
        self.asked.borrow_mut().push(format!(
            "can_i {} {} {} {}/{}",
            q.user,
            q.verb,
            q.group,
            q.resource,
            q.name.unwrap_or("")
        ));
        match &self.can_i_error {
            Some(e) => Err(e.clone()),
            None => Ok(self.grants.contains(&(q.user, q.verb))),
        }
    }
}
