//! OPA-ABI modules (the `*.gatekeeper.wasm` artifacts): the post-link rewrite that turns the ABI
//! version exports into real constant globals, and the interface check both hosts need
//! (burrego looks exports up with exact typed signatures and links only `env` imports; the
//! JavaScript SDK supplies a 5-page memory without a maximum).

mod memory;

use std::collections::HashMap;

use wasmparser::{
    DataKind, DataSectionReader, ExternalKind, FuncType, GlobalSectionReader, ImportSectionReader,
    Operator, Parser, Payload, TypeRef, ValType,
};

/// Pages of the memory both hosts create (burrego `MemoryType::new(5, None)`, the SDK's default).
pub const HOST_PAGES: u64 = 5;

/// The exported globals that give the OPA ABI's major and minor version, which the rewrite
/// turns into constants.
pub const ABI_GLOBALS: [&str; 2] = ["opa_wasm_abi_version", "opa_wasm_abi_minor_version"];

const I: ValType = ValType::I32;

/// Every function the two hosts call, with the signature burrego's typed lookups demand.
pub const REQUIRED_FUNCTIONS: &[(&str, &[ValType], &[ValType])] = &[
    ("eval", &[I], &[I]),
    ("builtins", &[], &[I]),
    ("entrypoints", &[], &[I]),
    ("opa_eval_ctx_new", &[], &[I]),
    ("opa_eval_ctx_set_input", &[I, I], &[]),
    ("opa_eval_ctx_set_data", &[I, I], &[]),
    ("opa_eval_ctx_set_entrypoint", &[I, I], &[]),
    ("opa_eval_ctx_get_result", &[I], &[I]),
    ("opa_malloc", &[I], &[I]),
    ("opa_json_parse", &[I, I], &[I]),
    ("opa_json_dump", &[I], &[I]),
    ("opa_heap_ptr_get", &[], &[I]),
    ("opa_heap_ptr_set", &[I], &[]),
    ("opa_eval", &[I, I, I, I, I, I, I], &[I]),
];

/// Functions the hosts provide in `env`, with their signatures.
fn host_function(name: &str) -> Option<(Vec<ValType>, Vec<ValType>)> {
    match name {
        "opa_abort" | "opa_println" => Some((vec![I], vec![])),
        _ => {
            let n: usize = name.strip_prefix("opa_builtin")?.parse().ok()?;
            (n <= 4).then(|| (vec![I; n + 2], vec![I]))
        }
    }
}

/// An exported global: its type, mutability and, when it is a constant, its value.
#[derive(Debug)]
pub struct Global {
    /// The global's value type.
    pub ty: ValType,
    /// Whether the global is mutable.
    pub mutable: bool,
    /// The global's value, when its initializer is a constant.
    pub value: Option<i64>,
    /// Byte range of the `i32.const` immediate in the module, for the rewrite.
    immediate: Option<std::ops::Range<usize>>,
}

/// What the check needs to know of a module.
#[derive(Debug, Default)]
pub struct Abi {
    /// The exported functions, by name, with their types.
    pub functions: HashMap<String, FuncType>,
    /// The exported globals, by name.
    pub globals: HashMap<String, Global>,
    /// `module.name` → function type (`None` for non-function imports).
    pub imports: Vec<(String, Option<FuncType>)>,
    /// `(minimum, maximum, shared, 64-bit)` of the imported memory.
    pub imported_memory: Option<(u64, Option<u64>, bool, bool)>,
    /// Index of the exported `memory`.
    pub memory_export: Option<u32>,
    /// Active data segments: (offset, bytes).
    data: Vec<(u64, Vec<u8>)>,
}

fn err(e: wasmparser::BinaryReaderError) -> String {
    e.to_string()
}

