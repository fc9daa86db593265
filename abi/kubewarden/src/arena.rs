//! The waPC modules' allocator: a bump arena that frees everything at once.
//!
//! policy-server makes a fresh instance for every request and drops it after the answer
//! (docs/abi.md), so memory freed during a request is rarely worth reusing before then: an
//! allocation here is an aligned pointer bump, a free is a counter. Measured against the
//! default allocator (wasi-libc's dlmalloc) under policy-server (`bench --instructions`), it
//! took 5-7% of the guest's instructions off a request and 3.5 KB off each module; the price
//! is memory: up to twice the linear memory on the largest requests, whose temporaries are
//! not reused (benchmarks/cost.md, "The arena"). No crate we found rewinds for a kept
//! instance: lol_alloc's leaking allocators never give memory back.
//!
//! A host that keeps one instance for many requests must not see memory grow with each one.
//! So the arena rewinds to where it stood after `wapc_init` ([`Arena::mark`]) as soon as every
//! block allocated since has been freed, which is the case after each waPC call: the guest
//! frees the payload and its answer once the host has read it. What `wapc_init` allocated (the
//! handler table) lives as long as the instance; if any of it is ever freed, the arena stops
//! rewinding rather than risk handing out memory still in use.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// WebAssembly's page size.
const PAGE: usize = 65536;

/// The least the arena grows by, in pages. Each `memory.grow` is a call into the host, but 2
/// pages counted as many instructions as 16 (`bench --instructions`), and a small request's
/// memory stays near dlmalloc's (1.2 MiB against 1.1; 2.1 with 16).
const GROWTH: usize = 2;

/// Where new memory comes from: `memory.grow` in a module, a buffer in the unit tests.
pub trait Grow {
    /// Grows memory by `pages`; the address of the first new byte, or `None` when refused.
    fn grow(&self, pages: usize) -> Option<usize>;
}

/// WebAssembly's own memory.
#[cfg(target_arch = "wasm32")]
pub struct Memory;

#[cfg(target_arch = "wasm32")]
impl Grow for Memory {
    fn grow(&self, pages: usize) -> Option<usize> {
        let old = core::arch::wasm32::memory_grow(0, pages);
        (old != usize::MAX).then(|| old * PAGE)
    }
}

/// Where the arena stood after `wapc_init`.
#[derive(Clone, Copy)]
struct Mark {
    next: usize,
    live: usize,
}

/// The bump arena (see the module's documentation).
pub struct Arena<G> {
    grow: G,
    /// The next free byte, and the start and end of the region it is in: memory the arena
    /// grew in one piece, no other allocator's in between.
    next: Cell<usize>,
    start: Cell<usize>,
    end: Cell<usize>,
    /// Blocks allocated and not freed.
    live: Cell<usize>,
    /// `next` and `live` when [`Arena::mark`] was called; `None` before, or once a block from
    /// before the mark was freed.
    mark: Cell<Option<Mark>>,
}

// SAFETY: a waPC module runs one thread; the arena is never shared between threads.
unsafe impl<G> Sync for Arena<G> {}

impl<G: Grow> Arena<G> {
    pub const fn new(grow: G) -> Self {
        Arena {
            grow,
            next: Cell::new(0),
            start: Cell::new(0),
            end: Cell::new(0),
            live: Cell::new(0),
            mark: Cell::new(None),
        }
    }

    /// Remembers this point: once every block allocated after it is freed, the arena rewinds
    /// to it.
    pub fn mark(&self) {
        self.mark.set(Some(Mark {
            next: self.next.get(),
            live: self.live.get(),
        }));
    }

    /// A block for `layout`, or null when memory cannot grow.
    fn bump(&self, layout: Layout) -> *mut u8 {
        let align = layout.align();
        let start = self.next.get().next_multiple_of(align);
        if start + layout.size() > self.end.get() || self.end.get() == 0 {
            let pages = (layout.size() + align).div_ceil(PAGE).max(GROWTH);
            let Some(base) = self.grow.grow(pages) else {
                return std::ptr::null_mut();
            };
            // Memory another allocator grew lies between: start a region of our own.
            if base != self.end.get() {
                self.next.set(base);
                self.start.set(base);
            }
            self.end.set(base + pages * PAGE);
            return self.bump(layout);
        }
        self.next.set(start + layout.size());
        self.live.set(self.live.get() + 1);
        start as *mut u8
    }

    /// Forgets the mark when `ptr` was allocated before it: from then on, no count of live
    /// blocks proves that only the mark's blocks are left.
    fn touch(&self, ptr: *mut u8) {
        if let Some(mark) = self.mark.get() {
            if (ptr as usize) < mark.next {
                self.mark.set(None);
            }
        }
    }
}

