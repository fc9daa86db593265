//! The contract between a policy's logic and the ABI adapters that run it.

use crate::admission::AdmissionRequest;
use crate::settings::{parse_settings_json, SettingsError};
use crate::verdict::Verdict;

/// Which half of a policy an engine can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// Everything: mutations included (Kubewarden waPC, the JavaScript package).
    Mutating,
    /// Engines that cannot mutate (OPA, Gatekeeper): whatever the mutating half would repair is
    /// reported as a rejection instead, and no object is ever mutated.
    Validating,
}

/// One admission policy: settings it reads and how it judges a request.
pub trait Policy {
    /// The policy's name, as used in messages and artifact names.
    const NAME: &'static str;
    /// Validated settings, built once per request (engines give no place to keep them).
    type Settings;

    /// Reads and validates settings from a JSON value (`{}` means every default).
    fn settings(value: &serde_json::Value) -> Result<Self::Settings, SettingsError>;

    /// Judges one request.
    fn evaluate(request: &AdmissionRequest<'_>, settings: &Self::Settings) -> Verdict;

    /// The validating half (see [`Half::Validating`]). Policies whose mutations repair
    /// violations override this to reject instead; the default drops mutations.
    fn evaluate_validating(request: &AdmissionRequest<'_>, settings: &Self::Settings) -> Verdict {
        let mut verdict = Self::evaluate(request, settings);
        verdict.mutated_object = None;
        verdict
    }

    /// Settings validation as engines call it: the error text names the field.
    fn validate_settings(text: &str) -> Result<(), SettingsError> {
        Self::settings(&parse_settings_json(text)?).map(drop)
    }

    /// Parses settings and request text and evaluates. Never panics on bad input: a malformed
    /// request or bad settings become a rejection (code 400) that says what is wrong.
    fn validate(request: &str, settings: &str) -> Verdict {
        Self::validate_half(request, settings, Half::Mutating)
    }

    fn validate_half(request: &str, settings: &str, half: Half) -> Verdict {
        let settings = match parse_settings_json(settings).and_then(|v| Self::settings(&v)) {
            Ok(settings) => settings,
            Err(e) => return Verdict::reject(400, format!("{}: invalid {e}", Self::NAME)),
        };
        match AdmissionRequest::parse(request) {
            Ok(request) => match half {
                Half::Mutating => Self::evaluate(&request, &settings),
                Half::Validating => Self::evaluate_validating(&request, &settings),
            },
            Err(e) => Verdict::reject(400, format!("{}: {e}", Self::NAME)),
        }
    }
}
