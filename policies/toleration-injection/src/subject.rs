//! The workload a request admits, as rules' matchers see it: its kind, namespace, requester,
//! labels and name, and the object JSONPath conditions read, parsed at most once.

use std::cell::OnceCell;

use serde_json::Value;

use taintguard::admission::AdmissionRequest;
use taintguard::json::Reached;
use taintguard::principal::Principal;

use crate::conditions::Condition;
use crate::settings::Match;
use crate::workload::Workload;

/// The admitted object and its request, as the matchers see them.
pub struct Subject<'s> {
    pub workload: &'s Workload<'s>,
    pub namespace: &'s str,
    pub who: Principal<'s>,
    /// The object as a `Value`, parsed when the first JSONPath condition that needs it is
    /// evaluated and shared by the others; the parse error when it is not one: nesting deeper
    /// than serde_json's recursion limit (raw-value capture does not count it), or a string or
    /// number a `Value` cannot hold.
    object: OnceCell<Result<Value, String>>,
    /// The first such error in a member a path of member names reached.
    unreadable_member: OnceCell<String>,
}

impl<'s> Subject<'s> {
    /// The workload `request` admits; its namespace is the request's, else the object's own.
    pub fn of(request: &'s AdmissionRequest<'_>, workload: &'s Workload<'s>) -> Subject<'s> {
        let namespace = request
            .namespace
            .as_ref()
            .or(workload.namespace.as_ref())
            .map_or("", |n| n.as_str());
        Subject {
            workload,
            namespace,
            who: request.principal(),
            object: OnceCell::new(),
            unreadable_member: OnceCell::new(),
        }
    }

    /// Why the object could not be read for the JSONPath conditions matched so far, if it
    /// could not: the whole object's parse error, else the first member's.
    pub fn unreadable(&self) -> Option<&String> {
        (self.object.get())
            .and_then(|parsed| parsed.as_ref().err())
            .or(self.unreadable_member.get())
    }

    /// A condition on an object that does not parse fails; the request is then rejected
    /// (`Judging::read`), so that no `exists: false` condition holds on what could not be read.
    fn condition_holds(&self, c: &Condition) -> bool {
        if let Some(names) = c.member_names() {
            return match self.member_value(&names) {
                Ok(found) => c.holds_on(&Vec::from_iter(found.as_ref())),
                Err(e) => {
                    let _ = self.unreadable_member.set(e);
                    false
                }
            };
        }
        let object = self
            .object
            .get_or_init(|| serde_json::from_str(self.workload.text()).map_err(|e| e.to_string()));
        object.as_ref().is_ok_and(|object| c.holds(object))
    }

    /// The value a path of member `names` selects, read from the members on its way alone: a
    /// Pod's or template's spec is already read as members, so `$.spec.template.spec.x` parses
    /// only `x`, where the whole object parsed into a `Value` was most of what such a rule cost
    /// (benchmarks/cost.md, "JSONPath member paths").
    fn member_value(&self, names: &[&str]) -> Result<Option<Value>, String> {
        let (value, left) = match self.workload.object().follow(names) {
            None => return Ok(None),
            Some(Reached::Object(object)) => (serde_json::from_str(object.text()), 0),
            Some(Reached::Raw(text, left)) => (serde_json::from_str(text), left),
        };
        let value: Value = value.map_err(|e| e.to_string())?;
        let inside = &names[names.len() - left..];
        let found = inside
            .iter()
            .try_fold(&value, |at, name| at.as_object()?.get(*name));
        Ok(found.cloned())
    }

    fn name_matches(&self, m: &Match) -> bool {
        let name = self
            .workload
            .name
            .as_ref()
            .filter(|n| !n.as_str().is_empty())
            .or(self.workload.generate_name.as_ref());
        name.is_some_and(|n| m.names.iter().any(|g| g.matches(n.as_str())))
    }

    /// Cheap tests first; JSONPath conditions (which need the object parsed) last, so that the
    /// object is parsed only for a rule that matches otherwise.
    pub fn matches(&self, m: &Match) -> bool {
        (m.kinds.is_empty() || m.kinds.contains(&self.workload.kind))
            && (m.namespaces.is_empty() || m.namespaces.iter().any(|g| g.matches(self.namespace)))
            && m.principals.as_ref().is_none_or(|p| p.allows(&self.who))
            && m.labels
                .as_ref()
                .is_none_or(|s| s.matches(&self.workload.labels))
            && (m.names.is_empty() || self.name_matches(m))
            && m.conditions.iter().all(|c| self.condition_holds(c))
    }

    pub fn describe(&self) -> String {
        let name = self
            .workload
            .name
            .as_ref()
            .or(self.workload.generate_name.as_ref())
            .map_or("(unnamed)", |n| n.as_str());
        if self.namespace.is_empty() {
            format!("{} {name}", self.workload.kind.as_str())
        } else {
            format!("{} {}/{name}", self.workload.kind.as_str(), self.namespace)
        }
    }
}
