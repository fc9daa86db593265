//! Settings of the taint-preservation policy. The policy README is the reference for users;
//! every field has a default, so `{}` is a complete configuration.

use std::borrow::Cow;

use serde::Serialize;

use taintguard::k8s_names::{AnnotationKey, ApiGroup, RbacName};
use taintguard::principal::{NameGlob, PrincipalList, ServiceAccountGlob};
use taintguard::settings::{
    checked, string_enum, At, PolicySettings, SettingsError, SettingsFields,
};
use taintguard::taint::{Effect, SelectsTaints, Taint, TaintKeyGlob, TaintSelector};

/// Taints that controllers own: they add and remove them as node conditions change, so
/// protecting them would fight the controllers. Everything else is protected by default.
///
/// Besides known keys, the readiness conventions (docs/controllers.md): a taint that exists
/// to be removed by the agent it waits for, and that its component may put back when the agent
/// goes away, must never be protected. `*-not-ready` covers `<prefix>/agent-not-ready` (Cilium,
/// whose operator re-taints a node whose agent pod is not ready; the CSI drivers' taints of this form are
/// one-shot, below) and `<prefix>/<name>-not-ready` (CNI and service-mesh node agents, such as
/// Istio's `cni.istio.io/not-ready`); `not-ready` and `*/not-ready` a name that is exactly
/// `not-ready`; `readiness.k8s.io/*` the Node Readiness Controller, whose continuous mode
/// re-adds its taints while a condition is unmet.
const DEFAULT_UNPROTECTED_TAINTS: &[TaintSelector] = &[
    TaintSelector::builtin("node.kubernetes.io/*"),
    TaintSelector::builtin("node.cloudprovider.kubernetes.io/*"),
    TaintSelector::builtin("node.cluster.x-k8s.io/*"),
    TaintSelector::builtin("karpenter.sh/*"),
    TaintSelector::builtin("ToBeDeletedByClusterAutoscaler"),
    TaintSelector::builtin("DeletionCandidateOfClusterAutoscaler"),
    TaintSelector::builtin("aws-node-termination-handler/*"),
    TaintSelector::builtin("cloud.google.com/impending-node-termination"),
    TaintSelector::builtin("not-ready"),
    TaintSelector::builtin("*/not-ready"),
    TaintSelector::builtin("*-not-ready"),
    TaintSelector::builtin("readiness.k8s.io/*"),
];

/// Startup taints that, once removed, must not come back (docs/incidents.md, incident 3). The
/// uninitialized taints and Karpenter's `unregistered` are registration taints. The CSI node
/// plugins' `<driver>/agent-not-ready` (EBS, EFS, FSx for Lustre and OpenZFS, Mountpoint for S3,
/// ...) is applied at registration or by an UPDATE (Karpenter applies a NodePool's
/// `startupTaints` so) and removed once by the node plugin when it starts; nothing of the driver
/// ever applies it again. Cilium's `node.cilium.io/agent-not-ready` shares the form but its
/// operator re-taints a node whose agent pod is not ready, so it is left out (and unprotected above).
const DEFAULT_ONE_SHOT_TAINTS: &[OneShotRule] = &[
    OneShotRule::builtin("node.cloudprovider.kubernetes.io/uninitialized", &[], true),
    OneShotRule::builtin("node.cluster.x-k8s.io/uninitialized", &[], true),
    OneShotRule::builtin("karpenter.sh/unregistered", &[], true),
    OneShotRule::builtin("*/agent-not-ready", CILIUM_AGENT_NOT_READY, false),
];

/// Cilium's own `agent-not-ready`, which its operator puts back (see above).
const CILIUM_AGENT_NOT_READY: &[TaintKeyGlob] =
    &[TaintKeyGlob::constant("node.cilium.io/agent-not-ready")];

/// The default protected-taint rule's key: every taint the lists above leave alone.
const PROTECT_EVERYTHING: TaintKeyGlob = TaintKeyGlob::constant("*");

/// The annotation that names a cordon's owner, unless `cordon.ownerAnnotation` says otherwise.
pub const DEFAULT_OWNER_ANNOTATION: &str = "taintguard.io/cordoned-by";
/// The annotation that lists the one-shot taints removed from a node, unless
/// `oneShotRecordAnnotation` says otherwise.
pub const DEFAULT_ONE_SHOT_RECORD_ANNOTATION: &str = "taintguard.io/removed-startup-taints";
/// The annotation that records who added each protected taint, unless
/// `taintOwners.annotation` says otherwise.
pub const DEFAULT_TAINT_OWNERS_ANNOTATION: &str = "taintguard.io/taint-owners";

