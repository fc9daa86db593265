//! The contract between a policy's logic and the ABI adapters that run it.

use std::any::Any;
use std::cell::RefCell;
use std::rc::Rc;

use serde_json::value::RawValue;

use crate::admission::{AdmissionRequest, MalformedRequest};
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

/// One admission policy: settings it reads and how it judges a request.
pub trait Policy {
    /// The policy's name, as used in messages and artifact names.
    const NAME: &'static str;
    /// Validated settings, built from the settings text of a request; [`Policy::validate_raw`]
    /// keeps the last ones built (see [`cached_settings`]).
    type Settings: 'static;

    /// Reads and validates settings text (`{}` means every default).
    fn settings(text: &str) -> Result<Self::Settings, SettingsError>;

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
        Self::settings(text).map(drop)
    }

    /// Parses settings and request text and evaluates. Never panics on bad input: a malformed
    /// request or bad settings become a rejection (code 400) that says what is wrong.
    fn validate(request: &str, settings: &str) -> Verdict {
        Self::validate_half(request, settings, Half::Mutating)
    }

    fn validate_half(request: &str, settings: &str, half: Half) -> Verdict {
        let settings = Self::settings(settings).map(Rc::new);
        Self::validate_with(|| AdmissionRequest::parse(request), settings, half)
    }

    /// [`Policy::validate`] for an engine whose instance keeps its memory between calls (waPC)
    /// and a request serde_json already accepted as a JSON value (the `request` member of the
    /// payload): the request is read in one pass, and the settings built for the previous call
    /// are reused when the settings text is the same ([`cached_settings`]). Not for engines
    /// whose host resets the heap after each evaluation (the OPA ABI): the kept settings would
    /// point into freed memory.
    fn validate_raw(request: &RawValue, settings: &str) -> Verdict {
        Self::validate_checked_half(request, settings, cached_settings::<Self>, Half::Mutating)
    }

    /// `half` of the policy on a request serde_json has already accepted as a JSON value (read
    /// in one pass), with the settings `build` gives for the settings text: each engine adapter
    /// decides whether and where built settings are kept ([`cached_settings`],
    /// [`cached_settings_kept_by`]).
    fn validate_checked_half(
        request: &RawValue,
        settings: &str,
        build: fn(&str) -> Result<Rc<Self::Settings>, SettingsError>,
        half: Half,
    ) -> Verdict {
        Self::validate_with(
            || AdmissionRequest::parse_raw(request),
            build(settings),
            half,
        )
    }

    /// Settings first (their errors win), then the request `parse` reads.
    #[doc(hidden)]
    fn validate_with<'r>(
        parse: impl FnOnce() -> Result<AdmissionRequest<'r>, MalformedRequest>,
        settings: Result<Rc<Self::Settings>, SettingsError>,
        half: Half,
    ) -> Verdict {
        let settings = match settings {
            Ok(settings) => settings,
            Err(e) => return Verdict::reject(400, format!("{}: invalid {e}", Self::NAME)),
        };
        match parse() {
            Ok(request) => match half {
                Half::Mutating => Self::evaluate(&request, &settings),
                Half::Validating => Self::evaluate_validating(&request, &settings),
            },
            Err(e) => Verdict::reject(400, format!("{}: {e}", Self::NAME)),
        }
    }
}

/// The settings last built in this instance, with the exact text they were built from.
struct CachedSettings {
    policy: &'static str,
    text: String,
    settings: Rc<dyn Any>,
}

thread_local! {
    static LAST_SETTINGS: RefCell<Option<CachedSettings>> = const { RefCell::new(None) };
}

/// `P`'s settings built from `text`, reusing those of the previous call when `text` is byte for
/// byte the same. Kubewarden sends the settings with every request, and a warm instance would
/// otherwise rebuild them each time; building is a pure function of the text, so reuse changes
/// no answer. Errors are not kept. WebAssembly instances are single-threaded; elsewhere each
/// thread keeps its own. Only for hosts that never free the guest's memory behind its back
/// (waPC does not; OPA SDKs reset the heap after every evaluation: see
/// [`cached_settings_kept_by`]).
pub fn cached_settings<P: Policy + ?Sized>(text: &str) -> Result<Rc<P::Settings>, SettingsError> {
    cached_settings_kept_by::<P>(text, |build| {
        build();
        true
    })
}

