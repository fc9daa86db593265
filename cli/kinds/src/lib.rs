//! Objects read as the Kubernetes API's own types (k8s-openapi), so that the `taintguard`
//! command's hosts and the tests prove a mutation left an object the API server can decode, not
//! merely valid JSON.
//!
//! k8s-openapi checks types, not presence (a taint without `effect` decodes, as the API server's
//! decoder would; its validation is another matter), and ignores members it does not know, so
//! this says nothing about unknown fields surviving a mutation: the invariants in this crate
//! (`Tree`, key order kept) check that.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Node, Pod, ReplicationController};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The version the check decodes with, for tests that build objects with its types.
pub use k8s_openapi;

/// The kinds the policies admit (the README's table of policies), each decoded as its own type.
pub const KINDS: &[&str] = &[
    "Node",
    "Pod",
    "Deployment",
    "DaemonSet",
    "StatefulSet",
    "ReplicaSet",
    "ReplicationController",
    "Job",
    "CronJob",
];

/// Whether `json` decodes as the k8s-openapi type of `kind`; the error names the kind and the
/// path of the member that does not. A kind outside [`KINDS`] is an error too.
pub fn valid_object(kind: &str, json: &str) -> Result<(), String> {
    match kind {
        "Node" => decode::<Node>(kind, json),
        "Pod" => decode::<Pod>(kind, json),
        "Deployment" => decode::<Deployment>(kind, json),
        "DaemonSet" => decode::<DaemonSet>(kind, json),
        "StatefulSet" => decode::<StatefulSet>(kind, json),
        "ReplicaSet" => decode::<ReplicaSet>(kind, json),
        "ReplicationController" => decode::<ReplicationController>(kind, json),
        "Job" => decode::<Job>(kind, json),
        "CronJob" => decode_cron_job(json),
        _ => Err(format!("no Kubernetes type for kind {kind:?}")),
    }
}

/// Panics, naming the kind, the failing path and the object, unless [`valid_object`] holds.
#[track_caller]
pub fn assert_valid_object(kind: &str, json: &str) {
    if let Err(e) = valid_object(kind, json) {
        panic!("{e}\nobject: {json}");
    }
}

fn decode<T: DeserializeOwned>(kind: &str, json: &str) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize::<_, T>(&mut de)
        .map_err(|e| format!("not a valid {kind}: at `{}`: {}", e.path(), e.inner()))?;
    de.end().map_err(|e| format!("not a valid {kind}: {e}"))
}

/// A CronJob as batch/v1. Kubernetes before 1.21 (the end-to-end suite's API server) serves
/// CronJobs as batch/v1beta1 only, whose schedule, job template and pod template have the
/// shape of batch/v1's; k8s-openapi only has batch/v1 (it supports Kubernetes 1.31 on), so a
/// batch/v1beta1 object is read as batch/v1.
fn decode_cron_job(json: &str) -> Result<(), String> {
    let mut object: Value =
        serde_json::from_str(json).map_err(|e| format!("not a valid CronJob: {e}"))?;
    if object["apiVersion"] == "batch/v1beta1" {
        object["apiVersion"] = Value::from("batch/v1");
    }
    serde_path_to_error::deserialize::<_, CronJob>(object)
        .map(drop)
        .map_err(|e| format!("not a valid CronJob: at `{}`: {}", e.path(), e.inner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_kinds_the_policies_admit() {
        let pod_spec = r#"{"containers":[{"name":"c","image":"busybox"}],"tolerations":[{"key":"k","operator":"Exists"}]}"#;
        let template = format!(r#"{{"metadata":{{"labels":{{"app":"x"}}}},"spec":{pod_spec}}}"#);
        let selector = r#"{"matchLabels":{"app":"x"}}"#;
        let objects = [
            ("Node", r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}],"unschedulable":true}}"#.to_owned()),
            ("Pod", format!(r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"p"}},"spec":{pod_spec}}}"#)),
            ("Deployment", format!(r#"{{"apiVersion":"apps/v1","kind":"Deployment","spec":{{"selector":{selector},"template":{template}}}}}"#)),
            ("DaemonSet", format!(r#"{{"apiVersion":"apps/v1","kind":"DaemonSet","spec":{{"selector":{selector},"template":{template}}}}}"#)),
            ("StatefulSet", format!(r#"{{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{{"selector":{selector},"template":{template}}}}}"#)),
            ("ReplicaSet", format!(r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{{"selector":{selector},"template":{template}}}}}"#)),
            ("ReplicationController", format!(r#"{{"apiVersion":"v1","kind":"ReplicationController","spec":{{"template":{template}}}}}"#)),
            ("Job", format!(r#"{{"apiVersion":"batch/v1","kind":"Job","spec":{{"template":{template}}}}}"#)),
            ("CronJob", format!(r#"{{"apiVersion":"batch/v1","kind":"CronJob","spec":{{"schedule":"* * * * *","jobTemplate":{{"spec":{{"template":{template}}}}}}}}}"#)),
            ("CronJob", format!(r#"{{"apiVersion":"batch/v1beta1","kind":"CronJob","spec":{{"schedule":"* * * * *","jobTemplate":{{"spec":{{"template":{template}}}}}}}}}"#)),
        ];
        for (kind, json) in &objects {
            assert_valid_object(kind, json);
        }
        let covered: Vec<&str> = objects.iter().map(|(kind, _)| *kind).collect();
        assert!(KINDS.iter().all(|kind| covered.contains(kind)));
    }

    #[test]
    fn refusals_name_the_kind_and_the_path() {
        let cases = [
            (
                "Node",
                r#"{"spec":{"taints":[{"key":"k","effect":"NoSchedule"},{"key":"j","effect":7}]}}"#,
                "not a valid Node: at `spec.taints[1].effect`: invalid type",
            ),
            (
                "Node",
                r#"{"spec":{"taints":[{"key":"k","effect":"NoExecute","timeAdded":"today"}]}}"#,
                "not a valid Node: at `spec.taints[0].timeAdded`",
            ),
            (
                "Node",
                r#"{"spec":{"unschedulable":"yes"}}"#,
                "not a valid Node: at `spec.unschedulable`: invalid type",
            ),
            (
                "Pod",
                r#"{"spec":{"containers":[],"tolerations":[{"tolerationSeconds":"30"}]}}"#,
                "not a valid Pod: at `spec.tolerations[0].tolerationSeconds`",
            ),
            (
                "Pod",
                r#"{"spec":{"containers":[],"tolerations":{}}}"#,
                "not a valid Pod: at `spec.tolerations`",
            ),
            (
                "Deployment",
                r#"{"apiVersion":"v1","kind":"Deployment"}"#,
                r#"not a valid Deployment: at `.`: invalid value: string "v1", expected apps/v1"#,
            ),
            (
                "CronJob",
                r#"{"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"containers":[],"tolerations":[1]}}}}}}"#,
                "not a valid CronJob: at `spec.jobTemplate.spec.template.spec.tolerations[0]`",
            ),
            (
                "Node",
                r#"{"spec":{}} {}"#,
                "not a valid Node: trailing characters",
            ),
            ("Secret", "{}", "no Kubernetes type for kind \"Secret\""),
        ];
        for (kind, json, want) in cases {
            let err = valid_object(kind, json).expect_err(json);
            assert!(err.starts_with(want), "{kind} {json}: {err}");
        }
    }

    #[test]
    fn unknown_members_are_not_its_concern() {
        assert_valid_object(
            "Node",
            r#"{"spec":{"futureField":[1],"taints":[{"key":"k","effect":"NoSchedule","x":null}]}}"#,
        );
    }
}