/// The ownership records controllers keep of their own taints, each with its writer in that
/// component's default install (docs/controllers.md has the sources read).
const DEFAULT_CONTROLLER_RECORDS: &[ControllerRecord] = &[
    // nfd-master: kustomize's `nfd-master`, Helm's `<release>-node-feature-discovery` for
    // the documented release `nfd`, both in namespace `node-feature-discovery`.
    ControllerRecord {
        annotation: AnnotationKey::constant("nfd.node.kubernetes.io/taints"),
        format: RecordFormat::Taints,
        owner: PrincipalList {
            people: false,
            users: Cow::Borrowed(&[]),
            groups: Cow::Borrowed(&[]),
            service_accounts: Cow::Borrowed(&[
                ServiceAccountGlob::constant("node-feature-discovery/nfd-master"),
                ServiceAccountGlob::constant("node-feature-discovery/nfd-node-feature-discovery"),
            ]),
        },
        keys: Cow::Borrowed(&[]),
    },
    // Cluster API's machine controller writes the workload cluster's Nodes with the
    // kubeconfig it generates: client certificate `kubernetes-admin` in `system:masters`.
    ControllerRecord {
        annotation: AnnotationKey::constant("cluster.x-k8s.io/taints-from-machine"),
        format: RecordFormat::Taints,
        owner: PrincipalList {
            people: false,
            users: Cow::Borrowed(&[NameGlob::constant("kubernetes-admin")]),
            groups: Cow::Borrowed(&[]),
            service_accounts: Cow::Borrowed(&[]),
        },
        keys: Cow::Borrowed(&[]),
    },
    // Talos' machined on a control-plane node: a short-lived certificate `admin` in
    // `system:masters` (workers write with the kubelet's identity, which NodeRestriction
    // keeps from changing taints).
    ControllerRecord {
        annotation: AnnotationKey::constant("talos.dev/owned-taints"),
        format: RecordFormat::Keys,
        owner: PrincipalList {
            people: false,
            users: Cow::Borrowed(&[NameGlob::constant("admin")]),
            groups: Cow::Borrowed(&[]),
            service_accounts: Cow::Borrowed(&[]),
        },
        keys: Cow::Borrowed(&[]),
    },
];

string_enum! {
    /// What the policy does with a request that would lose protected state: restore it or deny.
    #[derive(Default)]
    pub enum Mode {
        /// Mutate the request so that the protected state stays, accept and warn.
        #[default]
        Restore = "restore",
        /// Reject the request.
        Deny = "deny",
    }
    unknown = "mode", expected = "\"restore\" or \"deny\"";
}

/// A protected-taint rule: the taints it selects and who, besides the global list, may remove or
/// change them. A bare key glob is a rule of every effect with no principals of its own.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
#[settings(from_str = "ProtectedRule::from_key")]
pub struct ProtectedRule {
    /// The glob of the taint keys the rule protects.
    pub key: TaintKeyGlob,
    /// The effects the rule protects; empty: every effect.
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// Who, besides the global `permitted` list, may remove or change the selected taints.
    #[serde(default)]
    pub permitted: PrincipalList,
}

impl ProtectedRule {
    /// The rule a bare key glob stands for.
    fn from_key(key: &str) -> Result<ProtectedRule, String> {
        Ok(ProtectedRule {
            key: TaintKeyGlob::try_from(key.to_owned())?,
            effects: Vec::new(),
            permitted: PrincipalList::default(),
        })
    }
}

impl SelectsTaints for ProtectedRule {
    fn key(&self) -> &TaintKeyGlob {
        &self.key
    }
    fn effects(&self) -> &[Effect] {
        &self.effects
    }
}

