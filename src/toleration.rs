//! Tolerations, and when one already tolerates everything another does.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::json::flat::PlainFields;
use crate::json::{write_str, JsonStr};
use crate::settings::{from_string, At, SettingsError, SettingsFields};
use crate::small_map::SmallMap;
use crate::taint::Effect;

/// How a toleration compares its value with a taint's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Operator {
    /// The taint's value is the toleration's (an absent operator is `Equal`).
    #[default]
    Equal,
    /// Any value.
    Exists,
    /// An operator Kubernetes does not know: such a toleration tolerates nothing.
    Unknown,
}

/// Settings name only the operators Kubernetes knows; requests are read leniently instead
/// ([`parse_tolerations`]).
impl TryFrom<&str> for Operator {
    type Error = String;
    fn try_from(text: &str) -> Result<Operator, String> {
        match text {
            "Equal" => Ok(Operator::Equal),
            "Exists" => Ok(Operator::Exists),
            other => Err(format!(
                "unknown operator {other:?}; expected \"Equal\" or \"Exists\""
            )),
        }
    }
}

from_string!(Operator, into = &'static str, read = keyword);

impl From<Operator> for &'static str {
    fn from(operator: Operator) -> &'static str {
        match operator {
            Operator::Equal => "Equal",
            Operator::Exists => "Exists",
            Operator::Unknown => "Unknown",
        }
    }
}

/// One toleration. Absent fields are empty strings, as Kubernetes reads them: an empty key
/// (with `Exists`) matches every key, an empty effect every effect, and `Equal` with no value
/// the empty value. Settings write it as a pod spec does (`null` as absent), checked by
/// [`Toleration::check`].
///
/// # Examples
///
/// ```
/// use taintguard::toleration::parse_tolerations;
///
/// let text = r#"[{"key": "gpu", "operator": "Exists"},
///     {"key": "gpu", "value": "a100", "effect": "NoSchedule"}]"#;
/// let tolerations = parse_tolerations(Some(text)).unwrap();
/// let (any_gpu, a100) = (&tolerations[0], &tolerations[1]);
/// assert!(any_gpu.covers(a100));
/// assert!(!a100.covers(any_gpu));
/// assert_eq!(a100.describe(), "gpu=a100:NoSchedule");
/// assert_eq!(any_gpu.to_json(), r#"{"key":"gpu","operator":"Exists"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toleration<'a> {
    /// The taint key tolerated; empty, with `Exists`, every key.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    #[settings(null_as_default)]
    pub key: Cow<'a, str>,
    /// How `value` is compared with a taint's.
    #[serde(default)]
    #[settings(null_as_default)]
    pub operator: Operator,
    /// The taint value tolerated, with `Equal`.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    #[settings(null_as_default)]
    pub value: Cow<'a, str>,
    /// The taint effect tolerated; empty, every effect.
    #[serde(default, skip_serializing_if = "str::is_empty")]
    #[settings(null_as_default)]
    pub effect: Cow<'a, str>,
    /// `tolerationSeconds`: how long a `NoExecute` taint is tolerated; `None`, forever.
    #[serde(
        default,
        rename = "tolerationSeconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub seconds: Option<i64>,
}

/// A toleration's fields as a pod spec writes them, borrowed from its text: what
/// [`parse_tolerations`] reads, for a reader that needs the operator as written (an empty one
/// is not `Equal` to the PodTolerationRestriction plugin).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TolerationFields<'a> {
    /// `key`; `None` when absent.
    #[serde(borrow, default)]
    pub key: Option<JsonStr<'a>>,
    /// `operator` as written; `None` when absent.
    #[serde(borrow, default)]
    pub operator: Option<JsonStr<'a>>,
    /// `value`; `None` when absent.
    #[serde(borrow, default)]
    pub value: Option<JsonStr<'a>>,
    /// `effect`; `None` when absent.
    #[serde(borrow, default)]
    pub effect: Option<JsonStr<'a>>,
    /// `tolerationSeconds`; `None` when absent.
    #[serde(default)]
    pub toleration_seconds: Option<i64>,
}

