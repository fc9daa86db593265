//! Kubewarden's OPA host for the gatekeeper artifacts, emulated on wasmtime: burrego (Kubewarden
//! policy-evaluator v0.30.4, `crates/burrego`), the engine behind the `gatekeeper` and `opa`
//! execution modes. burrego itself is not a crate this build can install, so this follows the
//! call sequence in docs/abi.md ("burrego's call sequence": the set-up, then each evaluation),
//! step by step; the numbers in the comments are that list's steps.
//!
//! policy-server builds a new burrego `Evaluator` for every request (`StackPre::rehydrate`), with
//! the module compiled once: [`BurregoHost::evaluator`] is that, and an [`Evaluator`] kept
//! across evaluations is `kwctl bench`'s warm loop.

use serde_json::Value;
use wasmtime::{
    Caller, Config, Engine, Extern, Instance, Linker, Memory, MemoryType, Module, Store, TypedFunc,
};

/// Pages of the memory burrego creates and the module imports (`MemoryType::new(5, None)`).
pub const HOST_PAGES: u64 = 5;

/// A module compiled once, as policy-server keeps it for the policy's lifetime.
pub struct BurregoHost {
    engine: Engine,
    module: Module,
    /// Whether the engine meters fuel ([`BurregoHost::counting`]).
    counting: bool,
}

/// What the host functions saw; burrego hands these to its callbacks, which only log.
#[derive(Default)]
struct State {
    aborts: Vec<String>,
}

/// The 13 exports burrego looks up with typed signatures (`Policy::new`); wasmtime refuses any
/// other signature, as it does in burrego.
struct Exports {
    builtins: TypedFunc<(), i32>,
    entrypoints: TypedFunc<(), i32>,
    heap_ptr_get: TypedFunc<(), i32>,
    heap_ptr_set: TypedFunc<i32, ()>,
    ctx_new: TypedFunc<(), i32>,
    ctx_set_input: TypedFunc<(i32, i32), ()>,
    ctx_set_data: TypedFunc<(i32, i32), ()>,
    ctx_set_entrypoint: TypedFunc<(i32, i32), ()>,
    ctx_get_result: TypedFunc<i32, i32>,
    json_dump: TypedFunc<i32, i32>,
    malloc: TypedFunc<i32, i32>,
    json_parse: TypedFunc<(i32, i32), i32>,
    eval: TypedFunc<i32, i32>,
}

/// One burrego `Evaluator`: a store, the memory the host created, and the instance.
pub struct Evaluator {
    store: Store<State>,
    memory: Memory,
    exports: Exports,
    base_heap_ptr: i32,
    entrypoint_ids: Vec<i64>,
}

/// The NUL-terminated string at `addr` of the module's exported memory, as burrego's host
/// functions read it (`caller.get_export("memory")`).
fn c_string(caller: &mut Caller<'_, State>, addr: i32) -> wasmtime::Result<String> {
    let Some(Extern::Memory(memory)) = caller.get_export("memory") else {
        return Err(wasmtime::Error::msg("the module exports no `memory`"));
    };
    let data = memory.data(&caller);
    let start = addr as u32 as usize;
    let tail = data
        .get(start..)
        .ok_or_else(|| wasmtime::Error::msg("string address out of bounds"))?;
    let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    Ok(String::from_utf8_lossy(&tail[..len]).into_owned())
}

/// `env.opa_abort`, `env.opa_println` and `env.opa_builtin0..4`, as burrego links them.
fn link_host_functions(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    // burrego's opa_abort reports the message and *returns*; the module must trap by itself.
    linker.func_wrap(
        "env",
        "opa_abort",
        |mut caller: Caller<'_, State>, addr: i32| -> wasmtime::Result<()> {
            let message = c_string(&mut caller, addr)?;
            caller.data_mut().aborts.push(message);
            Ok(())
        },
    )?;
    linker.func_wrap(
        "env",
        "opa_println",
        |mut caller: Caller<'_, State>, addr: i32| -> wasmtime::Result<()> {
            c_string(&mut caller, addr).map(drop)
        },
    )?;
    // burrego dispatches builtins by the ids `builtins()` declared. The set-up refuses a module
    // that declares any (this host implements none), so a call here is a broken module.
    fn no_builtin(id: i32) -> wasmtime::Result<i32> {
        Err(wasmtime::Error::msg(format!(
            "opa_builtin called for id {id}, but the module declared no builtins"
        )))
    }
    linker.func_wrap("env", "opa_builtin0", |id: i32, _: i32| no_builtin(id))?;
    linker.func_wrap("env", "opa_builtin1", |id: i32, _: i32, _: i32| {
        no_builtin(id)
    })?;
    linker.func_wrap("env", "opa_builtin2", |id: i32, _: i32, _: i32, _: i32| {
        no_builtin(id)
    })?;
    linker.func_wrap(
        "env",
        "opa_builtin3",
        |id: i32, _: i32, _: i32, _: i32, _: i32| no_builtin(id),
    )?;
    linker.func_wrap(
        "env",
        "opa_builtin4",
        |id: i32, _: i32, _: i32, _: i32, _: i32, _: i32| no_builtin(id),
    )?;
    Ok(())
}