/// A one-shot startup taint: applied once, removed once by its owner, never to come back.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[settings(from_str = "OneShotRule::from_key")]
pub struct OneShotRule {
    /// The glob of the startup taints' keys.
    pub key: TaintKeyGlob,
    /// The effects the rule selects; empty: every effect.
    #[serde(default)]
    pub effects: Vec<Effect>,
    /// Keys the selector leaves out, so that a convention can be written as one glob even when
    /// one component using its form re-adds its taint.
    #[serde(default)]
    pub except: Cow<'static, [TaintKeyGlob]>,
    /// Only the kubelet's registration sets it, so an UPDATE adding it is always a re-add. Other
    /// one-shot taints may be applied by an UPDATE until their removal has been recorded.
    #[serde(default)]
    pub only_at_registration: bool,
}

impl OneShotRule {
    /// The rule a bare key glob stands for.
    fn from_key(key: &str) -> Result<OneShotRule, String> {
        Ok(OneShotRule {
            key: TaintKeyGlob::try_from(key.to_owned())?,
            effects: Vec::new(),
            except: Cow::Borrowed(&[]),
            only_at_registration: false,
        })
    }
}

impl SelectsTaints for OneShotRule {
    fn key(&self) -> &TaintKeyGlob {
        &self.key
    }
    fn effects(&self) -> &[Effect] {
        &self.effects
    }
}

impl OneShotRule {
    /// A default rule, in the code: its key glob, the keys it leaves out, and whether only the
    /// kubelet's registration (a CREATE) sets it.
    const fn builtin(
        key: &'static str,
        except: &'static [TaintKeyGlob],
        only_at_registration: bool,
    ) -> OneShotRule {
        OneShotRule {
            key: TaintKeyGlob::constant(key),
            effects: Vec::new(),
            except: Cow::Borrowed(except),
            only_at_registration,
        }
    }

    /// Whether `taint` is one of this rule's: its key and effect match and no `except` glob
    /// names its key.
    pub fn selects(&self, taint: &Taint<'_>) -> bool {
        self.matches(taint) && !self.except.iter().any(|g| g.matches(taint.key.as_str()))
    }
}

string_enum! {
    /// How a controller's ownership record lists its taints.
    pub enum RecordFormat {
        /// Comma-separated `key=value:Effect` or `key:Effect` (node-feature-discovery, Cluster
        /// API): the listed key and effect.
        Taints = "taints",
        /// A JSON array of keys (Talos): every effect of each key.
        Keys = "keys",
    }
    unknown = "format", expected = "\"taints\" or \"keys\"";
}

/// A controller's own record of the taints it manages: the taints it lists belong to `owner`,
/// and only `owner` or a permitted principal may change the annotation.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerRecord {
    /// The Node annotation the controller keeps its record in.
    pub annotation: AnnotationKey,
    /// How the record lists the taints.
    pub format: RecordFormat,
    /// The controller that writes the record and owns the taints it lists.
    pub owner: PrincipalList,
    /// The taint keys the record may claim; empty: any. A listed taint outside them is granted
    /// nothing (docs/records.md, "What a controller's record grants"). Left out when empty, as
    /// settings that name none write it.
    #[serde(default, skip_serializing_if = "claims_any_key")]
    pub keys: Cow<'static, [TaintKeyGlob]>,
}

/// Whether a controller record names no `keys`, so claims any.
fn claims_any_key(keys: &[TaintKeyGlob]) -> bool {
    keys.is_empty()
}

/// The record of the cordon's owner (docs/incidents.md, incident 2).
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Cordon {
    /// Whether the cordon's owner is recorded and only the owner (or a permitted principal) may
    /// lift it. On by default.
    pub enabled: bool,
    /// The Node annotation that names the user who cordoned it.
    pub owner_annotation: AnnotationKey,
    /// Who, besides the permitted principals, may lift a cordon whose owner is not recorded: a
    /// cordon from before the install, or any cordon where only the gatekeeper build runs, which
    /// cannot write the record. Default: nobody.
    pub unrecorded_permitted: PrincipalList,
}

impl Default for Cordon {
    fn default() -> Cordon {
        Cordon {
            enabled: true,
            owner_annotation: AnnotationKey::builtin(DEFAULT_OWNER_ANNOTATION),
            unrecorded_permitted: PrincipalList::default(),
        }
    }
}

/// The record of who added each protected taint (docs/controllers.md): the adder may later
/// change the taint's value or remove it.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TaintOwners {
    /// Whether the adder of a protected taint is recorded and may change or remove it. On by
    /// default.
    pub enabled: bool,
    /// The Node annotation that keeps the record.
    pub annotation: AnnotationKey,
}

