//! The objects whose pods get tolerations: Pods, and the pod template of every workload kind.

use crate::admission::{describe_error, AdmissionRequest};
use crate::json::scan::{once, Scan, Scanner};
use crate::json::{field, JsonStr, Raw, Splice};
use crate::label_selector::{parse_labels, Labels};
use crate::toleration::{parse_tolerations, scan_toleration, Toleration};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Pod,
    Deployment,
    DaemonSet,
    StatefulSet,
    ReplicaSet,
    ReplicationController,
    Job,
    CronJob,
}

pub const KINDS: [Kind; 8] = [
    Kind::Pod,
    Kind::Deployment,
    Kind::DaemonSet,
    Kind::StatefulSet,
    Kind::ReplicaSet,
    Kind::ReplicationController,
    Kind::Job,
    Kind::CronJob,
];

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Deployment => "Deployment",
            Kind::DaemonSet => "DaemonSet",
            Kind::StatefulSet => "StatefulSet",
            Kind::ReplicaSet => "ReplicaSet",
            Kind::ReplicationController => "ReplicationController",
            Kind::Job => "Job",
            Kind::CronJob => "CronJob",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Kind::Pod | Kind::ReplicationController => "",
            Kind::Deployment | Kind::DaemonSet | Kind::StatefulSet | Kind::ReplicaSet => "apps",
            Kind::Job | Kind::CronJob => "batch",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        KINDS.into_iter().find(|k| k.name() == name)
    }

    /// The kind of a request's main resource, if it is one this policy handles.
    pub fn of(request: &AdmissionRequest<'_>) -> Option<Kind> {
        if request.sub_resource.is_some() {
            return None;
        }
        Kind::from_name(request.kind.kind.as_str())
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
    pub text: &'a str,
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

/// What [`Workload::scan`] collects on its way down to the pod spec.
#[derive(Default)]
struct PodSpecScan<'a> {
    /// `Some(None)`: the path ends in `null` before the pod spec.
    pod_spec: Option<Option<&'a str>>,
    tolerations_raw: Option<&'a str>,
    tolerations: Vec<Toleration<'a>>,
}

/// Reads the member `path[0]` of the object at `s`, then the rest of the path inside it; at the
/// end of the path, the pod spec's tolerations. Every other member is skipped.
fn scan_path<'a>(
    s: &mut Scanner<'a>,
    path: &[&str],
    out: &mut PodSpecScan<'a>,
    other: &mut dyn FnMut(&mut Scanner<'a>, &'a str) -> Scan<()>,
) -> Scan<&'a str> {
    let Some((step, rest)) = path.split_first() else {
        return s.object(|s, key| match key {
            "tolerations" => {
                let mut tolerations = Vec::new();
                let text = s.array_or_null(|s| {
                    tolerations.push(scan_toleration(s)?);
                    Ok(())
                })?;
                out.tolerations = tolerations;
                once(&mut out.tolerations_raw, text)
            }
            _ => s.skip_value().map(drop),
        });
    };
    let mut seen = false;
    s.object(|s, key| {
        if key != *step {
            return other(s, key);
        }
        if std::mem::replace(&mut seen, true) {
            return Err(crate::json::scan::Bail);
        }
        if s.peek() == Some(b'n') {
            s.null()?;
            out.pod_spec = Some(None);
            return Ok(());
        }
        let text = scan_path(s, rest, out, &mut |s, _| s.skip_value().map(drop))?;
        if rest.is_empty() {
            out.pod_spec = Some(Some(text));
        }
        Ok(())
    })
}

