//! C's `memcmp` eight bytes at a time, which the `policy!` macro exports in place of wasi-libc's.
//!
//! Rust compares byte strings (`==` on `str` and slices, `cmp`, a binary search) by calling
//! `memcmp`, and wasi-libc's goes a byte at a time, four or five wasm instructions a byte: an
//! owner record's value compared with the stored one, a taint key with a record's entries.
//! This one compares words while they are equal and tells the first differing byte from the
//! lowest set bit of their difference (wasm has `i64.ctz`; a byte swap it lacks would cost
//! more): see benchmarks/cost.md, "memcmp a word at a time", for what it saves.

/// How `a` and `b`, of the same length, order as C's `memcmp` tells it: the difference of
/// their first differing bytes, or 0 when they are equal.
///
/// # Examples
///
/// ```
/// use taintguard_kubewarden::memcmp::compare;
///
/// assert_eq!(compare(b"node-role.kubernetes.io/master", b"node-role.kubernetes.io/master"), 0);
/// assert!(compare(b"node-role.kubernetes.io/control-plane", b"node-role.kubernetes.io/control-place") > 0);
/// assert_eq!(compare(b"NoExecute", b"NoSchedule"[..9].as_ref()), i32::from(b'E') - i32::from(b'S'));
/// ```
pub fn compare(a: &[u8], b: &[u8]) -> i32 {
    assert_eq!(a.len(), b.len(), "memcmp compares blocks of one length");
    // SAFETY: both slices are `a.len()` bytes long.
    unsafe { compare_raw(a.as_ptr(), b.as_ptr(), a.len()) }
}

/// [`compare`] of the `n` bytes at `a` and `b`, with pointers as C gives them: a loop with no
/// slice to set up, since most comparisons are of a few bytes (keys).
///
/// # Safety
///
/// Both point at `n` readable bytes.
#[inline(always)]
pub unsafe fn compare_raw(a: *const u8, b: *const u8, n: usize) -> i32 {
    // The last word (or half) read ends at `n`, overlapping bytes already found equal, so its
    // first difference is the first of all: no byte-by-byte tail, which cost the keys a policy
    // compares (a few bytes past a word) most of a comparison (benchmarks/cost.md, "JSONPath's
    // text, a rule's reason and the arena's fitting path").
    // No loop up to 16 bytes, where nearly every comparison falls: under policy-server a loop's
    // every turn also checks the policy's timeout (benchmarks/cost.md, "The timeout's checks").
    if n >= 8 {
        // Words from the start until at most 16 bytes are left, then the word there and the
        // last, which overlap or meet.
        let mut at = 0;
        while at + 16 < n {
            // SAFETY: `at + 16 < n`.
            let (x, y) = unsafe { (word(a, at), word(b, at)) };
            if x != y {
                return first_difference(x, y);
            }
            at += 8;
        }
        // SAFETY: `at + 8 <= n`: `at` is 0 with `n >= 8`, or 8 past an `at` with `at + 16 < n`.
        let (x, y) = unsafe { (word(a, at), word(b, at)) };
        if x != y {
            return first_difference(x, y);
        }
        // SAFETY: `n >= 8`; the word ends at `n`.
        return unsafe { first_difference(word(a, n - 8), word(b, n - 8)) };
    }
    if n >= 4 {
        // SAFETY: `n >= 4`.
        let (x, y) = unsafe { (half(a, 0), half(b, 0)) };
        if x != y {
            return first_difference(x, y);
        }
        // SAFETY: `n >= 4`; the half ends at `n`.
        return unsafe { first_difference(half(a, n - 4), half(b, n - 4)) };
    }
    if n == 0 {
        return 0;
    }
    // Up to three bytes: the first, the middle and the last are all of them, in order.
    // SAFETY: `0 < n <= 3`: each index is below `n`.
    let (x, y) = unsafe { (first_three(a, n), first_three(b, n)) };
    first_difference(x, y)
}

/// The first, middle and last of `n` (1 to 3) bytes at `p`, as the low bytes of a word.
///
/// # Safety
///
/// `p` points at `n` readable bytes.
#[inline(always)]
unsafe fn first_three(p: *const u8, n: usize) -> u64 {
    // SAFETY: the caller's; each index is below `n`.
    let byte = |at: usize| u64::from(unsafe { *p.add(at) });
    byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16
}

/// The eight bytes at `p + at`, little-endian.
///
/// # Safety
///
/// They are readable (unaligned reads are allowed).
#[inline(always)]
unsafe fn word(p: *const u8, at: usize) -> u64 {
    // SAFETY: the caller's.
    unsafe { p.add(at).cast::<u64>().read_unaligned() }
}

/// The four bytes at `p + at`, little-endian.
///
/// # Safety
///
/// As [`word`]'s, for four bytes.
#[inline(always)]
unsafe fn half(p: *const u8, at: usize) -> u64 {
    // SAFETY: the caller's.
    u64::from(unsafe { p.add(at).cast::<u32>().read_unaligned() })
}

/// The difference of the first differing bytes of two words read little-endian (0 when they
/// are equal): the first differing byte holds the lowest differing bit.
#[inline(always)]
fn first_difference(x: u64, y: u64) -> i32 {
    if x == y {
        return 0;
    }
    let shift = u64::from((x ^ y).trailing_zeros() / 8 * 8);
    i32::from((x >> shift) as u8) - i32::from((y >> shift) as u8)
}

#[cfg(test)]
mod tests {
    use super::compare;

    /// The same order as slices' own comparison, wherever the first difference falls in or
    /// after a word, whichever byte is the larger, and at every length around a word.
    #[test]
    fn orders_as_slices_do() {
        for len in 0..=33 {
            let base: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            assert_eq!(compare(&base, &base), 0, "{len}");
            for at in 0..len {
                for byte in [0, 1, 0x7f, 0x80, 0xfe, 0xff] {
                    let mut other = base.clone();
                    other[at] = byte;
                    let want = base.cmp(&other);
                    let got = compare(&base, &other);
                    assert_eq!(got.cmp(&0), want, "{len} {at} {byte}");
                    assert_eq!(compare(&other, &base).cmp(&0), want.reverse());
                    if want.is_ne() {
                        assert_eq!(got, i32::from(base[at]) - i32::from(byte));
                    }
                }
            }
        }
    }
}