impl TaintOwners {
    /// The record's annotation, when taint ownership is on.
    pub fn key(&self) -> Option<&str> {
        self.enabled.then_some(self.annotation.as_str())
    }
}

impl Default for TaintOwners {
    fn default() -> TaintOwners {
        TaintOwners {
            enabled: true,
            annotation: AnnotationKey::builtin(DEFAULT_TAINT_OWNERS_ANNOTATION),
        }
    }
}

/// RBAC as a way in besides the settings lists (docs/context.md): a requester is permitted
/// what a SubjectAccessReview says it may do with `verb` on `resource` (named by the node) in
/// `api_group`. The default group is one no API server serves, so only a role naming it grants
/// the verbs, or one granting every verb in every group, as `cluster-admin` does.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Rbac {
    /// Whether a SubjectAccessReview is asked when the settings lists do not permit a requester.
    /// Off by default: on, such a request costs a call to the API server.
    pub enabled: bool,
    /// The API group the review names.
    pub api_group: ApiGroup,
    /// The resource the review names, with the node as its name.
    pub resource: RbacName,
    /// Permits what the taint part forbids: removing or changing protected taints, re-adding
    /// one-shot taints, editing the one-shot removal record.
    pub untaint_verb: RbacName,
    /// Permits lifting or reassigning another's cordon.
    pub uncordon_verb: RbacName,
}

impl Rbac {
    /// The grant `verb` stands for, as messages name it.
    pub fn describe(&self, verb: &str, node: &str) -> String {
        format!(
            "{verb} {}/{node} in API group {:?}",
            self.resource.as_str(),
            self.api_group.as_str()
        )
    }
}

impl Default for Rbac {
    fn default() -> Rbac {
        Rbac {
            enabled: false,
            api_group: ApiGroup::builtin("taintguard.io"),
            resource: RbacName::builtin("nodes"),
            untaint_verb: RbacName::builtin("untaint"),
            uncordon_verb: RbacName::builtin("uncordon"),
        }
    }
}

/// A key of the record seal (docs/records.md, "Sealed records"): an id the seal names and a
/// secret of at least 32 bytes.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SealKey {
    /// The name the seal carries, so that a rotated key still verifies what it sealed.
    pub id: SealKeyId,
    /// The secret, base64 (standard alphabet, padded), at least 32 bytes decoded.
    pub secret: SealSecret,
}

checked! {
    /// A seal key's id: 1 to 32 letters, digits, `-` and `_`.
    pub struct SealKeyId(String) = |id| {
        let valid = (1..=32).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if valid {
            Ok(id)
        } else {
            Err(format!("{id:?} is not a key id: 1 to 32 letters, digits, `-` and `_`"))
        }
    };
}

/// A seal key's secret, decoded. Its `Debug` never shows it; errors never quote it.
#[derive(Clone, PartialEq, Eq)]
pub struct SealSecret(Vec<u8>);

/// The fewest bytes a secret may have: HMAC-SHA256's own output length.
const SEAL_SECRET_MIN: usize = 32;

impl SealSecret {
    /// The decoded secret.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for SealSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SealSecret(<{} bytes>)", self.0.len())
    }
}

impl TryFrom<String> for SealSecret {
    type Error = String;
    fn try_from(text: String) -> Result<SealSecret, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("the secret is not base64 (standard alphabet, padded): {e}"))?;
        if bytes.len() < SEAL_SECRET_MIN {
            return Err(format!(
                "the secret is {} bytes; a seal key needs at least {SEAL_SECRET_MIN} (`openssl rand \
                 -base64 32`)",
                bytes.len()
            ));
        }
        Ok(SealSecret(bytes))
    }
}

impl From<SealSecret> for String {
    fn from(secret: SealSecret) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(secret.0)
    }
}

taintguard::settings::from_string!(SealSecret, into = String);

string_enum! {
    /// What the records of a Node that carries no seal count for.
    #[derive(Default)]
    pub enum Unsealed {
        /// As before the seal: while the Nodes of a running cluster are sealed, each on the next
        /// write the policy judges.
        #[default]
        Count = "count",
        /// Nothing: every Node is sealed, so a Node without a seal lost it by a write the policy
        /// did not judge.
        Refuse = "refuse",
    }
    unknown = "unsealed", expected = "\"count\" or \"refuse\"";
}

