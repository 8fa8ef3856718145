//! `memcmp` for WebAssembly, eight bytes at a time.
//!
//! wasi-libc's `memcmp` walks a byte at a time, and it is what every string and byte-slice
//! comparison in a twin ends in: map lookups by name, sorting by key, field names against a
//! schema's. A twin answering a GraphQL list of fifty issues spent a sixth of its time there.
//! Defined here (under its C name on WebAssembly only), the linker takes this one and never
//! pulls libc's.

/// Compare `n` bytes at `a` and `b`: negative, zero or positive as `a` orders before, equal
/// to or after `b` (bytes compared as unsigned).
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, and both pointers are valid for n bytes.
        let (x, y) = unsafe { ((a.add(i) as *const u64).read_unaligned(), (b.add(i) as *const u64).read_unaligned()) };
        if x != y {
            // Little-endian: the first differing byte is the lowest differing one.
            let shift = (x ^ y).trailing_zeros() / 8 * 8;
            return ((x >> shift) & 0xff) as i32 - ((y >> shift) & 0xff) as i32;
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return x as i32 - y as i32;
        }
        i += 1;
    }
    0
}

/// `memcmp` when only equality matters (what LLVM may call instead).
///
/// # Safety
/// As [`memcmp`].
#[cfg_attr(target_arch = "wasm32", unsafe(no_mangle))]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { memcmp(a, b, n) }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    fn order(a: &[u8], b: &[u8]) -> Ordering {
        assert_eq!(a.len(), b.len());
        unsafe { super::memcmp(a.as_ptr(), b.as_ptr(), a.len()) }.cmp(&0)
    }

    #[test]
    fn orders_byte_strings_as_unsigned_bytes_in_order() {
        // Every length around the eight-byte step, a difference at every position, and bytes
        // on both sides of 0x80 (signedness).
        for len in 0..=33usize {
            let base: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            assert_eq!(order(&base, &base.clone()), Ordering::Equal);
            for at in 0..len {
                for delta in [1u8, 0x7f, 0x80, 0xff] {
                    let mut other = base.clone();
                    other[at] = other[at].wrapping_add(delta);
                    // A later byte that differs the other way must not decide.
                    if at + 1 < len {
                        other[at + 1] = base[at + 1].wrapping_sub(delta);
                    }
                    assert_eq!(order(&base, &other), base.cmp(&other), "len {len}, at {at}, delta {delta}");
                    assert_eq!(order(&other, &base), other.cmp(&base), "len {len}, at {at}, delta {delta}");
                }
            }
        }
    }

    #[test]
    fn bcmp_is_zero_exactly_when_equal() {
        let (a, b) = (b"identifier-0001".as_slice(), b"identifier-0002".as_slice());
        assert_eq!(unsafe { super::bcmp(a.as_ptr(), a.as_ptr(), a.len()) }, 0);
        assert_ne!(unsafe { super::bcmp(a.as_ptr(), b.as_ptr(), a.len()) }, 0);
    }
}