/// The `i32.const` of a constant expression and the byte range of its immediate.
fn i32_const(
    expr: &wasmparser::ConstExpr,
) -> Result<Option<(i64, std::ops::Range<usize>)>, String> {
    let mut ops = expr.get_operators_reader();
    let start = ops.original_position();
    let Operator::I32Const { value } = ops.read().map_err(err)? else {
        return Ok(None);
    };
    let end = ops.original_position();
    if !matches!(ops.read().map_err(err)?, Operator::End) {
        return Ok(None);
    }
    // Skip the opcode byte: the range covers the LEB128 immediate only.
    Ok(Some((i64::from(value), start + 1..end)))
}

/// The index spaces of a module that [`read_abi`] gathers from its sections before it resolves
/// the exports against them (an export names a function or global by index only).
#[derive(Default)]
struct IndexSpaces {
    /// The type section's function types, by type index.
    types: Vec<FuncType>,
    /// Each function's type index, imported functions first.
    function_types: Vec<u32>,
    /// Each global, imported globals first.
    globals: Vec<Global>,
    /// Each export's name, kind and index.
    exports: Vec<(String, ExternalKind, u32)>,
}

/// What [`check`] and [`set_abi_globals`] need to know of `wasm`, or the first reason it cannot
/// be read (a malformed section, a bad type, function or global index).
pub fn read_abi(wasm: &[u8]) -> Result<Abi, String> {
    let mut abi = Abi::default();
    let mut spaces = IndexSpaces::default();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(err)? {
            Payload::TypeSection(reader) => {
                for ty in reader.into_iter_err_on_gc_types() {
                    spaces.types.push(ty.map_err(err)?);
                }
            }
            Payload::ImportSection(reader) => read_imports(reader, &mut spaces, &mut abi)?,
            Payload::FunctionSection(reader) => {
                for index in reader {
                    spaces.function_types.push(index.map_err(err)?);
                }
            }
            Payload::GlobalSection(reader) => read_globals(reader, &mut spaces.globals)?,
            Payload::ExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(err)?;
                    let named = (export.name.to_owned(), export.kind, export.index);
                    spaces.exports.push(named);
                }
            }
            Payload::DataSection(reader) => read_data(reader, &mut abi.data)?,
            _ => {}
        }
    }
    resolve_exports(spaces, &mut abi)?;
    Ok(abi)
}

/// Records each import in `abi.imports` (with its type when it is a function) and adds it to
/// the index space it opens: imported functions and globals come before the module's own.
fn read_imports(
    reader: ImportSectionReader<'_>,
    spaces: &mut IndexSpaces,
    abi: &mut Abi,
) -> Result<(), String> {
    for import in reader.into_imports() {
        let import = import.map_err(err)?;
        let name = format!("{}.{}", import.module, import.name);
        let ty = match import.ty {
            TypeRef::Func(index) => {
                spaces.function_types.push(index);
                Some(
                    spaces
                        .types
                        .get(index as usize)
                        .cloned()
                        .ok_or("bad type index")?,
                )
            }
            TypeRef::Memory(m) => {
                abi.imported_memory = Some((m.initial, m.maximum, m.shared, m.memory64));
                None
            }
            TypeRef::Global(g) => {
                // An imported global's value is the host's: neither it nor an immediate to
                // rewrite is known.
                spaces.globals.push(Global {
                    ty: g.content_type,
                    mutable: g.mutable,
                    value: None,
                    immediate: None,
                });
                None
            }
            _ => None,
        };
        abi.imports.push((name, ty));
    }
    Ok(())
}

/// Adds the module's own globals to `globals`, each with its value and the place of its
/// `i32.const` immediate when it is initialised by one.
fn read_globals(reader: GlobalSectionReader<'_>, globals: &mut Vec<Global>) -> Result<(), String> {
    for global in reader {
        let global = global.map_err(err)?;
        let constant = i32_const(&global.init_expr)?;
        globals.push(Global {
            ty: global.ty.content_type,
            mutable: global.ty.mutable,
            value: constant.as_ref().map(|c| c.0),
            immediate: constant.map(|c| c.1),
        });
    }
    Ok(())
}

