//! The PodTolerationRestriction admission plugin, for clusters that cannot turn it on
//! (docs/pod-toleration-restriction.md): each Namespace's default tolerations and whitelist,
//! from its two annotations or the cluster-wide lists of the settings; the memory-pressure
//! toleration for every Pod that is not BestEffort; and, unless turned off, the two gaps
//! upstream left open closed (the tolerations Kubernetes adds by itself are whitelisted, and
//! only `annotationEditors` may change the annotations).

mod algebra;
mod annotations;
#[cfg(test)]
mod go_differential;
mod guard;
mod qos;
mod settings;

use taintguard::cluster::Cluster;
use taintguard::json::{member_at, JsonStr, Object};
use taintguard::verdict::{quoted, Verdict};

pub use algebra::{read_pod_tolerations, PluginToleration};
pub use annotations::{DEFAULTS, WHITELIST};
pub use guard::judge_namespace;
pub use settings::{DefaultTolerationSeconds, PodTolerationRestriction};

/// The plugin's own toleration for Pods that are not BestEffort.
const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";

/// What Kubernetes adds to Pods by itself, whitelisted unless `implicitTolerations` is off
/// (kubernetes#64616): the DefaultTolerationSeconds plugin's two, added before this policy's
/// webhook runs, for as long as its flags say (`seconds`) and no longer; and the plugin's own
/// memory-pressure toleration.
fn implicit(seconds: DefaultTolerationSeconds) -> [PluginToleration; 3] {
    let lasting = |key: &str, seconds: i64| PluginToleration {
        toleration_seconds: Some(seconds),
        ..PluginToleration::exists(key, "NoExecute")
    };
    [
        lasting("node.kubernetes.io/not-ready", seconds.not_ready),
        lasting("node.kubernetes.io/unreachable", seconds.unreachable),
        PluginToleration::exists(MEMORY_PRESSURE, "NoSchedule"),
    ]
}

/// Where a Pod's whitelist came from, for the message that names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Scope {
    Namespace,
    #[default]
    Cluster,
}

/// The Pod being judged: what the plugin reads of it.
pub struct Pod<'p> {
    pub namespace: &'p str,
    /// `Pod namespace/name`, for a message: written only for one (3.9k guest instructions).
    pub describe: &'p dyn Fn() -> String,
    /// The pod spec and its `tolerations` member's text.
    pub spec: Option<&'p Object<'p>>,
    pub tolerations: Option<&'p str>,
    pub create: bool,
    /// Why a restriction of this policy forbids the Pod a toleration here, if one does: the
    /// plugin's additions are bounded by them, as the rules' alias twins are.
    pub forbidden: &'p dyn Fn(&PluginToleration) -> Option<String>,
}

/// What the plugin makes of a Pod: what it then tolerates (its own tolerations the merge keeps,
/// then those the plugin appends, each with why), which the whitelist must cover. The default
/// is a Pod the plugin leaves alone.
#[derive(Default)]
pub struct Outcome {
    tolerations: Vec<PluginToleration>,
    /// Why each appended toleration is appended: one per toleration at the end of `tolerations`.
    reasons: Vec<String>,
    /// The Pod's own tolerations an appended one replaces, each with its index in the Pod's list.
    replaced: Vec<(usize, PluginToleration)>,
    whitelist: Vec<PluginToleration>,
    scope: Scope,
    /// The additions a restriction forbids (each described with the restriction), not made:
    /// made, the policy would refuse its own output on the Pod's next write.
    withheld: Vec<String>,
}

