//! The post-link rewrite of the waPC modules' `memory.copy`: short copies in the module's own
//! code, long ones as before.
//!
//! wasmtime compiles `memory.copy` to a call into the host, about 160 instructions whatever the
//! length, and a policy's answer is built of short strings: a warning is a dozen copies of a few
//! bytes each, and the hostpath mutation made 215 copies, a fifth of its guest instructions
//! (benchmarks/cost.md, "Short copies"). Rust's standard library comes prebuilt with bulk memory,
//! and under LTO the wasm backend gives every function of a module the union of their features,
//! so no compiler flag of ours stops it (`-Ctarget-cpu=mvp` included). This rewrite replaces each
//! `memory.copy` with a call to one function added to the module, which moves up to [`SHORT`]
//! bytes with word loads and stores: up to 16 bytes every load before the first store, so that
//! overlapping blocks copy as `memory.copy` copies them, and longer blocks when they do not
//! overlap. Anything else (longer, overlapping longer, or empty) it hands to `memory.copy`.
//!
//! Re-encoding the module also writes the function indices that `wasm-ld` pads to five bytes in
//! their shortest form, which takes about a twentieth off each module.

use wasm_encoder::reencode::{self, Reencode, RoundtripReencoder};
use wasm_encoder::{
    BlockType, CodeSection, Function, FunctionSection, Instruction, MemArg, Module, TypeSection,
    ValType,
};
use wasmparser::{Operator, Parser, Payload};

/// The longest copy made in the module's own code, in bytes. Each doubling from 64 took a little
/// more off the hostpath mutation (its per-function count: 64 -> 128 157.1k -> 153.1k, and
/// 128 -> 256 150.1k -> 149.0k after the dispatch below), the longest band costing 32
/// load-store pairs of code.
pub const SHORT: u32 = 256;

/// `wasm` with every `memory.copy` of memory 0 calling the added copy function; `wasm` itself
/// when it has none, or when its memory is 64-bit (the function takes 32-bit addresses).
///
/// # Errors
///
/// The module cannot be read.
pub fn rewrite(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let counts = Counts::of(wasm)?;
    if counts.copies == 0 || counts.memory64 {
        return Ok(wasm.to_vec());
    }
    let mut rewriter = Rewriter {
        copy: counts.imported_functions + counts.defined_functions,
        copy_type: counts.types,
    };
    let mut module = Module::new();
    rewriter
        .parse_core_module(&mut module, Parser::new(0), wasm)
        .map_err(|e| format!("rewriting memory.copy: {e}"))?;
    Ok(module.finish())
}

/// What the rewrite needs to know before it starts: where the added type and function go.
#[derive(Default)]
struct Counts {
    types: u32,
    imported_functions: u32,
    defined_functions: u32,
    copies: usize,
    memory64: bool,
}

