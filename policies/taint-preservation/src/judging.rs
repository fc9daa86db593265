//! One request judged: the context every step reads (settings, requester, mode, permission,
//! the stored and the written Node), what the steps gather, and the judgement they come to. The
//! steps live with what they judge: taint changes in `taints.rs`, each record in its own module
//! (`record.rs`, `owners.rs`, `controllers.rs`, `cordon.rs`), the verdict in `respond.rs`; the
//! order they run in is `Judging::judge`, in `lib.rs`. This module imports none of them.

use super::findings::Finding;
use super::node::NodeView;
use super::seal::Repairs;
use super::settings::{Mode, Settings};
use super::NodeWrite;
use taintguard::admission::{AdmissionRequest, Operation};
use taintguard::principal::Principal;
use taintguard::verdict::Verdict;

/// What the requester may do beyond the per-rule lists: change protected taints and the
/// policy's records (`taints`), and lift or reassign another's cordon (`cordon`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Permission {
    pub taints: bool,
    pub cordon: bool,
}

/// A verdict, and which permissions would have changed it.
pub(super) struct Judgement {
    pub verdict: Verdict,
    pub wants: Permission,
    pub node: String,
}

/// A request to judge, read once: what every step of the judgement needs.
pub(super) struct Judging<'a> {
    pub settings: &'a Settings,
    pub who: Principal<'a>,
    pub mode: Mode,
    /// What the requester may do beyond the per-rule lists (the settings, or RBAC).
    pub permission: Permission,
    /// The stored Node; `None` for a CREATE.
    pub old: Option<NodeView<'a>>,
    /// The Node as the request writes it.
    pub new: NodeView<'a>,
    /// How messages name the node.
    pub node_name: String,
    /// What reading the records through the seal put back (`seal.rs`).
    pub repairs: Repairs,
}

/// What judging a request gathers on its way to a verdict.
#[derive(Default)]
pub(super) struct Gathered<'a> {
    pub findings: Vec<Finding<'a>>,
    /// Record annotations to set (`Some`) or remove (`None`), by key.
    pub annotations: Vec<(String, Option<String>)>,
    /// Audit annotations of what the records learn.
    pub audit: Vec<(String, String)>,
    pub warnings: Vec<String>,
}

impl<'a> Judging<'a> {
    /// Reads the Node views of a CREATE or UPDATE of a Node, and the permission the settings
    /// lists give the requester.
    ///
    /// # Errors
    ///
    /// A request without an object, an UPDATE without `oldObject`, or a Node the views cannot
    /// read, named by field.
    pub fn read(
        request: &'a AdmissionRequest<'a>,
        settings: &'a Settings,
        mode: Mode,
    ) -> Result<Judging<'a>, String> {
        let write = NodeWrite::of(request).unwrap_or(NodeWrite::Node);
        let object = request.object.as_ref().ok_or("the request has no object")?;
        let mut new = NodeView::read(object, "object")?;
        let old = match request.operation {
            Operation::Update => Some(NodeView::read(
                request
                    .old_object
                    .as_ref()
                    .ok_or("an UPDATE without oldObject cannot be judged")?,
                "oldObject",
            )?),
            _ => None,
        };
        // What a status write stores: the API server puts the stored spec back
        // (`nodeStatusStrategy.PrepareForUpdate`), so only its metadata is judged.
        if let (NodeWrite::Status, Some(old)) = (write, &old) {
            new.keep_spec_of(old);
        }
        let node_name = new
            .name
            .as_ref()
            .map(|n| n.as_str().to_owned())
            .or_else(|| request.name.as_ref().map(|n| n.as_str().to_owned()))
            .unwrap_or_else(|| "(unnamed)".to_owned());
        let who = request.principal();
        // The settings lists decide first; RBAC may grant more (`judge_with_rbac`).
        let listed = settings.permitted.allows(&who);
        Ok(Judging {
            settings,
            who,
            mode,
            permission: Permission {
                taints: listed,
                cordon: listed,
            },
            old,
            new,
            node_name,
            repairs: Repairs::default(),
        })
    }
}
