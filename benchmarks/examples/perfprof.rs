#![allow(dead_code, clippy::all)]
//! A minimal waPC host straight on wasmtime, for what `wapc::WapcHost` does not expose: the
//! instance's linear-memory size. It links the same WASI implementation and waPC imports as
//! wasmtime-provider and runs the same sequence (`_start`, `wapc_init`, `__guest_call`), so the
//! memory it reports is the memory a policy-server instance grows to. Timings come from the real
//! host (`wapc.rs`), never from here.

use wasi_common::sync::WasiCtxBuilder;
use wasi_common::WasiCtx;
use wasmtime::{
    Caller, Config, Engine, Extern, Instance, InstancePre, Linker, Memory, Module, Store,
};

struct State {
    wasi: WasiCtx,
    operation: &'static str,
    payload: Vec<u8>,
    response: Result<Vec<u8>, String>,
}

pub struct DirectHost {
    pre: InstancePre<State>,
    engine: Engine,
    /// The same module on an engine that meters fuel, for [`DirectHost::operators`].
    counting: (InstancePre<State>, Engine),
}

/// Wasm operators a module executes (wasmtime fuel): deterministic, unlike time.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub struct Operators {
    /// `_start`, `wapc_init` and the first `validate` of a fresh instance (for the gatekeeper
    /// artifacts: burrego's set-up calls and the first evaluation).
    pub per_request: u64,
    /// One `validate` on an instance that has served three.
    pub warm: u64,
}

impl Operators {
    /// The counts from `evaluate`, which evaluates once on one instance and answers the
    /// operators that instance has executed so far: after the first call (set-up included) and
    /// for the fourth alone. One sequence for both hosts, so their counts compare.
    pub fn count<E>(mut evaluate: impl FnMut() -> Result<u64, E>) -> Result<Operators, E> {
        let per_request = evaluate()?;
        evaluate()?;
        let before = evaluate()?;
        let warm = evaluate()? - before;
        Ok(Operators { per_request, warm })
    }
}

/// Linear-memory sizes of one fresh instance, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct MemoryUse {
    pub after_init: usize,
    /// Memory never shrinks, so its size after `validate` is the high-water mark.
    pub after_validate: usize,
}

fn memory(caller: &mut Caller<'_, State>) -> wasmtime::Result<Memory> {
    match caller.get_export("memory") {
        Some(Extern::Memory(memory)) => Ok(memory),
        _ => Err(wasmtime::Error::msg("the guest exports no memory")),
    }
}

fn read(caller: &mut Caller<'_, State>, ptr: i32, len: i32) -> wasmtime::Result<Vec<u8>> {
    let memory = memory(caller)?;
    let mut out = vec![0; len as usize];
    memory.read(&caller, ptr as usize, &mut out)?;
    Ok(out)
}

fn link_wapc(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.func_wrap(
        "wapc",
        "__guest_request",
        |mut caller: Caller<'_, State>, op_ptr: i32, ptr: i32| {
            let memory = memory(&mut caller)?;
            let (operation, payload) = {
                let state = caller.data();
                (
                    state.operation,
                    std::mem::take(&mut caller.data_mut().payload),
                )
            };
            memory.write(&mut caller, ptr as usize, &payload)?;
            memory.write(&mut caller, op_ptr as usize, operation.as_bytes())?;
            caller.data_mut().payload = payload;
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_response",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            caller.data_mut().response = Ok(read(&mut caller, ptr, len)?);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "wapc",
        "__guest_error",
        |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
            let text = read(&mut caller, ptr, len)?;
            caller.data_mut().response = Err(String::from_utf8_lossy(&text).into_owned());
            Ok(())
        },
    )?;
    // The policies call no host capabilities; these exist so that modules importing them link.
    linker.func_wrap("wapc", "__console_log", |_: i32, _: i32| {})?;
    linker.func_wrap(
        "wapc",
        "__host_call",
        |_: i32, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32| 0i32,
    )?;
    linker.func_wrap("wapc", "__host_response", |_: i32| {})?;
    linker.func_wrap("wapc", "__host_response_len", || 0i32)?;
    linker.func_wrap("wapc", "__host_error", |_: i32| {})?;
    linker.func_wrap("wapc", "__host_error_len", || 0i32)?;
    Ok(())
}

