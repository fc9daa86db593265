//! Fitting a module's static data into the hosts' 5-page memory.
//!
//! wasm-ld declares the imported memory's minimum as the pages that stack and static data need,
//! and places the data with *active* segments, which the engine copies at instantiation, before
//! any code runs. A policy whose data outgrows 5 pages (toleration-injection carries the regex
//! crate's Unicode tables, about 380 KB) then cannot be linked by burrego, which always supplies
//! exactly 5 pages, and the JavaScript SDK refuses it for the same reason.
//!
//! [`fit_host_memory`] keeps every address as the linker laid it out and only moves the moment
//! the data is copied: the segments become *passive*, the memory import asks for at most
//! [`HOST_PAGES`], and the start function (`__wasm_init_memory`, which zeroes `.bss`) first grows
//! memory to the linker's minimum and copies the segments with `memory.init`.

use std::ops::Range;

use wasm_encoder::{Encode, RawSection, Section as _};
use wasmparser::{
    BinaryReader, DataKind, FunctionBody, ImportSectionReader, Imports, Parser, Payload, TypeRef,
};

use super::HOST_PAGES;

fn err(e: wasmparser::BinaryReaderError) -> String {
    e.to_string()
}

fn section(id: u8, data: &[u8], out: &mut Vec<u8>) {
    RawSection { id, data }.append_to(out);
}

/// One section of the module: id, where its header starts and where its content lies.
struct Section {
    id: u8,
    start: usize,
    content: std::ops::Range<usize>,
}

/// An active segment turned passive: its index, address and length.
struct Segment {
    index: u32,
    offset: i64,
    len: usize,
}

/// The instructions prepended to the start function: grow memory to `pages`, then copy and drop
/// every segment.
fn prologue(pages: u64, segments: &[Segment]) -> Vec<u8> {
    let mut code = Vec::new();
    // block; if memory.size >= pages: done; if memory.grow(pages - memory.size) == -1: trap
    code.extend_from_slice(&[0x02, 0x40, 0x3f, 0x00, 0x41]);
    (pages as i64).encode(&mut code);
    code.extend_from_slice(&[0x4f, 0x0d, 0x00, 0x41]);
    (pages as i64).encode(&mut code);
    code.extend_from_slice(&[
        0x3f, 0x00, 0x6b, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x0d, 0x00, 0x00, 0x0b,
    ]);
    for segment in segments {
        // memory.init segment (dest = offset, source = 0, len); data.drop segment
        code.push(0x41);
        segment.offset.encode(&mut code);
        code.extend_from_slice(&[0x41, 0x00, 0x41]);
        (segment.len as i64).encode(&mut code);
        code.extend_from_slice(&[0xfc, 0x08]);
        segment.index.encode(&mut code);
        code.extend_from_slice(&[0x00, 0xfc, 0x09]);
        segment.index.encode(&mut code);
    }
    code
}

/// What the rewrite needs to know of a module, read in one pass over its sections.
struct Layout {
    /// Every section, in the module's order.
    sections: Vec<Section>,
    /// The imported memory's minimum in pages and where its encoding lies in the module, which
    /// is `None` when the module does not import its memory.
    memory_min: Option<(u64, Range<usize>)>,
    /// How many functions are imported: they come first in the function index space.
    imported_functions: u32,
    /// The start section's function index, if there is one.
    start_function: Option<u32>,
    /// How many segments the data section holds (0 without one).
    data_count: u32,
}

/// The module unchanged when its memory import already fits in [`HOST_PAGES`]; otherwise the
/// rewrite described in the module docs.
pub fn fit_host_memory(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let layout = layout(wasm)?;
    let Some((pages, min_range)) = layout.memory_min.clone() else {
        return Err("the module does not import its memory".into());
    };
    if pages <= HOST_PAGES {
        return Ok(wasm.to_vec());
    }
    let start = layout
        .start_function
        .ok_or("static data needs more than the hosts' pages and there is no start function")?;
    let target = start
        .checked_sub(layout.imported_functions)
        .ok_or("the start function is an import")? as usize;

    let mut data = Vec::new();
    let mut out = wasm[..8].to_vec();
    for s in &layout.sections {
        match s.id {
            2 => out.extend_from_slice(&import_section_at_host_pages(wasm, s, &min_range)),
            10 => {
                // The data count section, which `memory.init` requires, goes before the code.
                if !layout.sections.iter().any(|s| s.id == 12) {
                    let mut count = Vec::new();
                    layout.data_count.encode(&mut count);
                    section(12, &count, &mut out);
                }
                // Segments are read first so the prologue knows them.
                let segments;
                (segments, data) = passive_data(wasm, &layout.sections)?;
                let init = prologue(pages, &segments);
                section(10, &code_with_prologue(wasm, s, target, &init)?, &mut out);
            }
            11 => section(11, &data, &mut out),
            _ => out.extend_from_slice(&wasm[s.start..s.content.end]),
        }
    }
    Ok(out)
}

