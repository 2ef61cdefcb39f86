//! What a message must be to cross ranks: [`Wire`], an explicit byte
//! encoding.
//!
//! A cross-rank stream copies each message into a frame on the writer's
//! rank and out of it on the reader's: `encode` appends the message's
//! bytes, `decode` reads them back. rill's own trait rather than `serde`:
//! a message type opts in by saying how its bytes look, a type that has no
//! encoding (a `Box<dyn Fn>`, an `Rc`, a reference) cannot be handed to a
//! task on another rank (a compile-time error at `Net::spawn_with`), and a
//! slice of plain numbers goes as one copy (`encode_slice`), not a loop of
//! per-field calls.

use thiserror::Error;

/// A message that cannot be read back from its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The bytes ended inside a message.
    #[error("a message's bytes end early (a frame was cut or the types differ between ranks)")]
    Truncated,
    /// The bytes are not a value of the type.
    #[error("a message's bytes are not a {0}")]
    Invalid(&'static str),
}

/// A message type that can cross ranks: its value written as bytes and read
/// back. Implemented for numbers, `bool`, `char`, `()`, `String`,
/// `Vec<T>`, `Box<[T]>`, arrays, `Option<T>` and tuples of up to four
/// `Wire` types; implement it for your own types by encoding their fields
/// in order.
///
/// Every rank must run the same program: a stream's two halves decode what
/// the other encoded, and nothing on the wire names the type.
pub trait Wire: Send + Sized + 'static {
    /// Appends this value's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// Reads one value from the front of `input`, advancing it.
    fn decode(input: &mut &[u8]) -> Result<Self, WireError>;

    /// Appends the bytes of every item (a `Vec<T>`'s body). The default
    /// encodes them one by one; plain numbers copy the slice at once.
    #[doc(hidden)]
    fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
        for x in items {
            x.encode(out);
        }
    }

    /// Reads `n` items (a `Vec<T>`'s body), as [`encode_slice`](Self::encode_slice).
    #[doc(hidden)]
    fn decode_vec(n: usize, input: &mut &[u8]) -> Result<Vec<Self>, WireError> {
        // A count read from the wire bounds nothing: grow as items decode.
        let mut v = Vec::with_capacity(n.min(input.len()));
        for _ in 0..n {
            v.push(Self::decode(input)?);
        }
        Ok(v)
    }
}

/// The first `n` bytes of `input`, advancing it.
pub(crate) fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], WireError> {
    if input.len() < n {
        return Err(WireError::Truncated);
    }
    let (head, rest) = input.split_at(n);
    *input = rest;
    Ok(head)
}

/// A length as it crosses: a `u64`, checked against what is left when read.
fn decode_len(input: &mut &[u8]) -> Result<usize, WireError> {
    let n = u64::decode(input)?;
    usize::try_from(n).map_err(|_| WireError::Invalid("length"))
}

macro_rules! wire_number {
    ($($t:ty),*) => {$(
        impl Wire for $t {
            #[inline]
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
                let b = take(input, std::mem::size_of::<$t>())?;
                Ok(<$t>::from_le_bytes(b.try_into().expect("length checked")))
            }
            fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
                out.reserve(std::mem::size_of_val(items));
                for x in items {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            fn decode_vec(n: usize, input: &mut &[u8]) -> Result<Vec<Self>, WireError> {
                const W: usize = std::mem::size_of::<$t>();
                let bytes = take(input, n.checked_mul(W).ok_or(WireError::Truncated)?)?;
                Ok(bytes
                    .chunks_exact(W)
                    .map(|c| <$t>::from_le_bytes(c.try_into().expect("chunk of W")))
                    .collect())
            }
        }
    )*};
}

wire_number!(u16, u32, u64, u128, i16, i32, i64, i128, f32, f64);

impl Wire for u8 {
    #[inline]
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self);
    }
    #[inline]
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(take(input, 1)?[0])
    }
    fn encode_slice(items: &[Self], out: &mut Vec<u8>) {
        out.extend_from_slice(items);
    }
    fn decode_vec(n: usize, input: &mut &[u8]) -> Result<Vec<Self>, WireError> {
        Ok(take(input, n)?.to_vec())
    }
}

impl Wire for i8 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(*self as u8);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(take(input, 1)?[0] as i8)
    }
}