impl<'a> Workload<'a> {
    /// Views the object; `text` is a value serde_json accepted (the request's `object`).
    /// `which` (`object`, `oldObject`) prefixes error messages.
    pub fn parse(text: &'a str, kind: Kind, which: &str) -> Result<Workload<'a>, String> {
        match Self::scan(text, kind) {
            Ok(workload) => Ok(workload),
            Err(_) => Self::parse_serde(text, kind, which),
        }
    }

    /// The view in one pass over the text, where that reads exactly what
    /// [`Workload::parse_serde`] reads; otherwise it gives up and `parse_serde` decides.
    fn scan(text: &'a str, kind: Kind) -> Scan<Workload<'a>> {
        let (mut name, mut generate_name, mut namespace) = (None, None, None);
        let mut labels: Option<Labels<'a>> = None;
        let mut metadata_seen = false;
        let mut out = PodSpecScan::default();
        let mut s = Scanner::new(text);
        scan_path(&mut s, kind.pod_spec_path(), &mut out, &mut |s, key| {
            if key != "metadata" {
                return s.skip_value().map(drop);
            }
            if std::mem::replace(&mut metadata_seen, true) {
                return Err(crate::json::scan::Bail);
            }
            s.object_or_null(|s, key| match key {
                "name" => once(&mut name, s.plain_string_or_null()?),
                "generateName" => once(&mut generate_name, s.plain_string_or_null()?),
                "namespace" => once(&mut namespace, s.plain_string_or_null()?),
                "labels" => {
                    let mut read = Vec::new();
                    s.object_or_null(|s, key| {
                        read.push((JsonStr::borrowed(key), JsonStr::borrowed(s.plain_string()?)));
                        Ok(())
                    })?;
                    once(&mut labels, read)
                }
                _ => s.skip_value().map(drop),
            })
            .map(drop)
        })?;
        s.end()?;
        let string = |s: Option<Option<&'a str>>| s.flatten().map(JsonStr::borrowed);
        let pod_spec = out.pod_spec.flatten();
        Ok(Workload {
            text,
            kind,
            name: string(name),
            generate_name: string(generate_name),
            namespace: string(namespace),
            labels: labels.unwrap_or_default(),
            pod_spec,
            tolerations_raw: if pod_spec.is_some() {
                out.tolerations_raw
            } else {
                None
            },
            tolerations: out.tolerations,
        })
    }

    fn parse_serde(text: &'a str, kind: Kind, which: &str) -> Result<Workload<'a>, String> {
        let err =
            |at: &str, e: serde_json::Error| format!("{which}{at}: {}", describe_error(text, &e));
        let meta: Meta = match field(text, "metadata").map_err(|e| err("", e))?.value() {
            Some(m) => serde_json::from_str(m).map_err(|e| err(".metadata", e))?,
            None => Meta::default(),
        };
        let labels = parse_labels(meta.labels.value()).map_err(|e| err(".metadata.labels", e))?;
        let mut at = String::new();
        let mut current = Some(text);
        for step in kind.pod_spec_path() {
            let Some(object) = current else { break };
            current = field(object, step).map_err(|e| err(&at, e))?.value();
            at.push('.');
            at.push_str(step);
        }
        let pod_spec = current;
        let tolerations_raw = match pod_spec {
            Some(spec) => field(spec, "tolerations").map_err(|e| err(&at, e))?.text(),
            None => None,
        };
        let tolerations = parse_tolerations(tolerations_raw.filter(|t| *t != "null"))
            .map_err(|e| err(&format!("{at}.tolerations"), e))?;
        Ok(Workload {
            text,
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

    /// The object's text with `additions` appended to its tolerations; `None` when it has no
    /// pod spec to put them in (the API server refuses such objects anyway).
    pub fn with_tolerations(&self, additions: &[String]) -> Option<String> {
        let spec = self.pod_spec?;
        let mut splice = Splice::new(self.text);
        let list = self.tolerations_raw.filter(|t| *t != "null");
        match (list, self.tolerations_raw) {
            (Some(list), _) => splice.append_items(list, additions),
            (None, Some(null)) => splice.replace(null, format!("[{}]", additions.join(","))),
            (None, None) => splice.insert_members(
                spec,
                &[("tolerations", format!("[{}]", additions.join(",")))],
            ),
        }
        Some(splice.finish())
    }
}
