//! The host's one function this module imports, `opa_abort`: how an evaluation stops, for the
//! exports (`abi.rs`) and the heap that runs out (`heap.rs`) alike.

use std::ffi::CStr;

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
