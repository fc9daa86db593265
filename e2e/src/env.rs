//! What the scenarios act on. It has its own module, rather than living in main.rs, so that the
//! scenario modules take it from below and main.rs, which starts them, is imported by none.

use std::path::PathBuf;

use taintguard_control_plane::binaries::Binaries;
use taintguard_control_plane::cluster::Cluster;

use crate::kubectl::Kubectl;

/// What the scenarios act on.
pub struct Env {
    pub repo: PathBuf,
    pub bins: Binaries,
    pub cluster: Cluster,
    pub kubectl: Kubectl,
}
