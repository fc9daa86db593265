//! Timing in the real hosts, the way policy-server and `kwctl bench` run a policy, with each
//! policy interleaved against its baseline on the same payload so that machine noise hits both
//! alike: waPC modules in `wapc::WapcHost` on wasmtime-provider, gatekeeper artifacts in the
//! burrego emulation (`opa.rs`).

use std::time::Instant;

use serde_json::Value;
use wasm_tests::kubewarden::WapcPolicy;

use crate::direct::{DirectHost, MemoryUse, Operators};
use crate::opa::{BurregoHost, Evaluator};

/// A host running one module: fresh instances, and evaluations on them.
pub trait Host {
    type Instance;
    /// What one evaluation answers, compared after each timed evaluation with the answer the
    /// run was checked against, so that no timing is of an error path.
    type Answer: PartialEq + std::fmt::Debug;
    fn name(&self) -> &str;
    /// A new instance, ready to evaluate: what the host does for every request.
    fn instance(&self) -> Result<Self::Instance, String>;
    fn evaluate(
        &self,
        instance: &mut Self::Instance,
        payload: &[u8],
    ) -> Result<Self::Answer, String>;

    /// One evaluation on a fresh instance.
    fn evaluate_once(&self, payload: &[u8]) -> Result<Self::Answer, String> {
        self.evaluate(&mut self.instance()?, payload)
    }
}

/// A built waPC module, compiled once for both hosts.
pub struct Module {
    pub name: String,
    pub size: ModuleSize,
    wapc: WapcPolicy,
    direct: DirectHost,
}

impl Module {
    pub fn load(name: &str, path: &std::path::Path) -> Result<Module, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Module {
            name: name.to_owned(),
            size: ModuleSize::of(name, &bytes),
            wapc: WapcPolicy::from_bytes(&bytes)?,
            direct: DirectHost::from_bytes(&bytes).map_err(|e| format!("{name}: {e}"))?,
        })
    }

    /// One `validate` on a fresh instance through the real host; the guest's answer.
    pub fn validate_once(&self, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.wapc.call("validate", payload)
    }

    /// Operators executed per request and warm (wasmtime fuel), answering `expected` each time.
    pub fn operators(&self, payload: &[u8], expected: &[u8]) -> Result<Operators, String> {
        self.direct
            .operators(payload, expected)
            .map_err(|e| format!("{}: {e}", self.name))
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

impl Host for Module {
    type Instance = wapc::WapcHost;
    type Answer = Vec<u8>;
    fn name(&self) -> &str {
        &self.name
    }
    fn instance(&self) -> Result<wapc::WapcHost, String> {
        self.wapc.instance()
    }
    fn evaluate(&self, host: &mut wapc::WapcHost, payload: &[u8]) -> Result<Vec<u8>, String> {
        host.call("validate", payload).map_err(|e| e.to_string())
    }
}

/// A gatekeeper artifact (OPA ABI) in the burrego emulation, evaluated as Kubewarden's
/// gatekeeper mode does: entrypoint 0, the payload as input, `{}` as data.
pub struct OpaModule {
    pub name: String,
    pub size: ModuleSize,
    host: BurregoHost,
    /// The same module on a fuel-metering engine, never timed.
    counting: BurregoHost,
}

/// The entrypoint Kubewarden always evaluates (`policy/violation` in these modules).
const ENTRYPOINT: i32 = 0;
/// The data document of a policy that is not context-aware (burrego's `KubernetesContext::Empty`).
const DATA: &[u8] = b"{}";

impl OpaModule {
    pub fn from_bytes(name: &str, bytes: &[u8]) -> Result<OpaModule, String> {
        Ok(OpaModule {
            name: name.to_owned(),
            size: ModuleSize::of(name, bytes),
            host: BurregoHost::from_bytes(bytes).map_err(|e| format!("{name}: {e}"))?,
            counting: BurregoHost::counting(bytes).map_err(|e| format!("{name}: {e}"))?,
        })
    }

    /// Operators executed by a new evaluator up to its first answer (set-up included) and by a
    /// warm evaluation, answering `expected` each time.
    pub fn operators(&self, payload: &[u8], expected: &Value) -> Result<Operators, String> {
        let fail = |e: String| format!("{}: {e}", self.name);
        let mut evaluator = self.counting.evaluator().map_err(fail)?;
        Operators::count(|| {
            let answer = evaluator
                .evaluate(ENTRYPOINT, payload, DATA)
                .map_err(fail)?;
            if answer != *expected {
                return Err(format!(
                    "{}: the fuel-metered host answered {answer}",
                    self.name
                ));
            }
            Ok(evaluator.operators())
        })
    }

    /// Memory of a fresh evaluator before and after evaluating `payload`.
    pub fn memory(&self, payload: &[u8]) -> Result<MemoryUse, String> {
        let mut evaluator = self.instance()?;
        let after_init = evaluator.memory_bytes();
        self.evaluate(&mut evaluator, payload)?;
        Ok(MemoryUse {
            after_init,
            after_validate: evaluator.memory_bytes(),
        })
    }
}

impl Host for OpaModule {
    type Instance = Evaluator;
    /// The result set, parsed as burrego parses it.
    type Answer = Value;
    fn name(&self) -> &str {
        &self.name
    }
    fn instance(&self) -> Result<Evaluator, String> {
        self.host
            .evaluator()
            .map_err(|e| format!("{}: {e}", self.name))
    }
    fn evaluate(&self, evaluator: &mut Evaluator, payload: &[u8]) -> Result<Value, String> {
        evaluator
            .evaluate(ENTRYPOINT, payload, DATA)
            .map_err(|e| format!("{}: {e}", self.name))
    }
}

/// Samples in microseconds.
#[derive(Default)]
pub struct Samples {
    /// A new instance ready to evaluate: for waPC a new store and instance, `_start` and
    /// `wapc_init`; for burrego also the memory, the linker and the load-time calls.
    pub instantiate: Vec<f64>,
    /// Instantiation, one evaluation, and dropping the instance: what policy-server pays per
    /// request.
    pub per_request: Vec<f64>,
    /// One evaluation on an instance that has already served requests.
    pub warm: Vec<f64>,
}

fn micros(from: Instant) -> f64 {
    from.elapsed().as_secs_f64() * 1e6
}

/// The answer every evaluation must give, or the run stops.
fn check<H: Host>(host: &H, answer: H::Answer, expected: &H::Answer) -> Result<(), String> {
    if answer == *expected {
        Ok(())
    } else {
        Err(format!(
            "{}: an evaluation answered {answer:?} instead of {expected:?}",
            host.name()
        ))
    }
}

/// One module of a measured pair: the answer it must give and its times so far.
struct Side<'a, H: Host> {
    host: &'a H,
    /// The answer every evaluation must give.
    expected: &'a H::Answer,
    samples: Samples,
}

