//! Whether every byte of a short text is in a class: the check behind names, keys and globs.
//!
//! Under policy-server every turn of a loop also checks the policy's timeout (docs/abi.md): a
//! byte a turn cost a name more in those checks than in its own. Here a text is checked eight
//! bytes a turn, and what is left as eight bytes ending at its end (a byte seen twice is judged
//! alike); shorter texts with no loop at all (benchmarks/cost.md, "The timeout's checks").

/// The bytes a class holds: `true` at each.
pub type Class = [bool; 256];

/// The class of the bytes in `ranges` (each inclusive), for a `const`.
pub const fn class(ranges: &[(u8, u8)]) -> Class {
    let mut table = [false; 256];
    let mut r = 0;
    while r < ranges.len() {
        let (mut b, last) = ranges[r];
        while b <= last {
            table[b as usize] = true;
            if b == u8::MAX {
                break;
            }
            b += 1;
        }
        r += 1;
    }
    table
}

/// `class` with `byte` in it too, for a `const`.
pub const fn with(mut class: Class, byte: u8) -> Class {
    class[byte as usize] = true;
    class
}

/// ASCII letters and digits, as [`class`] ranges.
pub const ALPHANUMERIC: [(u8, u8); 3] = [(b'a', b'z'), (b'A', b'Z'), (b'0', b'9')];

/// Whether every byte of `bytes` is in `class` (an empty text's are).
///
/// # Examples
///
/// ```
/// use taintguard::byte_class::{all_in, class};
///
/// const DIGITS: taintguard::byte_class::Class = class(&[(b'0', b'9')]);
/// assert!(all_in(b"20261128", &DIGITS));
/// assert!(!all_in(b"2026-11-28", &DIGITS));
/// assert!(all_in(b"", &DIGITS));
/// ```
#[inline]
pub const fn all_in(bytes: &[u8], class: &Class) -> bool {
    let n = bytes.len();
    if n < 4 {
        return n == 0
            || in_class(bytes, class, 0)
                & in_class(bytes, class, n / 2)
                & in_class(bytes, class, n - 1);
    }
    if n < 8 {
        return four(bytes, class, 0) & four(bytes, class, n - 4);
    }
    let mut i = 0;
    while i + 8 < n {
        if !(four(bytes, class, i) & four(bytes, class, i + 4)) {
            return false;
        }
        i += 8;
    }
    four(bytes, class, n - 8) & four(bytes, class, n - 4)
}

/// Whether the byte at `i` is in `class`.
#[inline(always)]
const fn in_class(bytes: &[u8], class: &Class, i: usize) -> bool {
    class[bytes[i] as usize]
}

/// Whether the four bytes from `i` are in `class`: `&`, not `&&`, so that there is no branch.
#[inline(always)]
const fn four(bytes: &[u8], class: &Class, i: usize) -> bool {
    in_class(bytes, class, i)
        & in_class(bytes, class, i + 1)
        & in_class(bytes, class, i + 2)
        & in_class(bytes, class, i + 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same answer as a byte at a time, at every length to 40 with one byte out of the class
    /// at every place, or none.
    #[test]
    fn all_in_judges_every_byte() {
        const LOWER: Class = class(&[(b'a', b'z')]);
        const NOT_A: Class = class(&[(0, b'a' - 1), (b'b', u8::MAX)]);
        assert!((0..=u8::MAX).all(|b| NOT_A[usize::from(b)] == (b != b'a')));
        for n in 0..=40 {
            for out in (0..n).map(Some).chain([None]) {
                let mut bytes = vec![b'q'; n];
                if let Some(out) = out {
                    bytes[out] = b'Q';
                }
                assert_eq!(
                    all_in(&bytes, &LOWER),
                    bytes.iter().all(u8::is_ascii_lowercase),
                    "{bytes:?}"
                );
            }
        }
    }
}
