//! The taint-preservation policy as a Kubewarden (waPC) module.
taintguard_kubewarden::policy!(taintguard::taint_preservation::TaintPreservation);
