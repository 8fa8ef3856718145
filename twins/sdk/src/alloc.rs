//! The twins' allocator on WebAssembly: once a twin serves requests, small blocks come from
//! free lists by size class; everything else comes from wasi-libc's `malloc`.
//!
//! A twin's request allocates and frees thousands of small blocks (strings, map entries,
//! boxed resolvers), and wasi-libc's dlmalloc spent about a fifth of a Stripe payment's guest
//! time splitting, binning and coalescing them. Here a small block is a pop or a push on its
//! class's list. Freed small blocks stay on their list for the next request and are never
//! handed back to dlmalloc, so a store keeps its high-water mark per class. Building a world
//! (seed, snapshot) stays with dlmalloc, whose coalescing keeps it compact, and the pool
//! takes its first arena at the first request: an idle sandbox holds none. From then on it
//! serves requests (their arguments and answers included), which look alike from one to the
//! next.
//!
//! Pool blocks are cut from 64 KiB arenas aligned to 4 KiB, and a bitmap over the 32-bit
//! address space marks the arenas' 4 KiB cells, so a freed block is told apart from a
//! dlmalloc one by its address. A WebAssembly twin runs on one thread, so the lists need no lock.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;

/// Block sizes: sixteen-byte steps up to 128, then wider ones. A request goes to the
/// smallest class that holds it.
const CLASSES: [usize; 16] = [16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024];
const LARGEST: usize = CLASSES[CLASSES.len() - 1];
/// The bitmap's unit, and the arenas' alignment: an aligned allocation costs dlmalloc up to
/// its alignment in slack, so the alignment is small and the arenas many cells long.
const CELL_BITS: u32 = 12;
const CELL: usize = 1 << CELL_BITS;
/// Blocks are cut from arenas this large, taken from `System` as needed.
const ARENA: usize = 16 * CELL;
/// One bit per possible cell of a 32-bit address space (128 KiB, untouched but for the
/// words of cells in use).
const MAP_WORDS: usize = (1usize << (32 - CELL_BITS)) / 32;
/// Every block is aligned to this (the largest alignment a small request may ask for).
const ALIGN: usize = 16;

/// The class of a size, by table: `SLOT[(size + 15) / 16]`.
const SLOT: [u8; LARGEST / 16 + 1] = {
    let mut t = [0u8; LARGEST / 16 + 1];
    let mut i = 0;
    while i < t.len() {
        let mut c = 0;
        while CLASSES[c] < i * 16 {
            c += 1;
        }
        t[i] = c as u8;
        i += 1;
    }
    t
};

struct Lists {
    /// Each class's free blocks, linked through their first word.
    free: [*mut u8; CLASSES.len()],
    /// The part of the current arena not yet cut into blocks.
    next: usize,
    end: usize,
    /// Whether small requests go to the lists: from the first request on, except while a
    /// world is built.
    pooling: bool,
    /// Which cells are the pool's, by `address >> CELL_BITS`.
    cells: [u32; MAP_WORDS],
}

/// A cell's bit in the map. Exact for 32-bit addresses; on a 64-bit host (the tests) two
/// cells 4 GiB apart share a bit, which a test's heap never spans.
fn cell_bit(addr: usize) -> (usize, u32) {
    let n = (addr >> CELL_BITS) % (MAP_WORDS * 32);
    (n / 32, 1 << (n % 32))
}

impl Lists {
    fn owns(&self, ptr: *mut u8) -> bool {
        let (word, bit) = cell_bit(ptr as usize);
        self.cells[word] & bit != 0
    }
}

pub struct Pool {
    lists: UnsafeCell<Lists>,
}

// SAFETY: a WebAssembly twin has one thread; `Pool` is only the global allocator there.
unsafe impl Sync for Pool {}

impl Pool {
    pub const fn new() -> Pool {
        Pool { lists: UnsafeCell::new(Lists { free: [std::ptr::null_mut(); CLASSES.len()], next: 0, end: 0, pooling: false, cells: [0; MAP_WORDS] }) }
    }

    /// From now on, small blocks come from the lists.
    pub fn serve(&self) {
        // SAFETY: one thread; nothing else holds the lists now.
        unsafe { (*self.lists.get()).pooling = true };
    }

