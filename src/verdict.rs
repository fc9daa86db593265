//! What a policy answers for one request, independent of how an engine wants it written.

/// The outcome of evaluating one admission request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    pub accepted: bool,
    pub message: Option<String>,
    /// HTTP-style status code for rejections (403 refused, 400 malformed input).
    pub code: Option<u16>,
    /// The full mutated object as JSON text: the request's object with the policy's edits spliced
    /// in. `None` when nothing is changed.
    pub mutated_object: Option<String>,
    pub warnings: Vec<String>,
    /// Key/value pairs for the API server's audit log.
    pub audit_annotations: Vec<(String, String)>,
}

impl Verdict {
    pub fn accept() -> Verdict {
        Verdict {
            accepted: true,
            ..Verdict::default()
        }
    }

    pub fn reject(code: u16, message: impl Into<String>) -> Verdict {
        Verdict {
            accepted: false,
            code: Some(code),
            message: Some(message.into()),
            ..Verdict::default()
        }
    }
}
