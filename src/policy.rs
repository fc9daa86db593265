//! The contract between a policy's logic and the ABI adapters that run it.

use crate::admission::AdmissionRequest;
use crate::cluster::{Asks, Cluster, Declared};
use crate::json;
use crate::settings::{self, At, PolicySettings, SettingsError};
use crate::verdict::{Decision, Verdict};

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
/// policy author writes; [`run`] runs it on the text an engine hands over.
///
/// # Examples
///
/// ```
/// use serde::Serialize;
/// use taintguard::admission::AdmissionRequest;
/// use taintguard::settings::{PolicySettings, SettingsFields};
/// use taintguard::{run, Cluster, Half, NoCluster, Policy, Verdict};
///
/// /// Refuses new Namespaces unless its settings allow them.
/// struct NoNamespaces;
///
/// #[derive(Default, SettingsFields, Serialize)]
/// #[serde(deny_unknown_fields, default)]
/// struct Settings {
///     allow: bool,
/// }
/// impl PolicySettings for Settings {}
///
/// impl Policy for NoNamespaces {
///     const NAME: &'static str = "no-namespaces";
///     type Settings = Settings;
///
///     fn evaluate(r: &AdmissionRequest<'_>, s: &Settings, _: Half, _: &dyn Cluster) -> Verdict {
///         if r.is_core("Namespace") && !s.allow {
///             return Verdict::reject(403, "namespaces are made by the platform team");
///         }
///         Verdict::accept()
///     }
/// }
///
/// let request = r#"{"kind": {"group": "", "version": "v1", "kind": "Namespace"},
///     "operation": "CREATE", "userInfo": {"username": "alice"}}"#;
/// let judge = |settings| run::<NoNamespaces>(request, settings, Half::Mutating, &NoCluster("-"));
/// let refused = judge("{}");
/// assert_eq!(refused.message(), Some("no-namespaces: namespaces are made by the platform team"));
/// assert!(judge(r#"{"allow": true}"#).accepted());
/// ```
pub trait Policy {
    /// The policy's name, as used in messages and artifact names.
    const NAME: &'static str;

    /// Validated settings.
    type Settings: PolicySettings;

    /// What it may ask the cluster: every engine refuses the rest ([`Declared`]), and the build
    /// checks the metadata's declarations against it.
    const ASKS: Asks = Asks::NOTHING;

    /// Judges one request with `half` of the policy (see [`Half`]); `cluster` answers what the
    /// settings ask of the cluster. Messages and warnings are the policy's own words: [`run`]
    /// puts the policy's name before each.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Self::Settings,
        half: Half,
        cluster: &dyn Cluster,
    ) -> Verdict;
}

/// Reads and checks `P`'s settings text (`{}` means every default).
///
/// # Errors
///
/// The first bad field, named (see [`settings::parse`]).
///
/// # Examples
///
/// ```
/// use taint_preservation::{Mode, TaintPreservation};
/// use taintguard::read_settings;
///
/// let settings = read_settings::<TaintPreservation>(r#"{"mode": "deny"}"#).unwrap();
/// assert_eq!(settings.mode, Mode::Deny);
/// let error = read_settings::<TaintPreservation>(r#"{"mood": "deny"}"#).unwrap_err();
/// assert_eq!(error.path, "mood");
/// ```
pub fn read_settings<P: Policy>(text: &str) -> Result<P::Settings, SettingsError> {
    settings::parse(text)
}

/// `half` of `P` on `request` (an `AdmissionRequest` JSON object) with `settings` text, asking
/// `cluster` what the settings need of it: what the engine adapters call. Never panics on bad
/// input: bad settings or a malformed request become a rejection (code 400) that says what is
/// wrong. Every message and warning starts with the policy's name.
///
/// # Examples
///
/// ```
/// use taintguard::policy::{run, Half};
/// use taint_preservation::TaintPreservation;
/// use taintguard::NoCluster;
///
/// let verdict = run::<TaintPreservation>("{}", r#"{"mode": "sometimes"}"#, Half::Mutating, &NoCluster("none"));
/// assert_eq!(verdict.code(), Some(400));
/// assert!(verdict.message().unwrap().starts_with("taint-preservation: invalid settings field `mode`"));
/// ```
pub fn run<P: Policy>(request: &str, settings: &str, half: Half, cluster: &dyn Cluster) -> Verdict {
    try_run::<P>(request, settings, half, cluster)
        .unwrap_or_else(|message| Verdict::reject(400, message))
}