impl PodTolerationRestriction {
    /// What the plugin adds to `pod` and the whitelist it holds it to, reading the Pod's
    /// Namespace from `cluster`.
    ///
    /// # Errors
    ///
    /// The refusal of a Pod whose spec cannot be read (400), or whose Namespace cannot be
    /// (500), whatever the reason: the host call failed, the Namespace does not exist, or the
    /// engine holds no Namespaces at all (a Gatekeeper-style inventory without the sync of
    /// `v1/Namespace`, OPA mode, the JavaScript package without a cluster). A Pod judged
    /// without its namespace's whitelist would be judged by the cluster-wide one alone, which
    /// the namespace's may narrow: failing open.
    pub fn judge_pod(&self, pod: &Pod<'_>, cluster: &dyn Cluster) -> Result<Outcome, Verdict> {
        let own = read_pod_tolerations(pod.tolerations).map_err(|e| {
            malformed(
                pod,
                &format!("spec.tolerations: {}", taintguard::json::error::message(&e)),
            )
        })?;
        let text = (cluster.get_namespace(pod.namespace, self.namespace_reads))
            .map_err(|e| namespace_refusal(pod, &e.to_string()))?;
        let [defaults, whitelist] = namespace_annotations(pod, &text)?;
        let mut extra = if pod.create {
            self.defaults(pod, defaults)?
        } else {
            Vec::new()
        };
        let best_effort = qos::best_effort(pod.spec).map_err(|e| malformed(pod, &e))?;
        if !best_effort {
            extra.push((
                PluginToleration::exists(MEMORY_PRESSURE, "NoSchedule"),
                "the Pod is not BestEffort".to_owned(),
            ));
        }
        let (whitelist, scope) = match annotation(pod, annotations::WHITELIST, whitelist)? {
            Some(list) => (list, Scope::Namespace),
            None => (self.whitelist.clone(), Scope::Cluster),
        };
        let withheld = withhold(pod, &mut extra);
        // On CREATE the plugin's merge replaces what its additions cover; on UPDATE a replaced
        // toleration is a change pod validation refuses (kubernetes#97850): appended only.
        let algebra::Applied {
            tolerations,
            reasons,
            replaced,
        } = algebra::merge(&own, extra, pod.create).apply(own);
        Ok(Outcome {
            tolerations,
            reasons,
            replaced,
            whitelist: self.whitelist_in_force(whitelist),
            scope,
            withheld,
        })
    }

    /// The default tolerations a Pod CREATE gets, each with why: its Namespace's
    /// `defaultTolerations` annotation (`value`) where set, else the settings' `default`.
    fn defaults(
        &self,
        pod: &Pod<'_>,
        value: Option<JsonStr<'_>>,
    ) -> Result<Vec<(PluginToleration, String)>, Verdict> {
        Ok(match annotation(pod, annotations::DEFAULTS, value)? {
            Some(defaults) => {
                // Quoted as `{:?}` would, without the formatting machinery for a plain
                // name, as a namespace's is (3k guest instructions).
                let why = quoted("default toleration of namespace ", pod.namespace);
                defaults.into_iter().map(|t| (t, why.clone())).collect()
            }
            None => (self.default.iter())
                .map(|t| {
                    let why = "podTolerationRestriction.default of this policy";
                    (t.clone(), why.to_owned())
                })
                .collect(),
        })
    }

    /// `whitelist` with what Kubernetes adds by itself, when it restricts anything and
    /// `implicitTolerations` is on. An implicit toleration never speaks for a key the whitelist
    /// names: there the whitelist's entries alone decide, as upstream.
    fn whitelist_in_force(&self, mut whitelist: Vec<PluginToleration>) -> Vec<PluginToleration> {
        if self.implicit_tolerations && !whitelist.is_empty() {
            for t in implicit(self.default_toleration_seconds) {
                if !whitelist.iter().any(|w| w.key == t.key) {
                    whitelist.push(t);
                }
            }
        }
        whitelist
    }
}

impl Outcome {
    /// The tolerations the plugin appends, each with why, in order.
    pub fn added(&self) -> impl Iterator<Item = (&PluginToleration, &str)> {
        let own = self.tolerations.len() - self.reasons.len();
        let reasons = self.reasons.iter().map(String::as_str);
        self.tolerations[own..].iter().zip(reasons)
    }

    /// The Pod's own tolerations an appended one replaces, with their indices in its list.
    pub fn replaced(&self) -> &[(usize, PluginToleration)] {
        &self.replaced
    }

    /// The additions a restriction forbids, each described with it: not made.
    pub fn withheld(&self) -> &[String] {
        &self.withheld
    }