fn typed<P: wasmtime::WasmParams, R: wasmtime::WasmResults>(
    instance: &Instance,
    store: &mut Store<State>,
    name: &str,
    signature: &str,
) -> Result<TypedFunc<P, R>, String> {
    instance.get_typed_func(&mut *store, name).map_err(|e| {
        format!("burrego cannot load the module: export `{name}` {signature} is needed ({e:#})")
    })
}

impl Exports {
    fn of(instance: &Instance, store: &mut Store<State>) -> Result<Exports, String> {
        Ok(Exports {
            builtins: typed(instance, store, "builtins", "() -> i32")?,
            entrypoints: typed(instance, store, "entrypoints", "() -> i32")?,
            heap_ptr_get: typed(instance, store, "opa_heap_ptr_get", "() -> i32")?,
            heap_ptr_set: typed(instance, store, "opa_heap_ptr_set", "(i32) -> ()")?,
            ctx_new: typed(instance, store, "opa_eval_ctx_new", "() -> i32")?,
            ctx_set_input: typed(
                instance,
                store,
                "opa_eval_ctx_set_input",
                "(i32, i32) -> ()",
            )?,
            ctx_set_data: typed(instance, store, "opa_eval_ctx_set_data", "(i32, i32) -> ()")?,
            ctx_set_entrypoint: typed(
                instance,
                store,
                "opa_eval_ctx_set_entrypoint",
                "(i32, i32) -> ()",
            )?,
            ctx_get_result: typed(instance, store, "opa_eval_ctx_get_result", "(i32) -> i32")?,
            json_dump: typed(instance, store, "opa_json_dump", "(i32) -> i32")?,
            malloc: typed(instance, store, "opa_malloc", "(i32) -> i32")?,
            json_parse: typed(instance, store, "opa_json_parse", "(i32, i32) -> i32")?,
            eval: typed(instance, store, "eval", "(i32) -> i32")?,
        })
    }
}

impl BurregoHost {
    pub fn from_bytes(bytes: &[u8]) -> Result<BurregoHost, String> {
        // `Config::default()`, like the waPC measurements, so both hosts run the same engine.
        Self::on(Engine::default(), bytes, false)
    }

    /// The same host on an engine that meters fuel: every evaluator counts the wasm operators
    /// its module executes ([`Evaluator::operators`]). Never timed: metering slows the code.
    pub fn counting(bytes: &[u8]) -> Result<BurregoHost, String> {
        let engine = Engine::new(Config::new().consume_fuel(true))
            .map_err(|e| format!("cannot create a fuel-metering engine: {e:#}"))?;
        Self::on(engine, bytes, true)
    }

    fn on(engine: Engine, bytes: &[u8], counting: bool) -> Result<BurregoHost, String> {
        let module =
            Module::new(&engine, bytes).map_err(|e| format!("cannot compile module: {e:#}"))?;
        Ok(BurregoHost {
            engine,
            module,
            counting,
        })
    }

    /// A new evaluator: what burrego's `Evaluator` set-up does once the module is compiled.
    pub fn evaluator(&self) -> Result<Evaluator, String> {
        let mut store = Store::new(&self.engine, State::default());
        if self.counting {
            store.set_fuel(u64::MAX).map_err(|e| e.to_string())?;
        }
        // The memory belongs to the store, so burrego builds a linker per evaluator.
        let mut linker = Linker::new(&self.engine);
        let memory = Memory::new(&mut store, MemoryType::new(HOST_PAGES as u32, None))
            .map_err(|e| format!("cannot create memory: {e:#}"))?;
        linker
            .define(&store, "env", "memory", memory)
            .map_err(|e| e.to_string())?;
        link_host_functions(&mut linker).map_err(|e| e.to_string())?;
        let instance = linker
            .instantiate(&mut store, &self.module)
            .map_err(|e| format!("burrego cannot instantiate the module: {e:#}"))?;
        let exports = Exports::of(&instance, &mut store)?;
        let mut evaluator = Evaluator {
            store,
            memory,
            exports,
            base_heap_ptr: 0,
            entrypoint_ids: Vec::new(),
        };
        // StackHelper::new: the builtins the module needs; every value must be an integer id.
        evaluator.builtins()?;
        // Policy::new: an empty data document, then the heap mark every evaluation returns to.
        evaluator.push_json(b"{}")?;
        evaluator.base_heap_ptr = evaluator.call(|e, s| e.heap_ptr_get.call(s, ()))?;
        // from_engine_and_module: builtins again (all must be implemented), then entrypoints.
        let builtins = evaluator.builtins()?;
        if let Some(name) = builtins.keys().next() {
            return Err(format!(
                "the module needs the builtin `{name}`; this host implements none \
                 (burrego refuses builtins it lacks: MissingRegoBuiltins)"
            ));
        }
        let entrypoints = evaluator.dump_object(|e| &e.entrypoints, "entrypoints")?;
        evaluator.entrypoint_ids = entrypoints.values().filter_map(Value::as_i64).collect();
        Ok(evaluator)
    }
}

