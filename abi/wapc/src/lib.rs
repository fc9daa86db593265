//! The guest's side of waPC, the protocol policy-server and kwctl call a module through
//! (docs/abi.md, "Kubewarden waPC"): `__guest_call` fetches the operation's name and payload
//! from the host and hands back its answer or its error; [`host_call`] asks the host.
//!
//! Our own rather than the `wapc-guest` crate's, for what it costs per request: that crate
//! dispatches through a table its `wapc_init` fills (a `HashMap` behind a lock, its hasher
//! seeded by a WASI `random_get` call), and policy-server makes a fresh instance, so runs
//! `wapc_init`, for every request. Filling the table was 6.1k of the 120k guest instructions
//! kured's taint removal costs (the profiling example under callgrind), before any policy work;
//! a `match` on the operation's name costs nothing of the kind (benchmarks/cost.md, "waPC without
//! a handler table"). The imports and their contract are those of `wapc-guest` 1.2. The policies
//! and the benchmark's modules all use this one, so that no ratio between them is the guest
//! library's.
//!
//! # Examples
//!
//! A module answering waPC's operations:
//!
//! ```
//! fn serve(operation: &[u8], _payload: &[u8]) -> taintguard_wapc::Answer {
//!     match operation {
//!         b"protocol_version" => Ok(br#""v1""#.to_vec()),
//!         other => Err(taintguard_wapc::unknown(other)),
//!     }
//! }
//! taintguard_wapc::guest!(serve);
//! # assert_eq!(serve(b"x", b""), Err("No handler registered for function x".to_owned()));
//! ```

// No function of the shipped code over 60 lines (clippy.toml); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Each public item says what it is and why (the docs rule every crate keeps).
#![warn(missing_docs)]

/// An operation's answer, or the error the host is told instead.
pub type Answer = Result<Vec<u8>, String>;

/// Exports waPC's `__guest_call` from a module (wasm32 builds only), answering each operation
/// with `$serve`, a `fn(operation: &[u8], payload: &[u8]) -> Answer`.
#[macro_export]
macro_rules! guest {
    ($serve:expr) => {
        /// waPC's entry point: the host calls it for each operation, with the lengths of the
        /// operation's name and payload, which the guest then fetches from the host.
        #[cfg(target_arch = "wasm32")]
        #[no_mangle]
        pub extern "C" fn __guest_call(op_len: i32, payload_len: i32) -> i32 {
            $crate::guest_call(op_len, payload_len, $serve)
        }

        // Native builds (unit tests, clippy) have no host to answer, but keep what a module
        // serves in use, as its wasm build does.
        #[cfg(not(target_arch = "wasm32"))]
        #[allow(dead_code)]
        fn __guest_call_served() -> impl Sized {
            $serve
        }
    };
}

/// A `validate` answer of a module without settings, or why there is none.
pub type Validated = Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;

/// The operations of a module without settings (the benchmark's modules): `validate` answered by
/// `validate`, whose error the host is told; every settings document valid; protocol `v1`.
pub fn answering(validate: fn(&[u8]) -> Validated) -> impl FnOnce(&[u8], &[u8]) -> Answer {
    move |operation, payload| match operation {
        b"validate" => validate(payload).map_err(|e| e.to_string()),
        b"validate_settings" => Ok(br#"{"valid":true}"#.to_vec()),
        b"protocol_version" => Ok(br#""v1""#.to_vec()),
        other => Err(unknown(other)),
    }
}

/// The error for an operation a module does not answer, in `wapc-guest`'s words.
pub fn unknown(operation: &[u8]) -> String {
    format!(
        "No handler registered for function {}",
        String::from_utf8_lossy(operation)
    )
}

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "wapc")]
extern "C" {
    fn __guest_request(op_ptr: *mut u8, ptr: *mut u8);
    fn __guest_response(ptr: *const u8, len: usize);
    fn __guest_error(ptr: *const u8, len: usize);
    #[allow(clippy::too_many_arguments)]
    fn __host_call(
        binding_ptr: *const u8,
        binding_len: usize,
        namespace_ptr: *const u8,
        namespace_len: usize,
        op_ptr: *const u8,
        op_len: usize,
        ptr: *const u8,
        len: usize,
    ) -> usize;
    fn __host_response_len() -> usize;
    fn __host_response(ptr: *mut u8);
    fn __host_error_len() -> usize;
    fn __host_error(ptr: *mut u8);
}

