//! Tolerations as the PodTolerationRestriction plugin compares them (docs/pod-toleration-restriction.md,
//! "How tolerations are compared"). The plugin does not match tolerations the way the scheduler
//! does: an empty operator counts as `Equal` only in the covering toleration, and
//! `tolerationSeconds` bounds only a covering `NoExecute` toleration. Its outcomes depend on these
//! details, so they are kept here apart from the scheduler's coverage
//! (`taintguard::toleration::Coverage`), which the injection rules use.

use std::borrow::Cow;

use serde::Serialize;

use taintguard::json::JsonStr;
use taintguard::toleration::{
    toleration_fields, toleration_json, Operator, Toleration, TolerationFields,
};

use taintguard::settings::SettingsFields;

/// A toleration with every field as written, the operator included: `""` and `"Equal"` are not
/// the same to the plugin. Settings (the plugin configuration's `default` and `whitelist`) read it
/// strictly; a Pod's tolerations are read by [`read_pod_tolerations`].
#[derive(Debug, Clone, Default, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginToleration {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[settings(null_as_default)]
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[settings(null_as_default)]
    pub operator: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[settings(null_as_default)]
    pub value: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[settings(null_as_default)]
    pub effect: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// A pod spec's `tolerations` text (`None` or `null`: none), every field as written.
///
/// # Errors
///
/// serde_json's, when the text is not a list of tolerations.
pub fn read_pod_tolerations(
    text: Option<&str>,
) -> Result<Vec<PluginToleration>, serde_json::Error> {
    Ok(toleration_fields(text)?
        .into_iter()
        .map(PluginToleration::from_fields)
        .collect())
}

impl PluginToleration {
    /// A toleration from the fields a reader found, every field as written (absent: empty).
    pub fn from_fields(fields: TolerationFields<'_>) -> PluginToleration {
        let owned = |s: Option<JsonStr<'_>>| s.map(|s| s.as_str().to_owned()).unwrap_or_default();
        PluginToleration {
            key: owned(fields.key),
            operator: owned(fields.operator),
            value: owned(fields.value),
            effect: owned(fields.effect),
            toleration_seconds: fields.toleration_seconds,
        }
    }

    /// The same toleration as the scheduler and the injection rules read it: an empty operator
    /// is `Equal`, one Kubernetes does not know tolerates nothing.
    pub fn as_core(&self) -> Toleration<'_> {
        Toleration {
            key: Cow::Borrowed(&self.key),
            operator: match self.operator.as_str() {
                "Equal" | "" => Operator::Equal,
                "Exists" => Operator::Exists,
                _ => Operator::Unknown,
            },
            value: Cow::Borrowed(&self.value),
            effect: Cow::Borrowed(&self.effect),
            seconds: self.toleration_seconds,
        }
    }

    /// `key` tolerated with `effect`, whatever the value.
    pub fn exists(key: &str, effect: &str) -> PluginToleration {
        PluginToleration {
            key: key.to_owned(),
            operator: "Exists".to_owned(),
            effect: effect.to_owned(),
            ..PluginToleration::default()
        }
    }

    /// Whether this toleration tolerates everything `t` does, as the plugin decides it
    /// (`isSuperset` in Kubernetes' `pkg/util/tolerations`).
    pub fn covers(&self, t: &PluginToleration) -> bool {
        if self == t {
            return true;
        }
        if t.key != self.key && (!self.key.is_empty() || self.operator != "Exists") {
            return false;
        }
        if t.effect != self.effect && !self.effect.is_empty() {
            return false;
        }
        if self.effect == "NoExecute" {
            if let Some(limit) = self.toleration_seconds {
                if t.toleration_seconds.is_none_or(|s| s > limit) {
                    return false;
                }
            }
        }
        match self.operator.as_str() {
            "Equal" | "" => t.operator == "Equal" && t.value == self.value,
            "Exists" => true,
            // The plugin logs an unknown operator and lets it cover nothing.
            _ => false,
        }
    }

    /// As the core describes a toleration (`key=value:Effect`, `key:Effect (Exists)`), with an
    /// empty operator named, which the plugin tells apart from `Equal`.
    pub fn describe(&self) -> String {
        let mut s = self.as_core().describe();
        if self.operator.is_empty() {
            s.push_str(" (no operator)");
        }
        s
    }

    /// The toleration as the API server writes a `v1.Toleration`: empty fields left out, so
    /// a default without an operator is stored without one, as the plugin stores it.
    pub fn to_json(&self) -> String {
        toleration_json(
            [&self.key, &self.operator, &self.value, &self.effect],
            self.toleration_seconds,
        )
    }
}