/// [`run`], with bad settings or a malformed request as an error (the message of [`run`]'s 400
/// rejection), for callers that throw it instead. Settings are read first: their errors win.
///
/// # Errors
///
/// Bad settings, a malformed request, or a mutated object no engine could read back.
///
/// # Examples
///
/// ```
/// use taint_preservation::TaintPreservation;
/// use taintguard::{try_run, Half, NoCluster};
///
/// let judge = |request, settings| {
///     try_run::<TaintPreservation>(request, settings, Half::Validating, &NoCluster("-"))
/// };
/// let error = judge("[]", "{}").unwrap_err();
/// assert!(error.starts_with("taint-preservation: malformed admission request"));
/// // Settings are read first: their errors win.
/// let error = judge("[]", r#"{"mode": 1}"#).unwrap_err();
/// assert!(error.starts_with("taint-preservation: invalid settings field `mode`"));
/// ```
pub fn try_run<P: Policy>(
    request: &str,
    settings: &str,
    half: Half,
    cluster: &dyn Cluster,
) -> Result<Verdict, String> {
    let settings = read_settings::<P>(settings).map_err(|e| named::<P>(format!("invalid {e}")))?;
    let request = AdmissionRequest::parse(request).map_err(|e| named::<P>(e.to_string()))?;
    judge::<P, dyn Cluster>(&request, &settings, half, cluster)
}

/// [`run`] on a request and settings the adapter has already read, in the same pass as the
/// engine's envelope around them: each pass over a request is most of what a small request costs
/// (benchmarks/cost.md, "What each change bought"). The settings are checked here
/// ([`PolicySettings::check`]); settings that do not fit together become the same 400
/// rejection as in [`run`].
pub fn run_read<P: Policy, C: Cluster + ?Sized>(
    request: &AdmissionRequest<'_>,
    settings: &P::Settings,
    half: Half,
    cluster: &C,
) -> Verdict {
    settings
        .check(At::Root)
        .map_err(|e| named::<P>(format!("invalid {e}")))
        .and_then(|()| judge::<P, C>(request, settings, half, cluster))
        .unwrap_or_else(|message| Verdict::reject(400, message))
}

/// `message`, starting with the policy's name. Concatenated, not `format!`ted: every warning
/// and message goes through here, and the formatting machinery cost more than the copy. A
/// message its policy already named ([`is_named`]) is kept as it is: a policy that writes many
/// warnings piece by piece names them as it writes them, which saves each one a second copy
/// (benchmarks/cost.md, "The limit of tuning").
fn named<P: Policy>(message: String) -> String {
    if is_named(P::NAME, &message) {
        return message;
    }
    [P::NAME, ": ", &message].concat()
}

/// Whether `message` starts with `name` and `": "`, as [`named`] writes it.
fn is_named(name: &str, message: &str) -> bool {
    message
        .as_bytes()
        .strip_prefix(name.as_bytes())
        .is_some_and(|rest| rest.starts_with(b": "))
}

/// What [`try_run`] and [`run_read`] share once settings and request are read.
fn judge<P: Policy, C: Cluster + ?Sized>(
    request: &AdmissionRequest<'_>,
    settings: &P::Settings,
    half: Half,
    cluster: &C,
) -> Result<Verdict, String> {
    let declared = Declared::<P, C> {
        inner: cluster,
        policy: std::marker::PhantomData,
    };
    let mut verdict = P::evaluate(request, settings, half, &declared);
    if half == Half::Validating {
        verdict = verdict.without_mutation();
    }
    if let Decision::Reject { message, .. } = &mut verdict.decision {
        *message = named::<P>(std::mem::take(message));
    }
    for warning in &mut verdict.warnings {
        *warning = named::<P>(std::mem::take(warning));
    }
    readable_by_engines(verdict).map_err(named::<P>)
}

/// The mutating half hands its object to an engine, which reads it into a `serde_json::Value`
/// (see [`json::nested_past`]). An object nested deeper than that could only come back as a
/// misleading "not JSON" error from the engine, or be dropped, admitting the request without
/// the policy's change; it is refused here with the limit named, like any other input the
/// policy cannot handle. The request reaches this only through a field the policy never reads:
/// fields it decodes hit the same limit earlier. The validating half returns no object, so it
/// still gives the policy's decision.
fn readable_by_engines(verdict: Verdict) -> Result<Verdict, String> {
    let Decision::Mutate { object, nesting } = &verdict.decision else {
        return Ok(verdict);
    };
    // A bound its writer knew is checked without a walk of the object, which was much of a
    // large Node's restore (benchmarks/cost.md, "Short copies", the mutation's nesting).
    if nesting.is_some_and(|n| n <= json::MAX_NESTING) {
        return Ok(verdict);
    }
    match json::nested_past(object, json::MAX_NESTING) {
        Some(at) => Err(format!(
            "the mutated object would nest arrays and objects more than {} levels deep (at byte \
             {at}), past serde_json's recursion limit, so engines could not read it back",
            json::MAX_NESTING
        )),
        None => Ok(verdict),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_named_once() {
        for (message, named) in [
            ("tp: missing toleration", true),
            ("tp: ", true),
            ("tp:missing", false),
            ("tp", false),
            ("tpx: missing", false),
            ("missing toleration tp: x", false),
            ("", false),
        ] {
            assert_eq!(is_named("tp", message), named, "{message:?}");
        }
    }
}
