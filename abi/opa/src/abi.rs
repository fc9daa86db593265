//! The OPA Wasm ABI in linear memory: the exports both hosts call, with the exact signatures
//! burrego's typed lookups require (all `i32`; `eval` returns one, the setters return nothing).
//!
//! Values are opaque to the hosts, which only hand addresses back. A value here is a
//! [`Value`] header pointing at JSON text that has already been validated; the text stays where
//! the host wrote it, under the heap mark that keeps it alive. `0` is "undefined".
//!
//! Call sequences served (see `../shared/reference/opa-abi.md`):
//! * burrego and the SDK's legacy path: `opa_malloc` + `opa_json_parse` for data and input,
//!   `opa_eval_ctx_new`, `opa_eval_ctx_set_*`, `eval`, `opa_eval_ctx_get_result`, `opa_json_dump`;
//! * the SDK's fast path (ABI 1.2): input bytes written at the heap mark without allocation, then
//!   one `opa_eval` whose `heap_ptr` argument is the first free address after them.

use std::ffi::CStr;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use taintguard::PolicyExt;

use crate::evaluate::{evaluate, Entrypoint, ENTRYPOINTS_JSON};
use crate::heap::{self, BumpHeap};

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

#[link(wasm_import_module = "env")]
extern "C" {
    /// The host reports the NUL-terminated message. burrego's host returns afterwards, so the
    /// declared `!` makes Rust trap right after the call.
    #[link_name = "opa_abort"]
    fn host_abort(message: *const u8) -> !;
}

/// Stops the evaluation with `message`: the JS SDK throws it, Kubewarden fails the request.
pub fn abort(message: &CStr) -> ! {
    // SAFETY: a NUL-terminated string in linear memory, as the host expects.
    unsafe { host_abort(message.as_ptr().cast()) }
}

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

#[repr(C)]
struct Value {
    addr: *const u8,
    len: usize,
}

/// `builtins()` and `entrypoints()` answer constant values that live in static data, so they
/// survive every heap reset.
struct StaticValue(Value);
// SAFETY: the pointers address immutable static data; the module is single-threaded.
unsafe impl Sync for StaticValue {}

static BUILTINS: StaticValue = StaticValue(Value {
    addr: b"{}".as_ptr(),
    len: 2,
});
static ENTRYPOINTS: StaticValue = StaticValue(Value {
    addr: ENTRYPOINTS_JSON.as_ptr(),
    len: ENTRYPOINTS_JSON.len(),
});

fn new_value(addr: *const u8, len: usize) -> i32 {
    Box::into_raw(Box::new(Value { addr, len })) as i32
}

/// The JSON text of the value at `value`, `None` for undefined.
///
/// # Safety
/// `value` is 0 or an address this module returned as a value, still under the heap mark.
unsafe fn value_bytes<'a>(value: i32) -> Option<&'a [u8]> {
    if value == 0 {
        return None;
    }
    // SAFETY: per the contract above.
    unsafe {
        let value = &*(value as *const Value);
        Some(std::slice::from_raw_parts(value.addr, value.len))
    }
}

/// `len` bytes the host wrote at `addr`; `None` for an empty range.
///
/// # Safety
/// The range is in linear memory (the host wrote it there).
unsafe fn host_bytes<'a>(addr: i32, len: i32) -> Option<&'a [u8]> {
    let len = len as u32 as usize;
    // SAFETY: per the contract above; an empty range is never turned into a slice.
    (len > 0 && addr != 0).then(|| unsafe { std::slice::from_raw_parts(addr as *const u8, len) })
}

/// Moves `text` to a NUL-terminated string the host reads up to the NUL. JSON text has no NUL
/// of its own: control characters in strings are escaped.
fn c_string(mut text: String) -> i32 {
    text.push('\0');
    text.leak().as_ptr() as i32
}

