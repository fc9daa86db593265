//! The OPA Wasm ABI in linear memory: the exports both hosts call, with the exact signatures
//! burrego's typed lookups require (all `i32`; `eval` returns one, the setters return nothing).
//!
//! Values are opaque to the hosts, which only hand addresses back. A value here is a
//! [`Value`] header pointing at JSON text that has already been validated; the text stays where
//! the host wrote it, under the heap mark that keeps it alive. `0` is "undefined".
//!
//! Call sequences served (docs/abi.md, "The OPA WebAssembly ABI"):
//! * burrego and the SDK's legacy path: `opa_malloc` + `opa_json_parse` for data and input,
//!   `opa_eval_ctx_new`, `opa_eval_ctx_set_*`, `eval`, `opa_eval_ctx_get_result`, `opa_json_dump`;
//! * the SDK's fast path (ABI 1.2): input bytes written at the heap mark without allocation, then
//!   one `opa_eval` whose `heap_ptr` argument is the first free address after them.
//!
//! Every export that takes an address from the host is an `unsafe extern "C" fn`: no safe Rust
//! code can call it, and its `# Safety` section is the host's side of the contract. Within that
//! contract, what can be checked is checked, so that a host's mistake gets an answer that names
//! it instead of a trap or a read of unrelated memory:
//! * a byte range (`opa_json_parse`, `opa_eval`'s input) must lie in the heap below the heap
//!   pointer, where the host writes and where nothing this module allocates during the call can
//!   overlap it; a negative length or any other range is a parse failure (0) or a violation;
//! * a handle (a value or an evaluation context) must be aligned, in the heap below the heap
//!   pointer, and carry its type's tag; anything else stops the evaluation through `opa_abort`
//!   with a message naming the export, as an illegal entrypoint id does;
//! * a heap pointer beyond linear memory is refused the same way.

use std::ffi::CStr;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use taintguard::Policy;

use crate::evaluate::{evaluate, refuse, Entrypoint, ENTRYPOINTS_JSON};
use crate::heap::{self, BumpHeap};
use crate::host::abort;

#[global_allocator]
static HEAP: BumpHeap = BumpHeap;

/// Real wasm globals are patched in after linking (see the crate docs); these statics give the
/// exports their names and carry the values the patch reads.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static opa_wasm_abi_version: i32 = crate::ABI_VERSION.0;
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static opa_wasm_abi_minor_version: i32 = crate::ABI_VERSION.1;

/// With `panic = "abort"` a panic cannot become a violation; it is at least reported through
/// `opa_abort` instead of a bare `unreachable` trap. Formatted on the stack: the panic may be an
/// allocation failure.
fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    struct Message {
        buf: [u8; 512],
        len: usize,
    }
    impl Write for Message {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for &b in s.as_bytes() {
                // Leave room for the NUL; NUL bytes inside would cut the message short.
                if self.len < self.buf.len() - 1 && b != 0 {
                    self.buf[self.len] = b;
                    self.len += 1;
                }
            }
            Ok(())
        }
    }
    let mut message = Message {
        buf: [0; 512],
        len: 0,
    };
    let _ = write!(message, "taintguard: internal error: {info}");
    let text = CStr::from_bytes_until_nul(&message.buf).unwrap_or(c"taintguard: internal error");
    abort(text)
}

fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if !INSTALLED.swap(true, Relaxed) {
        // A function item is zero-sized: boxing it allocates nothing that a heap reset could
        // overwrite.
        std::panic::set_hook(Box::new(report_panic));
    }
}

/// A value's first word, so that an address that is not a value (the raw address of the text
/// the host wrote, a stale or made-up handle) is told apart from one; any constant unlikely in
/// JSON text or in a length does.
const VALUE_TAG: u32 = u32::from_le_bytes(*b"tgV\x01");
/// The same for evaluation contexts.
const CONTEXT_TAG: u32 = u32::from_le_bytes(*b"tgC\x01");

