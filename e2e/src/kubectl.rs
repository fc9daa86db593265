//! kubectl as the real actors use it: each request made with the actor's identity
//! (impersonated by the admin, RBAC on) and in the actor's own request form.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;
use taintguard_testkit::{valid_object, KINDS};

/// Who sends a request: a username and its groups.
#[derive(Debug, Clone, Copy)]
pub struct Actor {
    pub user: &'static str,
    pub groups: &'static [&'static str],
}

const SA_GROUPS: &[&str] = &[
    "system:serviceaccounts",
    "system:serviceaccounts:kube-system",
];

pub const NODE_CONTROLLER: Actor = Actor {
    user: "system:serviceaccount:kube-system:node-controller",
    groups: SA_GROUPS,
};
pub const KARPENTER: Actor = Actor {
    user: "system:serviceaccount:kube-system:karpenter",
    groups: SA_GROUPS,
};
pub const CLOUD_NODE_CONTROLLER: Actor = Actor {
    user: "system:serviceaccount:kube-system:cloud-node-controller",
    groups: SA_GROUPS,
};
pub const EBS_CSI_NODE: Actor = Actor {
    user: "system:serviceaccount:kube-system:ebs-csi-node-sa",
    groups: SA_GROUPS,
};
pub const HOSTPATH_PROVISIONER: Actor = Actor {
    user: "system:serviceaccount:kube-system:microk8s-hostpath",
    groups: SA_GROUPS,
};
pub const OTHER_PROVISIONER: Actor = Actor {
    user: "system:serviceaccount:kube-system:other-provisioner",
    groups: SA_GROUPS,
};
pub const GPU_OPERATOR: Actor = Actor {
    user: "system:serviceaccount:gpu-operator:driver-manager",
    groups: &[
        "system:serviceaccounts",
        "system:serviceaccounts:gpu-operator",
    ],
};
pub const KURED: Actor = Actor {
    user: "system:serviceaccount:kube-system:kured",
    groups: SA_GROUPS,
};
pub const NFD_MASTER: Actor = Actor {
    user: "system:serviceaccount:node-feature-discovery:nfd-master",
    groups: &[
        "system:serviceaccounts",
        "system:serviceaccounts:node-feature-discovery",
    ],
};
/// nfd-master as NFD's Helm chart runs it, installed `--namespace nfd` with release `nfd`.
pub const NFD_HELM_IN_NFD: Actor = Actor {
    user: "system:serviceaccount:nfd:nfd-node-feature-discovery",
    groups: &["system:serviceaccounts", "system:serviceaccounts:nfd"],
};
pub const READINESS_CONTROLLER: Actor = Actor {
    user: "system:serviceaccount:nrr-system:nrr-controller-manager",
    groups: &[
        "system:serviceaccounts",
        "system:serviceaccounts:nrr-system",
    ],
};
pub const FSX_CSI_NODE: Actor = Actor {
    user: "system:serviceaccount:kube-system:fsx-csi-node-sa",
    groups: SA_GROUPS,
};
/// node-problem-detector's DaemonSet: it patches node conditions through `nodes/status`.
pub const NODE_PROBLEM_DETECTOR: Actor = Actor {
    user: "system:serviceaccount:kube-system:node-problem-detector",
    groups: SA_GROUPS,
};
pub const ALICE: Actor = Actor {
    user: "alice@example.com",
    groups: &["platform"],
};
pub const TENANT: Actor = Actor {
    user: "dev@tenant-a.example.com",
    groups: &["tenant-a-devs"],
};

/// Every identity the scenarios act as, for the RBAC grants.
pub const ACTORS: &[Actor] = &[
    NODE_CONTROLLER,
    KARPENTER,
    CLOUD_NODE_CONTROLLER,
    EBS_CSI_NODE,
    HOSTPATH_PROVISIONER,
    OTHER_PROVISIONER,
    GPU_OPERATOR,
    KURED,
    NFD_MASTER,
    NFD_HELM_IN_NFD,
    READINESS_CONTROLLER,
    FSX_CSI_NODE,
    NODE_PROBLEM_DETECTOR,
    ALICE,
    TENANT,
];

/// A kubelet registering its Node.
pub fn kubelet(node: &'static str) -> Actor {
    Actor {
        user: Box::leak(format!("system:node:{node}").into_boxed_str()),
        groups: &["system:nodes"],
    }
}