impl Counts {
    fn of(wasm: &[u8]) -> Result<Counts, String> {
        let err = |e: wasmparser::BinaryReaderError| e.to_string();
        let mut counts = Counts::default();
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(err)? {
                Payload::TypeSection(reader) => {
                    for group in reader {
                        counts.types += u32::try_from(group.map_err(err)?.types().len())
                            .map_err(|e| e.to_string())?;
                    }
                }
                Payload::ImportSection(reader) => {
                    for import in reader.into_imports() {
                        match import.map_err(err)?.ty {
                            wasmparser::TypeRef::Func(_) => counts.imported_functions += 1,
                            wasmparser::TypeRef::Memory(m) => counts.memory64 |= m.memory64,
                            _ => {}
                        }
                    }
                }
                Payload::MemorySection(reader) => {
                    for memory in reader {
                        counts.memory64 |= memory.map_err(err)?.memory64;
                    }
                }
                Payload::FunctionSection(reader) => counts.defined_functions = reader.count(),
                Payload::CodeSectionEntry(body) => {
                    for op in body.get_operators_reader().map_err(err)? {
                        if let Operator::MemoryCopy {
                            dst_mem: 0,
                            src_mem: 0,
                        } = op.map_err(err)?
                        {
                            counts.copies += 1;
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(counts)
    }
}

/// Re-encodes a module as it was, but for `memory.copy` and the added type and function.
struct Rewriter {
    /// The added function's index: after every function the module had.
    copy: u32,
    /// Its type's index: after every type the module had.
    copy_type: u32,
}

impl Reencode for Rewriter {
    type Error = std::convert::Infallible;

    fn parse_type_section(
        &mut self,
        types: &mut TypeSection,
        section: wasmparser::TypeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_type_section(self, types, section)?;
        types.ty().function([ValType::I32; 3], []);
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        functions: &mut FunctionSection,
        section: wasmparser::FunctionSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_function_section(self, functions, section)?;
        functions.function(self.copy_type);
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut CodeSection,
        section: wasmparser::CodeSectionReader<'_>,
    ) -> Result<(), reencode::Error<Self::Error>> {
        reencode::utils::parse_code_section(self, code, section)?;
        code.function(&copy_function());
        Ok(())
    }

    fn instruction<'a>(
        &mut self,
        op: Operator<'a>,
    ) -> Result<Instruction<'a>, reencode::Error<Self::Error>> {
        match op {
            // Same operands, same effect: (destination, source, length) -> ().
            Operator::MemoryCopy {
                dst_mem: 0,
                src_mem: 0,
            } => Ok(Instruction::Call(self.copy)),
            op => RoundtripReencoder.instruction(op),
        }
    }
}

// The added function's parameters.
const DST: u32 = 0;
const SRC: u32 = 1;
const LEN: u32 = 2;
/// Its first i64 local: three of them hold what is loaded before any is stored.
const WORDS: u32 = 3;

/// Unaligned access: the blocks are wherever Rust put them.
fn byte_aligned(offset: u64) -> MemArg {
    MemArg {
        offset,
        align: 0,
        memory_index: 0,
    }
}

/// The copy function: `(dst, src, len)`, as `memory.copy` takes them.
///
/// Most copies are a few bytes, so lengths 1 to 16 are told apart first. Each band of lengths
/// `(hi / 2, hi]` from 9 bytes up is copied as `hi / 16` words from its start and as many ending at its
/// end, which overlap in the middle and cover every byte; 4 to 8 bytes as two 32-bit words the
/// same way, 1 to 3 as their first, middle and last byte.
fn copy_function() -> Function {
    let mut f = Function::new([(3, ValType::I64)]);
    // What this block does not copy and return from, `memory.copy` copies after it: the long,
    // the overlapping longer than 16 bytes, and the empty (whose addresses it still checks).
    f.instruction(&Instruction::Block(BlockType::Empty));
    copy_up_to_sixteen(&mut f);
    copy_up_to_short(&mut f);
    f.instruction(&Instruction::End);
    f.instruction(&Instruction::LocalGet(DST));
    f.instruction(&Instruction::LocalGet(SRC));
    f.instruction(&Instruction::LocalGet(LEN));
    f.instruction(&Instruction::MemoryCopy {
        src_mem: 0,
        dst_mem: 0,
    });
    f.instruction(&Instruction::End);
    f
}

/// Appends `len <op> bound` to `f`: the test each size band of the copy function starts with.
fn compare_len(f: &mut Function, bound: u32, op: Instruction<'static>) {
    f.instruction(&Instruction::LocalGet(LEN));
    f.instruction(&Instruction::I32Const(bound as i32));
    f.instruction(&op);
}

/// Appends the copy of 1 to 16 bytes, which returns from the function: those copies cannot
/// overlap harmfully, as every byte is loaded before any is stored.
fn copy_up_to_sixteen(f: &mut Function) {
    // 1..=16 bytes: len - 1 < 16, which 0 wraps past.
    f.instruction(&Instruction::LocalGet(LEN));
    f.instruction(&Instruction::I32Const(1));
    f.instruction(&Instruction::I32Sub);
    f.instruction(&Instruction::I32Const(16));
    f.instruction(&Instruction::I32LtU);
    f.instruction(&Instruction::If(BlockType::Empty));
    compare_len(f, 8, Instruction::I32GtU);
    f.instruction(&Instruction::If(BlockType::Empty));
    words(f, 1, false);
    f.instruction(&Instruction::Return);
    f.instruction(&Instruction::End);
    compare_len(f, 4, Instruction::I32GeU);
    f.instruction(&Instruction::If(BlockType::Empty));
    four_to_eight(f);
    f.instruction(&Instruction::Return);
    f.instruction(&Instruction::End);
    one_to_three(f);
    f.instruction(&Instruction::Return);
    f.instruction(&Instruction::End);
}

/// Appends the copy of 17 to [`SHORT`] bytes of blocks that do not overlap, which returns from
/// the function; anything else branches out of the enclosing block to `memory.copy`.
fn copy_up_to_short(f: &mut Function) {
    // 17..=SHORT bytes of blocks apart, widest band first: each word stored as it is loaded, as
    // sixteen words held at once made the function save registers on every call. Blocks that
    // overlap (dst - src and src - dst, unsigned, both at least len when they do not) are left
    // to `memory.copy`.
    compare_len(f, SHORT, Instruction::I32GtU);
    f.instruction(&Instruction::BrIf(0));
    for (from, to) in [(DST, SRC), (SRC, DST)] {
        f.instruction(&Instruction::LocalGet(from));
        f.instruction(&Instruction::LocalGet(to));
        f.instruction(&Instruction::I32Sub);
        f.instruction(&Instruction::LocalGet(LEN));
        f.instruction(&Instruction::I32LtU);
        f.instruction(&Instruction::BrIf(0));
    }
    let mut hi = SHORT;
    while hi >= 32 {
        compare_len(f, hi / 2, Instruction::I32GtU);
        f.instruction(&Instruction::If(BlockType::Empty));
        words(f, hi / 16, true);
        f.instruction(&Instruction::Return);
        f.instruction(&Instruction::End);
        hi /= 2;
    }
}

/// Copies 4 to 8 bytes: a 32-bit word from the start and one ending at the end.
fn four_to_eight(f: &mut Function) {
    for (slot, from_end) in [(0, false), (1, true)] {
        address(f, SRC, 4, from_end);
        f.instruction(&Instruction::I64Load32U(byte_aligned(0)));
        f.instruction(&Instruction::LocalSet(WORDS + slot));
    }
    for (slot, from_end) in [(0, false), (1, true)] {
        address(f, DST, 4, from_end);
        f.instruction(&Instruction::LocalGet(WORDS + slot));
        f.instruction(&Instruction::I64Store32(byte_aligned(0)));
    }
}

/// Copies 1 to 3 bytes: the first, the middle and the last.
fn one_to_three(f: &mut Function) {
    let byte = |f: &mut Function, base: u32, at: Byte| {
        f.instruction(&Instruction::LocalGet(base));
        match at {
            Byte::First => {}
            Byte::Middle => {
                f.instruction(&Instruction::LocalGet(LEN));
                f.instruction(&Instruction::I32Const(1));
                f.instruction(&Instruction::I32ShrU);
                f.instruction(&Instruction::I32Add);
            }
            Byte::Last => {
                f.instruction(&Instruction::LocalGet(LEN));
                f.instruction(&Instruction::I32Add);
                f.instruction(&Instruction::I32Const(1));
                f.instruction(&Instruction::I32Sub);
            }
        }
    };
    let bytes = [Byte::First, Byte::Middle, Byte::Last];
    for (slot, at) in (0..).zip(bytes) {
        byte(f, SRC, at);
        f.instruction(&Instruction::I64Load8U(byte_aligned(0)));
        f.instruction(&Instruction::LocalSet(WORDS + slot));
    }
    for (slot, at) in (0..).zip(bytes) {
        byte(f, DST, at);
        f.instruction(&Instruction::LocalGet(WORDS + slot));
        f.instruction(&Instruction::I64Store8(byte_aligned(0)));
    }
}

/// Which byte of a block of one to three.
#[derive(Clone, Copy)]
enum Byte {
    First,
    Middle,
    Last,
}

/// Pushes `base` or, `from_end`, `base + len - width`: where a word of `width` bytes ending at
/// the block's end begins.
fn address(f: &mut Function, base: u32, width: i32, from_end: bool) {
    f.instruction(&Instruction::LocalGet(base));
    if from_end {
        f.instruction(&Instruction::LocalGet(LEN));
        f.instruction(&Instruction::I32Add);
        f.instruction(&Instruction::I32Const(width));
        f.instruction(&Instruction::I32Sub);
    }
}

/// Copies `2 * half` 8-byte words: `half` from the block's start, `half` ending at its end.
/// `apart`: the blocks do not overlap, and each word is stored as soon as it is loaded;
/// otherwise all are loaded first, then stored.
fn words(f: &mut Function, half: u32, apart: bool) {
    let spots = (0..half)
        .map(|i| (i, false))
        .chain((0..half).map(|i| (i, true)));
    // From the end, word i begins 8 * (half - i) bytes before it: base + len - 8 * half, + 8 i.
    let at = |f: &mut Function, base: u32, (i, from_end): (u32, bool)| {
        address(f, base, (8 * half) as i32, from_end);
        byte_aligned(u64::from(8 * i))
    };
    if apart {
        for spot in spots {
            let store = at(f, DST, spot);
            let load = at(f, SRC, spot);
            f.instruction(&Instruction::I64Load(load));
            f.instruction(&Instruction::I64Store(store));
        }
        return;
    }
    for (slot, spot) in (0..).zip(spots.clone()) {
        let load = at(f, SRC, spot);
        f.instruction(&Instruction::I64Load(load));
        f.instruction(&Instruction::LocalSet(WORDS + slot));
    }
    for (slot, spot) in (0..).zip(spots) {
        let store = at(f, DST, spot);
        f.instruction(&Instruction::LocalGet(WORDS + slot));
        f.instruction(&Instruction::I64Store(store));
    }
}