/// A JSON value: `len` bytes of checked JSON text at `addr`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Value {
    tag: u32,
    addr: *const u8,
    len: usize,
}

/// An evaluation context: value addresses and the entrypoint id.
#[repr(C)]
#[derive(Clone, Copy)]
struct Context {
    tag: u32,
    input: i32,
    data: i32,
    result: i32,
    entrypoint: i32,
}

/// A handle's type: any bits are a valid `Self`, and its tag says whether they are one.
trait Tagged: Copy {
    const TAG: u32;
    fn tag(&self) -> u32;
}
impl Tagged for Value {
    const TAG: u32 = VALUE_TAG;
    fn tag(&self) -> u32 {
        self.tag
    }
}
impl Tagged for Context {
    const TAG: u32 = CONTEXT_TAG;
    fn tag(&self) -> u32 {
        self.tag
    }
}

/// `builtins()` and `entrypoints()` answer constant values that live in static data, so they
/// survive every heap reset.
struct StaticValue(Value);
// SAFETY: the pointers address immutable static data; the module is single-threaded.
unsafe impl Sync for StaticValue {}

static BUILTINS: StaticValue = StaticValue(Value {
    tag: VALUE_TAG,
    addr: b"{}".as_ptr(),
    len: 2,
});
static ENTRYPOINTS: StaticValue = StaticValue(Value {
    tag: VALUE_TAG,
    addr: ENTRYPOINTS_JSON.as_ptr(),
    len: ENTRYPOINTS_JSON.len(),
});

fn new_value(addr: *const u8, len: usize) -> i32 {
    Box::into_raw(Box::new(Value {
        tag: VALUE_TAG,
        addr,
        len,
    })) as i32
}

/// Whether `start..end` lies in the heap below `limit` and in linear memory: where the hosts
/// write their bytes and this module its values, and where nothing allocated during the current
/// call lands (allocations start at the heap pointer; statics lie below the heap).
fn in_heap(start: u64, end: u64, limit: usize) -> bool {
    heap::heap_start() as u64 <= start
        && start <= end
        && end <= (limit as u64).min(heap::memory_bytes())
}

/// The `T` at `handle`, if it can be one this module allocated: aligned, in the heap below the
/// heap pointer, and tagged.
fn handle<T: Tagged>(handle: i32) -> Option<*mut T> {
    let addr = handle as u32 as usize;
    let start = addr as u64;
    let aligned = addr.is_multiple_of(std::mem::align_of::<T>());
    if !aligned || !in_heap(start, start + std::mem::size_of::<T>() as u64, heap::top()) {
        return None;
    }
    let ptr = addr as *mut T;
    // SAFETY: an aligned `T` inside linear memory, in the heap below its pointer, which nothing
    // writes during this call; any bits are a valid `T` (integers and a raw pointer).
    let header = unsafe { ptr.read() };
    (header.tag() == T::TAG).then_some(ptr)
}

/// The JSON text of the value at `value`: `Ok(None)` for undefined (0), `Err` when `value` is
/// not a value this module returned that is still under the heap pointer.
///
/// # Safety
/// The slice is used only during the current export call; until it ends, only this module
/// writes memory, and never the heap below the heap pointer (see [`in_heap`]).
unsafe fn value_text<'a>(value: i32) -> Result<Option<&'a [u8]>, ()> {
    if value == 0 {
        return Ok(None);
    }
    let Value { addr, len, .. } = if value == static_value(&BUILTINS) {
        BUILTINS.0
    } else if value == static_value(&ENTRYPOINTS) {
        ENTRYPOINTS.0
    } else {
        let ptr = handle::<Value>(value).ok_or(())?;
        // SAFETY: `handle` checked that a tagged, aligned `Value` lies there, in the heap below
        // its pointer.
        let header = unsafe { ptr.read() };
        // A made-up header could point anywhere: its text must be in the heap as well.
        let start = header.addr as usize as u64;
        if !in_heap(start, start + header.len as u64, heap::top()) {
            return Err(());
        }
        header
    };
    // SAFETY: static data, or a range `in_heap` checked (see the contract above).
    Ok(Some(unsafe { std::slice::from_raw_parts(addr, len) }))
}