/// Adds to `data` each active segment of memory 0 at a constant address: the static data the
/// ABI globals' values are read from.
fn read_data(reader: DataSectionReader<'_>, data: &mut Vec<(u64, Vec<u8>)>) -> Result<(), String> {
    for segment in reader {
        let segment = segment.map_err(err)?;
        if let DataKind::Active {
            memory_index: 0,
            offset_expr,
        } = segment.kind
        {
            if let Some((offset, _)) = i32_const(&offset_expr)? {
                data.push((offset as u32 as u64, segment.data.to_vec()));
            }
        }
    }
    Ok(())
}

/// Puts each exported function (with its type), global and the memory exported as `memory`
/// into `abi` by name, or fails on an index outside its space or a global exported twice.
fn resolve_exports(spaces: IndexSpaces, abi: &mut Abi) -> Result<(), String> {
    let mut globals: Vec<Option<Global>> = spaces.globals.into_iter().map(Some).collect();
    for (name, kind, index) in spaces.exports {
        match kind {
            ExternalKind::Func => {
                let ty = spaces
                    .function_types
                    .get(index as usize)
                    .and_then(|t| spaces.types.get(*t as usize))
                    .ok_or_else(|| format!("export `{name}`: bad function index"))?;
                abi.functions.insert(name, ty.clone());
            }
            ExternalKind::Global => {
                let global = globals
                    .get_mut(index as usize)
                    .and_then(Option::take)
                    .ok_or_else(|| format!("export `{name}`: bad or shared global index"))?;
                abi.globals.insert(name, global);
            }
            ExternalKind::Memory if name == "memory" => abi.memory_export = Some(index),
            _ => {}
        }
    }
    Ok(())
}

impl Abi {
    /// The little-endian i32 the data segments put at `addr`.
    fn read_i32(&self, addr: u64) -> Option<i32> {
        self.data.iter().find_map(|(offset, bytes)| {
            let start = addr.checked_sub(*offset)? as usize;
            let word = bytes.get(start..start + 4)?;
            Some(i32::from_le_bytes(word.try_into().ok()?))
        })
    }
}

/// Signed LEB128 of `value` in exactly `len` bytes (padded with continuation bytes, which the
/// wasm spec allows up to 5 bytes for an i32).
fn sleb128_padded(value: i32, len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut rest = i64::from(value);
    for i in 0..len {
        let byte = (rest & 0x7f) as u8;
        rest >>= 7;
        out.push(if i + 1 < len { byte | 0x80 } else { byte });
    }
    let fits = rest == 0 && out.last()? & 0x40 == 0 || rest == -1 && out.last()? & 0x40 != 0;
    (len <= 5 && fits).then_some(out)
}

pub use memory::fit_host_memory;

/// Everything a linked module needs to become an OPA-ABI artifact: real ABI globals, static data
/// that fits the hosts' memory, then the interface check.
pub fn finish(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let wasm = fit_host_memory(&set_abi_globals(wasm)?)?;
    check(&wasm)?;
    Ok(wasm)
}

/// Rust can only export a `static` as a global holding its *address*. This writes the static's
/// value into that global's `i32.const` in place. The immediate keeps its byte length (padded
/// LEB128), so no section, size or offset in the module changes.
pub fn set_abi_globals(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let abi = read_abi(wasm)?;
    let mut out = wasm.to_vec();
    for name in ABI_GLOBALS {
        let global = abi
            .globals
            .get(name)
            .ok_or_else(|| format!("the module does not export the global `{name}`"))?;
        let (Some(addr), Some(range)) = (global.value, global.immediate.clone()) else {
            return Err(format!("`{name}` is not an i32 constant global"));
        };
        let value = abi
            .read_i32(addr as u32 as u64)
            .ok_or_else(|| format!("`{name}`: no static data at address {addr}"))?;
        let bytes = sleb128_padded(value, range.len())
            .ok_or_else(|| format!("`{name}`: {value} does not fit in {} bytes", range.len()))?;
        out[range].copy_from_slice(&bytes);
    }
    Ok(out)
}

