//! The few pieces of the protocol buffers wire format the Perfetto writer
//! needs: varints, field keys, fixed 64-bit values and length-delimited
//! fields (strings, bytes, nested messages).
//!
//! Wire format (protobuf's encoding documentation): a field is a key
//! `field_number << 3 | wire_type` as a varint, then the value: wire type 0
//! a varint (7 bits per byte, low bits first, the high bit set on every
//! byte but the last), 1 eight little-endian bytes, 2 a varint length and
//! that many bytes. Negative `int64` values are written as their 64-bit
//! two's complement (ten bytes); no field here is negative.

/// Wire type 0: a varint.
const VARINT: u64 = 0;
/// Wire type 1: eight little-endian bytes.
const FIXED64: u64 = 1;
/// Wire type 2: a varint length, then the bytes.
const LEN: u64 = 2;

/// How many bytes the varint of `v` takes.
pub(crate) fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits, at least 1.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends the varint of `v` to `buf`.
pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// A message being encoded: fields are appended in the order written.
#[derive(Debug, Default)]
pub(crate) struct Message {
    buf: Vec<u8>,
}

impl Message {
    /// The encoded bytes so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Empties the message, keeping its buffer.
    pub fn clear(&mut self) {
        self.buf.clear();
    }

    fn key(&mut self, field: u32, wire: u64) {
        put_varint(&mut self.buf, (u64::from(field) << 3) | wire);
    }

    /// A varint field (`uint32`, `uint64`, `int32`/`int64` >= 0, `bool`, enums).
    pub fn uint(&mut self, field: u32, v: u64) {
        self.key(field, VARINT);
        put_varint(&mut self.buf, v);
    }

    /// A `fixed64` field.
    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A `double` field.
    pub fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// A `string` or `bytes` field.
    pub fn bytes_field(&mut self, field: u32, v: &[u8]) {
        self.key(field, LEN);
        put_varint(&mut self.buf, v.len() as u64);
        self.buf.extend_from_slice(v);
    }

    /// A `string` field.
    pub fn string(&mut self, field: u32, v: &str) {
        self.bytes_field(field, v.as_bytes());
    }

    /// A nested message field whose fields `f` writes into this buffer.
    ///
    /// The length is not known before `f` runs: one byte is reserved for
    /// it and the body is moved up if the length needs more.
    pub fn nested(&mut self, field: u32, f: impl FnOnce(&mut Message)) {
        self.key(field, LEN);
        let at = self.buf.len();
        self.buf.push(0);
        f(self);
        let len = self.buf.len() - at - 1;
        let n = varint_len(len as u64);
        if n > 1 {
            self.buf.resize(self.buf.len() + n - 1, 0);
            self.buf.copy_within(at + 1..at + 1 + len, at + n);
        }
        let mut tmp = Vec::with_capacity(n);
        put_varint(&mut tmp, len as u64);
        self.buf[at..at + n].copy_from_slice(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a varint at `*pos` (test decoder).
    fn get_varint(b: &[u8], pos: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[*pos];
            *pos += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    #[test]
    fn varints_round_trip_and_have_their_length() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
            let mut pos = 0;
            assert_eq!(get_varint(&b, &mut pos), v);
            assert_eq!(pos, b.len());
        }
        let mut b = Vec::new();
        put_varint(&mut b, 300);
        assert_eq!(b, [0xac, 0x02], "the documented example");
    }

    #[test]
    fn fields_have_keys_and_values() {
        let mut m = Message::default();
        m.uint(1, 150);
        m.string(2, "testing");
        m.fixed64(3, 1);
        m.double(4, 1.5);
        assert_eq!(&m.bytes()[..3], [0x08, 0x96, 0x01], "field 1 = 150");
        assert_eq!(
            &m.bytes()[3..12],
            [0x12, 0x07, b't', b'e', b's', b't', b'i', b'n', b'g']
        );
        assert_eq!(&m.bytes()[12..21], [0x19, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(m.bytes()[21], 0x21);
        assert_eq!(
            f64::from_le_bytes(m.bytes()[22..30].try_into().unwrap()),
            1.5
        );
    }

    #[test]
    fn nested_lengths_grow_past_one_byte() {
        for len in [0usize, 1, 127, 128, 200, 20_000] {
            let mut m = Message::default();
            m.uint(1, 7);
            m.nested(5, |n| {
                n.bytes_field(1, &vec![0xab; len]);
            });
            m.uint(2, 9);
            let b = m.bytes();
            let mut pos = 2;
            assert_eq!(get_varint(b, &mut pos), (5 << 3) | 2);
            let body = get_varint(b, &mut pos) as usize;
            assert_eq!(body, 1 + varint_len(len as u64) + len, "{len}");
            let inner = &b[pos..pos + body];
            let mut p = 0;
            assert_eq!(get_varint(inner, &mut p), (1 << 3) | 2);
            assert_eq!(get_varint(inner, &mut p) as usize, len);
            assert!(inner[p..].iter().all(|&x| x == 0xab));
            assert_eq!(&b[pos + body..], [0x10, 9], "the next field follows");
        }
    }
}
