//! Timing in the real host (`wapc::WapcHost` on wasmtime-provider), the way policy-server and
//! `kwctl bench` run a policy, with each policy interleaved against the baseline on the same
//! payload so that machine noise hits both alike.

use std::time::Instant;

use wasm_tests::kubewarden::WapcPolicy;

use crate::direct::{DirectHost, MemoryUse};

/// A built module, compiled once for both hosts.
pub struct Module {
    pub name: String,
    pub size: usize,
    wapc: WapcPolicy,
    direct: DirectHost,
}

impl Module {
    pub fn load(name: &str, path: &std::path::Path) -> Result<Module, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Module {
            name: name.to_owned(),
            size: bytes.len(),
            wapc: WapcPolicy::from_bytes(&bytes)?,
            direct: DirectHost::from_bytes(&bytes).map_err(|e| format!("{name}: {e}"))?,
        })
    }

    /// One `validate` on a fresh instance through the real host; the guest's answer.
    pub fn validate_once(&self, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.wapc.call("validate", payload)
    }

    /// Memory of a fresh instance that validated `payload`, checked to answer what the real host
    /// answered.
    pub fn memory(&self, payload: &[u8], expected: &[u8]) -> Result<MemoryUse, String> {
        let (memory, answer) = self
            .direct
            .validate(payload)
            .map_err(|e| format!("{}: {e}", self.name))?;
        if answer != expected {
            return Err(format!(
                "{}: the direct host answered differently",
                self.name
            ));
        }
        Ok(memory)
    }
}

/// Samples in microseconds.
#[derive(Default)]
pub struct Samples {
    /// New store and instance, `_start` and `wapc_init`.
    pub instantiate: Vec<f64>,
    /// Instantiation, one `validate`, and dropping the instance: what policy-server pays per request.
    pub per_request: Vec<f64>,
    /// One `validate` on an instance that has already served requests.
    pub warm: Vec<f64>,
}

fn micros(from: Instant) -> f64 {
    from.elapsed().as_secs_f64() * 1e6
}

fn fresh(module: &Module, payload: &[u8], into: &mut Samples) -> Result<(), String> {
    let start = Instant::now();
    let host = module.wapc.instance()?;
    into.instantiate.push(micros(start));
    host.call("validate", payload).map_err(|e| e.to_string())?;
    drop(host);
    into.per_request.push(micros(start));
    Ok(())
}

/// Measures `policy` and `baseline` on `payload`, alternating which goes first each round.
pub fn pair(
    policy: &Module,
    baseline: &Module,
    payload: &[u8],
    fresh_rounds: usize,
    warm_rounds: usize,
) -> Result<(Samples, Samples), String> {
    let (mut p, mut b) = (Samples::default(), Samples::default());
    for round in 0..fresh_rounds {
        if round % 2 == 0 {
            fresh(policy, payload, &mut p)?;
            fresh(baseline, payload, &mut b)?;
        } else {
            fresh(baseline, payload, &mut b)?;
            fresh(policy, payload, &mut p)?;
        }
    }
    let warm_policy = policy.wapc.instance()?;
    let warm_baseline = baseline.wapc.instance()?;
    let warm = |host: &wapc::WapcHost, into: &mut Samples| -> Result<(), String> {
        let start = Instant::now();
        host.call("validate", payload).map_err(|e| e.to_string())?;
        into.warm.push(micros(start));
        Ok(())
    };
    // Untimed calls first: the first call grows memory, as `kwctl bench`'s warm-up does.
    for _ in 0..3 {
        warm_policy
            .call("validate", payload)
            .map_err(|e| e.to_string())?;
        warm_baseline
            .call("validate", payload)
            .map_err(|e| e.to_string())?;
    }
    for round in 0..warm_rounds {
        if round % 2 == 0 {
            warm(&warm_policy, &mut p)?;
            warm(&warm_baseline, &mut b)?;
        } else {
            warm(&warm_baseline, &mut b)?;
            warm(&warm_policy, &mut p)?;
        }
    }
    Ok((p, b))
}

/// Median and 99th percentile.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub median: f64,
    pub p99: f64,
}

impl Stat {
    pub fn of(samples: &[f64]) -> Stat {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let at =
            |q: f64| sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
        Stat {
            median: at(0.5),
            p99: at(0.99),
        }
    }
}