    /// Whether the plugin appends nothing, and so replaces nothing.
    pub fn adds_nothing(&self) -> bool {
        self.reasons.is_empty()
    }

    /// The refusal of a Pod whose tolerations (its own and those the plugin added) the whitelist
    /// does not cover, except those `exempt` says this policy's own rules put there.
    /// A toleration whose alias twin (`twins`) the Pod carries and the whitelist covers passes
    /// with it: the twin is the same taint under its other name.
    pub fn whitelist_refusal(
        &self,
        pod: &Pod<'_>,
        exempt: impl Fn(&PluginToleration) -> bool,
        twins: impl Fn(&PluginToleration) -> Vec<PluginToleration>,
    ) -> Option<Verdict> {
        let whitelisted_twin = |t: &PluginToleration| {
            twins(t).iter().any(|twin| {
                self.tolerations.contains(twin)
                    && algebra::first_outside([twin], &self.whitelist).is_none()
            })
        };
        let judged = self
            .tolerations
            .iter()
            .filter(|t| !exempt(t) && !whitelisted_twin(t));
        let outside = algebra::first_outside(judged, &self.whitelist)?;
        let (scope, source) = match self.scope {
            Scope::Namespace => (
                "namespace",
                format!(
                    "the annotation {} of namespace {:?}",
                    annotations::WHITELIST,
                    pod.namespace
                ),
            ),
            Scope::Cluster => (
                "cluster",
                "podTolerationRestriction.whitelist of this policy".to_owned(),
            ),
        };
        Some(Verdict::reject(
            403,
            format!(
                "{}: pod tolerations (possibly merged with namespace default tolerations) \
                 conflict with its {scope} whitelist: {} is not covered by {source}",
                (pod.describe)(),
                outside.describe()
            ),
        ))
    }
}

/// The tolerations of the Namespace annotation `key` (`value`): `None` where it is not set.
/// One that is not a list of tolerations refuses the Pod (500), as the plugin does.
fn annotation(
    pod: &Pod<'_>,
    key: &str,
    value: Option<JsonStr<'_>>,
) -> Result<Option<Vec<PluginToleration>>, Verdict> {
    annotations::read(value.as_ref().map(JsonStr::as_str)).map_err(|e| {
        Verdict::reject(
            500,
            format!(
                "{}: the annotation {key} of namespace {:?} is not a list of tolerations ({e})",
                (pod.describe)(),
                pod.namespace
            ),
        )
    })
}

/// Takes out of `extra` the additions a restriction of this policy forbids, and says why each
/// is withheld.
fn withhold(pod: &Pod<'_>, extra: &mut Vec<(PluginToleration, String)>) -> Vec<String> {
    let mut withheld = Vec::new();
    extra.retain(|(t, _)| match (pod.forbidden)(t) {
        Some(why) => {
            withheld.push(why);
            false
        }
        None => true,
    });
    withheld
}

fn malformed(pod: &Pod<'_>, problem: &str) -> Verdict {
    Verdict::reject(
        400,
        format!("malformed request: {}: {problem}", (pod.describe)()),
    )
}

fn namespace_refusal(pod: &Pod<'_>, why: &str) -> Verdict {
    Verdict::reject(
        500,
        format!(
            "{}: the PodTolerationRestriction annotations of namespace {:?} cannot be read: \
             {why}; the Pod is refused rather than judged without them",
            (pod.describe)(),
            pod.namespace
        ),
    )
}

/// The plugin's two annotations of the Namespace `text`.
fn namespace_annotations<'t>(
    pod: &Pod<'_>,
    text: &'t str,
) -> Result<[Option<JsonStr<'t>>; 2], Verdict> {
    let unreadable =
        |e: String| namespace_refusal(pod, &format!("the host's Namespace is not one: {e}"));
    // The host's answer, serialised whole by policy-server: read up to its annotations, which
    // come before the managed fields that are most of a Namespace.
    let annotations = member_at(text, &["metadata", "annotations"]).map_err(unreadable)?;
    annotations::plugin_pair(annotations.value()).map_err(unreadable)
}
