//! The module's only heap: a bump allocator whose top is the OPA heap pointer.
//!
//! Both hosts manage memory through the heap pointer, not through `free`: they take a mark with
//! `opa_heap_ptr_get`, and `opa_heap_ptr_set(mark)` discards everything allocated above it (before
//! every evaluation). The JavaScript SDK even writes the input at the mark without allocating and
//! passes the address after it to `opa_eval`. So `opa_malloc` and Rust's global allocator must be
//! this one heap: a general-purpose allocator (dlmalloc) would hand out memory the hosts
//! overwrite. Nothing allocated on the heap may outlive an evaluation, hence no heap-backed
//! statics.

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

const PAGE: u64 = 65536;

/// The heap pointer; 0 until first used (the linker's `__heap_base` is not a constant).
static TOP: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    /// First address after the stack and static data, provided by wasm-ld.
    static __heap_base: u8;
}

/// The lowest address the heap hands out, and the lowest mark it accepts.
pub fn heap_start() -> usize {
    // Only the address of the linker symbol is taken, never its contents.
    (std::ptr::addr_of!(__heap_base) as usize + 15) & !15
}

pub fn top() -> usize {
    match TOP.load(Relaxed) {
        0 => {
            let start = heap_start();
            TOP.store(start, Relaxed);
            start
        }
        top => top,
    }
}

/// Sets the heap pointer; a mark below the heap (which no host was ever given) would hand out
/// the stack and static data, so it is raised to the heap's start.
pub fn set_top(addr: usize) {
    TOP.store(addr.max(heap_start()), Relaxed);
}

/// The size of linear memory in bytes (a u64: 65,536 pages are 4 GiB, one more than a wasm32
/// `usize` holds).
pub fn memory_bytes() -> u64 {
    wasm32::memory_size(0) as u64 * PAGE
}

/// Makes sure memory extends to `end`. Growth is measured against the *current* memory size: the
/// JavaScript host grows memory itself for the inputs it writes.
fn reserve(end: usize) -> bool {
    let size = memory_bytes();
    let end = end as u64;
    end <= size || wasm32::memory_grow(0, (end - size).div_ceil(PAGE) as usize) != usize::MAX
}

/// `size` bytes aligned to `align` (a power of two) from `from`: `(start, end)`.
fn fit(from: usize, size: usize, align: usize) -> Option<(usize, usize)> {
    let start = from.checked_add(align - 1)? & !(align - 1);
    let end = start.checked_add(size)?;
    reserve(end).then_some((start, end))
}

/// Allocates `size` bytes aligned to `align` (a power of two) at the top of the heap.
pub fn alloc(size: usize, align: usize) -> Option<usize> {
    let (start, end) = fit(top(), size, align)?;
    TOP.store(end, Relaxed);
    Some(start)
}

/// Rust's allocator. `dealloc` is a no-op: the hosts free everything at once by resetting the
/// heap pointer.
pub struct BumpHeap;

// SAFETY: `alloc` returns fresh, aligned, in-bounds memory that nothing else hands out until the
// host resets the heap pointer, which ends every heap allocation's use (evaluations are
// single-threaded and keep nothing on the heap across calls).
unsafe impl GlobalAlloc for BumpHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match alloc(layout.size(), layout.align()) {
            Some(addr) => addr as *mut u8,
            None => crate::host::abort(c"taintguard: out of memory"),
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    /// The last allocation (a growing result string, a vector being filled) grows in place, so
    /// building a value does not leave a trail of copies on the heap.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let addr = ptr as usize;
        if addr + layout.size() == TOP.load(Relaxed) {
            if let Some((_, end)) = fit(addr, new_size, 1) {
                TOP.store(end, Relaxed);
                return ptr;
            }
        }
        // SAFETY: the caller guarantees a valid layout; the new block does not overlap the old.
        unsafe {
            let new = GlobalAlloc::alloc(
                self,
                Layout::from_size_align_unchecked(new_size, layout.align()),
            );
            std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
            new
        }
    }
}
