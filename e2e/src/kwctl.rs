//! Kubewarden's kwctl as the scenarios run it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::env::Env;

/// The kwctl found at start-up, or why a scenario that needs it cannot run.
pub fn find(env: &Env) -> Result<PathBuf, String> {
    env.bins
        .kwctl
        .clone()
        .ok_or_else(|| "kwctl not found: set KWCTL or put it on PATH".to_owned())
}

/// One `kwctl run`: what it runs, on what, and how.
pub struct Run<'a> {
    /// The flags after `kwctl run`.
    pub flags: &'a [&'a str],
    /// The kubeconfig of kwctl's cluster, if it has one.
    pub kubeconfig: Option<&'a Path>,
    /// The policy module.
    pub module: &'a Path,
    /// The AdmissionReview file.
    pub request: &'a Path,
    /// The policy's settings.
    pub settings: &'a Value,
}

/// `kwctl run <flags>` of `module` on the AdmissionReview file `request` with `settings`, with
/// `kubeconfig` as its cluster when given; the AdmissionResponse it prints.
pub fn run(kwctl: &Path, run: Run) -> Result<Value, String> {
    let Run {
        flags,
        kubeconfig,
        module,
        request,
        settings,
    } = run;
    let mut cmd = Command::new(kwctl);
    cmd.arg("run").args(flags);
    if let Some(kubeconfig) = kubeconfig {
        cmd.env("KUBECONFIG", kubeconfig);
    }
    let out = cmd
        .args(["--settings-json", &settings.to_string(), "--request-path"])
        .arg(request)
        .arg(format!("file://{}", module.display()))
        .output()
        .map_err(|e| format!("cannot run kwctl: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).map_err(|_| {
        format!(
            "kwctl run answered no verdict ({}): {stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    })
}
