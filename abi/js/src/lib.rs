//! JavaScript adapter: the taintguard policies as a wasm-bindgen module for Node and browsers
//! (`dist/js/`, built by `./build.sh`). It gives the verdicts of the Kubewarden build, plus the
//! RFC 6902 patch a webhook would send, to people who want to unit-test their settings or try a
//! request in a page.
//!
//! Errors: bad input (unknown policy, invalid settings, a request that is not an AdmissionReview
//! or AdmissionRequest, or one missing a field the policies read) throws a JavaScript `Error`
//! whose message names the field. The Kubewarden build answers the same inputs with a 400
//! rejection carrying the same message, because an engine can only show verdicts.
//!
//! The logic is in plain-Rust modules (host unit-tested); this file converts values only.

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

mod defaults;
pub mod evaluate;
pub mod registry;
pub mod suite;

use std::path::{Path, PathBuf};

use js_sys::JSON;
use taintguard::cluster::Cluster;
use taintguard_suite::cluster::SuiteCluster;
use wasm_bindgen::prelude::*;

/// The package's TypeScript declarations. The functions' signatures are written here rather
/// than generated, because wasm-bindgen cannot mark `settings` optional once its type is given.
/// `abi/js/tests/types` compiles typed use of them against the shapes the package README
/// documents (`./build.sh test`).
#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** One RFC 6902 operation, as json-patch writes them. */
export interface PatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  from?: string;
  value?: unknown;
}

/** What a policy answers for one request: the Kubewarden verdict plus the webhook's patch. */
export interface Verdict {
  accepted: boolean;
  message: string | null;
  /** HTTP-style status for rejections (403 refused, 400 the request cannot be judged). */
  code: number | null;
  warnings: string[];
  auditAnnotations: Record<string, string>;
  /** The whole object after the policy's changes; null when it changes nothing. */
  mutatedObject: Record<string, unknown> | null;
  /** The JSONPatch from the request's object to mutatedObject; null when there is none. */
  patch: PatchOperation[] | null;
  patchType: "JSONPatch" | null;
}

export interface SettingsValidation {
  valid: boolean;
  /** Why the settings are invalid, naming the field. */
  message?: string;
}

export interface PolicyInfo {
  name: string;
  description: string;
  /** Whether the policy may change objects (Kubewarden's `mutating`). */
  mutating: boolean;
  /** Every setting at its default: the same as passing `{}`. */
  defaultSettings: Record<string, unknown>;
}

/** A SubjectAccessReview answer: for `user` or `serviceAccount` (`namespace/name`) doing `verb`. */
export interface CanIAnswer {
  user?: string;
  serviceAccount?: string;
  verb: string;
  /** The node's name; omitted, any node. */
  name?: string;
  allowed: boolean;
}

/**
 * What the cluster answers a policy, as a test suite's `cluster:` does (docs/testing.md): the
 * Namespaces it gets by name, the Nodes it lists (a label selector selects among them), and
 * SubjectAccessReview answers. A Namespace not given is not found, and the policy refuses the
 * request (500) naming it, as the Kubewarden build refuses when the cluster cannot answer; a
 * question no `canI` entry answers is denied, as RBAC denies what no role grants.
 */
export interface ClusterAnswers {
  namespaces?: Array<Record<string, unknown>>;
  nodes?: Array<Record<string, unknown>>;
  canI?: CanIAnswer[];
}

/**
 * Evaluates `policy` on `request` (an AdmissionReview or AdmissionRequest, as an object or JSON
 * text) with `settings` (object or JSON text; omitted or null means `{}`), its cluster questions
 * answered by `cluster` (an object, or YAML or JSON text; omitted or null: a rule that asks the
 * cluster is refused, 500). Throws
 * an Error naming the field on an unknown policy, invalid settings, a malformed request or
 * cluster.
 */
export function evaluate(policy: string, request: object | string, settings?: object | string | null, cluster?: ClusterAnswers | string | null): Verdict;

/**
 * Checks settings as Kubewarden does when it loads the policy. Invalid settings are an answer,
 * not an exception; an unknown policy throws.
 */
export function validateSettings(policy: string, settings?: object | string | null): SettingsValidation;

/** The policies in this package, with their descriptions and default settings. */
export function policies(): PolicyInfo[];

/** The package version. */
export function version(): string;

