//! A bare waPC host on the same wasmtime as `wapc`/`wasmtime-provider`, for what their API
//! hides: how far a call grows the module's linear memory (its high-water mark, since wasm
//! memory never shrinks). Verdicts are still checked through the real stack
//! ([`crate::kubewarden::WapcPolicy`]); this only measures.
//!
//! The waPC protocol: the host calls the export `__guest_call(op_len, payload_len)`; the guest
//! fetches operation and payload with `__guest_request(op_ptr, payload_ptr)` and answers with
//! `__guest_response` or `__guest_error`. WASI is stubbed: the policies use it only for their
//! environment (empty here) and for writing a panic message.

use taintguard_host::wasmtime::{
    Caller, Engine, Extern, Linker, Memory, Module, ResourceLimiter, Store,
};

#[derive(Default)]
struct Host {
    op: Vec<u8>,
    payload: Vec<u8>,
    response: Option<Result<Vec<u8>, String>>,
    peak_memory: usize,
}

impl ResourceLimiter for Host {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> taintguard_host::wasmtime::Result<bool> {
        self.peak_memory = self.peak_memory.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        _desired: usize,
        _maximum: Option<usize>,
    ) -> taintguard_host::wasmtime::Result<bool> {
        Ok(true)
    }
}

/// The answer of one call and the largest the linear memory got, in bytes.
pub struct Measured {
    /// What the call returned, or why it failed (a trap or a host error).
    pub answer: Result<Vec<u8>, String>,
    /// The most the linear memory held during the call, in bytes.
    pub peak_memory: usize,
}

fn memory(caller: &mut Caller<'_, Host>) -> Memory {
    match caller.get_export("memory") {
        Some(Extern::Memory(m)) => m,
        _ => panic!("the module exports no memory"),
    }
}

fn read(caller: &mut Caller<'_, Host>, ptr: i32, len: i32) -> Vec<u8> {
    let mem = memory(caller);
    let mut out = vec![0; len as usize];
    mem.read(&caller, ptr as usize, &mut out)
        .expect("guest pointer in bounds");
    out
}

fn write(caller: &mut Caller<'_, Host>, ptr: i32, bytes: &[u8]) {
    let mem = memory(caller);
    mem.write(caller, ptr as usize, bytes)
        .expect("guest pointer in bounds");
}

/// The host's imports: waPC's and the few WASI functions the policies call.
fn linker(engine: &Engine) -> taintguard_host::wasmtime::Result<Linker<Host>> {
    let mut l = Linker::new(engine);
    link_wapc(&mut l)?;
    link_wasi(&mut l)?;
    Ok(l)
}

/// The waPC imports: the guest's request and answer, and host calls that answer nothing.
fn link_wapc(l: &mut Linker<Host>) -> taintguard_host::wasmtime::Result<()> {
    l.func_wrap(
        "wapc",
        "__guest_request",
        |mut c: Caller<'_, Host>, op_ptr: i32, ptr: i32| {
            let (op, payload) = (c.data().op.clone(), c.data().payload.clone());
            write(&mut c, op_ptr, &op);
            write(&mut c, ptr, &payload);
        },
    )?;
    l.func_wrap(
        "wapc",
        "__guest_response",
        |mut c: Caller<'_, Host>, ptr: i32, len: i32| {
            let bytes = read(&mut c, ptr, len);
            c.data_mut().response = Some(Ok(bytes));
        },
    )?;
    l.func_wrap(
        "wapc",
        "__guest_error",
        |mut c: Caller<'_, Host>, ptr: i32, len: i32| {
            let bytes = read(&mut c, ptr, len);
            c.data_mut().response = Some(Err(String::from_utf8_lossy(&bytes).into_owned()));
        },
    )?;
    l.func_wrap(
        "wapc",
        "__host_call",
        |_: Caller<'_, Host>, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32, _: i32| 0i32,
    )?;
    l.func_wrap("wapc", "__host_response", |_: Caller<'_, Host>, _: i32| {})?;
    l.func_wrap("wapc", "__host_response_len", |_: Caller<'_, Host>| 0i32)?;
    l.func_wrap("wapc", "__host_error", |_: Caller<'_, Host>, _: i32| {})?;
    l.func_wrap("wapc", "__host_error_len", |_: Caller<'_, Host>| 0i32)?;
    l.func_wrap(
        "wapc",
        "__console_log",
        |_: Caller<'_, Host>, _: i32, _: i32| {},
    )?;
    Ok(())
}

/// The WASI stubs: an empty environment, output discarded, fixed "random" bytes, and an exit
/// that ends the call.
fn link_wasi(l: &mut Linker<Host>) -> taintguard_host::wasmtime::Result<()> {
    const WASI: &str = "wasi_snapshot_preview1";
    // An empty environment and argument list: both counts 0.
    for name in ["environ_sizes_get", "args_sizes_get"] {
        l.func_wrap(
            WASI,
            name,
            |mut c: Caller<'_, Host>, count: i32, size: i32| {
                write(&mut c, count, &0u32.to_le_bytes());
                write(&mut c, size, &0u32.to_le_bytes());
                0i32
            },
        )?;
    }
    for name in ["environ_get", "args_get"] {
        l.func_wrap(WASI, name, |_: Caller<'_, Host>, _: i32, _: i32| 0i32)?;
    }
    // Output is discarded but reported as written, so a writer never loops.
    l.func_wrap(
        WASI,
        "fd_write",
        |mut c: Caller<'_, Host>, _fd: i32, iovs: i32, count: i32, written: i32| {
            let vecs = read(&mut c, iovs, count * 8);
            let total: u32 = vecs
                .chunks(8)
                .map(|v| u32::from_le_bytes([v[4], v[5], v[6], v[7]]))
                .sum();
            write(&mut c, written, &total.to_le_bytes());
            0i32
        },
    )?;
    l.func_wrap(
        WASI,
        "random_get",
        |mut c: Caller<'_, Host>, ptr: i32, len: i32| {
            write(&mut c, ptr, &vec![4; len as usize]);
            0i32
        },
    )?;
    l.func_wrap(
        WASI,
        "proc_exit",
        |_: Caller<'_, Host>, code: i32| -> taintguard_host::wasmtime::Result<()> {
            Err(taintguard_host::wasmtime::Error::msg(format!(
                "proc_exit({code})"
            )))
        },
    )?;
    Ok(())
}

