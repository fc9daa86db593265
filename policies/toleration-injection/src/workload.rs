//! The objects whose pods get tolerations: Pods, and the pod template of every workload kind.

use std::borrow::Cow;
use taintguard::admission::AdmissionRequest;

use taintguard::json::{append_items, fields_in, items, JsonStr, Object, Raw};
use taintguard::label_selector::{parse_labels, Labels};
use taintguard::toleration::{parse_tolerations, Toleration};

taintguard::settings::string_enum! {
    /// A kind this policy handles; settings name it as Kubernetes does.
    pub enum Kind {
        Pod = "Pod",
        Deployment = "Deployment",
        DaemonSet = "DaemonSet",
        StatefulSet = "StatefulSet",
        ReplicaSet = "ReplicaSet",
        ReplicationController = "ReplicationController",
        Job = "Job",
        CronJob = "CronJob",
    }
    unknown = "kind",
    expected = "one of Pod, Deployment, DaemonSet, StatefulSet, ReplicaSet, ReplicationController, Job, CronJob";
}

impl Kind {
    fn group(self) -> &'static str {
        match self {
            Kind::Pod | Kind::ReplicationController => "",
            Kind::Deployment | Kind::DaemonSet | Kind::StatefulSet | Kind::ReplicaSet => "apps",
            Kind::Job | Kind::CronJob => "batch",
        }
    }

    /// The kind of a request's main resource, if it is one this policy handles.
    pub fn of(request: &AdmissionRequest<'_>) -> Option<Kind> {
        if request.sub_resource.is_some() {
            return None;
        }
        Kind::try_from(request.kind.kind.as_str())
            .ok()
            .filter(|k| k.group() == request.kind.group.as_str())
    }

    /// Members leading from the object to its pod spec.
    fn pod_spec_path(self) -> &'static [&'static str] {
        match self {
            Kind::Pod => &["spec"],
            Kind::CronJob => &["spec", "jobTemplate", "spec", "template", "spec"],
            _ => &["spec", "template", "spec"],
        }
    }
}

/// A view of the admitted object: what the matchers read, and where the tolerations are.
pub struct Workload<'a> {
    object: &'a Object<'a>,
    pub kind: Kind,
    pub name: Option<JsonStr<'a>>,
    pub generate_name: Option<JsonStr<'a>>,
    pub namespace: Option<JsonStr<'a>>,
    pub labels: Labels<'a>,
    /// The pod spec, read as its members in the request's pass, when the object has one.
    pod_spec: Option<&'a Object<'a>>,
    /// The text of the pod spec's `tolerations` member, `null` included (`None`: absent).
    tolerations_raw: Option<&'a str>,
    pub tolerations: Vec<Toleration<'a>>,
}

impl<'a> Workload<'a> {
    /// Views the object, read as its members in the request's pass. `which` (`object`,
    /// `oldObject`) prefixes error messages.
    pub fn read(object: &'a Object<'a>, kind: Kind, which: &str) -> Result<Workload<'a>, String> {
        let metadata = object
            .object("metadata")
            .map_err(|e| format!("{which}: {e}"))?;
        // Found in one walk of the metadata's members.
        let [labels, name, generate_name, namespace] =
            fields_in(metadata, ["labels", "name", "generateName", "namespace"])
                .map_err(|e| format!("{which}.metadata: {e}"))?;
        let name_in_metadata = |key: &str, raw: Raw<'a>| -> Result<Option<JsonStr<'a>>, String> {
            raw.read_str()
                .map_err(|e| format!("{which}.metadata.{key}: {e}"))
        };
        // Labels, like tolerations below, are read entry by entry: serde's position is in the
        // entry, so the message goes without a path.
        let labels = parse_labels(labels.value()).map_err(|e| {
            format!(
                "{which}.metadata.labels: {}",
                taintguard::json::error::message(&e)
            )
        })?;
        // Where on the way to the pod spec a message is about, written only for a message.
        let path = kind.pod_spec_path();
        let at =
            |steps: usize| -> String { path[..steps].iter().map(|s| [".", s].concat()).collect() };
        let mut current = Some(object);
        for (steps, step) in path.iter().enumerate() {
            let Some(parent) = current else { break };
            current = parent
                .object(step)
                .map_err(|e| format!("{which}{}: {e}", at(steps)))?;
        }
        let pod_spec = current;
        // With a pod spec, the whole path was walked.
        let tolerations_raw = match pod_spec {
            Some(spec) => spec
                .get("tolerations")
                .map_err(|e| format!("{which}{}: {e}", at(path.len())))?
                .text(),
            None => None,
        };
        let tolerations =
            parse_tolerations(tolerations_raw.filter(|t| *t != "null")).map_err(|e| {
                format!(
                    "{which}{}.tolerations: {}",
                    at(path.len()),
                    taintguard::json::error::message(&e)
                )
            })?;
        Ok(Workload {
            object,
            kind,
            name: name_in_metadata("name", name)?,
            generate_name: name_in_metadata("generateName", generate_name)?,
            namespace: name_in_metadata("namespace", namespace)?,
            labels,
            pod_spec,
            tolerations_raw,
            tolerations,
        })
    }

    /// The pod spec, and its `tolerations` member's text (`null` included).
    pub fn pod_spec(&self) -> (Option<&'a Object<'a>>, Option<&'a str>) {
        (self.pod_spec, self.tolerations_raw)
    }

    /// The object, read as its members.
    pub fn object(&self) -> &'a Object<'a> {
        self.object
    }

    /// The whole object's text, for the matchers that read all of it (JSONPath conditions).
    pub fn text(&self) -> &'a str {
        self.object.text()
    }

    /// The object's text with the tolerations at the indices `replaced` (ascending) removed
    /// and `additions` (tolerations, each an object of scalars) appended, and how many levels it
    /// nests at most: the list sits one level below the pod spec and keeps the tolerations it
    /// keeps as they were written, so no deeper than the object was ([`Object::nesting`]) or
    /// than the list's new objects. `None` when it has no pod spec to put them in (the API
    /// server refuses such objects anyway).
    pub fn with_tolerations(
        &self,
        replaced: &[usize],
        additions: &[String],
    ) -> Option<(String, usize)> {
        let pod_spec = self.pod_spec?;
        let tolerations = match self.tolerations_raw.filter(|t| *t != "null") {
            Some(list) if replaced.is_empty() => append_items(list, additions),
            Some(list) => {
                // The list was read as tolerations, so it is one array.
                let items = items(list).ok()?;
                let kept = (items.into_iter().enumerate())
                    .filter(|(i, _)| !replaced.contains(i))
                    .map(|(_, item)| item);
                let all: Vec<&str> = kept.chain(additions.iter().map(String::as_str)).collect();
                ["[", &all.join(","), "]"].concat()
            }
            None => format!("[{}]", additions.join(",")),
        };
        // The object, its path to the pod spec, the pod spec, the list, its new objects.
        let nesting = self
            .object
            .nesting()
            .max(self.kind.pod_spec_path().len() + 3);
        let text = self
            .object
            .write_in(pod_spec, &[("tolerations", tolerations)])?;
        Some((text, nesting))
    }

    /// The workload's tolerations but those at the indices `replaced`.
    pub fn tolerations_kept(&self, replaced: &[usize]) -> Cow<'_, [Toleration<'a>]> {
        if replaced.is_empty() {
            return Cow::Borrowed(&self.tolerations);
        }
        let kept = (self.tolerations.iter().enumerate())
            .filter(|(i, _)| !replaced.contains(i))
            .map(|(_, t)| t.clone());
        Cow::Owned(kept.collect())
    }
}