impl Evaluator {
    /// The wasm operators the module has executed in this evaluator so far, on a
    /// [`BurregoHost::counting`] host (0 on others).
    pub fn operators(&self) -> u64 {
        self.store.get_fuel().map_or(0, |left| u64::MAX - left)
    }

    /// Calls into the module; a trap becomes an error carrying what `opa_abort` reported.
    fn call<R>(
        &mut self,
        f: impl FnOnce(&Exports, &mut Store<State>) -> wasmtime::Result<R>,
    ) -> Result<R, String> {
        let result = f(&self.exports, &mut self.store);
        let aborts = std::mem::take(&mut self.store.data_mut().aborts);
        match (result, aborts.is_empty()) {
            (Ok(value), true) => Ok(value),
            (Ok(_), false) => Err(format!(
                "the module called opa_abort ({}) and returned",
                aborts.join("; ")
            )),
            (Err(e), true) => Err(format!("the module trapped: {e:#}")),
            (Err(_), false) => Err(format!("the module aborted: {}", aborts.join("; "))),
        }
    }

    /// `opa_malloc(n)`, the bytes written there, `opa_json_parse(addr, n)`: burrego's
    /// `push_json`. The host never grows memory: `opa_malloc` must have.
    fn push_json(&mut self, bytes: &[u8]) -> Result<i32, String> {
        let len = i32::try_from(bytes.len()).map_err(|_| "JSON too large for wasm32")?;
        let addr = self.call(|e, s| e.malloc.call(s, len))?;
        self.memory
            .write(&mut self.store, addr as u32 as usize, bytes)
            .map_err(|e| format!("writing {len} bytes at opa_malloc's {addr}: {e}"))?;
        match self.call(|e, s| e.json_parse.call(s, (addr, len)))? {
            0 => Err("Failed to load json in memory: opa_json_parse answered 0".into()),
            value => Ok(value),
        }
    }