fn fresh<H: Host>(side: &mut Side<'_, H>, payload: &[u8]) -> Result<(), String> {
    let host = side.host;
    let start = Instant::now();
    let mut instance = host.instance()?;
    side.samples.instantiate.push(micros(start));
    let answer = host.evaluate(&mut instance, payload)?;
    drop(instance);
    side.samples.per_request.push(micros(start));
    check(host, answer, side.expected)
}

fn warm<H: Host>(
    side: &mut Side<'_, H>,
    instance: &mut H::Instance,
    payload: &[u8],
) -> Result<(), String> {
    let start = Instant::now();
    let answer = side.host.evaluate(instance, payload)?;
    side.samples.warm.push(micros(start));
    check(side.host, answer, side.expected)
}

/// Rounds per input of each measurement.
#[derive(Clone, Copy)]
pub struct Rounds {
    /// Rounds of a fresh instance per request.
    pub fresh: usize,
    /// Rounds on a warm instance.
    pub warm: usize,
}

/// Measures the policy and its baseline (`hosts`) on `payload`, alternating which goes first
/// each round; `expected` holds the answer each must give every time.
pub fn pair<H: Host>(
    hosts: [&H; 2],
    payload: &[u8],
    expected: [&H::Answer; 2],
    rounds: Rounds,
) -> Result<(Samples, Samples), String> {
    let [policy, baseline] = hosts;
    let [want_p, want_b] = expected;
    let side = |host, expected| Side {
        host,
        expected,
        samples: Samples::default(),
    };
    let (mut p, mut b) = (side(policy, want_p), side(baseline, want_b));
    for round in 0..rounds.fresh {
        if round % 2 == 0 {
            fresh(&mut p, payload)?;
            fresh(&mut b, payload)?;
        } else {
            fresh(&mut b, payload)?;
            fresh(&mut p, payload)?;
        }
    }
    let mut warm_policy = policy.instance()?;
    let mut warm_baseline = baseline.instance()?;
    // Untimed calls first: the first call grows memory, as `kwctl bench`'s warm-up does.
    for _ in 0..3 {
        check(policy, policy.evaluate(&mut warm_policy, payload)?, want_p)?;
        check(
            baseline,
            baseline.evaluate(&mut warm_baseline, payload)?,
            want_b,
        )?;
    }
    for round in 0..rounds.warm {
        if round % 2 == 0 {
            warm(&mut p, &mut warm_policy, payload)?;
            warm(&mut b, &mut warm_baseline, payload)?;
        } else {
            warm(&mut b, &mut warm_baseline, payload)?;
            warm(&mut p, &mut warm_policy, payload)?;
        }
    }
    Ok((p.samples, b.samples))
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

/// A module's size: what it costs to ship and, in its static data, to instantiate.
#[derive(Clone)]
pub struct ModuleSize {
    pub module: String,
    pub bytes: usize,
    /// The bytes of its data segments: what instantiation copies into the instance's memory.
    pub static_data: usize,
}

impl ModuleSize {
    /// The sizes of module `wasm` (static data 0 for bytes that are no module: those fail to
    /// load anyway).
    pub fn of(module: &str, wasm: &[u8]) -> ModuleSize {
        let mut static_data = 0;
        for payload in wasmparser::Parser::new(0).parse_all(wasm) {
            if let Ok(wasmparser::Payload::DataSection(reader)) = payload {
                static_data += reader
                    .into_iter()
                    .flatten()
                    .map(|d| d.data.len())
                    .sum::<usize>();
            }
        }
        ModuleSize {
            module: module.to_owned(),
            bytes: wasm.len(),
            static_data,
        }
    }
}
