//! What a policy answers for one request, independent of how an engine wants it written.

use serde::ser::Serializer;

use crate::byte_class::{all_in, class, Class};

/// `text` followed by `name` as messages quote it: exactly what `{:?}` writes for the string.
/// A name that is printable ASCII with neither quote nor backslash, as names nearly always are,
/// is copied between quotes without the formatting machinery, which cost more than the copy
/// (benchmarks/cost.md, "What each change bought").
///
/// # Examples
///
/// ```
/// use taintguard::verdict::quoted;
///
/// assert_eq!(quoted("rule ", "gpu"), "rule \"gpu\"");
/// assert_eq!(quoted("", "a\"b\u{7}é"), format!("{:?}", "a\"b\u{7}é"));
/// ```
pub fn quoted(text: &str, name: &str) -> String {
    /// Printable ASCII but `"` and `\\`.
    const PLAIN: Class = class(&[(b' ', b'!'), (b'#', b'['), (b']', b'~')]);
    if all_in(name.as_bytes(), &PLAIN) {
        let mut quoted = String::with_capacity(text.len() + name.len() + 2);
        quoted.push_str(text);
        quoted.push('"');
        quoted.push_str(name);
        quoted.push('"');
        quoted
    } else {
        format!("{text}{name:?}")
    }
}

/// Whether a request is admitted, and as what. Each engine writes these three cases its own way;
/// there is no fourth (a rejection always has its code and message, a mutation is always an
/// admission).
#[derive(Debug, Clone)]
pub enum Decision {
    /// Admitted as sent.
    Accept,
    /// Admitted as this object: the request's object written with the policy's edits,
    /// which engines copy as it is. It is JSON by construction: every piece is either text
    /// serde_json accepted when it read the request or JSON serde_json wrote, which debug
    /// builds (every test, every fuzz run) check on each verdict; release builds do not read
    /// it a second time, as a mutation's least cost does not (benchmarks/cost.md, "What each
    /// change bought"). The
    /// mutating half also checks that engines can read it back (`policy::try_run`): syntax
    /// alone allows any nesting, a `serde_json::Value` only 127 levels. `nesting`, when the
    /// policy's writer knew it, is how many levels `object` nests at most, and spares that
    /// check its walk of the object.
    Mutate {
        /// The object to admit, as JSON text.
        object: String,
        /// How many levels `object` nests at most, when its writer knew.
        nesting: Option<usize>,
    },
    /// Refused. `code` is HTTP-style: 403 refused, 400 malformed input or settings.
    Reject {
        /// 403 refused, 400 malformed input or settings.
        code: u16,
        /// Why, in the policy's words: [`run`](crate::policy::run) puts the policy's name
        /// before it.
        message: String,
    },
}

impl PartialEq for Decision {
    fn eq(&self, other: &Decision) -> bool {
        match (self, other) {
            (Decision::Accept, Decision::Accept) => true,
            // The same object is the same mutation, whatever its writer knew of it.
            (Decision::Mutate { object: a, .. }, Decision::Mutate { object: b, .. }) => a == b,
            (
                Decision::Reject { code, message },
                Decision::Reject {
                    code: other_code,
                    message: other_message,
                },
            ) => code == other_code && message == other_message,
            _ => false,
        }
    }
}

impl Eq for Decision {}

/// The outcome of evaluating one admission request: the decision, and what goes with any
/// decision (Kubewarden and the API server carry warnings and audit annotations on admissions
/// and refusals alike).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Admitted as sent, admitted as another object, or refused.
    pub decision: Decision,
    /// Shown to the requester (kubectl prints them).
    pub warnings: Vec<String>,
    /// Key/value pairs for the API server's audit log.
    pub audit_annotations: Vec<(String, String)>,
}

impl Verdict {
    /// Admits the request as sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::Verdict;
    ///
    /// let verdict = Verdict::accept();
    /// assert!(verdict.accepted());
    /// assert_eq!(verdict.mutated_object(), None);
    /// assert!(verdict.warnings.is_empty());
    /// ```
    pub fn accept() -> Verdict {
        Verdict::from(Decision::Accept)
    }

