//! The labels by which the suite's deployed policies select what they judge. Every module that
//! builds an object or a policy names them, so they sit below all of those, importing nothing.

/// Each variant's webhook judges only the objects carrying this label with the variant's name,
/// so that variants of one policy can be deployed side by side.
pub const VARIANT_LABEL: &str = "e2e.taintguard.io/variant";

/// The label of the Nodes whose taints the `nodes` variant tolerates.
pub const POOL_LABEL: &str = "e2e.taintguard.io/pool";
