//! What a policy module says it reads of the cluster (the core's `Asks`, written into its
//! `taintguard.asks` section by the engine adapters), and the metadata that grants it: Kubewarden
//! grants a policy the `contextAwareResources` and `hostCapabilities` its metadata names, so a
//! kind left out is refused at run time and one too many is access nobody uses. The build writes
//! a declaration `metadata.yml` leaves out and refuses one it states otherwise (docs/context.md,
//! "Declaring what a policy reads").

use std::collections::BTreeSet;

use serde_json::Value;
use taintguard::cluster::{DECLARATION_HEADER, DECLARATION_SECTION};
use wasmparser::{Parser, Payload};

/// A module's declaration, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Declared {
    /// The kinds read, as `apiVersion/kind`.
    pub resources: BTreeSet<String>,
    /// The Kubewarden host capabilities the reads and RBAC questions need.
    pub capabilities: BTreeSet<String>,
}

/// The declaration in `wasm`, `None` for a module no adapter built (it has no section).
///
/// # Errors
///
/// A module that cannot be parsed, or a section that is not a declaration, named.
pub fn read(wasm: &[u8]) -> Result<Option<Declared>, String> {
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| format!("not a valid wasm module: {e}"))?;
        if let Payload::CustomSection(section) = payload {
            if section.name() == DECLARATION_SECTION {
                return parse(section.data()).map(Some);
            }
        }
    }
    Ok(None)
}

/// A declaration's text: the header, then `get|list-all|list-in-namespace <apiVersion>/<kind>`
/// and `can-i` lines.
fn parse(data: &[u8]) -> Result<Declared, String> {
    let bad = |why: &str| format!("the `{DECLARATION_SECTION}` section {why}");
    let text = std::str::from_utf8(data).map_err(|_| bad("is not UTF-8"))?;
    let body = text
        .strip_prefix(DECLARATION_HEADER)
        .ok_or_else(|| bad(&format!("does not start with {DECLARATION_HEADER:?}")))?;
    let mut declared = Declared::default();
    for line in body.lines() {
        let (capability, resource) = match line.split_once(' ') {
            None if line == "can-i" => ("can_i", None),
            Some(("get", kind)) => ("get_resource", Some(kind)),
            Some(("list-all", kind)) => ("list_resources_all", Some(kind)),
            Some(("list-in-namespace", kind)) => ("list_resources_by_namespace", Some(kind)),
            _ => return Err(bad(&format!("has a line it cannot read: {line:?}"))),
        };
        declared
            .capabilities
            .insert(format!("kubernetes/{capability}"));
        declared.resources.extend(resource.map(str::to_owned));
    }
    Ok(declared)
}

/// Which of the two declarations `metadata.yml` states itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stated {
    /// It has `contextAwareResources`.
    pub resources: bool,
    /// It has `hostCapabilities`.
    pub capabilities: bool,
}

impl Stated {
    /// What `metadata.yml`'s text states.
    ///
    /// # Errors
    ///
    /// Text that is not a YAML map.
    pub fn of_yml(text: &str) -> Result<Stated, String> {
        let map: serde_json::Map<String, Value> =
            serde_yaml::from_str(text).map_err(|e| e.to_string())?;
        Ok(Stated {
            resources: map.contains_key("contextAwareResources"),
            capabilities: map.contains_key("hostCapabilities"),
        })
    }
}