/// A module compiled once; each [`Probe::call`] gets a fresh instance, as policy-server does;
/// [`Probe::calls_on_one_instance`] keeps one, as other hosts may.
pub struct Probe {
    engine: Engine,
    module: Module,
    linker: Linker<Host>,
}

impl Probe {
    /// Compiles the module `bytes` and links the waPC and WASI imports; any other import traps.
    ///
    /// # Errors
    ///
    /// The module does not compile or cannot be linked.
    pub fn from_bytes(bytes: &[u8]) -> Result<Probe, String> {
        let engine = Engine::default();
        let module = Module::new(&engine, bytes).map_err(|e| e.to_string())?;
        let mut linker = linker(&engine).map_err(|e| e.to_string())?;
        // Any other WASI function traps: a policy that reached for it would show here.
        linker
            .define_unknown_imports_as_traps(&module)
            .map_err(|e| e.to_string())?;
        Ok(Probe {
            engine,
            module,
            linker,
        })
    }

    /// `op` called once with `payload` on a fresh instance, as policy-server calls it.
    pub fn call(&self, op: &str, payload: &[u8]) -> Measured {
        let mut measured = self.calls_on_one_instance(op, payload, 1);
        measured.pop().expect("one call")
    }

    /// `op` called `times` with `payload` on one instance, as a host that keeps its instances
    /// would: each answer with the high-water mark after it.
    pub fn calls_on_one_instance(&self, op: &str, payload: &[u8], times: usize) -> Vec<Measured> {
        let mut store = Store::new(&self.engine, Host::default());
        store.limiter(|host| host as &mut dyn ResourceLimiter);
        let call = (|| -> Result<_, String> {
            let instance = self
                .linker
                .instantiate(&mut store, &self.module)
                .map_err(|e| format!("instantiate: {e}"))?;
            if let Ok(start) = instance.get_typed_func::<(), ()>(&mut store, "_start") {
                start
                    .call(&mut store, ())
                    .map_err(|e| format!("_start: {e}"))?;
            }
            if let Ok(init) = instance.get_typed_func::<(), ()>(&mut store, "wapc_init") {
                init.call(&mut store, ())
                    .map_err(|e| format!("wapc_init: {e}"))?;
            }
            let initial = match instance.get_export(&mut store, "memory") {
                Some(Extern::Memory(m)) => m.data_size(&store),
                _ => return Err("no memory export".into()),
            };
            let data = store.data_mut();
            data.peak_memory = data.peak_memory.max(initial);
            data.op = op.as_bytes().to_vec();
            data.payload = payload.to_vec();
            instance
                .get_typed_func::<(i32, i32), i32>(&mut store, "__guest_call")
                .map_err(|e| e.to_string())
        })();
        let mut measured = Vec::with_capacity(times);
        for _ in 0..times {
            let answer = call.clone().and_then(|call| {
                let ok = call
                    .call(&mut store, (op.len() as i32, payload.len() as i32))
                    .map_err(|e| format!("trap: {e:?}"))?;
                match store.data_mut().response.take() {
                    Some(Ok(bytes)) if ok == 1 => Ok(bytes),
                    Some(Err(message)) => Err(message),
                    other => Err(format!("__guest_call returned {ok} with {other:?}")),
                }
            });
            measured.push(Measured {
                answer,
                peak_memory: store.data().peak_memory,
            });
        }
        measured
    }
}
