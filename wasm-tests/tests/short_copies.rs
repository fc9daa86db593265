//! The post-link rewrite of the waPC modules' `memory.copy` (buildtools/wasm-metadata,
//! `short_copies`) copies as `memory.copy` does, in wasmtime: every length up to past the
//! longest short copy, blocks apart and overlapping either way, and a trap where `memory.copy`
//! traps. The policies' own tests run the rewritten artifacts.

use taintguard_host::wasmtime::{Engine, Instance, Memory, Module, Store, TypedFunc};
use taintguard_wasm_metadata::short_copies::{rewrite, SHORT};
use wasm_encoder::{
    CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction, MemorySection,
    MemoryType, TypeSection, ValType,
};
use wasmparser::{Operator, Parser, Payload, Validator};

/// Bytes of memory the cases touch; the rest of the page stays zero.
const SPAN: usize = 1024;
const PAGE: u32 = 65536;

/// A module exporting its one-page `memory` and `copy(dst, src, len)`, which is `memory.copy`;
/// with `copy` false, `copy` stores one byte instead.
fn module(copy: bool) -> Vec<u8> {
    let mut types = TypeSection::new();
    types.ty().function([ValType::I32; 3], []);
    let mut functions = FunctionSection::new();
    functions.function(0);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    let mut exports = ExportSection::new();
    exports.export("copy", ExportKind::Func, 0);
    exports.export("memory", ExportKind::Memory, 0);
    let mut body = Function::new([]);
    body.instruction(&Instruction::LocalGet(0));
    body.instruction(&Instruction::LocalGet(1));
    if copy {
        body.instruction(&Instruction::LocalGet(2));
        body.instruction(&Instruction::MemoryCopy {
            src_mem: 0,
            dst_mem: 0,
        });
    } else {
        body.instruction(&Instruction::I32Store8(wasm_encoder::MemArg {
            offset: 0,
            align: 0,
            memory_index: 0,
        }));
    }
    body.instruction(&Instruction::End);
    let mut code = CodeSection::new();
    code.function(&body);
    let mut module = wasm_encoder::Module::new();
    module
        .section(&types)
        .section(&functions)
        .section(&memories)
        .section(&exports)
        .section(&code);
    module.finish()
}

/// How many `memory.copy` operators the module has, and how many functions it defines.
fn copies_and_functions(wasm: &[u8]) -> (usize, usize) {
    let (mut copies, mut functions) = (0, 0);
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::CodeSectionEntry(body) = payload.unwrap() {
            functions += 1;
            let ops = body.get_operators_reader().unwrap();
            copies += (ops.into_iter())
                .filter(|op| matches!(op, Ok(Operator::MemoryCopy { .. })))
                .count();
        }
    }
    (copies, functions)
}

/// A module's instance, whose `copy` is called on memory holding a pattern each time. A trap
/// leaves the instance usable: wasmtime unwinds it, and the pattern is written anew.
struct Copier {
    store: Store<()>,
    memory: Memory,
    copy: TypedFunc<(u32, u32, u32), ()>,
}

impl Copier {
    fn new(engine: &Engine, wasm: &[u8]) -> Copier {
        let module = Module::new(engine, wasm).unwrap();
        let mut store = Store::new(engine, ());
        let instance = Instance::new(&mut store, &module, &[]).unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let copy = instance.get_typed_func(&mut store, "copy").unwrap();
        Copier {
            store,
            memory,
            copy,
        }
    }

    /// Memory's first [`SPAN`] bytes after `copy(dst, src, len)`; `None` when it traps.
    fn after_copy(&mut self, dst: u32, src: u32, len: u32) -> Option<Vec<u8>> {
        let pattern: Vec<u8> = (0..SPAN).map(|i| (i * 7 + 3) as u8).collect();
        self.memory.write(&mut self.store, 0, &pattern).unwrap();
        self.copy.call(&mut self.store, (dst, src, len)).ok()?;
        Some(self.memory.data(&self.store)[..SPAN].to_vec())
    }
}

#[test]
fn rewrites_every_copy_into_a_call_and_the_module_stays_valid() {
    let original = module(true);
    let rewritten = rewrite(&original).unwrap();
    Validator::new().validate_all(&rewritten).unwrap();
    // The one copy left is the added function's, for long and empty copies.
    assert_eq!(copies_and_functions(&original), (1, 1));
    assert_eq!(copies_and_functions(&rewritten), (1, 2));
    let Some(Ok(Operator::Call { function_index: 1 })) = Parser::new(0)
        .parse_all(&rewritten)
        .find_map(|p| match p.unwrap() {
            Payload::CodeSectionEntry(body) => {
                body.get_operators_reader().unwrap().into_iter().nth(3)
            }
            _ => None,
        })
    else {
        panic!("the copy did not become a call of the added function");
    };
    // Nothing to rewrite: the module as it was.
    let plain = module(false);
    assert_eq!(rewrite(&plain).unwrap(), plain);
}

#[test]
fn copies_as_memory_copy_does() {
    let engine = Engine::default();
    let mut original = Copier::new(&engine, &module(true));
    let mut rewritten = Copier::new(&engine, &rewrite(&module(true)).unwrap());
    // Blocks apart, the same block, and overlapping by every distance up to past the longest
    // short copy, in either direction.
    let mut places = vec![(600, 100), (100, 600), (300, 300)];
    for distance in (1..=SHORT + 8).step_by(3).chain([8, 16, 32, 64]) {
        places.push((300 + distance, 300));
        places.push((300, 300 + distance));
    }
    let mut cases = 0;
    for len in 0..=SHORT + 40 {
        for &(dst, src) in &places {
            let want = original.after_copy(dst, src, len);
            let got = rewritten.after_copy(dst, src, len);
            assert_eq!(got, want, "copy({dst}, {src}, {len})");
            cases += 1;
        }
    }
    assert!(cases > 10_000);
    // Out of bounds, short, long and empty: both trap.
    for (dst, src, len) in [
        (PAGE - 4, 0, 8),
        (0, PAGE - 4, 8),
        (PAGE - 4, 0, SHORT),
        (0, PAGE - 100, SHORT + 1),
        (PAGE + 1, 0, 0),
        (0, PAGE + 1, 0),
    ] {
        assert_eq!(original.after_copy(dst, src, len), None);
        assert_eq!(rewritten.after_copy(dst, src, len), None);
    }
}
