//! Settings of the template-policy policy; the policy README is the users' reference, and
//! settings-fields.yml describes every field once (docs/settings-ui.md).

use std::collections::BTreeMap;

use serde::Serialize;

use taintguard::k8s_names::{LabelKey, LabelValue};
use taintguard::settings::{At, PolicySettings, SettingsError, SettingsFields};

/// The settings; every field has a default, so `{}` is a complete configuration. Keys and
/// values are checked as Kubernetes checks labels when the settings are read.
#[derive(Debug, Clone, Default, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The label keys every Pod must carry. Empty (the default): none is required.
    pub labels: Vec<LabelKey>,
    /// Labels given to a Pod that lacks them, before `labels` is checked; a Pod that has one
    /// keeps its own value. Empty (the default): no Pod is changed.
    pub defaults: BTreeMap<LabelKey, LabelValue>,
}

impl Settings {
    /// Whether the settings ask nothing of any Pod.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.defaults.is_empty()
    }
}

impl PolicySettings for Settings {
    /// What one field cannot check alone: each required key is given once.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let labels_at = at.field("labels");
        for (i, label) in self.labels.iter().enumerate() {
            if self.labels[..i].contains(label) {
                return Err(labels_at
                    .index(i)
                    .error(format!("{:?} is already required", label.as_str())));
            }
        }
        Ok(())
    }
}