/// `len` bytes the host wrote at `addr`, in the heap below `limit`: `Ok(None)` for an empty
/// range (length 0 or address 0), else a description of what is wrong with the range.
///
/// # Safety
/// As for [`value_text`].
unsafe fn host_bytes<'a>(addr: i32, len: i32, limit: usize) -> Result<Option<&'a [u8]>, String> {
    if len < 0 {
        // `len as u32 as usize` would turn it into a range of gigabytes.
        return Err(format!("has a negative length ({len})"));
    }
    if len == 0 || addr == 0 {
        return Ok(None);
    }
    let start = addr as u32 as u64;
    let end = start + len as u64;
    if !in_heap(start, end, limit) {
        return Err(format!(
            "(bytes {start}..{end}) is not in the module's heap ({}..{}), where hosts write",
            heap::heap_start(),
            (limit as u64).min(heap::memory_bytes())
        ));
    }
    // SAFETY: in linear memory, in the heap below `limit`, which nothing writes during this call
    // (see the contract above).
    Ok(Some(unsafe {
        std::slice::from_raw_parts(start as usize as *const u8, len as usize)
    }))
}

fn static_value(value: &StaticValue) -> i32 {
    &value.0 as *const Value as i32
}

/// Moves `text` to a NUL-terminated string the host reads up to the NUL. JSON text has no NUL
/// of its own: control characters in strings are escaped.
fn c_string(mut text: String) -> i32 {
    text.push('\0');
    text.leak().as_ptr() as i32
}

#[no_mangle]
pub extern "C" fn opa_malloc(size: i32) -> i32 {
    // A negative size is a request for gigabytes, which fails like any other that cannot be met.
    heap::alloc(size as u32 as usize, 8).unwrap_or_else(|| abort(c"opa_malloc: failed")) as i32
}

/// Memory is reclaimed by heap pointer resets only.
#[no_mangle]
pub extern "C" fn opa_free(_addr: i32) {}

#[no_mangle]
pub extern "C" fn opa_value_free(_value: i32) {}

/// ABI 1.3 free-list stash functions: a bump heap has no free list; the OPA Go SDK calls them
/// whatever minor version it finds.
#[no_mangle]
pub extern "C" fn opa_heap_blocks_stash() {}
#[no_mangle]
pub extern "C" fn opa_heap_blocks_restore() {}
#[no_mangle]
pub extern "C" fn opa_heap_stash_clear() {}

#[no_mangle]
pub extern "C" fn opa_heap_ptr_get() -> i32 {
    heap::top() as i32
}

/// Frees everything allocated at or above `addr`. Marks below the heap are raised to its start
/// (see `heap`); one beyond linear memory was never handed out and aborts.
///
/// # Safety
/// Nothing allocated at or above `addr` is used any more: `addr` is a mark the host took with
/// `opa_heap_ptr_get` (or lower), and the values and contexts above it are dropped.
#[no_mangle]
pub unsafe extern "C" fn opa_heap_ptr_set(addr: i32) {
    set_heap_ptr(
        addr,
        c"opa_heap_ptr_set: the address is beyond linear memory",
    );
}

/// Sets the heap pointer, or aborts with `message` for an address beyond linear memory. The
/// callers carry the contract of [`opa_heap_ptr_set`].
fn set_heap_ptr(addr: i32, message: &CStr) {
    let addr = addr as u32 as usize;
    if addr as u64 > heap::memory_bytes() {
        abort(message);
    }
    heap::set_top(addr)
}

