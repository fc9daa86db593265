//! The waPC modules' allocator: a bump arena that frees everything at once.
//!
//! policy-server makes a fresh instance for every request and drops it after the answer
//! (docs/abi.md), so memory freed during a request is rarely worth reusing before then: an
//! allocation here is an aligned pointer bump and a free is nothing at all. Measured against
//! the default allocator (wasi-libc's dlmalloc) under policy-server (`bench --instructions`),
//! the bump took 5-7% of the guest's instructions off a request and 3.5 KB off each module; the
//! free that does nothing, 1.5% more than one that counted the blocks still live
//! (benchmarks/cost.md, "The arena"). The price is memory: up to twice the linear memory on the
//! largest requests, whose temporaries are not reused. No crate we found rewinds for a kept
//! instance: lol_alloc's leaking allocators never give memory back.
//!
//! A host that keeps one instance for many requests must not see memory grow with each one.
//! So each waPC call rewinds the arena to where it stood when the call began
//! ([`Arena::position`], [`Arena::rewind`]): nothing a call allocates outlives it, since the
//! host copies the answer before the call returns and the modules keep no state between calls.

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

/// Where the arena stands: its next free byte, and where the region it is in starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    next: usize,
    start: usize,
}

/// The bump arena (see the module's documentation).
pub struct Arena<G> {
    grow: G,
    /// The next free byte, and the start and end of the region it is in: memory the arena
    /// grew in one piece, no other allocator's in between.
    next: Cell<usize>,
    start: Cell<usize>,
    end: Cell<usize>,
}

// SAFETY: a waPC module runs one thread; the arena is never shared between threads.
unsafe impl<G> Sync for Arena<G> {}

impl<G: Grow> Arena<G> {
    /// An arena that has grown no memory yet and takes pages from `grow` when it needs them.
    pub const fn new(grow: G) -> Self {
        Arena {
            grow,
            next: Cell::new(0),
            start: Cell::new(0),
            end: Cell::new(0),
        }
    }

    /// Where the arena stands now, to [`Arena::rewind`] to.
    pub fn position(&self) -> Position {
        Position {
            next: self.next.get(),
            start: self.start.get(),
        }
    }

    /// Takes back every block allocated since `position`: their memory is the next blocks'.
    /// Memory grown since stays the arena's: the region `position` is in, grown on, or the
    /// whole of a region started since (only another allocator's growth in between starts one,
    /// and the modules have none; the rest of the older region is then left).
    ///
    /// # Safety
    ///
    /// No block allocated since `position` is used again.
    pub unsafe fn rewind(&self, position: Position) {
        if self.start.get() == position.start {
            self.next.set(position.next);
        } else {
            self.next.set(self.start.get());
        }
    }

    /// A block for `layout`, or null when memory cannot grow. What fits is inlined into `alloc`,
    /// its alignment a mask (`Layout`'s is a power of two) rather than a remainder: a call and a
    /// division less per allocation, 2.4k of the hostpath Pod's guest instructions
    /// (benchmarks/cost.md, "JSONPath's text, a rule's reason and the arena's fitting path").
    /// Growing stays out of line.
    #[inline(always)]
    fn bump(&self, layout: Layout) -> *mut u8 {
        let mask = layout.align() - 1;
        let start = (self.next.get() + mask) & !mask;
        if start + layout.size() <= self.end.get() && self.end.get() != 0 {
            self.next.set(start + layout.size());
            return start as *mut u8;
        }
        self.grown_for(layout)
    }

    /// [`Arena::bump`] once memory has grown for `layout`, or null when it cannot.
    #[cold]
    #[inline(never)]
    fn grown_for(&self, layout: Layout) -> *mut u8 {
        let pages = (layout.size() + layout.align()).div_ceil(PAGE).max(GROWTH);
        let Some(base) = self.grow.grow(pages) else {
            return std::ptr::null_mut();
        };
        // Memory another allocator grew lies between: start a region of our own.
        if base != self.end.get() {
            self.next.set(base);
            self.start.set(base);
        }
        self.end.set(base + pages * PAGE);
        self.bump(layout)
    }
}

// SAFETY: every block is a fresh range of memory no other block overlaps until the arena is
// rewound past it (whose caller promises the block is not used again), aligned as `layout` asks.
unsafe impl<G: Grow> GlobalAlloc for Arena<G> {
    // Kept out of line: inlined into every allocation site, the modules grew by 17 KB.
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.bump(layout)
    }

    /// Nothing: the block's memory comes back when the call that allocated it ends. Seen to do
    /// nothing, the code that frees a structure's parts goes, and with it 100 calls a small
    /// request made only to free, each paying policy-server's timeout check (docs/abi.md): 4%
    /// of hostpath's guest. It also takes away the compiler's reason not to inline much else,
    /// which grows toleration-injection by 22 KB, to within 2 KB of its 400 KB budget
    /// (benchmarks/cost.md, "The timeout's checks"); it was kept a call until that fitted.
    #[inline(always)]
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
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

    /// `free`: nothing, as [`GlobalAlloc::dealloc`]: the block's memory comes back when the
    /// call that allocated it ends.
    ///
    /// # Safety
    ///
    /// As C's `free`: `ptr` is null or a live block of these functions.
    pub unsafe fn c_free(&self, _ptr: *mut u8) {}

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
    fn blocks_are_aligned_and_apart_and_the_arena_rewinds_to_a_position() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and no block allocated after the position is used after
        // the rewind.
        unsafe {
            let table = arena.alloc(layout(24, 8));
            let before_call = arena.position();
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
            // Freeing gives nothing back; the rewind gives back all of it, and the memory grown
            // for the large block stays the arena's: the same blocks again grow nothing.
            arena.dealloc(blocks[4].0 as *mut u8, layout(blocks[4].1, 1));
            assert_ne!(arena.position(), before_call);
            arena.rewind(before_call);
            assert_eq!(arena.position(), before_call);
            let pages = buffer.pages.get();
            let again = arena.alloc(layout(1, 1));
            assert_eq!(again as usize, table as usize + 24);
            assert!(!arena.alloc(layout(70_000, 8)).is_null());
            assert_eq!(buffer.pages.get(), pages);
        }
    }

    /// A region started during a call (another allocator grew memory in between) is reused
    /// whole after the rewind.
    #[test]
    fn a_region_started_during_a_call_is_reused() {
        let (_memory, buffer) = buffer(64);
        let arena = Arena::new(&buffer);
        // SAFETY: every layout is valid and no block allocated after the position is used after
        // the rewind.
        unsafe {
            arena.alloc(layout(8, 8));
            let before_call = arena.position();
            (&buffer).grow(1);
            let region = arena.alloc(layout(3 * PAGE, 8));
            arena.rewind(before_call);
            let pages = buffer.pages.get();
            assert_eq!(arena.alloc(layout(3 * PAGE, 8)), region);
            assert_eq!(buffer.pages.get(), pages);
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