impl Wire for usize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as u64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        usize::try_from(u64::decode(input)?).map_err(|_| WireError::Invalid("usize"))
    }
}

impl Wire for isize {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self as i64).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        isize::try_from(i64::decode(input)?).map_err(|_| WireError::Invalid("isize"))
    }
}

impl Wire for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        match take(input, 1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(WireError::Invalid("bool")),
        }
    }
}

impl Wire for char {
    fn encode(&self, out: &mut Vec<u8>) {
        u32::from(*self).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        char::from_u32(u32::decode(input)?).ok_or(WireError::Invalid("char"))
    }
}

impl Wire for () {
    fn encode(&self, _: &mut Vec<u8>) {}
    fn decode(_: &mut &[u8]) -> Result<Self, WireError> {
        Ok(())
    }
}

impl Wire for String {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let n = decode_len(input)?;
        String::from_utf8(take(input, n)?.to_vec()).map_err(|_| WireError::Invalid("String"))
    }
}

impl<T: Wire> Wire for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        T::encode_slice(self, out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let n = decode_len(input)?;
        T::decode_vec(n, input)
    }
}

impl<T: Wire> Wire for Box<[T]> {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.len() as u64).encode(out);
        T::encode_slice(self, out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(Vec::<T>::decode(input)?.into_boxed_slice())
    }
}

impl<T: Wire> Wire for Box<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        (**self).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        T::decode(input).map(Box::new)
    }
}

impl<T: Wire, const N: usize> Wire for [T; N] {
    fn encode(&self, out: &mut Vec<u8>) {
        T::encode_slice(self, out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        let v = T::decode_vec(N, input)?;
        v.try_into().map_err(|_| WireError::Invalid("array"))
    }
}

impl<T: Wire> Wire for Option<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                v.encode(out);
            }
        }
    }
    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        match take(input, 1)?[0] {
            0 => Ok(None),
            1 => T::decode(input).map(Some),
            _ => Err(WireError::Invalid("Option")),
        }
    }
}

macro_rules! wire_tuple {
    ($($n:ident),+) => {
        impl<$($n: Wire),+> Wire for ($($n,)+) {
            #[allow(non_snake_case)]
            fn encode(&self, out: &mut Vec<u8>) {
                let ($($n,)+) = self;
                $($n.encode(out);)+
            }
            fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
                Ok(($($n::decode(input)?,)+))
            }
        }
    };
}

wire_tuple!(A);
wire_tuple!(A, B);
wire_tuple!(A, B, C);
wire_tuple!(A, B, C, D);

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Wire + PartialEq + std::fmt::Debug>(v: T) {
        let mut out = Vec::new();
        v.encode(&mut out);
        out.push(0xAB);
        let mut input = &out[..];
        assert_eq!(T::decode(&mut input).unwrap(), v);
        assert_eq!(input, &[0xAB], "decode read exactly the encoding");
    }

    #[test]
    fn values_come_back() {
        round(7u8);
        round(-3i8);
        round(0xDEAD_BEEFu32);
        round(u64::MAX);
        round(-1.5f64);
        round(usize::MAX);
        round(true);
        round('λ');
        round(());
        round(String::from("grüße"));
        round(vec![1u8, 2, 3]);
        round(vec![1u64 << 40, 5]);
        round(vec![String::from("a"), String::new()]);
        round([3u16; 5]);
        round(Some((1u32, String::from("x"), vec![0.5f32])));
        round(None::<u8>);
        round(vec![1u8; 100_000].into_boxed_slice());
    }

    #[test]
    fn bad_bytes_are_errors_not_values() {
        assert_eq!(u64::decode(&mut &[1u8, 2][..]), Err(WireError::Truncated));
        assert_eq!(
            bool::decode(&mut &[2u8][..]),
            Err(WireError::Invalid("bool"))
        );
        // A length far beyond the bytes left allocates nothing large.
        let mut out = Vec::new();
        (u64::MAX / 2).encode(&mut out);
        assert_eq!(Vec::<u32>::decode(&mut &out[..]), Err(WireError::Truncated));
        assert!(Vec::<String>::decode(&mut &out[..]).is_err());
        let mut out = Vec::new();
        String::from("ab").encode(&mut out);
        out[8] = 0xFF;
        assert!(String::decode(&mut &out[..]).is_err());
    }
}
