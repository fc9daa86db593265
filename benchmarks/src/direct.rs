//! A minimal waPC host straight on wasmtime, for what `wapc::WapcHost` does not expose: the
//! instance's linear-memory size. It links the same WASI implementation and waPC imports as
//! wasmtime-provider and runs the same sequence (`_start`, `wapc_init`, `__guest_call`), so the
//! memory it reports is the memory a policy-server instance grows to. Timings come from the real
//! host (`wapc.rs`), never from here.

use wasi_common::sync::WasiCtxBuilder;
use wasi_common::WasiCtx;
use wasmtime::{Caller, Engine, Extern, InstancePre, Linker, Memory, Module, Store};

struct State {
    wasi: WasiCtx,
    operation: &'static str,
    payload: Vec<u8>,
    response: Result<Vec<u8>, String>,
}

pub struct DirectHost {
    pre: InstancePre<State>,
    engine: Engine,
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

impl DirectHost {
    pub fn from_bytes(bytes: &[u8]) -> wasmtime::Result<DirectHost> {
        // `Config::default()`, as wasmtime-provider builds its engine.
        let engine = Engine::default();
        let module = Module::new(&engine, bytes)?;
        let mut linker = Linker::new(&engine);
        wasi_common::sync::add_to_linker(&mut linker, |s: &mut State| &mut s.wasi)?;
        link_wapc(&mut linker)?;
        let pre = linker.instantiate_pre(&module)?;
        Ok(DirectHost { pre, engine })
    }

    /// A fresh instance, initialised and then asked to `validate` `payload` once.
    pub fn validate(&self, payload: &[u8]) -> wasmtime::Result<(MemoryUse, Vec<u8>)> {
        let state = State {
            wasi: WasiCtxBuilder::new().build(),
            operation: "validate",
            payload: payload.to_vec(),
            response: Err("no response".into()),
        };
        let mut store = Store::new(&self.engine, state);
        let instance = self.pre.instantiate(&mut store)?;
        for start in ["_start", "wapc_init"] {
            if let Ok(f) = instance.get_typed_func::<(), ()>(&mut store, start) {
                f.call(&mut store, ())?;
            }
        }
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or_else(|| wasmtime::Error::msg("the guest exports no memory"))?;
        let after_init = memory.data_size(&store);
        let call = instance.get_typed_func::<(i32, i32), i32>(&mut store, "__guest_call")?;
        let ok = call.call(&mut store, ("validate".len() as i32, payload.len() as i32))?;
        let after_validate = memory.data_size(&store);
        let response = std::mem::replace(&mut store.data_mut().response, Err(String::new()));
        let response = match (ok, response) {
            (1, Ok(bytes)) => bytes,
            (_, Err(e)) => return Err(wasmtime::Error::msg(format!("guest error: {e}"))),
            (_, Ok(_)) => return Err(wasmtime::Error::msg("__guest_call failed")),
        };
        Ok((
            MemoryUse {
                after_init,
                after_validate,
            },
            response,
        ))
    }
}