    /// Run `f` with every block from dlmalloc.
    pub fn building<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Reset<'a>(&'a Pool, bool);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                // SAFETY: one thread; nothing else holds the lists now.
                unsafe { (*self.0.lists.get()).pooling = self.1 };
            }
        }
        // SAFETY: as above.
        let was = unsafe { std::mem::replace(&mut (*self.lists.get()).pooling, false) };
        let _reset = Reset(self, was);
        f()
    }

    fn class(layout: Layout) -> Option<usize> {
        (layout.size() <= LARGEST && layout.align() <= ALIGN).then(|| SLOT[layout.size().div_ceil(16)] as usize)
    }
}

impl Default for Pool {
    fn default() -> Pool {
        Pool::new()
    }
}

unsafe impl GlobalAlloc for Pool {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: one thread, and no call below re-enters the pool.
        let l = unsafe { &mut *self.lists.get() };
        let Some(c) = Pool::class(layout).filter(|_| l.pooling) else { return unsafe { System.alloc(layout) } };
        let head = l.free[c];
        if !head.is_null() {
            // SAFETY: a free block holds the next free block's address in its first word.
            l.free[c] = unsafe { *(head as *mut *mut u8) };
            return head;
        }
        let size = CLASSES[c];
        if l.end - l.next < size {
            // The arena's tail, too small for this class, feeds the smaller classes' lists.
            let mut k = c;
            while k > 0 {
                k -= 1;
                while l.end - l.next >= CLASSES[k] {
                    let block = l.next as *mut u8;
                    // SAFETY: the block lies in the arena, unused, aligned to ALIGN.
                    unsafe { *(block as *mut *mut u8) = l.free[k] };
                    l.free[k] = block;
                    l.next += CLASSES[k];
                }
            }
            // SAFETY: ARENA is non-zero and CELL a power of two.
            let arena = unsafe { System.alloc(Layout::from_size_align_unchecked(ARENA, CELL)) };
            if arena.is_null() {
                return arena;
            }
            for cell in (arena as usize..arena as usize + ARENA).step_by(CELL) {
                let (word, bit) = cell_bit(cell);
                l.cells[word] |= bit;
            }
            l.next = arena as usize;
            l.end = l.next + ARENA;
        }
        let block = l.next as *mut u8;
        l.next += size;
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: one thread.
        let l = unsafe { &mut *self.lists.get() };
        if !l.owns(ptr) {
            return unsafe { System.dealloc(ptr, layout) };
        }
        let c = Pool::class(layout).expect("only small blocks come from the pool");
        // SAFETY: `ptr` is a block of class `c` the pool handed out, now free.
        unsafe { *(ptr as *mut *mut u8) = l.free[c] };
        l.free[c] = ptr;
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's layout is valid, and so is one of the same alignment.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: one thread.
        let l = unsafe { &*self.lists.get() };
        let (pooled, small) = (l.owns(ptr), Pool::class(new).filter(|_| l.pooling));
        match (pooled, small) {
            // A pool block already big enough stays where it is.
            (true, Some(b)) if Pool::class(layout) == Some(b) => ptr,
            // dlmalloc's to dlmalloc's: it may grow the block in place.
            (false, None) => unsafe { System.realloc(ptr, layout, new_size) },
            _ => {
                let to = unsafe { self.alloc(new) };
                if !to.is_null() {
                    // SAFETY: both blocks hold at least the smaller size, and are distinct.
                    unsafe { std::ptr::copy_nonoverlapping(ptr, to, layout.size().min(new_size)) };
                    unsafe { self.dealloc(ptr, layout) };
                }
                to
            }
        }
    }
}

#[cfg(target_arch = "wasm32")]
#[global_allocator]
pub static POOL: Pool = Pool::new();

/// From now on (a request is served), small blocks come from the pool, on WebAssembly.
pub fn serve() {
    #[cfg(target_arch = "wasm32")]
    POOL.serve();
}

