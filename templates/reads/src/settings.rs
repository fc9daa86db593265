//! Settings of the template-reads policy; the policy README is the users' reference, and
//! settings-fields.yml describes every field once (docs/settings-ui.md).

use std::borrow::Cow;

use serde::Serialize;

use taintguard::label_selector::SelectorQuery;
use taintguard::settings::{checked, PolicySettings, SettingsFields};

/// The label selector of the ConfigMaps that name a namespace's required labels, by default.
pub const DEFAULT_SELECTOR: &str = "taintguard.io/required-labels=true";

checked! {
    /// A label selector in the list API's query syntax (`key=value`, `key in (a,b)`, `key`,
    /// `!key`, joined by commas), read by the core's selector parser and checked as the API
    /// server checks a list's selector, so that a bad one is refused with the settings rather
    /// than failing every Pod's list. Empty is refused: it would select every ConfigMap.
    pub struct ConfigMapSelector(Cow<'static, str>) = |text| {
        if text.trim().is_empty() {
            return Err("an empty selector would select every ConfigMap of the namespace; \
                        name the label of the ConfigMaps that list required labels"
                .to_owned());
        }
        let query = SelectorQuery::parse(&text)?;
        query.check().map_err(|e| format!("label selector {text:?}: {e}"))?;
        Ok(Cow::Owned(text))
    };
}

impl ConfigMapSelector {
    /// The selector, as settings write it and the list asks with it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The settings; every field has a default, so `{}` is a complete configuration.
#[derive(Debug, Clone, PartialEq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Which ConfigMaps of a Pod's namespace list labels its Pods must carry (each in its
    /// `data.labels`, comma-separated). Default: [`DEFAULT_SELECTOR`].
    pub config_map_selector: ConfigMapSelector,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            config_map_selector: ConfigMapSelector::builtin(DEFAULT_SELECTOR),
        }
    }
}

/// One field, checked as it is read: nothing to check across fields.
impl PolicySettings for Settings {}