/// A `tolerations` value's entries as written; absent or `null` is the empty list. A list
/// written plainly, as the API server writes it, is read in one pass without serde.
///
/// # Errors
///
/// serde_json's, when the text is not a list of tolerations.
pub fn toleration_fields(
    raw: Option<&str>,
) -> Result<Vec<TolerationFields<'_>>, serde_json::Error> {
    each_entry(raw, |fields| fields)
}

/// The entries of a tolerations list when each has no member but a toleration's, each written
/// plainly (`json::flat::plain_items_of_only`), made into `T`s in one pass; `None` for any
/// other list. For a reader that matches member names its own way (a namespace's annotations,
/// read as Go's `encoding/json` reads them, in any case), which must see every member.
pub fn plain_fields_only<'a, T>(
    raw: &'a str,
    make: impl Fn(TolerationFields<'a>) -> T,
) -> Option<Vec<T>> {
    let entries = crate::json::flat::plain_items_of_only(raw, FIELDS, "tolerationSeconds")?;
    Some(
        entries
            .into_iter()
            .map(TolerationFields::plain)
            .map(make)
            .collect(),
    )
}

/// Each entry of a `tolerations` value, made into a `T`: from what the plain reader found when
/// it reads the list, without a list of fields between (that list cost flannel's four
/// tolerations an allocation and a copy of each, benchmarks/cost.md, "Few tolerations"); else
/// from what serde reads.
fn each_entry<'a, T>(
    raw: Option<&'a str>,
    make: impl Fn(TolerationFields<'a>) -> T,
) -> Result<Vec<T>, serde_json::Error> {
    let Some(raw) = raw else {
        return Ok(Vec::new());
    };
    match crate::json::flat::plain_items_with_integer(raw, FIELDS, "tolerationSeconds") {
        Some(entries) => Ok(entries
            .into_iter()
            .map(TolerationFields::plain)
            .map(make)
            .collect()),
        None => {
            let entries = serde_json::from_str::<Option<Vec<TolerationFields>>>(raw)?;
            Ok(entries.unwrap_or_default().into_iter().map(make).collect())
        }
    }
}

/// The string fields of a toleration, in the order [`TolerationFields::plain`] takes them.
const FIELDS: [&str; 4] = ["key", "operator", "value", "effect"];

impl<'a> TolerationFields<'a> {
    /// A toleration's fields as the plain reader finds them ([`FIELDS`], `tolerationSeconds`).
    fn plain(([key, operator, value, effect], seconds): PlainFields<'a, 4>) -> Self {
        TolerationFields {
            key: key.map(JsonStr::borrowed),
            operator: operator.map(JsonStr::borrowed),
            value: value.map(JsonStr::borrowed),
            effect: effect.map(JsonStr::borrowed),
            toleration_seconds: seconds,
        }
    }
}

fn text(s: Option<JsonStr<'_>>) -> Cow<'_, str> {
    s.map(|s| s.0).unwrap_or_default()
}

/// Reads a `tolerations` value; absent or `null` is the empty list.
pub fn parse_tolerations(raw: Option<&str>) -> Result<Vec<Toleration<'_>>, serde_json::Error> {
    // One pass: unlike a taint, a toleration is never copied back as its text.
    each_entry(raw, Toleration::from_fields)
}

impl<'a> Toleration<'a> {
    fn from_fields(f: TolerationFields<'a>) -> Self {
        let operator = match f.operator.as_ref().map(JsonStr::as_str) {
            None | Some("") | Some("Equal") => Operator::Equal,
            Some("Exists") => Operator::Exists,
            Some(_) => Operator::Unknown,
        };
        Toleration {
            key: text(f.key),
            operator,
            value: text(f.value),
            effect: text(f.effect),
            seconds: f.toleration_seconds,
        }
    }
}