/** The parts of an AdmissionReview, as `taintguard request` takes them. */
export interface RequestParts {
  operation: "CREATE" | "UPDATE" | "DELETE";
  /** A user, who also gets the group system:authenticated. */
  user?: string;
  groups?: string[];
  /** `namespace/name`. Without `user` or `serviceAccount` the request has no requester. */
  serviceAccount?: string;
  /** The object written, as an object or YAML/JSON text (`kubectl get -o yaml`). */
  object?: object | string;
  /** The object stored before (UPDATE, DELETE). */
  oldObject?: object | string;
  subResource?: string;
  /** The UPDATE was a PATCH (kubectl patch, server-side apply): options are PatchOptions. */
  patch?: boolean;
  uid?: string;
}

/**
 * The AdmissionReview the API server would send a webhook for `parts`. Throws an Error naming
 * the part on a missing or malformed one.
 */
export function buildRequest(parts: RequestParts): Record<string, unknown>;

/** How `runTests` reads files: Node's `fs`, or anything that gives text and listings. */
export interface TestFiles {
  /** The text of a file; throws when it cannot be read. */
  read(path: string): string;
  /** A directory's entries as [name, isDirectory] pairs, or null when `path` is no directory. */
  list(path: string): Array<[string, boolean]> | null;
}

export interface TestRun {
  /**
   * The report: a line per case and the counts, JUnit XML, or JSON (the counts and each case
   * with its outcome and every request's verdict: allowed, code, patch, warnings).
   */
  output: string;
  passed: number;
  failed: number;
  skipped: number;
}

/**
 * `taintguard test`: runs the test suites (YAML files with `kind: TestSuite`) found under
 * `paths` through this package's build of each policy. Throws when no suite is found.
 */
export function runTests(paths: string[], output: "text" | "junit" | "json", files: TestFiles): TestRun;
"#;

/// Objects go through JSON text: the core reads text, and `JSON.stringify` is the one
/// conversion every JavaScript value a user would pass supports.
fn json_text(value: &JsValue, what: &str, absent: Option<&str>) -> Result<String, JsError> {
    if let Some(text) = value.as_string() {
        return Ok(text);
    }
    if value.is_undefined() || value.is_null() {
        return absent
            .map(str::to_owned)
            .ok_or_else(|| JsError::new(&format!("{what} is required")));
    }
    if !value.is_object() {
        return Err(JsError::new(&format!(
            "{what}: expected an object or a JSON string, found {}",
            value.js_typeof().as_string().unwrap_or_default()
        )));
    }
    JSON::stringify(value)
        .map(String::from)
        .map_err(|e| JsError::new(&format!("{what} cannot be written as JSON: {e:?}")))
}

fn to_js(text: &str) -> Result<JsValue, JsError> {
    JSON::parse(text).map_err(|e| JsError::new(&format!("internal error: {e:?}")))
}

/// Evaluates `policy` on `request` (an AdmissionReview or AdmissionRequest, as an object or JSON
/// text) with `settings` (object or JSON text; omitted means `{}`).
#[wasm_bindgen(skip_typescript)]
pub fn evaluate(
    policy: &str,
    request: JsValue,
    settings: Option<JsValue>,
    cluster: Option<JsValue>,
) -> Result<JsValue, JsError> {
    let entry = registry::find(policy).map_err(|e| JsError::new(&e))?;
    let request = json_text(&request, "request", None)?;
    let settings = json_text(
        &settings.unwrap_or(JsValue::UNDEFINED),
        "settings",
        Some("{}"),
    )?;
    let cluster = json_text(
        &cluster.unwrap_or(JsValue::UNDEFINED),
        "cluster",
        Some("null"),
    )?;
    let cluster = evaluate::given_cluster(&cluster).map_err(|e| JsError::new(&e))?;
    let answers = cluster.as_ref().map(SuiteCluster);
    let asked: &dyn Cluster = match &answers {
        Some(answers) => answers,
        None => &registry::NO_CLUSTER,
    };
    let result =
        evaluate::evaluate(entry, &request, &settings, asked).map_err(|e| JsError::new(&e))?;
    to_js(&result)
}

/// Checks settings as Kubewarden does when it loads the policy. Invalid settings are an answer
/// here, not an exception; only an unknown policy or an unusable value throws.
#[wasm_bindgen(js_name = validateSettings, skip_typescript)]
pub fn validate_settings(policy: &str, settings: Option<JsValue>) -> Result<JsValue, JsError> {
    let entry = registry::find(policy).map_err(|e| JsError::new(&e))?;
    let settings = json_text(
        &settings.unwrap_or(JsValue::UNDEFINED),
        "settings",
        Some("{}"),
    )?;
    let out = match (entry.validate_settings)(&settings) {
        Ok(()) => serde_json::json!({"valid": true}),
        Err(message) => serde_json::json!({"valid": false, "message": message}),
    };
    to_js(&out.to_string())
}