/// One `__guest_call` of the host: fetches the operation named in `op_len` bytes and its payload
/// of `payload_len` bytes, answers with what `serve` makes of them, and returns 1, or 0 after
/// handing the host `serve`'s error.
#[cfg(target_arch = "wasm32")]
pub fn guest_call(
    op_len: i32,
    payload_len: i32,
    serve: impl FnOnce(&[u8], &[u8]) -> Answer,
) -> i32 {
    let (op_len, payload_len) = (op_len as usize, payload_len as usize);
    // Not zeroed first: the host writes every byte, and a payload is up to megabytes.
    let mut operation = Vec::with_capacity(op_len);
    let mut payload = Vec::with_capacity(payload_len);
    // SAFETY: the host copies the operation's name and the payload, of the lengths it announced,
    // into the two buffers, which have room for them; then those bytes are initialised.
    unsafe {
        __guest_request(operation.as_mut_ptr(), payload.as_mut_ptr());
        operation.set_len(op_len);
        payload.set_len(payload_len);
    }
    match serve(&operation, &payload) {
        Ok(answer) => {
            // SAFETY: the host reads `answer.len()` bytes from `answer`, alive until we return.
            unsafe { __guest_response(answer.as_ptr(), answer.len()) };
            1
        }
        Err(error) => {
            // SAFETY: as above, for the error's bytes.
            unsafe { __guest_error(error.as_ptr(), error.len()) };
            0
        }
    }
}

/// Asks the host for `operation` of `namespace` in `binding` with `payload`: its answer, or its
/// error's text.
///
/// # Errors
///
/// What the host answers when it refuses the call (an operation the policy's configuration does
/// not grant, a failed lookup), as text.
#[cfg(target_arch = "wasm32")]
pub fn host_call(binding: &str, namespace: &str, operation: &str, payload: &[u8]) -> Answer {
    // SAFETY: each pointer and length pair is one of the borrowed slices, alive for the call.
    let succeeded = unsafe {
        __host_call(
            binding.as_ptr(),
            binding.len(),
            namespace.as_ptr(),
            namespace.len(),
            operation.as_ptr(),
            operation.len(),
            payload.as_ptr(),
            payload.len(),
        )
    } == 1;
    if succeeded {
        // SAFETY: after a call that succeeded, the host holds an answer of this length and
        // `__host_response` writes it.
        Ok(unsafe { from_host(__host_response_len(), __host_response) })
    } else {
        // SAFETY: after a call that failed, likewise for the error.
        let error = unsafe { from_host(__host_error_len(), __host_error) };
        Err(String::from_utf8_lossy(&error).into_owned())
    }
}

/// Native builds (unit tests, the profiling example) have no waPC host to ask.
///
/// # Errors
///
/// Always: only a wasm build makes host calls.
#[cfg(not(target_arch = "wasm32"))]
pub fn host_call(binding: &str, namespace: &str, operation: &str, _payload: &[u8]) -> Answer {
    Err(format!(
        "{binding}/{namespace}/{operation} is a waPC host call, which only a wasm build makes"
    ))
}

/// The `len` bytes that `write` puts at the pointer it is given.
///
/// # Safety
///
/// `write` must write exactly `len` bytes there.
#[cfg(target_arch = "wasm32")]
unsafe fn from_host(len: usize, write: unsafe extern "C" fn(*mut u8)) -> Vec<u8> {
    let mut buffer = Vec::with_capacity(len);
    // SAFETY: `buffer` has room for `len` bytes, which `write` writes (the caller's promise).
    unsafe {
        write(buffer.as_mut_ptr());
        buffer.set_len(len);
    }
    buffer
}