fn instance_pre(engine: &Engine, bytes: &[u8]) -> wasmtime::Result<InstancePre<State>> {
    let module = Module::new(engine, bytes)?;
    let mut linker = Linker::new(engine);
    wasi_common::sync::add_to_linker(&mut linker, |s: &mut State| &mut s.wasi)?;
    link_wapc(&mut linker)?;
    linker.instantiate_pre(&module)
}

/// A fresh instance, `_start`ed and `wapc_init`ialised, and its memory.
fn initialised(
    pre: &InstancePre<State>,
    store: &mut Store<State>,
) -> wasmtime::Result<(Instance, Memory)> {
    let instance = pre.instantiate(&mut *store)?;
    for start in ["_start", "wapc_init"] {
        if let Ok(f) = instance.get_typed_func::<(), ()>(&mut *store, start) {
            f.call(&mut *store, ())?;
        }
    }
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| wasmtime::Error::msg("the guest exports no memory"))?;
    Ok((instance, memory))
}

/// One `validate` of the store's payload: the guest's answer.
fn validate_once(instance: &Instance, store: &mut Store<State>) -> wasmtime::Result<Vec<u8>> {
    let call = instance.get_typed_func::<(i32, i32), i32>(&mut *store, "__guest_call")?;
    let len = store.data().payload.len() as i32;
    let ok = call.call(&mut *store, ("validate".len() as i32, len))?;
    let response = std::mem::replace(&mut store.data_mut().response, Err(String::new()));
    match (ok, response) {
        (1, Ok(bytes)) => Ok(bytes),
        (_, Err(e)) => Err(wasmtime::Error::msg(format!("guest error: {e}"))),
        (_, Ok(_)) => Err(wasmtime::Error::msg("__guest_call failed")),
    }
}

impl DirectHost {
    pub fn from_bytes(bytes: &[u8]) -> wasmtime::Result<DirectHost> {
        // `Config::default()`, as wasmtime-provider builds its engine.
        let engine = Engine::new(Config::new().profiler(wasmtime::ProfilingStrategy::PerfMap))?;
        let counting = Engine::new(Config::new().consume_fuel(true))?;
        Ok(DirectHost {
            pre: instance_pre(&engine, bytes)?,
            engine,
            counting: (instance_pre(&counting, bytes)?, counting),
        })
    }

    fn store(engine: &Engine, payload: &[u8]) -> Store<State> {
        let state = State {
            wasi: WasiCtxBuilder::new().build(),
            operation: "validate",
            payload: payload.to_vec(),
            response: Err("no response".into()),
        };
        Store::new(engine, state)
    }

    /// A fresh instance, initialised and then asked to `validate` `payload` once.
    pub fn validate(&self, payload: &[u8]) -> wasmtime::Result<(MemoryUse, Vec<u8>)> {
        let mut store = Self::store(&self.engine, payload);
        let (instance, memory) = initialised(&self.pre, &mut store)?;
        let after_init = memory.data_size(&store);
        let response = validate_once(&instance, &mut store)?;
        let after_validate = memory.data_size(&store);
        Ok((
            MemoryUse {
                after_init,
                after_validate,
            },
            response,
        ))
    }

    /// The operators a fresh instance executes up to its first answer, and a warm `validate`
    /// of `payload`; every answer must be `expected`.
    pub fn operators(&self, payload: &[u8], expected: &[u8]) -> wasmtime::Result<Operators> {
        let (pre, engine) = &self.counting;
        let mut store = Self::store(engine, payload);
        store.set_fuel(u64::MAX)?;
        let used = |store: &Store<State>| store.get_fuel().map(|left| u64::MAX - left);
        let (instance, _) = initialised(pre, &mut store)?;
        Operators::count(|| {
            if validate_once(&instance, &mut store)? != expected {
                return Err(wasmtime::Error::msg(
                    "the fuel-metered host answered differently",
                ));
            }
            used(&store)
        })
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let bytes = std::fs::read(&args[0]).unwrap();
    let payload = std::fs::read(&args[1]).unwrap();
    let n: usize = args[2].parse().unwrap();
    let host = DirectHost::from_bytes(&bytes).unwrap();
    let mut last = Vec::new();
    for _ in 0..n {
        last = host.validate(&payload).unwrap().1;
    }
    println!(
        "{}",
        String::from_utf8_lossy(&last)
            .chars()
            .take(200)
            .collect::<String>()
    );
}
