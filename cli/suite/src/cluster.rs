//! A suite's cluster, answering Kubewarden's `kubernetes` host capabilities as policy-server
//! answers them from a real API server: the nodes a label selector selects, and
//! SubjectAccessReview answers, a question no answer names being denied as RBAC denies what no
//! role grants. (A kwctl session, the other form of answers, is replayed by the engine.)

use serde_json::{json, Value};

use crate::suite::Cluster;

/// The answer to the `kubewarden/kubernetes/<operation>` call with `request`.
///
/// # Errors
///
/// An operation or a list the suite's cluster does not answer, or a selector it cannot read;
/// the host gives the policy that error, as policy-server gives an API server's.
pub fn answer(cluster: &Cluster, operation: &str, request: &Value) -> Result<Value, String> {
    match operation {
        "list_resources_all" => list(cluster, request),
        "can_i" => Ok(can_i(cluster, request)),
        "get_resource" => get(cluster, request),
        other => Err(format!(
            "the test suite's cluster does not answer kubernetes/{other}"
        )),
    }
}

fn list(cluster: &Cluster, request: &Value) -> Result<Value, String> {
    let (api_version, kind) = (&request["api_version"], &request["kind"]);
    if api_version != "v1" || kind != "Node" {
        return Err(format!(
            "the test suite's cluster lists only v1 Nodes, not {api_version} {kind}"
        ));
    }
    let selector = request["label_selector"].as_str().unwrap_or_default();
    let requirements = parse_selector(selector)?;
    let items: Vec<&Value> = cluster
        .nodes
        .iter()
        .filter(|node| {
            let labels = &node["metadata"]["labels"];
            requirements.iter().all(|r| r.holds(labels))
        })
        .collect();
    Ok(json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}))
}

/// A Namespace by name; any other resource, or a name the suite does not give, is an error, as
/// policy-server answers a get of an object that does not exist.
fn get(cluster: &Cluster, request: &Value) -> Result<Value, String> {
    let (api_version, kind, name) = (&request["api_version"], &request["kind"], &request["name"]);
    if api_version != "v1" || kind != "Namespace" {
        return Err(format!(
            "the test suite's cluster gets only v1 Namespaces, not {api_version} {kind}"
        ));
    }
    cluster
        .namespaces
        .iter()
        .find(|namespace| namespace["metadata"]["name"] == *name)
        .cloned()
        .ok_or_else(|| format!("Cannot find v1/Namespace named {name} (the test suite gives none)"))
}

fn can_i(cluster: &Cluster, request: &Value) -> Value {
    let review = &request["subject_access_review"];
    let attributes = &review["resource_attributes"];
    let answer = cluster.can_i.iter().find(|answer| {
        review["user"] == answer.username.as_str()
            && attributes["verb"] == answer.verb.as_str()
            && answer
                .name
                .as_deref()
                .is_none_or(|name| attributes["name"] == name)
    });
    match answer {
        Some(answer) => json!({"allowed": answer.allowed}),
        None => json!({"allowed": false, "reason": "no canI answer of the test suite grants it"}),
    }
}

/// One requirement of a selector's API string (`key=value`, `key!=value`, `key in (a,b)`,
/// `key notin (a,b)`, `key`, `!key`), as `LabelSelector`'s `Display` writes them.
#[derive(Debug, PartialEq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn holds(&self, labels: &Value) -> bool {
        let value = |key: &str| labels.get(key).and_then(Value::as_str);
        match self {
            Requirement::In(key, values) => {
                value(key).is_some_and(|v| values.iter().any(|x| x == v))
            }
            Requirement::NotIn(key, values) => {
                value(key).is_none_or(|v| values.iter().all(|x| x != v))
            }
            Requirement::Exists(key) => value(key).is_some(),
            Requirement::DoesNotExist(key) => value(key).is_none(),
        }
    }
}

fn parse_selector(text: &str) -> Result<Vec<Requirement>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    let set = |values: &str| -> Result<Vec<String>, String> {
        let inner = values
            .trim()
            .strip_prefix('(')
            .and_then(|v| v.strip_suffix(')'))
            .ok_or_else(|| format!("label selector {text:?}: a set needs parentheses"))?;
        Ok(inner.split(',').map(|v| v.trim().to_owned()).collect())
    };
    parts
        .into_iter()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            if let Some((key, value)) = part.split_once("!=") {
                Ok(Requirement::NotIn(
                    key.trim().into(),
                    vec![value.trim().into()],
                ))
            } else if let Some((key, value)) = part.split_once('=') {
                let value = value.strip_prefix('=').unwrap_or(value);
                Ok(Requirement::In(
                    key.trim().into(),
                    vec![value.trim().into()],
                ))
            } else if let Some((key, values)) = part.split_once(" notin ") {
                Ok(Requirement::NotIn(key.trim().into(), set(values)?))
            } else if let Some((key, values)) = part.split_once(" in ") {
                Ok(Requirement::In(key.trim().into(), set(values)?))
            } else if let Some(key) = part.strip_prefix('!') {
                Ok(Requirement::DoesNotExist(key.trim().into()))
            } else {
                Ok(Requirement::Exists(part.into()))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_select_as_the_api_server_does() {
        let labels = json!({"pool": "gpu", "zone": "a"});
        let cases = [
            ("", true),
            ("pool=gpu", true),
            ("pool==gpu", true),
            ("pool!=gpu", false),
            ("pool in (cpu,gpu)", true),
            ("pool notin (cpu, gpu)", false),
            ("zone,pool=gpu", true),
            ("!zone", false),
            ("missing", false),
            ("!missing", true),
            ("missing notin (x)", true),
            ("pool=gpu,zone in (b)", false),
        ];
        for (selector, want) in cases {
            let requirements = parse_selector(selector).unwrap();
            let got = requirements.iter().all(|r| r.holds(&labels));
            assert_eq!(got, want, "{selector:?}: {requirements:?}");
        }
        assert!(parse_selector("pool in gpu").is_err());
    }
}