    /// Admits `object` (JSON text, see [`Decision::Mutate`]) instead of the object sent.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::Verdict;
    ///
    /// let object = r#"{"metadata":{"name":"web","labels":{"team":"a"}}}"#;
    /// let verdict = Verdict::mutate(object.to_owned());
    /// assert!(verdict.accepted());
    /// assert_eq!(verdict.mutated_object(), Some(object));
    /// // An engine that cannot mutate admits the request as sent.
    /// assert_eq!(verdict.without_mutation().mutated_object(), None);
    /// ```
    pub fn mutate(object: String) -> Verdict {
        Verdict::mutate_nesting(object, None)
    }

    /// [`Verdict::mutate`] of an object known to nest at most `nesting` levels, as an
    /// [`Object`](crate::json::Object) written with edits does: the object the request sent
    /// nests [`Object::nesting`](crate::json::Object::nesting) levels, and each edit as deep as
    /// its place and its own text. Debug builds check the bound.
    pub fn mutate_nesting(object: String, nesting: Option<usize>) -> Verdict {
        debug_assert!(
            serde_json::from_str::<serde::de::IgnoredAny>(&object).is_ok(),
            "a policy's edits made an object that is not JSON: {object}"
        );
        debug_assert!(
            nesting.is_none_or(|n| crate::json::nested_past(&object, n).is_none()),
            "the object nests deeper than its writer's {nesting:?} levels: {object}"
        );
        Verdict::from(Decision::Mutate { object, nesting })
    }

    /// Refuses the request: `code` as [`Decision::Reject`] says (403 refused, 400 malformed
    /// input or settings), `message` why.
    ///
    /// # Examples
    ///
    /// ```
    /// use taintguard::Verdict;
    ///
    /// let verdict = Verdict::reject(403, "the taint gpu:NoSchedule is protected");
    /// assert!(!verdict.accepted());
    /// assert_eq!(verdict.code(), Some(403));
    /// assert_eq!(verdict.message(), Some("the taint gpu:NoSchedule is protected"));
    /// ```
    pub fn reject(code: u16, message: impl Into<String>) -> Verdict {
        Verdict::from(Decision::Reject {
            code,
            message: message.into(),
        })
    }

    /// The same verdict for an engine that cannot mutate: a mutation becomes a plain admission.
    pub fn without_mutation(mut self) -> Verdict {
        if let Decision::Mutate { .. } = self.decision {
            self.decision = Decision::Accept;
        }
        self
    }

    /// Whether the request is admitted, as sent or as another object.
    pub fn accepted(&self) -> bool {
        !matches!(self.decision, Decision::Reject { .. })
    }

    /// The object to admit instead of the one sent, if the policy changed it.
    pub fn mutated_object(&self) -> Option<&str> {
        match &self.decision {
            Decision::Mutate { object, .. } => Some(object),
            _ => None,
        }
    }

    /// A rejection's code.
    pub fn code(&self) -> Option<u16> {
        match self.decision {
            Decision::Reject { code, .. } => Some(code),
            _ => None,
        }
    }

    /// A rejection's message.
    pub fn message(&self) -> Option<&str> {
        match &self.decision {
            Decision::Reject { message, .. } => Some(message),
            _ => None,
        }
    }
}

impl From<Decision> for Verdict {
    fn from(decision: Decision) -> Verdict {
        Verdict {
            decision,
            warnings: Vec::new(),
            audit_annotations: Vec::new(),
        }
    }
}

/// Writes key/value pairs as a JSON object (audit annotations), in their order: for
/// `#[serde(serialize_with = "...")]` in the engines' responses.
pub fn serialize_pairs<S: Serializer>(
    pairs: &[(String, String)],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

#[cfg(any(test, feature = "testing"))]
impl Verdict {
    /// The message and the warnings as one text, for tests that look for what a verdict says.
    pub fn said(&self) -> String {
        format!(
            "{} {}",
            self.message().unwrap_or_default(),
            self.warnings.join("\n")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::quoted;

    /// `quoted` writes what `{:?}` writes, for every ASCII byte and beside non-ASCII text.
    #[test]
    fn quoted_is_debug() {
        for byte in 0..0x80u8 {
            for s in [
                format!("a{}b", char::from(byte)),
                format!("{}é", char::from(byte)),
                format!("\u{301}{}", char::from(byte)),
            ] {
                assert_eq!(quoted("x ", &s), format!("x {s:?}"), "for {s:?}");
            }
        }
    }
}