/// [`cached_settings`] for an engine whose heap does not outlive an evaluation: `keep` runs the
/// closure it is given, which allocates what the cache keeps (the settings and a copy of their
/// text), and answers whether all of that went to memory that outlives the evaluation; only
/// then are the settings kept. The previous settings are dropped first, so `keep` may reuse
/// their memory.
pub fn cached_settings_kept_by<P: Policy + ?Sized>(
    text: &str,
    keep: impl FnOnce(&mut dyn FnMut()) -> bool,
) -> Result<Rc<P::Settings>, SettingsError> {
    let hit = LAST_SETTINGS.with_borrow(|last| {
        last.as_ref()
            .filter(|c| c.policy == P::NAME && c.text == text)
            .and_then(|c| Rc::clone(&c.settings).downcast::<P::Settings>().ok())
    });
    if let Some(settings) = hit {
        return Ok(settings);
    }
    LAST_SETTINGS.set(None);
    let build = || P::settings(text).map(|s| (Rc::new(s), text.to_owned()));
    let mut built = None;
    let kept = keep(&mut || built = Some(build()));
    // A `keep` that did not build keeps nothing.
    let (kept, (settings, text)) = match built {
        Some(result) => (kept, result?),
        None => (false, build()?),
    };
    if kept {
        LAST_SETTINGS.set(Some(CachedSettings {
            policy: P::NAME,
            text,
            settings: Rc::clone(&settings) as Rc<dyn Any>,
        }));
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taint_preservation::{Mode, TaintPreservation};
    use crate::toleration_injection::TolerationInjection;

    #[test]
    fn settings_are_reused_only_for_the_same_text_and_policy() {
        let deny = r#"{"mode": "deny"}"#;
        let first = cached_settings::<TaintPreservation>(deny).unwrap();
        let again = cached_settings::<TaintPreservation>(deny).unwrap();
        assert!(Rc::ptr_eq(&first, &again));
        let spaced = cached_settings::<TaintPreservation>(r#"{"mode":"deny"}"#).unwrap();
        assert!(
            !Rc::ptr_eq(&first, &spaced),
            "other text, even equivalent, is rebuilt"
        );
        let restore = cached_settings::<TaintPreservation>("{}").unwrap();
        assert_eq!((spaced.mode, restore.mode), (Mode::Deny, Mode::Restore));
        // Another policy with the same text gets its own settings, and bad settings stay errors.
        cached_settings::<TolerationInjection>("{}").unwrap();
        assert_eq!(
            cached_settings::<TaintPreservation>("{}").unwrap().mode,
            Mode::Restore
        );
        let bad = r#"{"mode": "loud"}"#;
        assert!(cached_settings::<TaintPreservation>(bad).is_err());
        assert!(cached_settings::<TaintPreservation>(bad).is_err());
        assert!(cached_settings::<TaintPreservation>("{").is_err());
    }

    /// What `keep` could not put in lasting memory is used once and rebuilt next time.
    #[test]
    fn settings_are_kept_only_where_keep_says_they_last() {
        let text = r#"{"mode": "deny"}"#;
        let spilled = |build: &mut dyn FnMut()| {
            build();
            false
        };
        let first = cached_settings_kept_by::<TaintPreservation>(text, spilled).unwrap();
        let again = cached_settings_kept_by::<TaintPreservation>(text, spilled).unwrap();
        assert!(!Rc::ptr_eq(&first, &again));
        assert_eq!(again.mode, Mode::Deny);
        let lasting = |build: &mut dyn FnMut()| {
            build();
            true
        };
        let kept = cached_settings_kept_by::<TaintPreservation>(text, lasting).unwrap();
        let hit = cached_settings_kept_by::<TaintPreservation>(text, spilled).unwrap();
        assert!(Rc::ptr_eq(&kept, &hit), "a hit needs no keeping");
        let lazy = cached_settings_kept_by::<TaintPreservation>("{}", |_| true).unwrap();
        assert_eq!(lazy.mode, Mode::Restore, "a `keep` that does not build");
        assert!(cached_settings_kept_by::<TaintPreservation>(r#"{"mode": 1}"#, lasting).is_err());
    }
}