    /// `opa_json_dump(value)`, read up to the NUL one byte at a time as burrego does, and parsed.
    fn dump(&mut self, value: i32) -> Result<Value, String> {
        let addr = self.call(|e, s| e.json_dump.call(s, value))?;
        let mut bytes = Vec::new();
        let mut at = addr as u32 as usize;
        loop {
            let mut byte = [0u8];
            self.memory
                .read(&self.store, at, &mut byte)
                .map_err(|e| format!("reading the dumped JSON at {at}: {e}"))?;
            if byte[0] == 0 {
                break;
            }
            bytes.push(byte[0]);
            at += 1;
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the module dumped invalid JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        })
    }

    fn dump_object(
        &mut self,
        export: impl FnOnce(&Exports) -> &TypedFunc<(), i32>,
        what: &str,
    ) -> Result<serde_json::Map<String, Value>, String> {
        let value = self.call(|e, s| export(e).call(s, ()))?;
        match self.dump(value)? {
            Value::Object(map) if map.values().all(|v| v.as_i64().is_some()) => Ok(map),
            other => Err(format!(
                "{what}() must be an object of integer ids, not {other}"
            )),
        }
    }

    fn builtins(&mut self) -> Result<serde_json::Map<String, Value>, String> {
        self.dump_object(|e| &e.builtins, "builtins")
    }

    /// One evaluation: `data` and `input` are the JSON bytes burrego serialises.
    pub fn evaluate(
        &mut self,
        entrypoint: i32,
        input: &[u8],
        data: &[u8],
    ) -> Result<Value, String> {
        // 1. The id must be one of entrypoints()' values.
        if !self.entrypoint_ids.contains(&i64::from(entrypoint)) {
            return Err(format!("the module has no entrypoint with id {entrypoint}"));
        }
        // 2-4. set_data: back to the base mark, push the data, take the mark after it.
        let base = self.base_heap_ptr;
        self.call(|e, s| e.heap_ptr_set.call(s, base))?;
        let data_addr = self.push_json(data)?;
        let data_heap_ptr = self.call(|e, s| e.heap_ptr_get.call(s, ()))?;
        // 5-6. "Reset the heap pointer before each evaluation", then push the input.
        self.call(|e, s| e.heap_ptr_set.call(s, data_heap_ptr))?;
        let input_addr = self.push_json(input)?;
        // 7. The evaluation context.
        let ctx = self.call(|e, s| e.ctx_new.call(s, ()))?;
        self.call(|e, s| e.ctx_set_input.call(s, (ctx, input_addr)))?;
        self.call(|e, s| e.ctx_set_data.call(s, (ctx, data_addr)))?;
        self.call(|e, s| e.ctx_set_entrypoint.call(s, (ctx, entrypoint)))?;
        // 8. eval; its return value is ignored.
        self.call(|e, s| e.eval.call(s, ctx))?;
        // 9-10. The result set, dumped and parsed.
        let result = self.call(|e, s| e.ctx_get_result.call(s, ctx))?;
        self.dump(result)
    }

    /// The size of the linear memory now; it never shrinks, so after an evaluation it is the
    /// high-water mark.
    pub fn memory_bytes(&self) -> usize {
        self.memory.data_size(&self.store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-written OPA-ABI module: constant answers in static data, a bump `opa_malloc`.
    /// `eval_body` is the body of `eval`; `skip` names an export to leave out.
    fn module(eval_body: &str, skip: &str) -> Vec<u8> {
        let exports = [
            ("builtins", "(result i32) i32.const 16"),
            ("entrypoints", "(result i32) i32.const 32"),
            ("opa_heap_ptr_get", "(result i32) global.get $top"),
            ("opa_heap_ptr_set", "(param i32) local.get 0 global.set $top"),
            ("opa_eval_ctx_new", "(result i32) i32.const 128"),
            ("opa_eval_ctx_set_input", "(param i32 i32)"),
            ("opa_eval_ctx_set_data", "(param i32 i32)"),
            ("opa_eval_ctx_set_entrypoint", "(param i32 i32)"),
            ("opa_eval_ctx_get_result", "(param i32) (result i32) i32.const 64"),
            ("opa_json_dump", "(param i32) (result i32) local.get 0"),
            (
                "opa_malloc",
                "(param i32) (result i32) global.get $top global.get $top local.get 0 i32.add global.set $top",
            ),
            ("opa_json_parse", "(param i32 i32) (result i32) local.get 0"),
            ("eval", eval_body),
        ];
        let functions: String = exports
            .iter()
            .filter(|(name, _)| *name != skip)
            .map(|(name, body)| format!("(func (export \"{name}\") {body})\n"))
            .collect();
        let wat = format!(
            r#"(module
                 (import "env" "memory" (memory 1))
                 (import "env" "opa_abort" (func $abort (param i32)))
                 (export "memory" (memory 0))
                 (global $top (mut i32) (i32.const 1024))
                 (data (i32.const 16) "{{}}\00")
                 (data (i32.const 32) "{{\"policy/violation\":0}}\00")
                 (data (i32.const 64) "[{{\"result\":[]}}]\00")
                 (data (i32.const 96) "eval exploded\00")
                 {functions})"#
        );
        wat.into_bytes()
    }

    const EVAL_OK: &str = "(param i32) (result i32) i32.const 0";

    #[test]
    fn evaluates_with_burregos_sequence() {
        let host = BurregoHost::from_bytes(&module(EVAL_OK, "")).unwrap();
        let mut evaluator = host.evaluator().unwrap();
        for _ in 0..3 {
            let answer = evaluator
                .evaluate(0, br#"{"parameters":{},"review":{}}"#, b"{}")
                .unwrap();
            assert_eq!(answer, serde_json::json!([{"result": []}]));
        }
        assert_eq!(evaluator.memory_bytes(), HOST_PAGES as usize * 65536);
        let error = evaluator.evaluate(1, b"{}", b"{}").unwrap_err();
        assert!(error.contains("no entrypoint with id 1"), "{error}");
    }

    #[test]
    fn refuses_a_module_without_an_export_burrego_needs() {
        let host = BurregoHost::from_bytes(&module(EVAL_OK, "opa_eval_ctx_get_result")).unwrap();
        let error = host.evaluator().err().expect("must be refused");
        assert!(
            error.contains("export `opa_eval_ctx_get_result` (i32) -> i32 is needed"),
            "{error}"
        );
    }

    #[test]
    fn an_abort_fails_the_evaluation_with_its_message() {
        // The host's opa_abort returns, as burrego's does; the module then traps by itself.
        let eval = "(param i32) (result i32) i32.const 96 call $abort unreachable";
        let host = BurregoHost::from_bytes(&module(eval, "")).unwrap();
        let error = host
            .evaluator()
            .unwrap()
            .evaluate(0, b"{}", b"{}")
            .unwrap_err();
        assert_eq!(error, "the module aborted: eval exploded");
    }
}