/// The module's sections and what its import, start and data sections say, or the parser's
/// error; [`fit_host_memory`] decides from these whether and how to rewrite.
fn layout(wasm: &[u8]) -> Result<Layout, String> {
    let mut layout = Layout {
        sections: Vec::new(),
        memory_min: None,
        imported_functions: 0,
        start_function: None,
        data_count: 0,
    };
    let mut next = 8;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(err)?;
        match &payload {
            Payload::ImportSection(reader) => read_imports(wasm, reader, &mut layout)?,
            Payload::StartSection { func, .. } => layout.start_function = Some(*func),
            Payload::DataSection(reader) => layout.data_count = reader.count(),
            _ => {}
        }
        if let Some((id, content)) = payload.as_section() {
            layout.sections.push(Section {
                id,
                start: next,
                content: content.clone(),
            });
            next = content.end;
        }
    }
    Ok(layout)
}

/// Counts the imported functions into `layout` and records the memory import's minimum, or
/// fails on an import in a form whose minimum could not be patched in place.
fn read_imports(
    wasm: &[u8],
    reader: &ImportSectionReader<'_>,
    layout: &mut Layout,
) -> Result<(), String> {
    for group in reader.clone() {
        // The minimum is patched in place, so the import's bytes must be the one-import
        // form (module, name, kind, limits), which is all wasm-ld writes; the grouped
        // forms of the compact import encoding put them elsewhere.
        let Imports::Single(offset, import) = group.map_err(err)? else {
            return Err("imports in the compact encoding are not supported".to_owned());
        };
        match import.ty {
            TypeRef::Func(_) => layout.imported_functions += 1,
            TypeRef::Memory(m) => {
                layout.memory_min = Some((m.initial, memory_min_range(wasm, offset)?));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Where the minimum of the memory import at `offset` is encoded in the module: the bytes
/// [`import_section_at_host_pages`] rewrites.
fn memory_min_range(wasm: &[u8], offset: usize) -> Result<Range<usize>, String> {
    // module name, field name, kind byte, limits flags, then the minimum
    let mut r = BinaryReader::new(&wasm[offset..], offset);
    r.read_string().map_err(err)?;
    r.read_string().map_err(err)?;
    r.read_u8().map_err(err)?;
    r.read_u8().map_err(err)?;
    let at = r.original_position();
    r.read_var_u64().map_err(err)?;
    Ok(at..r.original_position())
}

/// The import section `s` (header included) with the memory's minimum at `min_range` rewritten
/// to [`HOST_PAGES`] in the same byte length, so that no other offset in the module moves.
fn import_section_at_host_pages(wasm: &[u8], s: &Section, min_range: &Range<usize>) -> Vec<u8> {
    let mut copy = wasm[s.start..s.content.end].to_vec();
    let at = min_range.start - s.start..min_range.end - s.start;
    let mut min = Vec::new();
    let mut n = HOST_PAGES;
    for i in 0..at.len() {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        min.push(if i + 1 < at.len() { byte | 0x80 } else { byte });
    }
    copy[at].copy_from_slice(&min);
    copy
}

/// The active segments of the data section among `sections` (for the prologue to copy) and the
/// data section's content with every segment passive, or why the segments cannot be moved.
fn passive_data(wasm: &[u8], sections: &[Section]) -> Result<(Vec<Segment>, Vec<u8>), String> {
    let data_section = sections
        .iter()
        .find(|s| s.id == 11)
        .ok_or("no data section")?;
    let reader = wasmparser::DataSectionReader::new(BinaryReader::new(
        &wasm[data_section.content.clone()],
        data_section.content.start,
    ))
    .map_err(err)?;
    let mut segments = Vec::new();
    let mut data = Vec::new();
    reader.count().encode(&mut data);
    for (index, segment) in reader.into_iter().enumerate() {
        let segment = segment.map_err(err)?;
        match segment.kind {
            DataKind::Active {
                memory_index: 0,
                offset_expr,
            } => {
                let Some((offset, _)) = super::i32_const(&offset_expr)? else {
                    return Err("a data segment's offset is not a constant".into());
                };
                segments.push(Segment {
                    index: index as u32,
                    offset,
                    len: segment.data.len(),
                });
            }
            DataKind::Passive => {}
            _ => return Err("a data segment targets another memory".into()),
        }
        data.push(0x01);
        segment.data.len().encode(&mut data);
        data.extend_from_slice(segment.data);
    }
    Ok((segments, data))
}

/// The code section's content with `prologue` inserted at the start of body `target`.
fn code_with_prologue(
    wasm: &[u8],
    code: &Section,
    target: usize,
    prologue: &[u8],
) -> Result<Vec<u8>, String> {
    let mut r = BinaryReader::new(&wasm[code.content.clone()], code.content.start);
    let count = r.read_var_u32().map_err(err)?;
    let mut out = wasm[code.content.start..r.original_position()].to_vec();
    for index in 0..count as usize {
        let prefix = r.original_position();
        let size = r.read_var_u32().map_err(err)? as usize;
        let body = r.original_position()..r.original_position() + size;
        r.read_bytes(size).map_err(err)?;
        if index != target {
            out.extend_from_slice(&wasm[prefix..body.end]);
            continue;
        }
        let mut locals = FunctionBody::new(BinaryReader::new(&wasm[body.clone()], body.start))
            .get_locals_reader()
            .map_err(err)?;
        for _ in 0..locals.get_count() {
            locals.read().map_err(err)?;
        }
        let expr = locals.original_position();
        (size + prologue.len()).encode(&mut out);
        out.extend_from_slice(&wasm[body.start..expr]);
        out.extend_from_slice(prologue);
        out.extend_from_slice(&wasm[expr..body.end]);
    }
    Ok(out)
}