impl Toleration<'_> {
    /// Equal but perhaps for `tolerationSeconds`: the same toleration to Kubernetes' pod update
    /// validation, which lets an UPDATE change only that of an existing toleration.
    pub fn same_but_seconds(&self, other: &Toleration<'_>) -> bool {
        self.key == other.key
            && self.operator == other.operator
            && self.value == other.value
            && self.effect == other.effect
    }

    /// Whether this toleration tolerates every taint `other` tolerates, for at least as long:
    /// what [`Coverage`] answers for many at once. Compared with each of a few, it costs less
    /// than the tables' lookups (benchmarks/cost.md, "Few tolerations").
    pub fn covers(&self, other: &Toleration<'_>) -> bool {
        let key = if self.key.is_empty() {
            self.operator == Operator::Exists
        } else {
            self.key == other.key
        };
        let effect = self.effect.is_empty() || self.effect == other.effect;
        let value = match self.operator {
            Operator::Exists => true,
            Operator::Equal => other.operator == Operator::Equal && self.value == other.value,
            Operator::Unknown => false,
        };
        key && effect
            && value
            && lasts(self.seconds, other.seconds)
            && other.operator != Operator::Unknown
    }

    /// Tolerates the taint `key` with `effect` whatever its value.
    pub fn exists(key: &str, effect: &str) -> Toleration<'static> {
        Toleration {
            key: Cow::Owned(key.to_owned()),
            operator: Operator::Exists,
            value: Cow::Borrowed(""),
            effect: Cow::Owned(effect.to_owned()),
            seconds: None,
        }
    }

    /// The same toleration, borrowing this one's strings: a copy that allocates nothing.
    pub fn borrowed(&self) -> Toleration<'_> {
        Toleration {
            key: Cow::Borrowed(&self.key),
            operator: self.operator,
            value: Cow::Borrowed(&self.value),
            effect: Cow::Borrowed(&self.effect),
            seconds: self.seconds,
        }
    }

    /// The same toleration for another key (an alias twin).
    pub fn with_key(&self, key: &str) -> Toleration<'static> {
        Toleration {
            key: Cow::Owned(key.to_owned()),
            operator: self.operator,
            value: Cow::Owned(self.value.to_string()),
            effect: Cow::Owned(self.effect.to_string()),
            seconds: self.seconds,
        }
    }

    /// The same toleration, owning its strings.
    pub fn into_owned(self) -> Toleration<'static> {
        Toleration {
            key: Cow::Owned(self.key.into_owned()),
            operator: self.operator,
            value: Cow::Owned(self.value.into_owned()),
            effect: Cow::Owned(self.effect.into_owned()),
            seconds: self.seconds,
        }
    }

    /// kubectl-like: `key=value:Effect`, `key:Effect (Exists)`, `*:Effect (Exists)`.
    pub fn describe(&self) -> String {
        let key = if self.key.is_empty() { "*" } else { &self.key };
        let effect = if self.effect.is_empty() {
            "*"
        } else {
            &self.effect
        };
        // Room for the operator and seconds, and for the reason a warning puts after them (a
        // rule's name, an alias's key): grown for it, each of the hostpath Pod's four
        // additions was copied again (benchmarks/cost.md, "The limit of tuning").
        let mut s = String::with_capacity(key.len() + self.value.len() + effect.len() + 64);
        s.push_str(key);
        if self.operator == Operator::Equal && !self.value.is_empty() {
            s.push('=');
            s.push_str(&self.value);
        }
        s.push(':');
        s.push_str(effect);
        match self.operator {
            Operator::Equal => {}
            Operator::Exists => s.push_str(" (Exists)"),
            Operator::Unknown => s.push_str(" (unknown operator)"),
        }
        if let Some(seconds) = self.seconds {
            s.push_str(" for ");
            s.push_str(&seconds.to_string());
            s.push('s');
        }
        s
    }

    /// The toleration as Kubernetes writes it, empty fields left out: the members in the order
    /// its serde derive declares them, strings escaped as serde_json escapes them.
    pub fn to_json(&self) -> String {
        toleration_json(
            [&self.key, self.operator.into(), &self.value, &self.effect],
            self.seconds,
        )
    }
}