/// Parses JSON text the host wrote at `addr`: the value, or 0 when it is not one JSON document
/// or the range is not one the host can have written (a negative length, outside the heap).
///
/// # Safety
/// The host wrote `len` bytes at `addr`, in memory it got from `opa_malloc` (or at the heap
/// pointer), and leaves them as they are while the value is in use.
#[no_mangle]
pub unsafe extern "C" fn opa_json_parse(addr: i32, len: i32) -> i32 {
    // SAFETY: the bytes are used only during this call; the value keeps their address, which
    // the host's contract above keeps valid.
    let Ok(Some(bytes)) = (unsafe { host_bytes(addr, len, heap::top()) }) else {
        return 0;
    };
    // The Rust `opa-wasm` SDK writes a C string and counts its NUL in `len`; OPA's own parser
    // stops there. burrego and the JavaScript SDK count the text alone.
    let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
    let valid = std::str::from_utf8(bytes)
        .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    if valid {
        new_value(bytes.as_ptr(), bytes.len())
    } else {
        0
    }
}

/// Rego value syntax is a superset of JSON; every value here is JSON.
///
/// # Safety
/// As for [`opa_json_parse`].
#[no_mangle]
pub unsafe extern "C" fn opa_value_parse(addr: i32, len: i32) -> i32 {
    // SAFETY: the same contract.
    unsafe { opa_json_parse(addr, len) }
}

/// The value's JSON text, NUL-terminated; `null` for undefined.
///
/// # Safety
/// `value` is 0 or a value this module returned, not freed by a heap reset since.
#[no_mangle]
pub unsafe extern "C" fn opa_json_dump(value: i32) -> i32 {
    // SAFETY: the text is copied before this call returns.
    let bytes = unsafe { value_text(value) }
        .unwrap_or_else(|()| abort(c"opa_json_dump: not a value this module returned"))
        .unwrap_or(b"null");
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.extend_from_slice(bytes);
    out.push(0);
    out.leak().as_ptr() as i32
}

/// # Safety
/// As for [`opa_json_dump`].
#[no_mangle]
pub unsafe extern "C" fn opa_value_dump(value: i32) -> i32 {
    // SAFETY: the same contract.
    unsafe { opa_json_dump(value) }
}

#[no_mangle]
pub extern "C" fn builtins() -> i32 {
    static_value(&BUILTINS)
}

#[no_mangle]
pub extern "C" fn entrypoints() -> i32 {
    static_value(&ENTRYPOINTS)
}

