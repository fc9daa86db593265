//! The owners of a stored Node's taints as the policy finds them: what `taintguard what-if`
//! reports before a platform team installs the policy on a running cluster (README, "Installing
//! on a running cluster"). Taints applied before the install have no entry in the policy's own
//! record; a controller's own record may still name their writer.

use super::node::NodeView;
use super::owners::OwnerRecord;
use super::seal;
use super::settings::Settings;
use taintguard::json::Object;

/// Where the owner of a stored taint is known from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The policy's owner record names this username.
    Recorded(String),
    /// The controller record kept in this annotation lists the taint.
    Controller(String),
    /// Nothing names an owner: only principals the settings permit may remove or change it.
    Unknown,
}

/// One taint a stored Node carries, and its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTaint {
    /// `key=value:Effect`, as messages name taints.
    pub text: String,
    /// The taint's key.
    pub key: String,
    /// The taint's effect, as the Node writes it (`NoSchedule`, `PreferNoSchedule`, `NoExecute`).
    pub effect: String,
    /// Where the taint's owner is known from, if anywhere.
    pub owner: Owner,
}

/// The node's view, its records read as they count: through the seal, where records are sealed
/// (docs/records.md, "Sealed records"), so a record written around the policy names no owner.
fn read_node<'a>(object: &'a Object<'a>, settings: &Settings) -> Result<NodeView<'a>, String> {
    let mut view = NodeView::read(object, "node")?;
    let name = view.name.as_ref().map_or("", |n| n.as_str()).to_owned();
    for found in seal::unvouched(&view, settings, &name)? {
        view.count_as(&found.key, found.counts);
    }
    Ok(view)
}

fn parse(node: &str) -> Result<Object<'_>, String> {
    Object::parse(node).map_err(|e| format!("node: {e}"))
}

/// The owner of each taint `node` (a Node's JSON text) carries, in the node's order.
///
/// # Errors
///
/// `node` is not a Node object the policy can read.
///
/// # Examples
///
/// ```
/// use taint_preservation::stored::{taint_owners, Owner};
/// use taint_preservation::Settings;
///
/// let node = r#"{"kind": "Node", "metadata": {"name": "n1",
///     "annotations": {"nfd.node.kubernetes.io/taints": "feature.node.kubernetes.io/gpu:NoSchedule"}},
///     "spec": {"taints": [{"key": "feature.node.kubernetes.io/gpu", "effect": "NoSchedule"},
///                         {"key": "example.com/dedicated", "effect": "NoSchedule"}]}}"#;
/// let owners = taint_owners(node, &Settings::default()).unwrap();
/// assert_eq!(owners[0].owner, Owner::Controller("nfd.node.kubernetes.io/taints".into()));
/// assert_eq!(owners[1].owner, Owner::Unknown);
/// ```
pub fn taint_owners(node: &str, settings: &Settings) -> Result<Vec<StoredTaint>, String> {
    let object = parse(node)?;
    let view = read_node(&object, settings)?;
    let record = OwnerRecord::on(&view, settings.taint_owners.key())?;
    let mut listed = Vec::new();
    for controller in settings.controller_records.iter() {
        let key = controller.annotation.as_str();
        listed.push((key, controller.listed(view.annotation(key)?.as_deref())));
    }
    Ok(view
        .taints
        .iter()
        .map(|taint| {
            let owner = match record.owner(taint) {
                Some(owner) => Owner::Recorded(owner.to_owned()),
                None => listed
                    .iter()
                    .find(|(_, listed)| listed.lists(taint))
                    .map_or(Owner::Unknown, |(key, _)| {
                        Owner::Controller((*key).to_owned())
                    }),
            };
            let (key, effect) = taint.identity();
            StoredTaint {
                text: taint.describe(),
                key: key.to_owned(),
                effect: effect.to_owned(),
                owner,
            }
        })
        .collect())
}

/// The value of the policy's owner record on `node` with `owners` (`key`, `effect`, username)
/// added to what it holds: what a permitted principal writes into the annotation
/// `taintOwners.annotation` so that each writer keeps managing its taint. `None` when taint
/// ownership is off or nothing can be recorded.
///
/// # Errors
///
/// `node` is not a Node object the policy can read.
pub fn record_with_owners(
    node: &str,
    settings: &Settings,
    owners: &[(&str, &str, &str)],
) -> Result<Option<String>, String> {
    let Some(annotation) = settings.taint_owners.key() else {
        return Ok(None);
    };
    let object = parse(node)?;
    let view = read_node(&object, settings)?;
    let mut record = OwnerRecord::on(&view, Some(annotation))?;
    for (key, effect, owner) in owners {
        let taint = view.taints.iter().find(|t| t.identity() == (*key, *effect));
        if let Some(taint) = taint {
            record.set(taint, owner);
        }
    }
    Ok(record.to_annotation())
}

/// The seal (`recordSeal`) over the records `node` carries as they stand, as the policy would
/// write it into `recordSeal.annotation`: for a record a permitted principal writes where only
/// a build that cannot seal judges it (docs/records.md, "Sealed records"). `None` when records
/// are not sealed.
///
/// # Errors
///
/// `node` is not a Node object the policy can read.
pub fn seal(node: &str, settings: &Settings) -> Result<Option<String>, String> {
    let Some(record_seal) = settings.record_seal.on() else {
        return Ok(None);
    };
    let object = parse(node)?;
    let view = NodeView::read(&object, "node")?;
    let mut records = seal::Records::default();
    for key in settings.records() {
        records.insert(key, view.annotation(key)?);
    }
    let name = view.name.as_ref().map_or("", |n| n.as_str());
    Ok(Some(seal::write(record_seal, name, &records)))
}
