//! Where the real hosts come from: an environment variable, then `PATH`. A missing one is named
//! in one line, with where it comes from (docs/e2e.md).

use std::env;
use std::path::{Path, PathBuf};

/// The executables an end-to-end run starts or calls, each found by [`Binaries::find`].
pub struct Binaries {
    /// The `etcd` the API server stores into.
    pub etcd: PathBuf,
    /// The `kube-apiserver` the webhooks are registered with.
    pub kube_apiserver: PathBuf,
    /// The `kubectl` the scenarios write with, the control plane's own when it has one.
    pub kubectl: PathBuf,
    /// Kubewarden's `policy-server`, which runs the policies behind the webhooks.
    pub policy_server: PathBuf,
    /// Only the gatekeeper parity check needs it.
    pub kwctl: Option<PathBuf>,
    /// The real node lifecycle controller, for the outage scenario; beside kube-apiserver when
    /// the installer ran with `--with-controller-manager`.
    pub kube_controller_manager: Option<PathBuf>,
}

/// An executable file named `name` in `dir`.
fn in_dir(dir: &Path, name: &str) -> Option<PathBuf> {
    let path = dir.join(name);
    path.is_file().then_some(path)
}

fn on_path(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?).find_map(|dir| in_dir(&dir, name))
}

/// `var` (a file, or with `assets` a folder holding `name`), else `PATH`.
fn find(name: &str, var: &str, assets: bool, origin: &str) -> Result<PathBuf, String> {
    if let Some(value) = env::var_os(var).filter(|v| !v.is_empty()) {
        let value = PathBuf::from(value);
        let found = if assets {
            in_dir(&value, name)
        } else {
            value.is_file().then_some(value.clone())
        };
        return found.ok_or_else(|| {
            format!(
                "{name} not found: {var}={} holds no {name} ({origin})",
                value.display()
            )
        });
    }
    on_path(name).ok_or_else(|| format!("{name} not found: set {var} or put it on PATH ({origin})"))
}

const CONTROL_PLANE: &str =
    "kube-apiserver 1.20 built from Debian's `kubernetes` source package, etcd from `etcd-server`";
const KUBEWARDEN: &str =
    "Kubewarden 1.35, built by hand from its public source; no package registry has it";

impl Binaries {
    /// Finds each executable: from its environment variable, else on `PATH`.
    ///
    /// # Errors
    ///
    /// A required executable is not found; the message names it and where it comes from.
    pub fn find() -> Result<Binaries, String> {
        Ok(Binaries {
            kube_apiserver: find("kube-apiserver", "KUBEBUILDER_ASSETS", true, CONTROL_PLANE)?,
            etcd: find("etcd", "KUBEBUILDER_ASSETS", true, CONTROL_PLANE)?,
            kubectl: match env::var_os("KUBEBUILDER_ASSETS").map(PathBuf::from) {
                // Prefer the kubectl of the control plane's own version beside it.
                Some(dir)
                    if env::var_os("KUBECTL").is_none() && in_dir(&dir, "kubectl").is_some() =>
                {
                    dir.join("kubectl")
                }
                _ => find(
                    "kubectl",
                    "KUBECTL",
                    false,
                    "Debian package `kubernetes-client`",
                )?,
            },
            policy_server: find("policy-server", "POLICY_SERVER", false, KUBEWARDEN)?,
            kwctl: find("kwctl", "KWCTL", false, KUBEWARDEN).ok(),
            kube_controller_manager: find(
                "kube-controller-manager",
                "KUBEBUILDER_ASSETS",
                true,
                CONTROL_PLANE,
            )
            .ok(),
        })
    }
}