// SAFETY: every block is a fresh range of memory no other block overlaps until it is freed
// (rewinding to the mark happens only when no block allocated after it is live), aligned as
// `layout` asks.
unsafe impl<G: Grow> GlobalAlloc for Arena<G> {
    // Kept out of line: inlined into every allocation site, the modules grew by 17 KB.
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.bump(layout)
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.touch(ptr);
        let live = self.live.get() - 1;
        self.live.set(live);
        match self.mark.get() {
            // Every block since the mark is free, so is the whole region the arena is in now:
            // from the mark when the region holds it, else from the region's start (the rest
            // of the mark's region, past another allocator's memory, is left).
            Some(mark) if live == mark.live => self.next.set(mark.next.max(self.start.get())),
            // The last block: its room is the next block's.
            _ if ptr as usize + layout.size() == self.next.get() => self.next.set(ptr as usize),
            _ => {}
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.touch(ptr);
        let at = ptr as usize;
        // The last block grows or shrinks in place: a string or vector being built.
        if at + layout.size() == self.next.get() && at + new_size <= self.end.get() {
            self.next.set(at + new_size);
            return ptr;
        }
        // SAFETY: `layout` was valid with this alignment, and `new_size` rounded up to it does
        // not overflow (GlobalAlloc::realloc's contract).
        let new = self.bump(unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) });
        if !new.is_null() {
            // SAFETY: both blocks are live and distinct, each at least this long.
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // The old block is gone: one block replaced by another.
            self.live.set(self.live.get() - 1);
        }
        new
    }
}

/// C's allocation functions over the arena, exported by the `policy!` macro for wasi-libc's
/// own rare allocations (its environment and error strings, behind a panic's message). Without
/// them wasi-libc links its dlmalloc, 8 KB of each module that no request runs: with it
/// toleration-injection passed its 400 KB budget (benchmarks/cost.md, "Decision work, measured
/// per function"). A C block carries its size in a header of [`C_ALIGN`] bytes, so that `free`
/// and `realloc` know it.
impl<G: Grow> Arena<G> {
    /// `malloc`: a block of `size` bytes aligned for any C object, or null.
    ///
    /// # Safety
    ///
    /// As C's `malloc`.
    pub unsafe fn c_malloc(&self, size: usize) -> *mut u8 {
        let Some(layout) = c_layout(size) else {
            return std::ptr::null_mut();
        };
        // SAFETY: a valid layout of non-zero size.
        let block = unsafe { self.alloc(layout) };
        if block.is_null() {
            return block;
        }
        // SAFETY: the block is at least the header long and aligned for a `usize`.
        unsafe {
            block.cast::<usize>().write(size);
            block.add(C_ALIGN)
        }
    }

    /// `free`: gives back a block from [`Arena::c_malloc`]; null is nothing.
    ///
    /// # Safety
    ///
    /// As C's `free`: `ptr` is null or a live block of these functions.
    pub unsafe fn c_free(&self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: a block of `c_malloc`, whose header lies before it and holds its size, with
        // which its layout was valid.
        unsafe {
            let block = ptr.sub(C_ALIGN);
            let size = block.cast::<usize>().read();
            self.dealloc(block, c_layout(size).unwrap_or(Layout::new::<u8>()));
        }
    }

    /// `calloc`: `n` zeroed objects of `size` bytes, or null when that overflows.
    ///
    /// # Safety
    ///
    /// As C's `calloc`.
    pub unsafe fn c_calloc(&self, n: usize, size: usize) -> *mut u8 {
        let Some(total) = n.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        // SAFETY: as `malloc`; a non-null block is `total` bytes long.
        unsafe {
            let block = self.c_malloc(total);
            if !block.is_null() {
                block.write_bytes(0, total);
            }
            block
        }
    }

    /// `realloc`: the block at `ptr` moved to one of `size` bytes (its bytes kept up to the
    /// shorter length), or null with `ptr` untouched.
    ///
    /// # Safety
    ///
    /// As C's `realloc`: `ptr` is null or a live block of these functions.
    pub unsafe fn c_realloc(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        // SAFETY: as `malloc` and `free`; both blocks are live and distinct, each at least as
        // long as what is copied.
        unsafe {
            if ptr.is_null() {
                return self.c_malloc(size);
            }
            let old = ptr.sub(C_ALIGN).cast::<usize>().read();
            let block = self.c_malloc(size);
            if !block.is_null() {
                std::ptr::copy_nonoverlapping(ptr, block, old.min(size));
                self.c_free(ptr);
            }
            block
        }
    }
}

/// C's strictest alignment on wasm32 (`max_align_t`), and the size of a C block's header.
pub const C_ALIGN: usize = 16;