/// What both hosts need of an OPA-ABI module; the first problem found.
pub fn check(wasm: &[u8]) -> Result<(), String> {
    let abi = read_abi(wasm)?;
    check_imports(&abi)?;
    check_memory(&abi)?;
    check_functions(&abi)?;
    check_abi_globals(&abi)
}

/// The first import neither host can satisfy: anything but `env.memory` and the `env`
/// functions of [`host_function`] with their exact signatures.
fn check_imports(abi: &Abi) -> Result<(), String> {
    for (name, ty) in &abi.imports {
        let host = name.strip_prefix("env.").and_then(|n| {
            if n == "memory" {
                Some(None)
            } else {
                host_function(n).map(Some)
            }
        });
        match (host, ty) {
            (Some(None), None) => {}
            (Some(Some((params, results))), Some(ty))
                if ty.params() == params.as_slice() && ty.results() == results.as_slice() => {}
            _ => {
                return Err(format!(
                    "import `{name}` cannot be satisfied by the OPA hosts"
                ))
            }
        }
    }
    Ok(())
}

/// Whether the module's memory is the one the hosts give: imported, without a maximum, plain
/// 32-bit unshared, at most [`HOST_PAGES`], and exported again as `memory`.
fn check_memory(abi: &Abi) -> Result<(), String> {
    match abi.imported_memory {
        None => return Err("the module must import its memory as `env.memory`".into()),
        Some((_, Some(max), ..)) => {
            return Err(format!(
                "the imported memory declares a maximum ({max} pages); the hosts give none"
            ))
        }
        Some((_, _, true, _)) | Some((_, _, _, true)) => {
            return Err("the imported memory must be a plain 32-bit unshared memory".into())
        }
        Some((min, ..)) if min > HOST_PAGES => {
            return Err(format!(
                "the imported memory needs {min} pages; the hosts supply {HOST_PAGES}"
            ))
        }
        Some(_) => {}
    }
    if abi.memory_export != Some(0) {
        return Err("the module must export its imported memory as `memory`".into());
    }
    Ok(())
}

/// The first of [`REQUIRED_FUNCTIONS`] the module does not export with the signature the hosts'
/// typed lookups demand.
fn check_functions(abi: &Abi) -> Result<(), String> {
    for (name, params, results) in REQUIRED_FUNCTIONS {
        let ty = abi
            .functions
            .get(*name)
            .ok_or_else(|| format!("the module does not export the function `{name}`"))?;
        if ty.params() != *params || ty.results() != *results {
            return Err(format!(
                "`{name}` has the signature {ty}; the hosts call {params:?} -> {results:?}"
            ));
        }
    }
    Ok(())
}

/// Whether the ABI version globals are immutable i32 constants the hosts accept: major version
/// exactly 1, minor version at least 2.
fn check_abi_globals(abi: &Abi) -> Result<(), String> {
    for (name, min) in [(ABI_GLOBALS[0], 1), (ABI_GLOBALS[1], 2)] {
        match abi.globals.get(name) {
            Some(Global {
                ty: ValType::I32,
                mutable: false,
                value: Some(v),
                ..
            }) if *v == min || (name == ABI_GLOBALS[1] && *v >= min) => {}
            other => {
                return Err(format!(
                    "`{name}` must be an immutable i32 global {}{min}, found {other:?}",
                    if name == ABI_GLOBALS[1] { ">= " } else { "" }
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_leb128_round_trips() {
        for (value, len) in [(1, 3), (2, 1), (-1, 2), (65_692, 3), (i32::MAX, 5), (63, 1)] {
            let bytes = sleb128_padded(value, len).unwrap();
            assert_eq!(bytes.len(), len);
            let mut reader = wasmparser::BinaryReader::new(&bytes, 0);
            assert_eq!(reader.read_var_i32().unwrap(), value, "{value} in {len}");
            assert!(reader.eof());
        }
        assert_eq!(sleb128_padded(64, 1), None, "needs a sign bit of its own");
        assert_eq!(sleb128_padded(1 << 20, 2), None);
    }
}
