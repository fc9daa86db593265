//! template-reads: refuses Pods that lack a label the ConfigMaps of their namespace require.
//!
//! A policy that reads the cluster (policies/README.md, "Reading the cluster: a worked
//! example"). It declares what it reads once, in [`Policy::ASKS`]: the ConfigMaps of one
//! namespace, listed. Every engine answers that list from what it has (Kubewarden's host calls,
//! a Gatekeeper-style engine's inventory, a test suite's or the npm package's `cluster`) and
//! refuses any question not declared; the build refuses a `metadata.yml` that does not declare
//! the same read.
//!
//! It reads the Pod the one way every policy here does (policies/README.md, "Reading and
//! writing the object"): through the views the SDK read in its one pass over the request
//! ([`fields_in`], [`parse_labels`]), never parsing it again into a `serde_json::Value`; and it
//! reads the list the cluster answers with serde, into structs that borrow its text.

// The exports come from the adapters' `policy!` macros and are the adapters' code: the lint
// checks this crate's own source.
#![forbid(unsafe_code)]
// No function of the policy's own code over 60 lines (clippy.toml); tests may hold long tables.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

#[cfg(feature = "wasm")]
mod exports;

pub mod settings;

use serde::Deserialize;

use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::cluster::{
    list_items, Asks, Cluster, ClusterError, List, Read, ReadBy, ResourceKind,
};
use taintguard::json::{fields_in, JsonStr, Object};
use taintguard::k8s_names::qualified_name;
use taintguard::label_selector::{parse_labels, Labels};
use taintguard::policy::{Half, Policy};
use taintguard::verdict::Verdict;

pub use settings::Settings;

/// The kind the policy reads: core `v1` ConfigMaps.
pub const CONFIG_MAP: ResourceKind<'static> = ResourceKind::new("v1", "ConfigMap");

/// The fields of each listed ConfigMap the policy reads, asked of the host as field masks. A
/// host that cannot cut fields (an inventory, a test suite) sends whole objects.
pub const CONFIG_MAP_FIELDS: &[&str] = &["metadata.name", "data.labels"];

/// The policy. Its name is the folder's, and the npm package finds the type by the folder's
/// name in CamelCase (policies/README.md).
pub struct TemplateReads;

impl Policy for TemplateReads {
    const NAME: &'static str = "template-reads";
    type Settings = Settings;
    /// The ConfigMaps of the Pod's namespace, listed: metadata.yml declares `v1/ConfigMap` in
    /// `contextAwareResources` and `kubernetes/list_resources_by_namespace` in
    /// `hostCapabilities`, which the build checks against this.
    const ASKS: Asks = Asks {
        reads: &[Read {
            kind: CONFIG_MAP,
            by: &[ReadBy::ListInNamespace],
        }],
        access: false,
    };

    /// Both halves judge alike: the policy refuses or accepts, it never mutates.
    fn evaluate(
        request: &AdmissionRequest<'_>,
        settings: &Settings,
        _half: Half,
        cluster: &dyn Cluster,
    ) -> Verdict {
        if !request.is_core("Pod")
            || !matches!(request.operation, Operation::Create | Operation::Update)
        {
            return Verdict::accept();
        }
        let Some(pod) = &request.object else {
            return Verdict::reject(400, "the request has no object");
        };
        judge(request, pod, settings, cluster).unwrap_or_else(|refusal| refusal)
    }
}