/// `meta` (the metadata JSON for its execution mode) made to declare what `declared` says the
/// module reads: every mode but `opa` its `contextAwareResources` (a gatekeeper module reads
/// them from the inventory they fill), waPC its `hostCapabilities` too. A declaration
/// `metadata.yml` leaves out is written from the module's; one it states must be the module's,
/// so that what a reviewer reads in the file is what the policy is granted.
///
/// # Errors
///
/// The first stated field that differs, with what is missing and what is extra, and the YAML to
/// write.
pub fn reconcile(meta: &mut Value, stated: Stated, declared: &Declared) -> Result<(), String> {
    let mode = meta["executionMode"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if mode == "opa" {
        return Ok(());
    }
    let resources: Vec<Value> = (declared.resources.iter())
        .map(|kind| {
            let (api_version, kind) = kind.rsplit_once('/').unwrap_or(("", kind));
            serde_json::json!({"apiVersion": api_version, "kind": kind})
        })
        .collect();
    reconcile_field(meta, "contextAwareResources", stated.resources, resources)?;
    if mode != "kubewarden-wapc" {
        return Ok(());
    }
    let capabilities = declared
        .capabilities
        .iter()
        .map(|c| Value::from(c.as_str()));
    reconcile_field(
        meta,
        "hostCapabilities",
        stated.capabilities,
        capabilities.collect(),
    )
}

/// `meta[field]` written as `read` when not `stated`, else checked against it entry by entry
/// ([`entry_name`]).
fn reconcile_field(
    meta: &mut Value,
    field: &str,
    stated: bool,
    read: Vec<Value>,
) -> Result<(), String> {
    if !stated {
        meta[field] = Value::Array(read);
        return Ok(());
    }
    let names = |values: &[Value]| values.iter().map(entry_name).collect::<BTreeSet<String>>();
    let given = names(
        meta[field]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
    );
    let wanted = names(&read);
    let yaml =
        serde_yaml::to_string(&serde_json::json!({ field: read })).map_err(|e| e.to_string())?;
    same(field, &given, &wanted, &yaml)
}

/// A declaration's entry by name: a host capability as it is, a resource as `apiVersion/kind`.
fn entry_name(entry: &Value) -> String {
    match entry.as_str() {
        Some(capability) => capability.to_owned(),
        None => format!("{}/{}", text(&entry["apiVersion"]), text(&entry["kind"])),
    }
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// `Ok` if `field`'s `given` entries are the `read` ones, else both differences and `yaml`, the
/// declaration to write.
fn same(
    field: &str,
    given: &BTreeSet<String>,
    read: &BTreeSet<String>,
    yaml: &str,
) -> Result<(), String> {
    if given == read {
        return Ok(());
    }
    let list = |set: BTreeSet<&String>| {
        let names: Vec<&str> = set.into_iter().map(String::as_str).collect();
        match names.is_empty() {
            true => "none".to_owned(),
            false => names.join(", "),
        }
    };
    Err(format!(
        "metadata.yml's {field} must be what the module reads (its policy's Asks): missing {}; \
         not read {}. Write this, or leave the field out and the build writes it:\n{yaml}",
        list(read.difference(given).collect()),
        list(given.difference(read).collect()),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn declared(lines: &str) -> Declared {
        parse(format!("{DECLARATION_HEADER}{lines}").as_bytes()).unwrap()
    }

    #[test]
    fn declarations_are_read_or_refused() {
        let read = declared("get v1/Namespace\nlist-all v1/Node\ncan-i\n");
        assert_eq!(
            read.resources.iter().collect::<Vec<_>>(),
            ["v1/Namespace", "v1/Node"]
        );
        assert_eq!(
            read.capabilities.iter().collect::<Vec<_>>(),
            [
                "kubernetes/can_i",
                "kubernetes/get_resource",
                "kubernetes/list_resources_all"
            ]
        );
        assert_eq!(declared(""), Declared::default());
        for (data, error) in [
            (&b"get v1/Node\n"[..], "does not start with"),
            (
                b"taintguard-asks v1\nwatch v1/Node\n",
                "cannot read: \"watch v1/Node\"",
            ),
            (b"\xff", "is not UTF-8"),
        ] {
            let got = parse(data).unwrap_err();
            assert!(got.contains(error), "{got}");
        }
    }

    /// The metadata of each mode against one declaration: equal sets pass whatever their order;
    /// a difference names both sides and the YAML to write; a field left out is written.
    #[test]
    fn metadata_declares_what_the_module_reads() {
        let read = declared("list-in-namespace apps/v1/Deployment\nget v1/ConfigMap\n");
        let meta = |mode: &str, resources: Value, capabilities: Value| {
            json!({"executionMode": mode, "contextAwareResources": resources,
                   "hostCapabilities": capabilities})
        };
        let both = json!([{"apiVersion": "v1", "kind": "ConfigMap"},
                          {"apiVersion": "apps/v1", "kind": "Deployment"}]);
        let capabilities = json!([
            "kubernetes/list_resources_by_namespace",
            "kubernetes/get_resource"
        ]);
        let stated = Stated {
            resources: true,
            capabilities: true,
        };
        let cases = [
            (meta("kubewarden-wapc", both.clone(), capabilities.clone()), None),
            (meta("gatekeeper", both.clone(), Value::Null), None),
            (meta("opa", json!([]), Value::Null), None),
            (
                meta("kubewarden-wapc", both.clone(), json!(["kubernetes/get_resource"])),
                Some("hostCapabilities must be what the module reads (its policy's Asks): missing kubernetes/list_resources_by_namespace; not read none. Write this, or leave the field out and the build writes it:\nhostCapabilities:\n- kubernetes/get_resource\n- kubernetes/list_resources_by_namespace\n"),
            ),
            (
                meta("gatekeeper", json!([{"apiVersion": "v1", "kind": "ConfigMap"}, {"apiVersion": "v1", "kind": "Node"}]), Value::Null),
                Some("contextAwareResources must be what the module reads (its policy's Asks): missing apps/v1/Deployment; not read v1/Node. Write this, or leave the field out and the build writes it:\ncontextAwareResources:\n- apiVersion: apps/v1\n  kind: Deployment\n- apiVersion: v1\n  kind: ConfigMap\n"),
            ),
        ];
        for (mut meta, error) in cases {
            let before = meta.clone();
            let got = reconcile(&mut meta, stated, &read);
            match error {
                None => assert_eq!((got, &meta), (Ok(()), &before)),
                Some(error) => assert_eq!(got.unwrap_err(), format!("metadata.yml's {error}")),
            }
        }
        let nothing = reconcile(
            &mut meta("kubewarden-wapc", both, capabilities),
            stated,
            &declared(""),
        );
        assert!(nothing
            .unwrap_err()
            .contains("it:\ncontextAwareResources: []\n"));
        // Left out of metadata.yml: written, in each mode as that mode declares them.
        for (mode, resources, capabilities) in [
            ("kubewarden-wapc", 2, Some(2)),
            ("gatekeeper", 2, None),
            ("opa", 0, None),
        ] {
            let mut meta = json!({"executionMode": mode, "contextAwareResources": []});
            reconcile(&mut meta, Stated::default(), &read).unwrap();
            assert_eq!(
                meta["contextAwareResources"].as_array().unwrap().len(),
                resources
            );
            assert_eq!(
                meta["hostCapabilities"].as_array().map(Vec::len),
                capabilities
            );
        }
        let stated = Stated::of_yml("rules: []\nhostCapabilities: []\n").unwrap();
        assert_eq!((stated.resources, stated.capabilities), (false, true));
    }
}