pub struct Out {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The output, for a failure's explanation.
    pub fn describe(&self) -> String {
        format!(
            "stdout: {} stderr: {}",
            self.stdout.trim(),
            self.stderr.trim()
        )
    }
}

/// A patch of a Node as `kubectl patch node` sends it.
#[derive(Debug, Clone, Copy)]
pub struct NodePatch<'a> {
    /// The patch type: `json`, `merge` or `strategic`.
    pub patch_type: &'a str,
    /// The patch document.
    pub body: &'a str,
}

impl<'a> NodePatch<'a> {
    /// A JSON patch (RFC 6902).
    pub fn json(body: &'a str) -> Self {
        NodePatch {
            patch_type: "json",
            body,
        }
    }

    /// A JSON merge patch (RFC 7386).
    pub fn merge(body: &'a str) -> Self {
        NodePatch {
            patch_type: "merge",
            body,
        }
    }

    /// A strategic merge patch.
    pub fn strategic(body: &'a str) -> Self {
        NodePatch {
            patch_type: "strategic",
            body,
        }
    }
}

pub struct Kubectl {
    pub bin: PathBuf,
    pub kubeconfig: PathBuf,
    pub cache_dir: PathBuf,
}

impl Kubectl {
    /// Runs kubectl as `who` (the admin when `None`), with `stdin`.
    pub fn run(&self, who: Option<Actor>, args: &[&str], stdin: Option<&str>) -> Out {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args);
        if let Some(actor) = who {
            cmd.arg(format!("--as={}", actor.user));
            for group in actor.groups {
                cmd.arg(format!("--as-group={group}"));
            }
        }
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                return Out {
                    ok: false,
                    stdout: String::new(),
                    stderr: format!("cannot run {}: {e}", self.bin.display()),
                }
            }
        };
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            let _ = pipe.write_all(text.as_bytes());
        }
        match child.wait_with_output() {
            Ok(out) => Out {
                ok: out.status.success(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
            Err(e) => Out {
                ok: false,
                stdout: String::new(),
                stderr: e.to_string(),
            },
        }
    }

    /// Runs kubectl and requires success.
    pub fn ok(
        &self,
        who: Option<Actor>,
        args: &[&str],
        stdin: Option<&str>,
    ) -> Result<Out, String> {
        let out = self.run(who, args, stdin);
        if out.ok {
            Ok(out)
        } else {
            Err(format!(
                "`kubectl {}`{} failed: {}",
                args.join(" "),
                who.map(|a| format!(" as {}", a.user)).unwrap_or_default(),
                out.stderr.trim()
            ))
        }
    }

    /// Patches node `name` as `who` with a patch of `patch_type` (`json`, `merge`, `strategic`),
    /// the request form of most node controllers; requires success.
    pub fn patch_node(&self, who: Actor, name: &str, patch: NodePatch) -> Result<Out, String> {
        self.ok(
            Some(who),
            &[
                "patch",
                "node",
                name,
                "--type",
                patch.patch_type,
                "-p",
                patch.body,
            ],
            None,
        )
    }

    /// Applies a manifest as the admin.
    pub fn apply(&self, manifest: &Value) -> Result<(), String> {
        self.ok(None, &["apply", "-f", "-"], Some(&manifest.to_string()))
            .map(drop)
    }

    /// The stored object, as JSON. An object of a kind the policies mutate must decode as its
    /// k8s-openapi type, which shows that what the API server stored after a mutation is a valid
    /// object of its kind.
    pub fn get(
        &self,
        resource: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Value, String> {
        let mut args = vec!["get", resource, name, "-o", "json"];
        if let Some(ns) = namespace {
            args.extend(["-n", ns]);
        }
        let out = self.ok(None, &args, None)?;
        let object: Value = serde_json::from_str(&out.stdout)
            .map_err(|e| format!("kubectl get {resource} {name}: {e}"))?;
        let kind = object["kind"].as_str().unwrap_or_default();
        if KINDS.contains(&kind) {
            valid_object(kind, &out.stdout)
                .map_err(|e| format!("kubectl get {resource} {name}: {e}"))?;
        }
        Ok(object)
    }
}
