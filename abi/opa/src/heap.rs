//! The module's only heap: a bump allocator whose top is the OPA heap pointer, and below it a
//! small region for what outlives an evaluation.
//!
//! Both hosts manage memory through the heap pointer, not through `free`: they take a mark with
//! `opa_heap_ptr_get`, and `opa_heap_ptr_set(mark)` discards everything allocated above it (before
//! every evaluation). The JavaScript SDK even writes the input at the mark without allocating and
//! passes the address after it to `opa_eval`. So `opa_malloc` and Rust's global allocator must be
//! this one heap: a general-purpose allocator (dlmalloc) would hand out memory the hosts
//! overwrite. Nothing allocated on the heap may outlive an evaluation, hence no heap-backed
//! statics.
//!
//! The one exception is the *kept* region, [`KEPT_BYTES`] between `__heap_base` and the first
//! address the heap hands out. Every mark a host can hold lies above it (the hosts only ever set
//! marks they were given), so no reset frees it and no host writes there. [`keep`] allocates in
//! it the settings an instance keeps between evaluations
//! (`taintguard::policy::cached_settings_kept_by`): a warm instance then skips rebuilding them,
//! as the waPC build does.

use std::alloc::{GlobalAlloc, Layout};
use std::arch::wasm32;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

const PAGE: u64 = 65536;

/// The size of the kept region: the settings of real policies take a few KiB (the example
/// settings under 8 KiB, their parse tree excluded); larger ones are rebuilt every evaluation.
pub const KEPT_BYTES: usize = 32 * 1024;

/// The heap pointer; 0 until first used (the linker's `__heap_base` is not a constant).
static TOP: AtomicUsize = AtomicUsize::new(0);
/// The first free address of the kept region while [`keep`] runs.
static KEPT_TOP: AtomicUsize = AtomicUsize::new(0);
/// Whether allocations go to the kept region ([`keep`] is running).
static KEEPING: AtomicBool = AtomicBool::new(false);
/// Whether an allocation during [`keep`] did not fit the kept region and went to the heap.
static SPILLED: AtomicBool = AtomicBool::new(false);

extern "C" {
    /// First address after the stack and static data, provided by wasm-ld.
    static __heap_base: u8;
}

/// The kept region's first address.
fn kept_start() -> usize {
    // Only the address of the linker symbol is taken, never its contents.
    (std::ptr::addr_of!(__heap_base) as usize + 15) & !15
}

/// The lowest address the heap hands out, and the lowest mark it accepts.
pub fn heap_start() -> usize {
    kept_start() + KEPT_BYTES
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

/// Sets the heap pointer; a mark below the heap (which no host was ever given) would hand the
/// kept region out, so it is raised to the heap's start.
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

/// `size` bytes aligned to `align` (a power of two) from `from`, below `limit`: `(start, end)`.
fn fit(from: usize, size: usize, align: usize, limit: usize) -> Option<(usize, usize)> {
    let start = from.checked_add(align - 1)? & !(align - 1);
    let end = start.checked_add(size)?;
    (end <= limit && reserve(end)).then_some((start, end))
}

/// Allocates `size` bytes aligned to `align` (a power of two) at the top of the heap.
pub fn alloc(size: usize, align: usize) -> Option<usize> {
    let (start, end) = fit(top(), size, align, usize::MAX)?;
    TOP.store(end, Relaxed);
    Some(start)
}

/// Runs `build` with every allocation in the kept region, which starts empty: whatever the
/// region held before must be dropped already. Answers whether everything fitted; what did not
/// went to the heap, so `build` always completes, but then what it built lasts only for this
/// evaluation.
pub fn keep(build: &mut dyn FnMut()) -> bool {
    KEPT_TOP.store(kept_start(), Relaxed);
    SPILLED.store(false, Relaxed);
    KEEPING.store(true, Relaxed);
    build();
    KEEPING.store(false, Relaxed);
    !SPILLED.load(Relaxed)
}

/// An allocation while [`keep`] runs: the kept region, else (noted) the heap.
fn alloc_kept(size: usize, align: usize) -> Option<usize> {
    match fit(KEPT_TOP.load(Relaxed), size, align, heap_start()) {
        Some((start, end)) => {
            KEPT_TOP.store(end, Relaxed);
            Some(start)
        }
        None => {
            SPILLED.store(true, Relaxed);
            alloc(size, align)
        }
    }
}

/// Rust's allocator. `dealloc` is a no-op: the hosts free everything at once by resetting the
/// heap pointer, and [`keep`] empties the kept region.
pub struct BumpHeap;

// SAFETY: `alloc` returns fresh, aligned, in-bounds memory that nothing else hands out until the
// host resets the heap pointer, which ends every heap allocation's use (evaluations are
// single-threaded and keep nothing on the heap across calls), or until `keep` empties the kept
// region, whose previous contents its caller has dropped.
unsafe impl GlobalAlloc for BumpHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let addr = if KEEPING.load(Relaxed) {
            alloc_kept(layout.size(), layout.align())
        } else {
            alloc(layout.size(), layout.align())
        };
        match addr {
            Some(addr) => addr as *mut u8,
            None => crate::abi::abort(c"taintguard: out of memory"),
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    /// The last allocation (a growing result string, a vector being filled) grows in place, so
    /// building a value does not leave a trail of copies on the heap.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let addr = ptr as usize;
        let kept = addr < heap_start();
        let (last, limit) = if kept {
            (&KEPT_TOP, heap_start())
        } else {
            (&TOP, usize::MAX)
        };
        // Kept memory only grows while `keep` fills the region.
        let in_place = !kept || KEEPING.load(Relaxed);
        if in_place && addr + layout.size() == last.load(Relaxed) {
            if let Some((_, end)) = fit(addr, new_size, 1, limit) {
                last.store(end, Relaxed);
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