/// Run `f` (building a world) with every block from dlmalloc, on WebAssembly.
pub fn building<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "wasm32")]
    return POOL.building(f);
    #[cfg(not(target_arch = "wasm32"))]
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_has_the_smallest_class_that_holds_it() {
        for size in 1..=LARGEST {
            let c = Pool::class(Layout::from_size_align(size, 1).unwrap()).unwrap();
            assert!(CLASSES[c] >= size, "size {size} in class {}", CLASSES[c]);
            assert!(c == 0 || CLASSES[c - 1] < size, "size {size} fits class {}", CLASSES[c - 1]);
        }
        assert_eq!(Pool::class(Layout::from_size_align(LARGEST + 1, 1).unwrap()), None);
        assert_eq!(Pool::class(Layout::from_size_align(16, 32).unwrap()), None, "over-aligned requests go to System");
    }

    #[test]
    fn blocks_are_distinct_aligned_reused_and_keep_their_bytes() {
        let pool = Pool::new();
        pool.serve();
        churn(&pool);
    }

    #[test]
    fn blocks_made_before_serving_or_while_building_a_world_go_back_to_dlmalloc() {
        let pool = Pool::new();
        let layout = Layout::from_size_align(40, 8).unwrap();
        let before = unsafe { pool.alloc(layout) };
        pool.serve();
        let built = pool.building(|| unsafe { pool.alloc(layout) });
        let served = unsafe { pool.alloc(layout) };
        let l = unsafe { &*pool.lists.get() };
        assert!(!l.owns(before), "before the first request, blocks come from System");
        assert!(!l.owns(built) && l.owns(served));
        assert!(l.pooling, "building ends with the world");
        unsafe { pool.dealloc(before, layout) };
        // Freed while serving, the built block goes to System and the other to its list.
        unsafe {
            pool.dealloc(built, layout);
            pool.dealloc(served, layout);
            assert_eq!(pool.alloc(layout), served);
        }
        // Grown while serving, a built block moves into the pool with its bytes.
        let old = pool.building(|| unsafe { pool.alloc(layout) });
        unsafe { std::ptr::write_bytes(old, 7, 40) };
        let grown = unsafe { pool.realloc(old, layout, 60) };
        assert!(unsafe { &*pool.lists.get() }.owns(grown));
        assert!((0..40).all(|i| unsafe { *grown.add(i) } == 7));
    }

    /// Allocate, fill, free and grow blocks of every size, then check none overlap.
    fn churn(pool: &Pool) {
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        // Enough blocks of every class to cross several arenas, each filled with its own byte.
        for round in 0..4000usize {
            let size = 1 + (round * 7919) % (LARGEST + 200);
            let layout = Layout::from_size_align(size, [1, 2, 4, 8, 16][round % 5]).unwrap();
            let p = unsafe { pool.alloc(layout) };
            assert!(!p.is_null());
            assert_eq!(p as usize % layout.align(), 0);
            let fill = (round % 251) as u8;
            unsafe { std::ptr::write_bytes(p, fill, size) };
            live.push((p, layout, fill));
            if round % 3 == 0 {
                // Free an older block, grow another.
                let (p, l, _) = live.swap_remove(round % live.len());
                unsafe { pool.dealloc(p, l) };
                let at = round % live.len().max(1);
                if let Some((p, l, fill)) = live.get_mut(at) {
                    let bigger = l.size() * 2 + 1;
                    let q = unsafe { pool.realloc(*p, *l, bigger) };
                    assert!(!q.is_null());
                    assert!((0..l.size()).all(|i| unsafe { *q.add(i) } == *fill), "realloc keeps the bytes");
                    unsafe { std::ptr::write_bytes(q, *fill, bigger) };
                    *l = Layout::from_size_align(bigger, l.align()).unwrap();
                    *p = q;
                }
            }
        }
        // No two live blocks overlap, and each still holds its own byte.
        let mut spans: Vec<(usize, usize)> = live.iter().map(|(p, l, _)| (*p as usize, *p as usize + l.size())).collect();
        spans.sort();
        assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "live blocks overlap");
        for (p, l, fill) in &live {
            assert!((0..l.size()).all(|i| unsafe { *p.add(i) } == *fill));
        }
        // A freed block is what the next request of its class gets.
        let layout = Layout::from_size_align(40, 8).unwrap();
        let a = unsafe { pool.alloc(layout) };
        unsafe { pool.dealloc(a, layout) };
        assert_eq!(unsafe { pool.alloc(Layout::from_size_align(33, 1).unwrap()) }, a);
        for (p, l, _) in live {
            unsafe { pool.dealloc(p, l) };
        }
    }
}
