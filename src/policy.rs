//! The contract between a policy's logic and the ABI adapters that run it.

use crate::admission::AdmissionRequest;
use crate::cluster::Cluster;
use crate::settings::SettingsError;
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

/// One admission policy: the settings it reads and how it judges a request. This is what a
/// policy author writes; [`PolicyExt`] runs it on the text an engine hands over.
pub trait Policy {
    /// The policy's name, as used in messages and artifact names.
    const NAME: &'static str;
    /// Validated settings.
    type Settings;

    /// Reads and validates settings text (`{}` means every default).
    fn settings(text: &str) -> Result<Self::Settings, SettingsError>;

    /// Judges one request; `cluster` answers what the settings ask of the cluster.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Self::Settings,
        cluster: &dyn Cluster,
    ) -> Verdict;

    /// The validating half (see [`Half::Validating`]). Policies whose mutations repair
    /// violations override this to reject instead; the default drops mutations.
    fn evaluate_validating(
        request: &AdmissionRequest<'_>,
        settings: &Self::Settings,
        cluster: &dyn Cluster,
    ) -> Verdict {
        Self::evaluate(request, settings, cluster).without_mutation()
    }
}

/// A policy run on JSON text: what the engine adapters call. Every [`Policy`] has it. Never
/// panics on bad input: bad settings or a malformed request become a rejection (code 400) that
/// says what is wrong.
pub trait PolicyExt {
    /// The policy's name, as used in messages and artifact names.
    const NAME: &'static str;

    /// Settings validation as engines call it: the error text names the field.
    fn validate_settings(text: &str) -> Result<(), SettingsError>;

    /// `half` of the policy on `request` (an `AdmissionRequest` JSON object) with `settings`
    /// text, asking `cluster` what the settings need of it, with bad settings or a malformed
    /// request as an error: the message of [`PolicyExt::validate_half`]'s 400 rejection, for
    /// callers that throw it instead.
    fn try_validate(
        request: &str,
        settings: &str,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Result<Verdict, String>;

    /// `half` of the policy.
    fn validate_half(request: &str, settings: &str, half: Half, cluster: &dyn Cluster) -> Verdict {
        Self::try_validate(request, settings, half, cluster)
            .unwrap_or_else(|message| Verdict::reject(400, message))
    }

    /// The mutating half.
    fn validate(request: &str, settings: &str, cluster: &dyn Cluster) -> Verdict {
        Self::validate_half(request, settings, Half::Mutating, cluster)
    }
}

impl<P: Policy> PolicyExt for P {
    const NAME: &'static str = <P as Policy>::NAME;

    fn validate_settings(text: &str) -> Result<(), SettingsError> {
        P::settings(text).map(drop)
    }

    /// Settings are read first: their errors win.
    fn try_validate(
        request: &str,
        settings: &str,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Result<Verdict, String> {
        let settings = P::settings(settings).map_err(|e| format!("{}: invalid {e}", Self::NAME))?;
        let request =
            AdmissionRequest::parse(request).map_err(|e| format!("{}: {e}", Self::NAME))?;
        Ok(match half {
            Half::Mutating => P::evaluate(&request, &settings, cluster),
            Half::Validating => P::evaluate_validating(&request, &settings, cluster),
        })
    }
}