/// A toleration's JSON from its fields as written (`key`, `operator`, `value`, `effect`), empty
/// ones left out, as the API server writes a `v1.Toleration`.
pub fn toleration_json(fields: [&str; 4], seconds: Option<i64>) -> String {
    // Written by hand into a buffer sized for the text: serde_json's serializer cost the
    // hostpath Pod's additions more (benchmarks/cost.md, "What each change bought").
    let length: usize = fields.iter().map(|f| f.len()).sum();
    let mut out = String::with_capacity(length + length / 8 + 96);
    out.push('{');
    let names = [r#""key":"#, r#""operator":"#, r#""value":"#, r#""effect":"#];
    for (name, value) in names.into_iter().zip(fields) {
        if value.is_empty() {
            continue;
        }
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(name);
        // Nearly every field is plain: told here, and copied without `write_str`'s call
        // (benchmarks/cost.md, "The limit of tuning").
        if crate::json::scan::plain_run_end(value.as_bytes(), 0) == value.len() {
            out.push('"');
            out.push_str(value);
            out.push('"');
        } else {
            write_str(&mut out, value);
        }
    }
    if let Some(seconds) = seconds {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(r#""tolerationSeconds":"#);
        out.push_str(&seconds.to_string());
    }
    out.push('}');
    out
}

impl Toleration<'static> {
    /// The checks the API server would make of a toleration in a pod spec; `at` is where it is.
    ///
    /// # Errors
    ///
    /// The first field that is wrong, by its path.
    pub fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        if !self.effect.is_empty() {
            Effect::try_from(&*self.effect).map_err(|m| at.field("effect").error(m))?;
        }
        if self.key.is_empty() && self.operator != Operator::Exists {
            return Err(at
                .field("key")
                .error("an empty key requires operator \"Exists\""));
        }
        if !crate::k8s_names::taint_key_characters(&self.key) {
            return Err(at
                .field("key")
                .error(format!("{:?} is not a valid taint key", self.key)));
        }
        if self.operator == Operator::Exists && !self.value.is_empty() {
            return Err(at
                .field("value")
                .error("operator \"Exists\" takes no value"));
        }
        if self.seconds.is_some() && self.effect != "NoExecute" {
            return Err(at
                .field("tolerationSeconds")
                .error("tolerationSeconds requires effect \"NoExecute\""));
        }
        Ok(())
    }
}

/// A set of tolerations that answers "does any of them cover this one?" without comparing it
/// with each: a pod template of etcd's 1.5 MiB limit holds ~20,000 tolerations, and pairwise
/// [`Toleration::covers`] took seconds, past the policy timeout.
///
/// Only three kinds of toleration can cover `t`, each found by a lookup: `Exists` with an empty
/// key, `Exists` with `t`'s key, and (when `t` is `Equal`) `Equal` with `t`'s key and value;
/// each with an empty effect or `t`'s. Per such bucket only the longest `tolerationSeconds`
/// matters (none at all is the longest).
#[derive(Debug, Default)]
pub struct Coverage<'t> {
    /// `Exists`, by key (empty: every key) and effect (empty: every effect): the longest seconds
    /// (`None`: unlimited). Keys borrow the tolerations inserted, and lookups borrow, so only
    /// the tables allocate.
    exists: SmallMap<ExistsKey<'t>, Option<i64>>,
    /// `Equal`, by key, value and effect.
    equal: SmallMap<EqualKey<'t>, Option<i64>>,
}

/// (key, effect).
type ExistsKey<'t> = (Cow<'t, str>, Cow<'t, str>);
/// (key, value, effect).
type EqualKey<'t> = (Cow<'t, str>, Cow<'t, str>, Cow<'t, str>);

/// Whether a toleration for `mine` `tolerationSeconds` lasts as long as one for `theirs`: none at
/// all is forever.
fn lasts(mine: Option<i64>, theirs: Option<i64>) -> bool {
    match (mine, theirs) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(mine), Some(theirs)) => theirs <= mine,
    }
}

/// Keeps the longest of two `tolerationSeconds`.
fn longest(best: &mut Option<i64>, seconds: Option<i64>) {
    if !lasts(*best, seconds) {
        *best = seconds;
    }
}

impl<'t> Coverage<'t> {
    /// Adds `t` to the tolerations that may cover others. One that tolerates nothing (an
    /// unknown operator, `Equal` with an empty key) is left out.
    pub fn insert(&mut self, t: &Toleration<'t>) {
        let best = match t.operator {
            Operator::Exists => self
                .exists
                .entry((t.key.clone(), t.effect.clone()), t.seconds),
            // An empty key with `Equal` tolerates nothing, like an unknown operator.
            Operator::Equal if !t.key.is_empty() => self.equal.entry(
                (t.key.clone(), t.value.clone(), t.effect.clone()),
                t.seconds,
            ),
            _ => return,
        };
        longest(best, t.seconds);
    }

