//! The toleration-injection policy as a Kubewarden (waPC) module.
taintguard_kubewarden::policy!(taintguard::toleration_injection::TolerationInjection);