/// The name of the annotation holding the seal, unless `recordSeal.annotation` says otherwise.
pub const DEFAULT_SEAL_ANNOTATION: &str = "taintguard.io/records-seal";

/// The seal over the records (docs/records.md, "Sealed records"): a keyed copy of the records the
/// policy accepted, so that a record written where the policy did not judge it (through
/// `nodes/status`, or through `nodes` while the policy server was down) counts for nothing. Off
/// while `keys` is empty, as by default.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct RecordSeal {
    /// The Node annotation that holds the seal.
    pub annotation: AnnotationKey,
    /// The keys: the first seals, every one verifies (rotation: put the new key first, keep the
    /// old one until every Node is sealed again). None: records are not sealed.
    pub keys: Vec<SealKey>,
    /// What the records of a Node without a seal count for.
    pub unsealed: Unsealed,
}

impl Default for RecordSeal {
    fn default() -> RecordSeal {
        RecordSeal {
            annotation: AnnotationKey::builtin(DEFAULT_SEAL_ANNOTATION),
            keys: Vec::new(),
            unsealed: Unsealed::Count,
        }
    }
}

impl RecordSeal {
    /// The seal, when records are sealed: when it has a key.
    pub fn on(&self) -> Option<&RecordSeal> {
        (!self.keys.is_empty()).then_some(self)
    }
}

/// The settings; every field has a default, so `{}` is a complete configuration.
#[derive(Debug, Clone, PartialEq, Eq, SettingsFields, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Settings {
    /// Whether a forbidden request is restored or denied.
    pub mode: Mode,
    /// The protected-taint rules; a list in the settings replaces the default whole.
    pub protected_taints: Vec<ProtectedRule>,
    /// The lists, built in or read from the settings. Built in, they are borrowed: defaults are
    /// made for every request, and copying then dropping these lists was a third of what the
    /// defaults cost (benchmarks/cost.md, "Decision work, measured per function").
    pub unprotected_taints: Cow<'static, [TaintSelector]>,
    /// The one-shot startup taints; a list in the settings replaces the default whole.
    pub one_shot_taints: Cow<'static, [OneShotRule]>,
    /// The annotation that records which one-shot taints were removed from a node.
    pub one_shot_record_annotation: AnnotationKey,
    /// Who may remove or change any protected taint, lift any cordon and re-add one-shot taints.
    pub permitted: PrincipalList<true>,
    /// Whether and where cordons' owners are recorded.
    pub cordon: Cordon,
    /// Whether and where the adders of protected taints are recorded.
    pub taint_owners: TaintOwners,
    /// Controllers' own ownership records; a list in the settings replaces the default whole.
    pub controller_records: Cow<'static, [ControllerRecord]>,
    /// Whether RBAC may permit what the settings lists do not, and with which verbs.
    pub rbac: Rbac,
    /// The seal over the records; off until it has a key.
    pub record_seal: RecordSeal,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            mode: Mode::Restore,
            protected_taints: vec![ProtectedRule {
                key: PROTECT_EVERYTHING,
                effects: Vec::new(),
                permitted: PrincipalList::default(),
            }],
            unprotected_taints: Cow::Borrowed(DEFAULT_UNPROTECTED_TAINTS),
            one_shot_taints: Cow::Borrowed(DEFAULT_ONE_SHOT_TAINTS),
            one_shot_record_annotation: AnnotationKey::builtin(DEFAULT_ONE_SHOT_RECORD_ANNOTATION),
            permitted: PrincipalList::default(),
            cordon: Cordon::default(),
            taint_owners: TaintOwners::default(),
            controller_records: Cow::Borrowed(DEFAULT_CONTROLLER_RECORDS),
            rbac: Rbac::default(),
            record_seal: RecordSeal::default(),
        }
    }
}