    /// Whether some toleration inserted covers `t`, as [`Toleration::covers`] judges.
    pub fn covers(&self, t: &Toleration<'_>) -> bool {
        if t.operator == Operator::Unknown {
            return false;
        }
        let lasts = |best: Option<&Option<i64>>| best.is_some_and(|best| lasts(*best, t.seconds));
        let effects = ["", &*t.effect];
        let exists = ["", &*t.key].into_iter().any(|key| {
            effects
                .into_iter()
                .any(|e| lasts(exists_entry(&self.exists, key, e)))
        });
        let equal = t.operator == Operator::Equal
            && effects
                .into_iter()
                .any(|e| lasts(equal_entry(&self.equal, &t.key, &t.value, e)));
        exists || equal
    }
}

fn exists_entry<'q>(
    table: &'q SmallMap<ExistsKey<'q>, Option<i64>>,
    key: &'q str,
    effect: &'q str,
) -> Option<&'q Option<i64>> {
    table.get(&(Cow::Borrowed(key), Cow::Borrowed(effect)))
}

fn equal_entry<'q>(
    table: &'q SmallMap<EqualKey<'q>, Option<i64>>,
    key: &'q str,
    value: &'q str,
    effect: &'q str,
) -> Option<&'q Option<i64>> {
    table.get(&(
        Cow::Borrowed(key),
        Cow::Borrowed(value),
        Cow::Borrowed(effect),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_like_kubectl() {
        let t =
            |key: &'static str, operator, value: &'static str, effect: &'static str, seconds| {
                Toleration {
                    key: key.into(),
                    operator,
                    value: value.into(),
                    effect: effect.into(),
                    seconds,
                }
                .describe()
            };
        use Operator::*;
        assert_eq!(t("k", Equal, "v", "NoSchedule", None), "k=v:NoSchedule");
        assert_eq!(t("k", Equal, "", "", None), "k:*");
        assert_eq!(t("", Exists, "", "NoExecute", None), "*:NoExecute (Exists)");
        assert_eq!(t("k", Exists, "v", "", Some(300)), "k:* (Exists) for 300s");
        assert_eq!(
            t("k", Unknown, "v", "", Some(-5)),
            "k:* (unknown operator) for -5s"
        );
        assert_eq!(
            t("k", Equal, "v", "NoExecute", Some(0)),
            "k=v:NoExecute for 0s"
        );
    }

    fn t(json: &str) -> Toleration<'static> {
        parse_tolerations(Some(&format!("[{json}]")))
            .unwrap()
            .remove(0)
            .into_owned()
    }

    #[test]
    fn coverage_table() {
        let cases = [
            (
                r#"{"operator":"Exists"}"#,
                r#"{"key":"a","value":"x","effect":"NoSchedule"}"#,
                true,
            ),
            (r#"{"operator":"Exists"}"#, r#"{"operator":"Exists"}"#, true),
            (
                r#"{"key":"a","operator":"Exists"}"#,
                r#"{"operator":"Exists"}"#,
                false,
            ),
            (
                r#"{"key":"a","operator":"Exists"}"#,
                r#"{"key":"a","value":"v","effect":"NoExecute"}"#,
                true,
            ),
            (
                r#"{"key":"a","operator":"Exists","effect":"NoSchedule"}"#,
                r#"{"key":"a","effect":"NoExecute"}"#,
                false,
            ),
            (
                r#"{"key":"a","operator":"Exists","effect":"NoSchedule"}"#,
                r#"{"key":"a","operator":"Exists"}"#,
                false,
            ),
            (
                r#"{"key":"a","value":"v"}"#,
                r#"{"key":"a","value":"v","effect":"NoSchedule"}"#,
                true,
            ),
            (
                r#"{"key":"a","value":"v"}"#,
                r#"{"key":"a","value":"w"}"#,
                false,
            ),
            (
                r#"{"key":"a","value":"v"}"#,
                r#"{"key":"a","operator":"Exists"}"#,
                false,
            ),
            (
                r#"{"key":"a"}"#,
                r#"{"key":"a","operator":"Equal","value":""}"#,
                true,
            ),
            (
                r#"{"key":"a","effect":"NoSchedule"}"#,
                r#"{"key":"b","effect":"NoSchedule"}"#,
                false,
            ),
            (
                r#"{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}"#,
                r#"{"key":"a","operator":"Exists","effect":"NoExecute"}"#,
                false,
            ),
            (
                r#"{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":300}"#,
                r#"{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":60}"#,
                true,
            ),
            (
                r#"{"key":"a","operator":"exists"}"#,
                r#"{"key":"a"}"#,
                false,
            ),
            (
                r#"{"operator":"Exists"}"#,
                r#"{"key":"a","operator":"Sometimes"}"#,
                false,
            ),
        ];
        for (existing, wanted, covered) in cases {
            assert_eq!(
                t(existing).covers(&t(wanted)),
                covered,
                "{existing} covers {wanted}"
            );
        }
    }

    #[test]
    fn json_round_trip() {
        for json in [
            r#"{"key":"node-role.kubernetes.io/master","operator":"Equal","effect":"NoSchedule"}"#,
            r#"{"operator":"Exists"}"#,
            r#"{"key":"a","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}"#,
        ] {
            assert_eq!(t(json).to_json(), json);
        }
    }

    /// `to_json` writes what the serde derive writes, escapes and every field's absence included.
    #[test]
    fn to_json_writes_what_serde_writes() {
        let text = |s: &'static str| Cow::Borrowed(s);
        let all = Toleration {
            key: text("example.com/k\"q\u{1}é"),
            operator: Operator::Equal,
            value: text("v\n\t<>&\u{7f}"),
            effect: text("NoSchedule"),
            seconds: Some(-5),
        };
        let cases = [
            all.clone(),
            Toleration {
                key: text(""),
                operator: Operator::Exists,
                ..all.clone()
            },
            Toleration {
                value: text(""),
                effect: text(""),
                seconds: None,
                ..all.clone()
            },
            Toleration {
                operator: Operator::Unknown,
                seconds: Some(i64::MIN),
                ..all
            },
            Toleration::exists("", ""),
            // Plain past sixteen bytes, and a stop there.
            Toleration::exists("node-role.kubernetes.io/control-plane", "NoSchedule"),
            Toleration::exists("node-role.kubernetes.io/\u{1f}control\\plane", "NoSchedule"),
        ];
        for toleration in cases {
            let mut serde = Vec::new();
            Toleration::serialize(&toleration, &mut serde_json::Serializer::new(&mut serde))
                .unwrap();
            assert_eq!(toleration.to_json(), String::from_utf8(serde).unwrap());
        }
    }
}

#[cfg(test)]
mod coverage_properties {
    use super::*;
    use proptest::prelude::*;

    fn toleration() -> impl Strategy<Value = Toleration<'static>> {
        (
            // Enough keys and values for sets with many entries per key.
            prop::sample::select(vec!["", "a", "b", "c", "d", "e"]),
            prop::sample::select(vec![Operator::Equal, Operator::Exists, Operator::Unknown]),
            prop::sample::select(vec!["", "x", "y", "z"]),
            prop::sample::select(vec!["", "NoSchedule", "NoExecute"]),
            proptest::option::of(0i64..4),
        )
            .prop_map(|(key, operator, value, effect, seconds)| Toleration {
                key: key.into(),
                operator,
                value: value.into(),
                effect: effect.into(),
                seconds,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

        /// The index answers exactly what comparing with each toleration answers, small or large.
        #[test]
        fn coverage_agrees_with_pairwise_covers(
            set in proptest::collection::vec(toleration(), 0..64),
            t in toleration(),
        ) {
            let mut coverage = Coverage::default();
            for s in &set {
                coverage.insert(s);
            }
            prop_assert_eq!(coverage.covers(&t), set.iter().any(|s| s.covers(&t)));
        }
    }
}