#[no_mangle]
pub extern "C" fn opa_malloc(size: i32) -> i32 {
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

#[no_mangle]
pub extern "C" fn opa_heap_ptr_set(addr: i32) {
    heap::set_top(addr as u32 as usize)
}

/// Parses JSON text the host wrote at `addr`: the value, or 0 when it is not one JSON document.
#[no_mangle]
pub extern "C" fn opa_json_parse(addr: i32, len: i32) -> i32 {
    // SAFETY: the host wrote `len` bytes at `addr`.
    let Some(bytes) = (unsafe { host_bytes(addr, len) }) else {
        return 0;
    };
    let valid = std::str::from_utf8(bytes)
        .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    if valid {
        new_value(bytes.as_ptr(), bytes.len())
    } else {
        0
    }
}

/// Rego value syntax is a superset of JSON; every value here is JSON.
#[no_mangle]
pub extern "C" fn opa_value_parse(addr: i32, len: i32) -> i32 {
    opa_json_parse(addr, len)
}

#[no_mangle]
pub extern "C" fn opa_json_dump(value: i32) -> i32 {
    // SAFETY: hosts pass back values this module returned.
    let bytes = unsafe { value_bytes(value) }.unwrap_or(b"null");
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.extend_from_slice(bytes);
    out.push(0);
    out.leak().as_ptr() as i32
}

#[no_mangle]
pub extern "C" fn opa_value_dump(value: i32) -> i32 {
    opa_json_dump(value)
}

#[no_mangle]
pub extern "C" fn builtins() -> i32 {
    &BUILTINS.0 as *const Value as i32
}

#[no_mangle]
pub extern "C" fn entrypoints() -> i32 {
    &ENTRYPOINTS.0 as *const Value as i32
}

/// An evaluation context: value addresses and the entrypoint id.
#[repr(C)]
struct Context {
    input: i32,
    data: i32,
    result: i32,
    entrypoint: i32,
}

/// # Safety
/// `ctx` was returned by `opa_eval_ctx_new` and is still under the heap mark.
unsafe fn context<'a>(ctx: i32) -> &'a mut Context {
    // SAFETY: per the contract above.
    unsafe { &mut *(ctx as *mut Context) }
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_new() -> i32 {
    Box::into_raw(Box::new(Context {
        input: 0,
        data: 0,
        result: 0,
        entrypoint: 0,
    })) as i32
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_set_input(ctx: i32, value: i32) {
    // SAFETY: hosts pass back contexts this module returned.
    unsafe { context(ctx) }.input = value;
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_set_data(ctx: i32, value: i32) {
    // SAFETY: as above.
    unsafe { context(ctx) }.data = value;
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_set_entrypoint(ctx: i32, entrypoint: i32) {
    // SAFETY: as above.
    unsafe { context(ctx) }.entrypoint = entrypoint;
}

#[no_mangle]
pub extern "C" fn opa_eval_ctx_get_result(ctx: i32) -> i32 {
    // SAFETY: as above.
    unsafe { context(ctx) }.result
}

/// An unknown entrypoint is a host error, not a request to judge: abort as OPA's own `eval`
/// does ("illegal entrypoint id").
fn entrypoint(id: i32) -> Entrypoint {
    Entrypoint::from_id(id).unwrap_or_else(|| abort(c"internal: illegal entrypoint id"))
}

/// `eval(ctx)`: evaluates the context's entrypoint and stores the result value; returns 0.
pub fn eval<P: PolicyExt>(ctx: i32) -> i32 {
    install_panic_hook();
    // SAFETY: hosts pass back contexts this module returned.
    let context = unsafe { context(ctx) };
    let entrypoint = entrypoint(context.entrypoint);
    // SAFETY: hosts pass back values this module returned.
    let (input, data) = unsafe { (value_bytes(context.input), value_bytes(context.data)) };
    let result = evaluate::<P>(entrypoint, input, data);
    let len = result.len();
    context.result = new_value(c_string(result) as *const u8, len);
    0
}

/// `opa_eval`: the one-call evaluation of ABI 1.2. The input bytes lie just below `heap_ptr`,
/// so the heap restarts there; an empty input is an undefined one. Returns the result set as a
/// NUL-terminated string (JSON is also valid Rego value syntax, so `format` changes nothing).
pub fn opa_eval<P: PolicyExt>(
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
    heap::set_top(heap_ptr as u32 as usize);
    let entrypoint = entrypoint(entrypoint_id);
    // SAFETY: the host wrote the input there and passes back a value this module returned.
    let (input, data) = unsafe { (host_bytes(input, input_len), value_bytes(data)) };
    c_string(evaluate::<P>(entrypoint, input, data))
}
