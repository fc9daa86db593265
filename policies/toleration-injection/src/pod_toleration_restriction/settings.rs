//! The settings of PodTolerationRestriction's drop-in (`podTolerationRestriction`): the plugin's
//! configuration file's cluster-wide lists, and what this policy adds to it.

use std::borrow::Cow;

use serde::Serialize;

use super::algebra::PluginToleration;
use taintguard::cluster::Freshness;
use taintguard::k8s_names;
use taintguard::principal::{PrincipalList, SYSTEM_MASTERS};
use taintguard::settings::{At, SettingsError, SettingsFields};

/// The PodTolerationRestriction admission plugin's namespace annotations, with its
/// configuration file's cluster-wide `default` and `whitelist`, and the two gaps upstream left
/// open closed unless turned off (docs/pod-toleration-restriction.md).
#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PodTolerationRestriction {
    /// Off by default: on, every Pod CREATE reads its Namespace.
    pub enabled: bool,
    /// Tolerations for Pods of namespaces without the `defaultTolerations` annotation.
    pub default: Vec<PluginToleration>,
    /// What Pods of namespaces without the `tolerationsWhitelist` annotation may tolerate;
    /// empty: anything.
    pub whitelist: Vec<PluginToleration>,
    /// The tolerations Kubernetes adds by itself count as whitelisted (kubernetes#64616).
    pub implicit_tolerations: bool,
    /// How long Kubernetes' own `not-ready` and `unreachable` tolerations last: what the implicit
    /// tolerations cover, and no longer.
    pub default_toleration_seconds: DefaultTolerationSeconds,
    /// Only `annotationEditors` may set or change the two annotations (kubernetes#59366).
    pub guard_annotations: bool,
    /// Who may set or change the two annotations when `guardAnnotations` is on; by default the
    /// `system:masters` group.
    pub annotation_editors: PrincipalList,
    /// Whether policy-server's cache may answer a Pod's Namespace (at most five seconds old, as
    /// the plugin's informer is a moment behind) or every Pod reads it from the API server.
    pub namespace_reads: Freshness,
}

impl Default for PodTolerationRestriction {
    fn default() -> Self {
        PodTolerationRestriction {
            enabled: false,
            default: Vec::new(),
            whitelist: Vec::new(),
            implicit_tolerations: true,
            default_toleration_seconds: DefaultTolerationSeconds::default(),
            guard_annotations: true,
            annotation_editors: PrincipalList {
                groups: Cow::Borrowed(SYSTEM_MASTERS),
                ..PrincipalList::default()
            },
            namespace_reads: Freshness::Cached,
        }
    }
}

impl PodTolerationRestriction {
    pub(crate) fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        for (field, list) in [("default", &self.default), ("whitelist", &self.whitelist)] {
            let at = at.field(field);
            for (i, toleration) in list.iter().enumerate() {
                check_plugin_toleration(at.index(i), toleration)?;
            }
        }
        self.default_toleration_seconds
            .check(at.field("defaultTolerationSeconds"))
    }
}

/// The seconds the DefaultTolerationSeconds admission plugin gives the `not-ready` and
/// `unreachable` tolerations it adds to every Pod: kube-apiserver's
/// `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`,
/// 300 unless the cluster sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct DefaultTolerationSeconds {
    /// Seconds of the `node.kubernetes.io/not-ready` toleration.
    pub not_ready: i64,
    /// Seconds of the `node.kubernetes.io/unreachable` toleration.
    pub unreachable: i64,
}

impl Default for DefaultTolerationSeconds {
    fn default() -> Self {
        DefaultTolerationSeconds {
            not_ready: 300,
            unreachable: 300,
        }
    }
}

impl DefaultTolerationSeconds {
    /// A negative value is refused: the taint-eviction controller reads it as 0, so 0 says it.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        for (field, seconds) in [
            ("notReady", self.not_ready),
            ("unreachable", self.unreachable),
        ] {
            if seconds < 0 {
                return Err(at
                    .field(field)
                    .error(format!("{seconds} is negative; evicting at once is 0")));
            }
        }
        Ok(())
    }
}

/// The checks of a pod spec's toleration, as the plugin makes of its configuration file's
/// (`ValidateTolerations`), so that settings copied from a file kube-apiserver refuses are
/// refused here too: the core's checks, an operator it knows, and a value a label may carry.
fn check_plugin_toleration(at: At<'_>, t: &PluginToleration) -> Result<(), SettingsError> {
    if !matches!(t.operator.as_str(), "Equal" | "Exists" | "") {
        return Err(at.field("operator").error(format!(
            "unknown operator {:?}; expected \"Equal\" or \"Exists\"",
            t.operator
        )));
    }
    t.as_core().into_owned().check(at)?;
    k8s_names::label_value(&t.value).map_err(|m| at.field("value").error(m))
}
