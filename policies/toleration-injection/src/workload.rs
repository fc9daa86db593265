//! The objects whose pods get tolerations: Pods, and the pod template of every workload kind.

use taintguard::admission::AdmissionRequest;
use taintguard::json::{field, JsonStr, Object, Raw, Splice};
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
    /// The object's `spec` text, which holds the pod spec (or is it, for a Pod).
    spec: Option<&'a str>,
    pub kind: Kind,
    pub name: Option<JsonStr<'a>>,
    pub generate_name: Option<JsonStr<'a>>,
    pub namespace: Option<JsonStr<'a>>,
    pub labels: Labels<'a>,
    /// The pod spec object's text, when the object has one.
    pod_spec: Option<&'a str>,
    /// The text of the pod spec's `tolerations` member, `null` included (`None`: absent).
    tolerations_raw: Option<&'a str>,
    pub tolerations: Vec<Toleration<'a>>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    generate_name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    namespace: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    labels: Raw<'a>,
}

impl<'a> Workload<'a> {
    /// Views the object, read as its members in the request's pass. `which` (`object`,
    /// `oldObject`) prefixes error messages.
    pub fn read(object: &'a Object<'a>, kind: Kind, which: &str) -> Result<Workload<'a>, String> {
        let err = |at: &str, text: &str, e: serde_json::Error| {
            format!(
                "{which}{at}: {}",
                taintguard::json::error::describe(text, &e)
            )
        };
        let member = |key: &str| object.get(key).map_err(|e| format!("{which}: {e}"));
        let meta: Meta = member("metadata")?
            .read()
            .map_err(|e| format!("{which}.metadata: {e}"))?;
        // Labels, like tolerations below, are read entry by entry: serde's position is in the
        // entry, so the message goes without a path.
        let labels = parse_labels(meta.labels.value()).map_err(|e| {
            format!(
                "{which}.metadata.labels: {}",
                taintguard::json::error::message(&e)
            )
        })?;
        let spec = member("spec")?.value();
        let mut at = String::from(".spec");
        let mut current = spec;
        for step in &kind.pod_spec_path()[1..] {
            let Some(object) = current else { break };
            current = field(object, step)
                .map_err(|e| err(&at, object, e))?
                .value();
            at.push('.');
            at.push_str(step);
        }
        let pod_spec = current;
        let tolerations_raw = match pod_spec {
            Some(spec) => field(spec, "tolerations")
                .map_err(|e| err(&at, spec, e))?
                .text(),
            None => None,
        };
        let tolerations =
            parse_tolerations(tolerations_raw.filter(|t| *t != "null")).map_err(|e| {
                format!(
                    "{which}{at}.tolerations: {}",
                    taintguard::json::error::message(&e)
                )
            })?;
        Ok(Workload {
            object,
            spec,
            kind,
            name: meta.name,
            generate_name: meta.generate_name,
            namespace: meta.namespace,
            labels,
            pod_spec,
            tolerations_raw,
            tolerations,
        })
    }

    /// The pod spec's text, and its `tolerations` member's (`null` included).
    pub fn pod_spec(&self) -> (Option<&'a str>, Option<&'a str>) {
        (self.pod_spec, self.tolerations_raw)
    }

    /// The whole object's text, for the matchers that read all of it (JSONPath conditions).
    pub fn text(&self) -> String {
        self.object.write(&[])
    }

    /// The object's text with `additions` appended to its tolerations; `None` when it has no
    /// pod spec to put them in (the API server refuses such objects anyway).
    pub fn with_tolerations(&self, additions: &[String]) -> Option<String> {
        let (spec, pod_spec) = (self.spec?, self.pod_spec?);
        let mut splice = Splice::new(spec);
        let list = self.tolerations_raw.filter(|t| *t != "null");
        match (list, self.tolerations_raw) {
            (Some(list), _) => splice.append_items(list, additions),
            (None, Some(null)) => splice.replace(null, format!("[{}]", additions.join(","))),
            (None, None) => splice.insert_members(
                pod_spec,
                &[("tolerations", format!("[{}]", additions.join(",")))],
            ),
        }
        Some(self.object.write(&[("spec", splice.finish())]))
    }
}