/// The verdict on `pod`: accepted when it carries every label the selected ConfigMaps of its
/// namespace require.
///
/// # Errors
///
/// The refusal: 400 for a Pod that cannot be read, 500 for a cluster answer the policy cannot
/// judge by (the list failed or cannot be read, a required key that is no label key).
fn judge(
    request: &AdmissionRequest<'_>,
    pod: &Object<'_>,
    settings: &Settings,
    cluster: &dyn Cluster,
) -> Result<Verdict, Verdict> {
    let malformed = |e: String| Verdict::reject(400, format!("object.{e}"));
    let metadata = (pod.object("metadata")).map_err(|e| malformed(format!("metadata: {e}")))?;
    let [labels, namespace] = fields_in(metadata, ["labels", "namespace"])
        .map_err(|e| malformed(format!("metadata: {e}")))?;
    let labels = parse_labels(labels.value()).map_err(|e| {
        let message = taintguard::json::error::message(&e);
        malformed(format!("metadata.labels: {message}"))
    })?;
    let namespace = namespace_of(request, namespace)?;
    let selector = settings.config_map_selector.as_str();
    let cannot_judge = |e: String| {
        Verdict::reject(
            500,
            format!(
                "the ConfigMaps of namespace {:?} that {selector:?} selects cannot be read: {e}",
                namespace.as_str()
            ),
        )
    };
    let list = cluster
        .list(&List {
            namespace: Some(namespace.as_str()),
            label_selector: Some(selector),
            fields: CONFIG_MAP_FIELDS,
            ..List::all(CONFIG_MAP)
        })
        .map_err(|e| cannot_judge(e.to_string()))?;
    let config_maps = config_maps_of_list(&list).map_err(|e| cannot_judge(e.to_string()))?;
    let missing = missing_labels(&config_maps, &labels).map_err(cannot_judge)?;
    if missing.is_empty() {
        return Ok(Verdict::accept());
    }
    let message = format!(
        "the Pod lacks labels that ConfigMaps of namespace {:?} require: {}",
        namespace.as_str(),
        missing.join("; ")
    );
    Ok(Verdict::reject(403, message))
}

/// The Pod's namespace: the request's, which the API server always names, else the object's
/// `metadata.namespace` (`raw`).
///
/// # Errors
///
/// A `metadata.namespace` that is no string, or no namespace at all (400).
fn namespace_of<'a>(
    request: &AdmissionRequest<'a>,
    raw: taintguard::json::Raw<'a>,
) -> Result<JsonStr<'a>, Verdict> {
    if let Some(namespace) = &request.namespace {
        return Ok(namespace.clone());
    }
    let read = raw
        .read_str()
        .map_err(|e| Verdict::reject(400, format!("object.metadata.namespace: {e}")))?;
    read.ok_or_else(|| Verdict::reject(400, "the Pod names no namespace"))
}

/// For each ConfigMap that requires a label `labels` lacks, by name: the keys it lacks and the
/// ConfigMap (`team, tier (ConfigMap "required-labels")`); empty when nothing is missing.
///
/// # Errors
///
/// A ConfigMap whose `data.labels` names a key that is no label key, named with the key.
fn missing_labels(
    config_maps: &[ConfigMap<'_>],
    labels: &Labels<'_>,
) -> Result<Vec<String>, String> {
    let mut missing = Vec::new();
    for config_map in config_maps {
        let name = config_map.name.as_str();
        let mut lacking: Vec<&str> = Vec::new();
        for key in config_map.required() {
            qualified_name(key).map_err(|e| format!("ConfigMap {name:?}: data.labels: {e}"))?;
            let has = labels.iter().any(|(k, _)| k.as_str() == key);
            if !has && !lacking.contains(&key) {
                lacking.push(key);
            }
        }
        if !lacking.is_empty() {
            missing.push(format!("{} (ConfigMap {name:?})", lacking.join(", ")));
        }
    }
    Ok(missing)
}

/// One ConfigMap as the cluster lists it: what the policy reads of it, borrowed from the list's
/// text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMap<'a> {
    /// Its name.
    pub name: JsonStr<'a>,
    /// Its `data.labels`: label keys separated by commas; `None` when it has none.
    pub labels: Option<JsonStr<'a>>,
}

impl ConfigMap<'_> {
    /// The label keys its `data.labels` lists, trimmed, empty entries (`a,,b`, a trailing
    /// comma) left out.
    pub fn required(&self) -> impl Iterator<Item = &str> {
        let labels = self.labels.as_ref().map_or("", JsonStr::as_str);
        labels
            .split(',')
            .map(str::trim)
            .filter(|key| !key.is_empty())
    }
}