impl PolicySettings for Settings {
    /// What the fields' types cannot check alone: each record needs an annotation of its own
    /// (the one-shot record is always kept). The error names the field moved off its default,
    /// which is the one the user wrote.
    fn check(&self, at: At<'_>) -> Result<(), SettingsError> {
        let records = [
            (
                true,
                "oneShotRecordAnnotation",
                &self.one_shot_record_annotation,
                DEFAULT_ONE_SHOT_RECORD_ANNOTATION,
            ),
            (
                self.cordon.enabled,
                "cordon.ownerAnnotation",
                &self.cordon.owner_annotation,
                DEFAULT_OWNER_ANNOTATION,
            ),
            (
                self.taint_owners.enabled,
                "taintOwners.annotation",
                &self.taint_owners.annotation,
                DEFAULT_TAINT_OWNERS_ANNOTATION,
            ),
        ];
        for (i, a) in records.iter().enumerate() {
            for b in &records[i + 1..] {
                if a.0 && b.0 && a.2 == b.2 {
                    let (named, other) = if a.2.as_str() != a.3 { (a, b) } else { (b, a) };
                    return Err(at.field(named.1).error(format!(
                        "{:?} is also `{}`; each record needs an annotation of its own",
                        named.2.as_str(),
                        other.1
                    )));
                }
            }
        }
        let list = at.field("controllerRecords");
        for (i, record) in self.controller_records.iter().enumerate() {
            let item = list.index(i);
            let taken = records.iter().find(|r| r.0 && *r.2 == record.annotation);
            let earlier = self.controller_records[..i]
                .iter()
                .any(|r| r.annotation == record.annotation);
            if let Some(policy_record) = taken {
                return Err(item.field("annotation").error(format!(
                    "{:?} is the policy's own `{}`",
                    record.annotation.as_str(),
                    policy_record.1
                )));
            }
            if earlier {
                return Err(item
                    .field("annotation")
                    .error(format!("{:?} is listed twice", record.annotation.as_str())));
            }
        }
        match self.record_seal.on() {
            Some(seal) => self.check_seal(seal, at.field("recordSeal")),
            None => Ok(()),
        }
    }
}

impl Settings {
    /// A seal's keys need ids of their own, and the seal an annotation that is no record.
    fn check_seal(&self, seal: &RecordSeal, at: At<'_>) -> Result<(), SettingsError> {
        let keys = at.field("keys");
        for (i, key) in seal.keys.iter().enumerate() {
            if seal.keys[..i].iter().any(|k| k.id == key.id) {
                let item = keys.index(i);
                return Err(item.field("id").error(format!(
                    "{:?} is listed twice; each key needs an id of its own",
                    key.id.as_str()
                )));
            }
        }
        if self.records().contains(&seal.annotation.as_str()) {
            return Err(at.field("annotation").error(format!(
                "{:?} is one of the records the seal covers; the seal needs an annotation of its own",
                seal.annotation.as_str()
            )));
        }
        Ok(())
    }
}

impl Settings {
    /// The one-shot rule that selects `taint`, if any.
    pub fn one_shot_rule(&self, taint: &Taint<'_>) -> Option<&OneShotRule> {
        self.one_shot_taints.iter().find(|r| r.selects(taint))
    }

    /// The protected-taint rule that decides `taint`: `None` for one-shot and unprotected taints
    /// and for those no rule selects.
    pub fn protecting_rule(&self, taint: &Taint<'_>) -> Option<&ProtectedRule> {
        if self.one_shot_rule(taint).is_some()
            || self.unprotected_taints.iter().any(|s| s.matches(taint))
        {
            return None;
        }
        self.protected_taints.iter().find(|r| r.matches(taint))
    }

    /// Every annotation the policy judges as a record: the records ([`Settings::records`]) and
    /// the seal's, sealed or not, so that turning the seal on asks for no new `matchConditions`
    /// and a seal rewritten alone is still judged. A write through `nodes/status` that changes
    /// none of them is left alone (docs/records.md); the generated `matchConditions` compare
    /// exactly these keys.
    pub fn record_annotations(&self) -> Vec<&str> {
        let mut keys = self.records();
        keys.push(self.record_seal.annotation.as_str());
        keys
    }

    /// The records: the policy's own (taint owners, one-shot removals, the cordon owner, where
    /// enabled) and each controller's. The seal, where on, covers exactly these.
    pub fn records(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = Vec::with_capacity(4 + self.controller_records.len());
        keys.extend(self.taint_owners.key());
        keys.push(self.one_shot_record_annotation.as_str());
        if self.cordon.enabled {
            keys.push(self.cordon.owner_annotation.as_str());
        }
        keys.extend(
            self.controller_records
                .iter()
                .map(|r| r.annotation.as_str()),
        );
        keys
    }
}