/// What the plugin's merge makes of a Pod: which of its own tolerations it keeps, and what it
/// appends, each with why.
#[derive(Debug, Default, PartialEq)]
pub struct Merged {
    /// Indices into the Pod's own tolerations of those an appended one replaces.
    pub replaced: Vec<usize>,
    pub appended: Vec<(PluginToleration, String)>,
}

/// The Pod's tolerations once [`Merged`] is applied to them.
pub struct Applied {
    /// What the Pod then tolerates: its own the merge keeps, in order, then those appended.
    pub tolerations: Vec<PluginToleration>,
    /// Why each appended toleration is appended: one per toleration at the end of `tolerations`.
    pub reasons: Vec<String>,
    /// The Pod's own tolerations an appended one replaces, each with its index in its list.
    pub replaced: Vec<(usize, PluginToleration)>,
}

impl Merged {
    /// The merge applied to `own`, the tolerations it was computed from.
    pub fn apply(self, own: Vec<PluginToleration>) -> Applied {
        let mut replaced = Vec::with_capacity(self.replaced.len());
        let mut tolerations = Vec::with_capacity(own.len() + self.appended.len());
        for (i, t) in own.into_iter().enumerate() {
            if self.replaced.contains(&i) {
                replaced.push((i, t));
            } else {
                tolerations.push(t);
            }
        }
        let mut reasons = Vec::with_capacity(self.appended.len());
        for (t, why) in self.appended {
            tolerations.push(t);
            reasons.push(why);
        }
        Applied {
            tolerations,
            reasons,
            replaced,
        }
    }
}

/// Merges `extra` (each with why) into the Pod's `own` tolerations as the plugin's
/// `MergeTolerations(own, extra)` treats what it adds: a toleration something kept already covers
/// is not appended (given twice, it is appended once); one that is appended replaces the
/// tolerations it covers, those appended before it and, when `replace_own`, the Pod's own. The
/// replacement is what makes a namespace default that lengthens a `NoExecute` toleration take
/// effect: the taint-eviction controller takes, per taint, the **first** toleration that matches
/// it, so a shorter one kept before the default would still decide (docs/pod-toleration-restriction.md,
/// "Merging"). Unlike the plugin, the Pod's own tolerations are not merged among themselves.
pub fn merge(
    own: &[PluginToleration],
    extra: impl IntoIterator<Item = (PluginToleration, String)>,
    replace_own: bool,
) -> Merged {
    // Which of the Pod's own are kept, in its order: the indices of the rest come out ascending
    // with no sort linked in (a sort of them was 3.8 KB of the module).
    let mut kept = vec![true; own.len()];
    let mut appended: Vec<(PluginToleration, String)> = Vec::new();
    for (t, why) in extra {
        let kept_own = || own.iter().zip(&kept).filter(|(_, k)| **k).map(|(o, _)| o);
        let covered =
            kept_own().any(|o| o.covers(&t)) || appended.iter().any(|(a, _)| a.covers(&t));
        if covered {
            continue;
        }
        // Nothing kept covers `t`, so nothing `t` covers equals it.
        appended.retain(|(a, _)| !t.covers(a));
        if replace_own {
            for (o, k) in own.iter().zip(kept.iter_mut()) {
                *k = *k && !t.covers(o);
            }
        }
        appended.push((t, why));
    }
    let replaced = (kept.iter().enumerate())
        .filter(|(_, k)| !**k)
        .map(|(i, _)| i)
        .collect();
    Merged { replaced, appended }
}

/// The first toleration of `tolerations` that no entry of `whitelist` covers. An empty
/// whitelist restricts nothing (`VerifyAgainstWhitelist`).
pub fn first_outside<'t>(
    tolerations: impl IntoIterator<Item = &'t PluginToleration>,
    whitelist: &[PluginToleration],
) -> Option<&'t PluginToleration> {
    if whitelist.is_empty() {
        return None;
    }
    tolerations
        .into_iter()
        .find(|t| !whitelist.iter().any(|w| w.covers(t)))
}

