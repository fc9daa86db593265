//! The contract between a policy's logic and the ABI adapters that run it.

use crate::admission::AdmissionRequest;
use crate::settings::{parse_settings_json, SettingsError};
use crate::verdict::Verdict;

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

    /// Settings validation as engines call it: the error text names the field.
    fn validate_settings(text: &str) -> Result<(), SettingsError> {
        Self::settings(&parse_settings_json(text)?).map(drop)
    }

    /// Parses settings and request text and evaluates. Never panics on bad input: a malformed
    /// request or bad settings become a rejection that says what is wrong.
    fn validate(request: &str, settings: &str) -> Verdict {
        let settings = match parse_settings_json(settings).and_then(|v| Self::settings(&v)) {
            Ok(settings) => settings,
            Err(e) => return Verdict::reject(400, format!("{}: invalid {e}", Self::NAME)),
        };
        match AdmissionRequest::parse(request) {
            Ok(request) => Self::evaluate(&request, &settings),
            Err(e) => Verdict::reject(400, format!("{}: {e}", Self::NAME)),
        }
    }
}
