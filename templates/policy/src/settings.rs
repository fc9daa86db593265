//! Settings of the template-policy policy; the policy README is the users' reference, and
//! settings-fields.yml describes every field once (docs/settings-ui.md).

use serde::Serialize;

use taintguard::settings::{At, PolicySettings, SettingsError, SettingsFields};

/// The settings; every field has a default, so `{}` is a complete configuration.
#[derive(Debug, Clone, Default, PartialEq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The label keys every Pod must carry. Empty (the default): every Pod is accepted.
    pub labels: Vec<String>,
}

impl PolicySettings for Settings {
    /// What one field cannot check alone: each key is given once and is not blank.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let labels_at = at.field("labels");
        for (i, label) in self.labels.iter().enumerate() {
            if label.trim().is_empty() {
                return Err(labels_at.index(i).error("a label key cannot be blank"));
            }
            if self.labels[..i].contains(label) {
                return Err(labels_at
                    .index(i)
                    .error(format!("{label:?} is already required")));
            }
        }
        Ok(())
    }
}