/// The layout of a C block of `size` bytes with its header; `None` when it would overflow.
fn c_layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(C_ALIGN)?, C_ALIGN).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory for the tests: pages of a buffer handed out in order, as `memory.grow` does.
    struct Buffer {
        base: usize,
        pages: Cell<usize>,
        limit: usize,
    }

    impl Grow for &Buffer {
        fn grow(&self, pages: usize) -> Option<usize> {
            let old = self.pages.get();
            (old + pages <= self.limit).then(|| {
                self.pages.set(old + pages);
                self.base + old * PAGE
            })
        }
    }

    fn buffer(pages: usize) -> (Vec<u8>, Buffer) {
        let memory = vec![0u8; (pages + 1) * PAGE];
        let base = (memory.as_ptr() as usize).next_multiple_of(PAGE);
        let buffer = Buffer {
            base,
            pages: Cell::new(0),
            limit: pages,
        };
        (memory, buffer)
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_aligned_and_apart_and_the_arena_rewinds_to_its_mark() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and every pointer handed back is one of this arena's
        // live blocks, within the buffer the arena grows into.
        unsafe {
            let table = arena.alloc(layout(24, 8));
            arena.mark();
            let after_init = arena.next.get();
            let mut blocks = Vec::new();
            for (size, align) in [(1, 1), (7, 8), (100, 16), (3, 4), (70_000, 8)] {
                let block = arena.alloc(layout(size, align));
                assert_eq!(block as usize % align, 0);
                blocks.push((block as usize, size));
            }
            blocks.sort();
            for pair in blocks.windows(2) {
                assert!(pair[0].0 + pair[0].1 <= pair[1].0, "{pair:?}");
            }
            assert!(blocks.iter().all(|(at, _)| *at >= table as usize + 24));
            for (at, size) in blocks {
                arena.dealloc(at as *mut u8, layout(size, 1));
            }
            assert_eq!(arena.next.get(), after_init);
        }
    }

    #[test]
    fn the_last_block_grows_in_place_and_others_move_with_their_bytes() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and every pointer handed back is one of this arena's
        // live blocks, within the buffer the arena grows into.
        unsafe {
            let a = arena.alloc(layout(4, 1));
            a.copy_from(b"abcd".as_ptr(), 4);
            let grown = arena.realloc(a, layout(4, 1), 64);
            assert_eq!(grown, a);
            let b = arena.alloc(layout(8, 8));
            let moved = arena.realloc(a, layout(64, 1), 128);
            assert_ne!(moved, a);
            assert_eq!(std::slice::from_raw_parts(moved, 4), b"abcd");
            assert!(moved as usize >= b as usize + 8);
            assert_eq!(arena.live.get(), 2);
        }
    }

    #[test]
    fn a_freed_block_from_before_the_mark_stops_the_rewinding() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and every pointer handed back is one of this arena's
        // live blocks, within the buffer the arena grows into.
        unsafe {
            let table = arena.alloc(layout(16, 8));
            arena.mark();
            let block = arena.alloc(layout(16, 8));
            arena.dealloc(table, layout(16, 8));
            let next = arena.next.get();
            arena.dealloc(block, layout(16, 8));
            assert!(arena.mark.get().is_none());
            // Only the last block's room comes back, never the mark's.
            assert_eq!(arena.next.get(), next - 16);
        }
    }

    /// C's functions keep each block's bytes and size, zero what `calloc` hands out, keep the
    /// shorter length across `realloc`, and refuse sizes that overflow.
    #[test]
    fn c_blocks_behave_as_c_asks() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every pointer handed to `c_free` and `c_realloc` is one of these functions'
        // live blocks, each written within its length.
        unsafe {
            let a = arena.c_malloc(5);
            assert_eq!(a as usize % C_ALIGN, 0);
            a.copy_from(b"hello".as_ptr(), 5);
            let zeroed = arena.c_calloc(3, 4);
            assert_eq!(std::slice::from_raw_parts(zeroed, 12), [0; 12]);
            let grown = arena.c_realloc(a, 100);
            assert_eq!(std::slice::from_raw_parts(grown, 5), b"hello");
            let shrunk = arena.c_realloc(grown, 2);
            assert_eq!(std::slice::from_raw_parts(shrunk, 2), b"he");
            arena.c_free(shrunk);
            arena.c_free(zeroed);
            arena.c_free(std::ptr::null_mut());
            assert_eq!(arena.live.get(), 0);
            assert!(arena.c_malloc(usize::MAX - 8).is_null());
            assert!(arena.c_calloc(usize::MAX / 2, 3).is_null());
            let fresh = arena.c_realloc(std::ptr::null_mut(), 7);
            assert!(!fresh.is_null());
        }
    }

    #[test]
    fn memory_that_cannot_grow_is_a_null_block() {
        let (_memory, buffer) = buffer(16);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and every pointer handed back is one of this arena's
        // live blocks, within the buffer the arena grows into.
        unsafe {
            assert!(!arena.alloc(layout(PAGE, 8)).is_null());
            assert!(arena.alloc(layout(16 * PAGE, 8)).is_null());
        }
    }
}
