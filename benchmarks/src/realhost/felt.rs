//! What a platform team feels besides saturated throughput (issue 40): how long policy-server
//! takes to become ready with both policies, against the same configuration with null modules in
//! their place, and the p99 latency of a policy at a fixed moderate rate, sent open loop, against
//! the null module at the same rate. (Resident memory under saturation is read with every load
//! point: `server.rs`.)

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::http::Connection;
use super::server::{self, PolicyServer};

/// Seconds from starting policy-server to its readiness probe answering, one per round.
pub struct Startup {
    pub policies: Vec<f64>,
    pub null: Vec<f64>,
}

/// `rounds` start-ups of `binary` in `dir`, alternately with the policies of `modules.dist` and
/// with `modules.null` under the same ids and settings, each with an empty download folder, so
/// that every start copies (`file://`, policy-server's "download") and precompiles its modules
/// anew.
///
/// # Errors
///
/// A start-up that fails or never becomes ready.
pub fn startup(
    binary: &Path,
    dir: &Path,
    modules: &super::Modules,
    rounds: usize,
) -> Result<Startup, String> {
    let (dist, null) = (&modules.dist, &modules.null);
    // Every policy folder's module (wasm_tests::policies), under its name as in a default
    // install, with default settings.
    let policy_names = wasm_tests::policies();
    let entries = |module: &dyn Fn(&str) -> std::path::PathBuf| -> Vec<server::Entry> {
        policy_names
            .iter()
            .map(|policy| server::Entry {
                id: policy.clone(),
                module: module(policy),
                settings: json!({}),
                reads_namespaces: false,
            })
            .collect()
    };
    let policies = entries(&|policy| dist.join(format!("{policy}.wasm")));
    let nulls = entries(&|_| null.to_owned());
    let mut startup = Startup {
        policies: Vec::new(),
        null: Vec::new(),
    };
    for _ in 0..rounds {
        for (entries, series) in [
            (&policies, &mut startup.policies),
            (&nulls, &mut startup.null),
        ] {
            let downloads = dir.join("downloads");
            if downloads.exists() {
                std::fs::remove_dir_all(&downloads)
                    .map_err(|e| format!("{}: {e}", downloads.display()))?;
            }
            let server = PolicyServer::start(binary, dir, entries, None)?;
            series.push(server.started_in.as_secs_f64());
        }
    }
    Ok(startup)
}

/// The p99 latency (microseconds) of `seconds` of POSTs of `body` to `path` at `rate` a second,
/// open loop: request k is due at k ÷ `rate` after the start, spread over [`CONNECTIONS`]
/// keep-alive connections, and its latency counts from when it was due, so that a request kept
/// waiting by a slow one before it counts its wait (no coordinated omission). One second at the
/// rate first warms the module and is not counted.
///
/// # Errors
///
/// A connection that fails or an answer that is not 200.
pub fn p99_at(target: &Target<'_>, rate: f64, seconds: f64) -> Result<f64, String> {
    send_at(target, rate, 1.0)?;
    let mut latencies = send_at(target, rate, seconds)?;
    latencies.sort_by(f64::total_cmp);
    let index = ((latencies.len() as f64 * 0.99).ceil() as usize).saturating_sub(1);
    latencies
        .get(index)
        .copied()
        .ok_or_else(|| format!("POST {}: no request sent", target.path))
}

/// Where the fixed-rate load goes: a path of policy-server on loopback and the body POSTed.
pub struct Target<'a> {
    /// policy-server's port.
    pub port: u16,
    /// The path, `/validate/<id>`.
    pub path: &'a str,
    /// The AdmissionReview sent.
    pub body: &'a [u8],
}

/// Connections of the fixed-rate load: enough that one slow answer does not hold up the
/// schedule at a rate well under saturation.
pub const CONNECTIONS: usize = 4;

/// Each request's latency from when it was due, in microseconds.
fn send_at(target: &Target<'_>, rate: f64, seconds: f64) -> Result<Vec<f64>, String> {
    let port = target.port;
    let total = (rate * seconds) as usize;
    let start = Instant::now() + Duration::from_millis(50);
    let threads: Vec<_> = (0..CONNECTIONS)
        .map(|first| {
            let (path, body) = (target.path.to_owned(), target.body.to_vec());
            std::thread::spawn(move || -> Result<Vec<f64>, String> {
                let mut connection = Connection::open(port)?;
                let mut latencies = Vec::new();
                for k in (first..total).step_by(CONNECTIONS) {
                    let due = start + Duration::from_secs_f64(k as f64 / rate);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                    connection.post(&path, &body)?;
                    latencies.push(due.elapsed().as_secs_f64() * 1e6);
                }
                Ok(latencies)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(total);
    for thread in threads {
        all.extend(thread.join().map_err(|_| "a load thread panicked")??);
    }
    Ok(all)
}
