//! Who may set the two annotations on a Namespace (kubernetes#59366): upstream lets anyone who
//! may edit a Namespace widen its own whitelist, since the cluster-wide list applies only where
//! the annotation is absent (docs/pod-toleration-restriction.md, "Who may change the
//! annotations").

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::json::{get_in, Object};
use taintguard::verdict::Verdict;

use super::annotations::{self, DEFAULTS, WHITELIST};
use super::settings::PodTolerationRestriction;

/// The two annotations of `object` (`None` where absent).
fn guarded(object: Option<&Object<'_>>, which: &str) -> Result<[Option<String>; 2], String> {
    let Some(object) = object else {
        return Ok([None, None]);
    };
    let metadata = object
        .object("metadata")
        .map_err(|e| format!("{which}: {e}"))?;
    let annotations =
        get_in(metadata, "annotations").map_err(|e| format!("{which}.metadata: {e}"))?;
    let pair = annotations::plugin_pair(annotations.value())
        .map_err(|e| format!("{which}.metadata.{e}"))?;
    Ok(pair.map(|value| value.map(|v| v.as_str().to_owned())))
}

/// A Namespace request (the object, or its `status` or `finalize` subresource, through which
/// annotations can be written too): refused when it sets, changes or removes one of the two
/// annotations and the requester is not among `annotationEditors`. The background audit (no
/// requester) is not judged: who wrote a stored annotation is not known.
pub fn judge_namespace(
    request: &AdmissionRequest<'_>,
    settings: &PodTolerationRestriction,
) -> Verdict {
    if !settings.enabled || !settings.guard_annotations {
        return Verdict::accept();
    }
    let who = request.principal();
    if who.username.is_empty() || settings.annotation_editors.allows(&who) {
        return Verdict::accept();
    }
    let old_object = match request.operation {
        Operation::Create => None,
        Operation::Update => request.old_object.as_ref(),
        _ => return Verdict::accept(),
    };
    let read = guarded(request.object.as_ref(), "object")
        .and_then(|new| Ok((new, guarded(old_object, "oldObject")?)));
    let (new, old) = match read {
        Ok(both) => both,
        Err(e) => return Verdict::reject(400, format!("malformed request: {e}")),
    };
    let changed: Vec<String> = [DEFAULTS, WHITELIST]
        .into_iter()
        .zip(new.iter().zip(&old))
        .filter(|(_, (new, old))| new != old)
        .map(|(key, (new, old))| {
            let how = match (old, new) {
                (None, _) => "set",
                (_, None) => "remove",
                _ => "change",
            };
            format!("{how} the annotation {key}")
        })
        .collect();
    if changed.is_empty() {
        return Verdict::accept();
    }
    let name = request.name.as_ref().map_or("", |n| n.as_str());
    Verdict::reject(
        403,
        format!(
            "Namespace {name:?}: {} may not {}; only podTolerationRestriction.annotationEditors \
             may",
            who.describe(),
            changed.join(" or ")
        ),
    )
}