#[derive(Deserialize)]
struct ConfigMapText<'a> {
    #[serde(borrow, default)]
    metadata: Option<MetadataText<'a>>,
    #[serde(borrow, default)]
    data: Option<DataText<'a>>,
}

#[derive(Deserialize)]
struct MetadataText<'a> {
    #[serde(borrow, default)]
    name: JsonStr<'a>,
}

#[derive(Deserialize)]
struct DataText<'a> {
    #[serde(borrow, default)]
    labels: Option<JsonStr<'a>>,
}

/// The ConfigMaps of a Kubernetes `List`'s text, read by the SDK's one list reader
/// ([`list_items`]); `null` items is an empty list.
///
/// # Errors
///
/// An answer that is not such a list: a policy must not read "no ConfigMaps" into an answer it
/// cannot read.
pub fn config_maps_of_list(text: &str) -> Result<Vec<ConfigMap<'_>>, ClusterError> {
    let items: Vec<ConfigMapText> = list_items(text, CONFIG_MAP)?;
    Ok((items.into_iter())
        .map(|item| ConfigMap {
            name: item.metadata.map(|m| m.name).unwrap_or_default(),
            labels: item.data.and_then(|d| d.labels),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use taintguard::cluster::{AccessQuestion, Get};
    use taintguard::run;

    /// A cluster that answers every list with `list`, and writes down each list asked.
    struct OneAnswer {
        list: Result<String, ClusterError>,
        asked: RefCell<Vec<String>>,
    }

    impl OneAnswer {
        fn new(list: Result<String, ClusterError>) -> OneAnswer {
            OneAnswer {
                list,
                asked: RefCell::default(),
            }
        }
    }

    impl Cluster for OneAnswer {
        fn get(&self, q: &Get<'_>) -> Result<String, ClusterError> {
            Err(ClusterError::Failed(format!(
                "{} {:?} was not recorded",
                q.kind, q.name
            )))
        }

        fn list(&self, q: &List<'_>) -> Result<String, ClusterError> {
            self.asked.borrow_mut().push(format!(
                "{} in {} selected by {} with {}",
                q.kind,
                q.namespace.unwrap_or("-"),
                q.label_selector.unwrap_or("-"),
                q.fields.join(",")
            ));
            self.list.clone()
        }

        fn can_i(&self, _: &AccessQuestion<'_>) -> Result<bool, ClusterError> {
            Err(ClusterError::Unavailable("no RBAC here".to_owned()))
        }
    }

    /// A request for a Pod of namespace `team-a` whose `metadata` member is `metadata`.
    fn pod(operation: &str, metadata: &str) -> String {
        format!(
            r#"{{"uid":"u","kind":{{"group":"","version":"v1","kind":"Pod"}},"operation":"{operation}",
                "namespace":"team-a","userInfo":{{"username":"alice"}},
                "object":{{"apiVersion":"v1","kind":"Pod","metadata":{metadata},"spec":{{}}}}}}"#
        )
    }

    /// A list of ConfigMaps, each `(name, data.labels)`.
    fn list_of(config_maps: &[(&str, &str)]) -> String {
        let items: Vec<String> = (config_maps.iter())
            .map(|(name, labels)| {
                format!(r#"{{"metadata":{{"name":"{name}"}},"data":{{"labels":"{labels}"}}}}"#)
            })
            .collect();
        format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
            items.join(",")
        )
    }

    /// What the cluster answers a list.
    type Answer = Result<String, ClusterError>;

    /// What the policy made of a request: accepted, or refused with a code and a message.
    type Judged = Result<(), (u16, String)>;

    /// What each Pod gets against each answer of the cluster: accepted, or refused with the
    /// code and the message (after the policy's name).
    #[test]
    fn each_pod_is_judged_by_its_namespaces_config_maps() {
        let team = r#"{"name":"web","labels":{"team":"a"}}"#;
        let none = r#"{"name":"web"}"#;
        let required = list_of(&[
            ("required-labels", "team, tier"),
            ("billing", "cost-center,"),
        ]);
        let unavailable = || Err(ClusterError::Unavailable("no inventory".to_owned()));
        let failed = || Err(ClusterError::Failed("configmaps is forbidden".to_owned()));
        let lacks = r#"the Pod lacks labels that ConfigMaps of namespace "team-a" require: "#;
        let unread = r#"the ConfigMaps of namespace "team-a" that "taintguard.io/required-labels=true" selects cannot be read: "#;
        // (Pod metadata, the list's answer, expected: Ok(()) or Err((code, message)))
        let ok = |text: &str| Ok(text.to_owned());
        let cases: Vec<(&str, Answer, Judged)> = vec![
            (none, ok(r#"{"items":[]}"#), Ok(())),
            (none, ok(r#"{"items":null}"#), Ok(())),
            (team, Ok(list_of(&[("required-labels", "team")])), Ok(())),
            (
                r#"{"name":"web","labels":{"team":"a","tier":"web","cost-center":"7"}}"#,
                Ok(required.clone()),
                Ok(()),
            ),
            (none, ok(r#"{"items":[{"metadata":{"name":"no-data"}}]}"#), Ok(())),
            (none, Ok(list_of(&[("blank", " , ")])), Ok(())),
            (
                team,
                Ok(required.clone()),
                Err((403, format!(r#"{lacks}tier (ConfigMap "required-labels"); cost-center (ConfigMap "billing")"#))),
            ),
            (
                none,
                Ok(list_of(&[("twice", "team,team")])),
                Err((403, format!(r#"{lacks}team (ConfigMap "twice")"#))),
            ),
            (
                team,
                Ok(list_of(&[("bad", "team,not a key")])),
                Err((500, format!(r#"{unread}ConfigMap "bad": data.labels: "not a key" is not a qualified name"#))),
            ),
            (
                team,
                ok("{}"),
                Err((500, format!("{unread}asking the cluster failed: the list of v1/ConfigMap cannot be read: missing field `items`"))),
            ),
            (team, ok("[]"), Err((500, format!("{unread}asking the cluster failed: the list of v1/ConfigMap cannot be read")))),
            (
                team,
                ok(r#"{"items":[{"metadata":{"name":"x"},"data":{"labels":7}}]}"#),
                Err((500, format!("{unread}asking the cluster failed: the list of v1/ConfigMap cannot be read: invalid type: integer `7`"))),
            ),
            (team, unavailable(), Err((500, format!("{unread}the cluster cannot be asked here: no inventory")))),
            (team, failed(), Err((500, format!("{unread}asking the cluster failed: configmaps is forbidden")))),
            (
                r#"{"name":"web","labels":["team"]}"#,
                ok(r#"{"items":[]}"#),
                Err((400, "object.metadata.labels: invalid type: sequence, expected an object".to_owned())),
            ),
        ];
        for (metadata, answer, want) in cases {
            for half in [Half::Mutating, Half::Validating] {
                let cluster = OneAnswer::new(answer.clone());
                let verdict = run::<TemplateReads>(&pod("CREATE", metadata), "{}", half, &cluster);
                let got = match (verdict.code(), verdict.message()) {
                    (Some(code), Some(message)) => Err((code, message.to_owned())),
                    _ => Ok(()),
                };
                let want = want
                    .clone()
                    .map_err(|(code, m)| (code, format!("template-reads: {m}")));
                match (&got, &want) {
                    (Err((code, message)), Err((want_code, fragment))) => {
                        assert_eq!(code, want_code, "{metadata} {answer:?}: {message}");
                        assert!(
                            message.starts_with(fragment.as_str()),
                            "{metadata} {answer:?}: {message}"
                        );
                    }
                    _ => assert_eq!(got, want, "{metadata} {answer:?} {half:?}"),
                }
                assert!(verdict.mutated_object().is_none());
            }
        }
    }

    /// The one question asked: the ConfigMaps of the Pod's namespace that the settings select,
    /// with the two fields read; nothing for what the policy does not judge.
    #[test]
    fn asks_only_for_the_config_maps_of_the_pods_namespace() {
        let labelled = r#"{"name":"web","namespace":"ignored","labels":{"team":"a"}}"#;
        let create = pod("CREATE", labelled);
        let delete = pod("DELETE", labelled);
        let node = create.replace(r#""kind":"Pod"}"#, r#""kind":"Node"}"#);
        let cases = [
            (create.as_str(), "{}", vec!["v1/ConfigMap in team-a selected by taintguard.io/required-labels=true with metadata.name,data.labels"]),
            (create.as_str(), r#"{"configMapSelector":"policy in (labels),!draft"}"#, vec!["v1/ConfigMap in team-a selected by policy in (labels),!draft with metadata.name,data.labels"]),
            (delete.as_str(), "{}", vec![]),
            (node.as_str(), "{}", vec![]),
        ];
        for (request, settings, want) in cases {
            let cluster = OneAnswer::new(Ok(r#"{"items":[]}"#.to_owned()));
            let verdict = run::<TemplateReads>(request, settings, Half::Mutating, &cluster);
            assert!(verdict.accepted(), "{settings}: {:?}", verdict.message());
            assert_eq!(*cluster.asked.borrow(), want, "{settings}");
        }
    }

    /// A Pod whose request names no namespace is read in its own; one with neither is refused.
    #[test]
    fn the_namespace_comes_from_the_request_or_the_pod() {
        let request = pod("CREATE", r#"{"name":"web","namespace":"team-b"}"#)
            .replace(r#""namespace":"team-a","#, "");
        let cluster = OneAnswer::new(Ok(r#"{"items":[]}"#.to_owned()));
        assert!(run::<TemplateReads>(&request, "{}", Half::Mutating, &cluster).accepted());
        assert!(cluster.asked.borrow()[0].contains(" in team-b "));
        let request = pod("CREATE", r#"{"name":"web"}"#).replace(r#""namespace":"team-a","#, "");
        let verdict = run::<TemplateReads>(&request, "{}", Half::Mutating, &cluster);
        assert_eq!(verdict.code(), Some(400));
        assert_eq!(
            verdict.message(),
            Some("template-reads: the Pod names no namespace")
        );
    }

    #[test]
    fn bad_selectors_are_refused_with_the_settings() {
        let cases = [
            (r#"{"configMapSelector":""}"#, "an empty selector"),
            (
                r#"{"configMapSelector":"team a"}"#,
                r#""team a" is not a qualified name"#,
            ),
            (
                r#"{"configMapSelector":"team=a b"}"#,
                r#""a b" is not a label value"#,
            ),
            (
                r#"{"configMapSelector":"team in a"}"#,
                "a set needs parentheses",
            ),
            (r#"{"configMapSelector":7}"#, "configMapSelector"),
            (r#"{"selector":"a"}"#, "selector"),
        ];
        for (settings, fragment) in cases {
            let cluster = OneAnswer::new(Ok(r#"{"items":[]}"#.to_owned()));
            let verdict =
                run::<TemplateReads>(&pod("CREATE", "{}"), settings, Half::Mutating, &cluster);
            assert_eq!(verdict.code(), Some(400), "{settings}");
            let message = verdict.message().unwrap_or_default();
            assert!(message.contains(fragment), "{settings}: {message}");
            assert!(cluster.asked.borrow().is_empty(), "{settings}");
        }
    }

    /// Questions the policy does not declare are refused by every engine alike.
    #[test]
    fn asks_declare_the_namespaced_list_only() {
        assert!(TemplateReads::ASKS.allows(CONFIG_MAP, ReadBy::ListInNamespace));
        assert!(!TemplateReads::ASKS.allows(CONFIG_MAP, ReadBy::ListAll));
        assert!(!TemplateReads::ASKS.allows(CONFIG_MAP, ReadBy::Get));
        assert_eq!(
            TemplateReads::ASKS.declaration(),
            "taintguard-asks v1\nlist-in-namespace v1/ConfigMap\n"
        );
    }
}