/// The policies in this package, with their descriptions and default settings.
#[wasm_bindgen(skip_typescript)]
pub fn policies() -> Result<JsValue, JsError> {
    let list: Vec<serde_json::Value> = registry::POLICIES
        .iter()
        .map(|p| {
            serde_json::json!({
                "name": p.name,
                "description": p.facts.description,
                "mutating": p.facts.mutating,
                "defaultSettings": (p.default_settings)(),
            })
        })
        .collect();
    to_js(&serde_json::Value::from(list).to_string())
}

/// The package version (the workspace version).
#[wasm_bindgen(skip_typescript)]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// The AdmissionReview the API server would send for `parts` (`RequestParts`).
#[wasm_bindgen(js_name = buildRequest, skip_typescript)]
pub fn build_request(parts: JsValue) -> Result<JsValue, JsError> {
    let parts = json_text(&parts, "parts", None)?;
    let parts: serde_json::Value =
        serde_json::from_str(&parts).map_err(|e| JsError::new(&format!("parts: {e}")))?;
    let review = suite::build_request(&parts).map_err(|e| JsError::new(&e))?;
    to_js(&review.to_string())
}

/// `taintguard test` over the caller's files (`TestFiles`).
#[wasm_bindgen(js_name = runTests, skip_typescript)]
pub fn run_tests(paths: JsValue, output: &str, files: JsValue) -> Result<JsValue, JsError> {
    let paths = test_paths(&paths)?;
    let output = match output {
        "text" => taintguard_suite::Output::Text,
        "junit" => taintguard_suite::Output::Junit,
        "json" => taintguard_suite::Output::Json,
        other => {
            return Err(JsError::new(&format!(
                "output: {other:?}; expected \"text\", \"junit\" or \"json\""
            )))
        }
    };
    let (read, list) = (files_method(&files, "read")?, files_method(&files, "list")?);
    let files = suite::Callbacks {
        read: |path: &Path| {
            let text = read
                .call1(&JsValue::NULL, &JsValue::from_str(&path.to_string_lossy()))
                .map_err(|e| thrown(path, &e))?;
            text.as_string()
                .ok_or_else(|| format!("{}: files.read gave no string", path.display()))
        },
        list: |path: &Path| {
            let entries = list
                .call1(&JsValue::NULL, &JsValue::from_str(&path.to_string_lossy()))
                .map_err(|e| thrown(path, &e))?;
            if entries.is_null() || entries.is_undefined() {
                return Ok(None);
            }
            let text = JSON::stringify(&entries)
                .map(String::from)
                .map_err(|_| format!("{}: files.list gave no list", path.display()))?;
            serde_json::from_str(&text).map(Some).map_err(|e| {
                format!(
                    "{}: files.list: expected [name, isDirectory] pairs: {e}",
                    path.display()
                )
            })
        },
    };
    let tested = taintguard_suite::test(&files, &paths, output, &mut |suite| {
        Ok(Box::new(suite::PackageJudge::for_suite(suite)?)
            as Box<dyn taintguard_suite::run::Judge>)
    })
    .map_err(|e| JsError::new(&e))?;
    let totals = &tested.totals;
    let result = serde_json::json!({
        "output": tested.output,
        "passed": totals.passed,
        "failed": totals.failed,
        "skipped": totals.skipped,
    });
    to_js(&result.to_string())
}

/// `runTests`' `paths`, checked here: wasm-bindgen would take a string for a `Vec<String>`, as
/// its characters.
fn test_paths(paths: &JsValue) -> Result<Vec<PathBuf>, JsError> {
    if !js_sys::Array::is_array(paths) {
        return Err(JsError::new("paths: expected an array of paths"));
    }
    js_sys::Array::from(paths)
        .iter()
        .enumerate()
        .map(|(i, path)| {
            path.as_string()
                .map(PathBuf::from)
                .ok_or_else(|| JsError::new(&format!("paths[{i}]: expected a string")))
        })
        .collect()
}

/// The function `files.<name>` of `runTests`' callbacks.
fn files_method(files: &JsValue, name: &str) -> Result<js_sys::Function, JsError> {
    js_sys::Reflect::get(files, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        .ok_or_else(|| JsError::new(&format!("files.{name}: expected a function")))
}

/// What a callback threw while at `path`. It may throw anything, not only an Error: reading
/// `message` off a string or null would fail in the glue rather than say what was thrown.
fn thrown(path: &Path, e: &JsValue) -> String {
    let message = match e.dyn_ref::<js_sys::Error>() {
        Some(error) => String::from(error.message()),
        None => e.as_string().unwrap_or_else(|| format!("{e:?}")),
    };
    format!("{}: {message}", path.display())
}
