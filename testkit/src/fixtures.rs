//! The bundled example settings and requests, compiled in so that the fuzz targets start from
//! realistic inputs without reading files.

use serde::Deserialize;
use serde_json::value::RawValue;

const SETTINGS: &[&str] = &[
    "{}",
    include_str!("../../policies/taint-preservation/examples/settings/deny.json"),
    include_str!("../../policies/taint-preservation/examples/settings/gpu-fleet.json"),
    include_str!("../../policies/toleration-injection/examples/settings/hostpath-provisioner.json"),
    include_str!("../../policies/toleration-injection/examples/settings/critical-daemonsets.json"),
    include_str!("../../policies/toleration-injection/examples/settings/tenant-restriction.json"),
];

const REVIEWS: &[&str] = &[
    include_str!(
        "../../policies/taint-preservation/examples/requests/incident-1-stale-taint-patch.json"
    ),
    include_str!(
        "../../policies/taint-preservation/examples/requests/incident-2-uncordon-by-other-controller.json"
    ),
    include_str!("../../policies/taint-preservation/examples/requests/person-cordons.json"),
    include_str!(
        "../../policies/toleration-injection/examples/requests/flannel-v0.24.4-daemonset.json"
    ),
    include_str!("../../policies/toleration-injection/examples/requests/hostpath-helper-pod.json"),
    include_str!(
        "../../policies/toleration-injection/examples/requests/cronjob-tolerating-master.json"
    ),
];

/// Settings texts of both policies (each is invalid for the other policy, which is a case too).
pub fn bundled_settings() -> &'static [&'static str] {
    SETTINGS
}

/// The `request` (an AdmissionRequest) of bundled AdmissionReviews of both policies.
pub fn bundled_requests() -> Vec<&'static str> {
    #[derive(Deserialize)]
    struct Review<'a> {
        #[serde(borrow)]
        request: &'a RawValue,
    }
    REVIEWS
        .iter()
        .map(|review| {
            serde_json::from_str::<Review<'static>>(review)
                .expect("bundled reviews carry a request")
                .request
                .get()
        })
        .collect()
}