/// The context at `ctx`, or an abort with `message` when it is not one.
fn context(ctx: i32, message: &CStr) -> *mut Context {
    handle::<Context>(ctx).unwrap_or_else(|| abort(message))
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_new() -> i32 {
    Box::into_raw(Box::new(Context {
        tag: CONTEXT_TAG,
        input: 0,
        data: 0,
        result: 0,
        entrypoint: 0,
    })) as i32
}

/// # Safety
/// `ctx` is a context this module returned, not freed by a heap reset since.
#[no_mangle]
pub unsafe extern "C" fn opa_eval_ctx_set_input(ctx: i32, value: i32) {
    let ctx = context(ctx, c"opa_eval_ctx_set_input: not an evaluation context");
    // SAFETY: `context` checked that a tagged, aligned context lies there, in the heap below
    // its pointer; no reference to it is alive.
    unsafe { (*ctx).input = value };
}

/// # Safety
/// As for [`opa_eval_ctx_set_input`].
#[no_mangle]
pub unsafe extern "C" fn opa_eval_ctx_set_data(ctx: i32, value: i32) {
    let ctx = context(ctx, c"opa_eval_ctx_set_data: not an evaluation context");
    // SAFETY: as in `opa_eval_ctx_set_input`.
    unsafe { (*ctx).data = value };
}

/// # Safety
/// As for [`opa_eval_ctx_set_input`].
#[no_mangle]
pub unsafe extern "C" fn opa_eval_ctx_set_entrypoint(ctx: i32, entrypoint: i32) {
    let ctx = context(
        ctx,
        c"opa_eval_ctx_set_entrypoint: not an evaluation context",
    );
    // SAFETY: as in `opa_eval_ctx_set_input`.
    unsafe { (*ctx).entrypoint = entrypoint };
}

/// # Safety
/// As for [`opa_eval_ctx_set_input`].
#[no_mangle]
pub unsafe extern "C" fn opa_eval_ctx_get_result(ctx: i32) -> i32 {
    let ctx = context(ctx, c"opa_eval_ctx_get_result: not an evaluation context");
    // SAFETY: as in `opa_eval_ctx_set_input`.
    unsafe { (*ctx).result }
}

/// An unknown entrypoint is a host error, not a request to judge: abort as OPA's own `eval`
/// does ("illegal entrypoint id").
fn entrypoint(id: i32) -> Entrypoint {
    Entrypoint::from_id(id).unwrap_or_else(|| abort(c"internal: illegal entrypoint id"))
}

/// `eval(ctx)`: evaluates the context's entrypoint and stores the result value; returns 0.
///
/// # Safety
/// `ctx` is a context this module returned, and its input and data are 0 or values this module
/// returned, none freed by a heap reset since.
pub unsafe fn eval<P: Policy>(ctx: i32) -> i32 {
    install_panic_hook();
    let ctx = context(ctx, c"eval: not an evaluation context");
    // SAFETY: `context` checked that a tagged, aligned context lies there; it is copied out.
    let Context {
        input,
        data,
        entrypoint: id,
        ..
    } = unsafe { ctx.read() };
    let entrypoint = entrypoint(id);
    // SAFETY: the texts are used only during this call (by `evaluate`).
    let input = unsafe { value_text(input) }
        .unwrap_or_else(|()| abort(c"eval: the context's input is not a value"));
    // SAFETY: as above.
    let data = unsafe { value_text(data) }
        .unwrap_or_else(|()| abort(c"eval: the context's data is not a value"));
    let result = evaluate::<P>(entrypoint, input, data);
    let len = result.len();
    let result = new_value(c_string(result) as *const u8, len);
    // SAFETY: as above; the texts are no longer used, and the result went above the context.
    unsafe { (*ctx).result = result };
    0
}

/// `opa_eval`: the one-call evaluation of ABI 1.2. The input bytes lie just below `heap_ptr`,
/// so the heap restarts there; an empty input is an undefined one, and one that cannot lie
/// there (a negative length, a range outside the heap or above `heap_ptr`) gets the 400 of a
/// malformed input. Returns the result set as a NUL-terminated string (JSON is also valid Rego
/// value syntax, so `format` changes nothing).
///
/// # Safety
/// Nothing allocated at or above `heap_ptr` is used any more, the host wrote `input_len` bytes
/// at `input` below it, and `data` is 0 or a value this module returned below it.
// Seven arguments: OPA's Wasm ABI 1.2 fixes `opa_eval`'s signature.
#[allow(clippy::too_many_arguments)]
pub unsafe fn opa_eval<P: Policy>(
    reserved: i32,
    entrypoint_id: i32,
    data: i32,
    input: i32,
    input_len: i32,
    heap_ptr: i32,
    _format: i32,
) -> i32 {
    install_panic_hook();
    if reserved != 0 {
        abort(c"opa_eval: invalid reserved argument");
    }
    set_heap_ptr(
        heap_ptr,
        c"opa_eval: the heap pointer is beyond linear memory",
    );
    let entrypoint = entrypoint(entrypoint_id);
    // SAFETY: the text is used only during this call (by `evaluate`).
    let data =
        unsafe { value_text(data) }.unwrap_or_else(|()| abort(c"opa_eval: data is not a value"));
    // SAFETY: as above.
    let result = match unsafe { host_bytes(input, input_len, heap::top()) } {
        Ok(input) => evaluate::<P>(entrypoint, input, data),
        Err(problem) => refuse::<P>(entrypoint, &format!("the host's input {problem}")),
    };
    c_string(result)
}
