//! LEB128 variable-length integers (7 bits per byte, low bits first, high bit =
//! "more bytes follow"), plus zig-zag mapping for signed values.

/// The longest encoding of a `u64`.
pub const MAX_LEN: usize = 10;

/// Why a varint could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VarintError {
    /// The input ended inside the varint.
    #[error("input ends inside a varint")]
    Truncated,
    /// More than [`MAX_LEN`] bytes, or a value that does not fit in 64 bits.
    #[error("varint longer than 10 bytes or over 64 bits")]
    Overflow,
}

/// The number of bytes [`write_u64`] uses for `v`.
#[inline]
pub const fn len_u64(v: u64) -> usize {
    // ceil(bits / 7), counting at least one significant bit.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Writes `v` at the start of `buf`, returning the number of bytes written.
///
/// # Panics
/// If `buf` is shorter than [`len_u64(v)`](len_u64) (at most [`MAX_LEN`]).
#[inline]
pub fn write_u64(buf: &mut [u8], mut v: u64) -> usize {
    if v < 0x80 {
        buf[0] = v as u8;
        return 1;
    }
    let mut i = 0;
    while v >= 0x80 {
        buf[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    buf[i] = v as u8;
    i + 1
}

/// Reads a varint from the start of `buf`, returning the value and its length.
#[inline]
pub fn read_u64(buf: &[u8]) -> Result<(u64, usize), VarintError> {
    match buf.first() {
        Some(&b) if b < 0x80 => return Ok((u64::from(b), 1)),
        None => return Err(VarintError::Truncated),
        _ => {}
    }
    let mut v = 0u64;
    for (i, &b) in buf.iter().enumerate().take(MAX_LEN) {
        let low = u64::from(b & 0x7f);
        if i == MAX_LEN - 1 && b > 1 {
            // The 10th byte holds bit 63 only.
            return Err(VarintError::Overflow);
        }
        v |= low << (7 * i);
        if b < 0x80 {
            return Ok((v, i + 1));
        }
    }
    if buf.len() >= MAX_LEN {
        Err(VarintError::Overflow)
    } else {
        Err(VarintError::Truncated)
    }
}

/// Maps a signed value to an unsigned one so that small magnitudes stay small:
/// 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...
#[inline]
pub const fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub const fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        let mut b = [0u8; MAX_LEN];
        assert_eq!(write_u64(&mut b, 0), 1);
        assert_eq!(b[0], 0);
        assert_eq!(write_u64(&mut b, 300), 2);
        assert_eq!(&b[..2], &[0xac, 0x02]);
        assert_eq!(write_u64(&mut b, u64::MAX), 10);
        assert_eq!(
            &b[..10],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        assert_eq!(read_u64(&b), Ok((u64::MAX, 10)));
        assert_eq!(len_u64(0), 1);
        assert_eq!(len_u64(127), 1);
        assert_eq!(len_u64(128), 2);
        assert_eq!(len_u64(u64::MAX), 10);
    }

    #[test]
    fn malformed() {
        assert_eq!(read_u64(&[]), Err(VarintError::Truncated));
        assert_eq!(read_u64(&[0x80]), Err(VarintError::Truncated));
        assert_eq!(read_u64(&[0xff; 9]), Err(VarintError::Truncated));
        assert_eq!(read_u64(&[0xff; 11]), Err(VarintError::Overflow));
        let mut ten = [0xff; 10];
        ten[9] = 0x02; // bit 64
        assert_eq!(read_u64(&ten), Err(VarintError::Overflow));
        ten[9] = 0x81; // an 11th byte would follow
        assert_eq!(read_u64(&ten), Err(VarintError::Overflow));
        // Overlong but in range (non-canonical) encodings are accepted.
        assert_eq!(read_u64(&[0x80, 0x00]), Ok((0, 2)));
    }

    #[test]
    fn zigzag_values() {
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        assert_eq!(unzigzag(u64::MAX), i64::MIN);
    }

    proptest! {
        #[test]
        fn round_trip(v: u64, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut b = vec![0u8; MAX_LEN];
            let n = write_u64(&mut b, v);
            prop_assert_eq!(n, len_u64(v));
            b.truncate(n);
            b.extend_from_slice(&tail);
            prop_assert_eq!(read_u64(&b), Ok((v, n)));
            for cut in 0..n {
                prop_assert_eq!(read_u64(&b[..cut]), Err(VarintError::Truncated));
            }
        }

        #[test]
        fn zigzag_round_trip(v: i64) {
            prop_assert_eq!(unzigzag(zigzag(v)), v);
            prop_assert!(zigzag(v) <= v.unsigned_abs().saturating_mul(2));
        }

        #[test]
        fn never_panics(b in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok((_, n)) = read_u64(&b) {
                prop_assert!((1..=MAX_LEN).contains(&n) && n <= b.len());
            }
        }
    }
}