/// A toleration from its fields, for the tests of this module and its neighbours: their tables
/// give the plugin's five fields in their order, so five arguments.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub fn t(key: &str, op: &str, value: &str, effect: &str, seconds: Option<i64>) -> PluginToleration {
    PluginToleration {
        key: key.into(),
        operator: op.into(),
        value: value.into(),
        effect: effect.into(),
        toleration_seconds: seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixtures of Kubernetes' `pkg/util/tolerations/tolerations_test.go` (v1.20 to v1.28),
    /// by the same names.
    fn fixture(name: &str) -> PluginToleration {
        match name {
            "all" => t("", "Exists", "", "", None),
            "all-nosched" => t("", "Exists", "", "NoSchedule", None),
            "all-noexec" => t("", "Exists", "", "NoExecute", None),
            "foo" => t("foo", "Exists", "", "", None),
            "foo-bar" => t("foo", "Equal", "bar", "", None),
            "foo-nosched" => t("foo", "Exists", "", "NoSchedule", None),
            "foo-prefnosched" => t("foo", "Exists", "", "PreferNoSchedule", None),
            "foo-noexec" => t("foo", "Exists", "", "NoExecute", None),
            "foo-bar-nosched" => t("foo", "Equal", "bar", "NoSchedule", None),
            "foo-bar-prefnosched" => t("foo", "Equal", "bar", "PreferNoSchedule", None),
            "foo-bar-noexec" => t("foo", "Equal", "bar", "NoExecute", None),
            "foo-noexec-10" => t("foo", "Exists", "", "NoExecute", Some(10)),
            "foo-noexec-0" => t("foo", "Exists", "", "NoExecute", Some(0)),
            "foo-bar-noexec-10" => t("foo", "Equal", "bar", "NoExecute", Some(10)),
            "foo-baz-nosched" => t("foo", "Equal", "baz", "NoSchedule", None),
            "foo-baz-noexec" => t("foo", "Equal", "baz", "NoExecute", None),
            "faz-nosched" => t("faz", "Exists", "", "NoSchedule", None),
            "faz-baz-nosched" => t("faz", "Equal", "baz", "NoSchedule", None),
            other => panic!("no fixture {other}"),
        }
    }

    const FIXTURES: [&str; 18] = [
        "all",
        "all-nosched",
        "all-noexec",
        "foo",
        "foo-bar",
        "foo-nosched",
        "foo-prefnosched",
        "foo-noexec",
        "foo-bar-nosched",
        "foo-bar-prefnosched",
        "foo-bar-noexec",
        "foo-noexec-10",
        "foo-noexec-0",
        "foo-bar-noexec-10",
        "foo-baz-nosched",
        "foo-baz-noexec",
        "faz-nosched",
        "faz-baz-nosched",
    ];

    /// `TestIsSuperset`: what each fixture covers besides itself; every other pair is not
    /// covered.
    #[test]
    fn covers_as_the_plugin_decides() {
        let supersets: [(&str, &[&str]); 11] = [
            ("all", &FIXTURES),
            (
                "all-nosched",
                &[
                    "foo-nosched",
                    "foo-bar-nosched",
                    "foo-baz-nosched",
                    "faz-nosched",
                    "faz-baz-nosched",
                ],
            ),
            (
                "all-noexec",
                &[
                    "foo-noexec",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                    "foo-baz-noexec",
                ],
            ),
            (
                "foo",
                &[
                    "foo-bar",
                    "foo-nosched",
                    "foo-prefnosched",
                    "foo-noexec",
                    "foo-bar-nosched",
                    "foo-bar-prefnosched",
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                    "foo-baz-nosched",
                    "foo-baz-noexec",
                ],
            ),
            (
                "foo-bar",
                &[
                    "foo-bar-nosched",
                    "foo-bar-prefnosched",
                    "foo-bar-noexec",
                    "foo-bar-noexec-10",
                ],
            ),
            ("foo-nosched", &["foo-bar-nosched", "foo-baz-nosched"]),
            ("foo-prefnosched", &["foo-bar-prefnosched"]),
            ("faz-nosched", &["faz-baz-nosched"]),
            (
                "foo-noexec",
                &[
                    "foo-bar-noexec",
                    "foo-noexec-10",
                    "foo-noexec-0",
                    "foo-bar-noexec-10",
                    "foo-baz-noexec",
                ],
            ),
            ("foo-bar-noexec", &["foo-bar-noexec-10"]),
            ("foo-noexec-10", &["foo-noexec-0", "foo-bar-noexec-10"]),
        ];
        for ss in FIXTURES {
            for t in FIXTURES {
                let listed = supersets
                    .iter()
                    .find(|(name, _)| *name == ss)
                    .is_some_and(|(_, covered)| covered.contains(&t));
                let want = ss == t || listed;
                assert_eq!(fixture(ss).covers(&fixture(t)), want, "{ss} covers {t}");
            }
        }
    }

    /// The plugin's quirks: an empty operator is `Equal` only when it covers, and an unknown
    /// operator covers nothing but itself.
    #[test]
    fn an_empty_operator_covers_but_is_not_covered_by_equal() {
        let empty = t("foo", "", "bar", "NoSchedule", None);
        let equal = t("foo", "Equal", "bar", "NoSchedule", None);
        assert!(empty.covers(&equal));
        assert!(!equal.covers(&empty));
        assert!(empty.covers(&empty.clone()));
        let odd = t("foo", "In", "bar", "NoSchedule", None);
        assert!(!odd.covers(&equal));
        assert!(odd.covers(&odd.clone()));
    }

    /// `TestMergeTolerations`: on CREATE, the plugin's list exactly (its table's Pods merge
    /// nothing among themselves); on UPDATE, where nothing of the Pod's is replaced, the Pod's
    /// own then what is appended.
    #[test]
    fn merged_as_the_plugin_merges_what_it_adds() {
        let names = |names: &[&str]| names.iter().map(|n| fixture(n)).collect::<Vec<_>>();
        // (name, the Pod's, the extra ones, the plugin's list, appended without replacing)
        type Merge<'n> = (
            &'n str,
            &'n [&'n str],
            &'n [&'n str],
            &'n [&'n str],
            &'n [&'n str],
        );
        let cases: [Merge; 6] = [
            (
                "given twice, appended once",
                &["faz-nosched"],
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["faz-nosched", "foo-bar-nosched"],
                &["foo-bar-nosched"],
            ),
            (
                "disjoint",
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-prefnosched", "foo-baz-nosched"],
                &[
                    "foo-bar-nosched",
                    "faz-baz-nosched",
                    "foo-noexec-10",
                    "foo-prefnosched",
                    "foo-baz-nosched",
                ],
                &["foo-prefnosched", "foo-baz-nosched"],
            ),
            (
                "duplicate",
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
                &[],
            ),
            (
                "merge redundant",
                &["foo-bar-nosched", "foo-baz-nosched"],
                &["foo-nosched", "faz-baz-nosched"],
                &["foo-nosched", "faz-baz-nosched"],
                &["foo-nosched", "faz-baz-nosched"],
            ),
            (
                "merge all",
                &["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
                &["all"],
                &["all"],
                &["all"],
            ),
            (
                "merge into all",
                &["all"],
                &["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"],
                &["all"],
                &[],
            ),
        ];
        let with_reasons = |extra: &[&str]| names(extra).into_iter().map(|t| (t, String::new()));
        for (name, pod, extra, plugin, appended) in cases {
            let own = names(pod);
            let create = merge(&own, with_reasons(extra), true).apply(own.clone());
            assert_eq!(create.tolerations, names(plugin), "{name}, CREATE");
            let update = merge(&own, with_reasons(extra), false);
            assert!(update.replaced.is_empty(), "{name}, UPDATE");
            let got: Vec<_> = update.appended.into_iter().map(|(t, _)| t).collect();
            assert_eq!(got, names(appended), "{name}, UPDATE");
        }
    }

    /// The plugin's `MergeTolerations(first, second)` (Kubernetes' `pkg/util/tolerations`): a
    /// toleration is dropped when one kept before it covers it, or one after it covers it and is
    /// not equal to it.
    fn plugin_merge(
        first: &[PluginToleration],
        second: &[PluginToleration],
    ) -> Vec<PluginToleration> {
        let all: Vec<&PluginToleration> = first.iter().chain(second).collect();
        let mut merged: Vec<PluginToleration> = Vec::new();
        for (i, t) in all.iter().enumerate() {
            let earlier = merged.iter().any(|kept| kept.covers(t));
            let later = all[i + 1..]
                .iter()
                .any(|later| *later != *t && later.covers(t));
            if !earlier && !later {
                merged.push((*t).clone());
            }
        }
        merged
    }

    /// When the taint-eviction controller evicts a Pod tolerating `tolerations` from a node
    /// with the `NoExecute` taints `taints` (key, value), in seconds (`None`: never), as its
    /// `processPodOnNode` decides: per taint the **first** toleration that tolerates it
    /// (`GetMatchingTolerations`, by `ToleratesTaint`), a taint none tolerates at once, then the
    /// least `tolerationSeconds` of those used, 0 or less at once (`getMinTolerationTime`).
    fn evicted_after(tolerations: &[PluginToleration], taints: &[(&str, &str)]) -> Option<i64> {
        let tolerates = |t: &PluginToleration, (key, value): (&str, &str)| {
            (t.effect.is_empty() || t.effect == "NoExecute")
                && (t.key.is_empty() || t.key == key)
                && match t.operator.as_str() {
                    "" | "Equal" => t.value == value,
                    "Exists" => true,
                    _ => false,
                }
        };
        let mut least: Option<i64> = None;
        for taint in taints {
            let Some(used) = tolerations.iter().find(|t| tolerates(t, *taint)) else {
                return Some(0);
            };
            if let Some(seconds) = used.toleration_seconds {
                least = Some(least.map_or(seconds, |l| l.min(seconds)).max(0));
            }
        }
        least
    }

    /// What a Pod stores under the plugin and under this policy, for namespace defaults of the
    /// not-ready toleration shorter than DefaultTolerationSeconds' 300 s, as long, longer and
    /// without end, with DefaultTolerationSeconds' tolerations present or not, for Pods that are
    /// BestEffort or not: every set of `NoExecute` taints evicts the Pod at the same time, and
    /// every whitelist (implicit tolerations off, as upstream) admits the same Pods.
    #[test]
    fn eviction_times_are_the_plugins() {
        let not_ready = |seconds| {
            t(
                "node.kubernetes.io/not-ready",
                "Exists",
                "",
                "NoExecute",
                seconds,
            )
        };
        let unreachable = |seconds| {
            t(
                "node.kubernetes.io/unreachable",
                "Exists",
                "",
                "NoExecute",
                seconds,
            )
        };
        let memory_pressure = t(
            "node.kubernetes.io/memory-pressure",
            "Exists",
            "",
            "NoSchedule",
            None,
        );
        let defaults = [
            ("shorter", vec![not_ready(Some(100))]),
            ("as long", vec![not_ready(Some(300))]),
            ("longer", vec![not_ready(Some(600))]),
            ("without end", vec![not_ready(None)]),
            (
                "any effect",
                vec![t("node.kubernetes.io/not-ready", "Exists", "", "", None)],
            ),
            (
                "every key",
                vec![t("", "Exists", "", "NoExecute", Some(900))],
            ),
            (
                "both, longer",
                vec![not_ready(Some(600)), unreachable(Some(600))],
            ),
            ("none", vec![]),
        ];
        let whitelists = [
            vec![],
            vec![not_ready(None), unreachable(None), memory_pressure.clone()],
            vec![
                not_ready(Some(300)),
                unreachable(Some(300)),
                memory_pressure.clone(),
            ],
            vec![
                not_ready(Some(600)),
                unreachable(Some(300)),
                memory_pressure.clone(),
            ],
            vec![t("", "Exists", "", "", None)],
        ];
        let taint_sets: [&[(&str, &str)]; 5] = [
            &[("node.kubernetes.io/not-ready", "")],
            &[("node.kubernetes.io/unreachable", "")],
            &[
                ("node.kubernetes.io/not-ready", ""),
                ("node.kubernetes.io/unreachable", ""),
            ],
            &[("node.kubernetes.io/not-ready", ""), ("other", "x")],
            &[],
        ];
        for (name, default) in &defaults {
            for added_by_api_server in [true, false] {
                for best_effort in [true, false] {
                    let own = if added_by_api_server {
                        vec![not_ready(Some(300)), unreachable(Some(300))]
                    } else {
                        vec![]
                    };
                    let mut extra = default.clone();
                    if !best_effort {
                        extra.push(memory_pressure.clone());
                    }
                    let plugin = plugin_merge(&own, &extra);
                    let merged = merge(&own, extra.into_iter().map(|t| (t, String::new())), true);
                    let policy = merged.apply(own).tolerations;
                    let case = format!(
                        "default {name}, DefaultTolerationSeconds {added_by_api_server}, \
                         BestEffort {best_effort}: plugin {plugin:?}, policy {policy:?}"
                    );
                    for taints in taint_sets {
                        assert_eq!(
                            evicted_after(&policy, taints),
                            evicted_after(&plugin, taints),
                            "{case}, taints {taints:?}"
                        );
                    }
                    for whitelist in &whitelists {
                        assert_eq!(
                            first_outside(&policy, whitelist).is_none(),
                            first_outside(&plugin, whitelist).is_none(),
                            "{case}, whitelist {whitelist:?}"
                        );
                    }
                }
            }
        }
    }

    /// The controller's decisions themselves, so that the comparison above cannot pass by
    /// computing nothing.
    #[test]
    fn eviction_time_is_the_first_matching_tolerations() {
        let nr = |seconds| {
            t(
                "node.kubernetes.io/not-ready",
                "Exists",
                "",
                "NoExecute",
                seconds,
            )
        };
        let taint = [("node.kubernetes.io/not-ready", "")];
        assert_eq!(
            evicted_after(&[nr(Some(300)), nr(Some(600))], &taint),
            Some(300)
        );
        assert_eq!(
            evicted_after(&[nr(Some(600)), nr(Some(300))], &taint),
            Some(600)
        );
        assert_eq!(evicted_after(&[nr(None)], &taint), None);
        assert_eq!(evicted_after(&[nr(Some(-5))], &taint), Some(0));
        assert_eq!(evicted_after(&[], &taint), Some(0));
        assert_eq!(evicted_after(&[nr(Some(60))], &[]), None);
        let both = [("node.kubernetes.io/not-ready", ""), ("x", "y")];
        let x = t("x", "Equal", "y", "", Some(30));
        assert_eq!(evicted_after(&[nr(Some(60)), x.clone()], &both), Some(30));
        assert_eq!(evicted_after(&[nr(Some(60))], &both), Some(0));
    }

    /// `TestVerifyAgainstWhitelist`.
    #[test]
    fn the_whitelist_covers_or_names_the_first_outside() {
        let names = |names: &[&str]| names.iter().map(|n| fixture(n)).collect::<Vec<_>>();
        let cases: [(&str, &[&str], &[&str], bool); 9] = [
            (
                "equal input and whitelist",
                &["foo-bar-nosched", "foo-baz-noexec"],
                &["foo-bar-nosched", "foo-baz-noexec"],
                true,
            ),
            (
                "duplicate input allowed",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["foo-bar-nosched", "foo-baz-noexec"],
                true,
            ),
            (
                "allow all",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["all"],
                true,
            ),
            (
                "duplicate input forbidden",
                &["foo-bar-nosched", "foo-bar-nosched"],
                &["foo-baz-noexec"],
                false,
            ),
            (
                "value mismatch",
                &["foo-bar-nosched", "foo-baz-noexec"],
                &["foo-baz-noexec"],
                false,
            ),
            (
                "input does not exist in whitelist",
                &["foo-bar-nosched"],
                &["foo-baz-noexec"],
                false,
            ),
            ("disjoint sets", &["foo-bar"], &["foo-nosched"], false),
            ("empty whitelist", &["foo-bar"], &[], true),
            ("empty input", &[], &["foo-bar"], true),
        ];
        for (name, input, whitelist, want) in cases {
            let input = names(input);
            assert_eq!(
                first_outside(&input, &names(whitelist)).is_none(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn written_as_the_api_server_writes_it() {
        let cases = [
            (
                t("k", "", "v", "NoSchedule", None),
                r#"{"key":"k","value":"v","effect":"NoSchedule"}"#,
            ),
            (t("", "Exists", "", "", None), r#"{"operator":"Exists"}"#),
            (
                t("k", "Exists", "", "NoExecute", Some(30)),
                r#"{"key":"k","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}"#,
            ),
            (t("", "", "", "", Some(5)), r#"{"tolerationSeconds":5}"#),
            (
                t("a\"b", "Equal", "", "", None),
                r#"{"key":"a\"b","operator":"Equal"}"#,
            ),
        ];
        for (toleration, want) in cases {
            assert_eq!(toleration.to_json(), want);
            let back = read_pod_tolerations(Some(&format!("[{want}]"))).unwrap();
            assert_eq!(back, std::slice::from_ref(&toleration));
            assert_eq!(serde_json::to_string(&toleration).unwrap(), want);
        }
    }
}
