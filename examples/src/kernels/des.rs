//! DES (FIPS 46-3) block cipher, ECB mode with PKCS#7 padding.
//!
//! A 64-bit block is processed in three kinds of steps so that a stream
//! network can place them in separate pipeline stages:
//!
//! 1. [`initial_permutation`]: `u64` block → `(L0, R0)` halves,
//! 2. sixteen [`round`]s: `(Li, Ri)` → `(Li+1, Ri+1)`,
//! 3. [`final_permutation`]: `(L16, R16)` → `u64` block (swapping the halves
//!    first, as the standard requires).
//!
//! [`encrypt_block`] / [`decrypt_block`] are exactly the composition of these
//! steps; the batch variants ([`initial_permutation_batch`],
//! [`rounds_batch`], [`final_permutation_batch`], [`encrypt_blocks`], ...)
//! apply a step to a slice of blocks so a task can work on a batch per
//! message.
//!
//! Speed: the round function uses precomputed combined S-box/P tables
//! ("SP boxes", 8 × 64 words) and the expansion E is done with shifts, so a
//! round is 8 table lookups; IP and FP use byte-indexed lookup tables. All
//! tables are built at compile time by `const fn`s from the FIPS tables.
//!
//! Bit numbering follows FIPS 46-3: bit 1 is the most significant bit of a
//! block, byte strings map to blocks big-endian.

use std::fmt;
use std::ops::Range;

use super::SplitMix64;

/// Block size in bytes.
pub const BLOCK_BYTES: usize = 8;

/// Default input size of the DES benchmark, in bytes.
pub const DEFAULT_INPUT_LEN: usize = 500_000;

mod tables;

#[cfg(test)]
use tables::E;
use tables::{FP, IP, P, PC1, PC2, SBOX, SHIFTS};

// ---------------------------------------------------------------------------
// Compile-time derived tables.

/// Generic bit permutation: output bit `j` (1-based from the MSB of a
/// `table.len()`-bit result) is input bit `table[j]` of an `in_width`-bit
/// input.
const fn permute(input: u64, in_width: u32, table: &[u8]) -> u64 {
    let mut out = 0u64;
    let mut j = 0;
    while j < table.len() {
        let bit = (input >> (in_width - table[j] as u32)) & 1;
        out = (out << 1) | bit;
        j += 1;
    }
    out
}

/// Byte-indexed lookup table for a 64 → 64 bit permutation: entry
/// `[b][v]` is the permutation of the block whose byte `b` (0 = most
/// significant) is `v` and all other bytes zero. A permutation distributes
/// over OR, so eight lookups permute a whole block.
const fn byte_lut(table: &[u8; 64]) -> [[u64; 256]; 8] {
    let mut lut = [[0u64; 256]; 8];
    let mut b = 0;
    while b < 8 {
        let mut v = 0;
        while v < 256 {
            lut[b][v] = permute((v as u64) << (56 - 8 * b), 64, table);
            v += 1;
        }
        b += 1;
    }
    lut
}

/// SP boxes: `SP[i][x]` is P applied to the 4-bit output of S-box `i` on the
/// 6-bit input `x`, placed at S-box `i`'s nibble. The round function ORs the
/// eight lookups.
const fn sp_boxes() -> [[u32; 64]; 8] {
    let mut sp = [[0u32; 64]; 8];
    let mut i = 0;
    while i < 8 {
        let mut x = 0;
        while x < 64 {
            let row = ((x >> 4) & 2) | (x & 1);
            let col = (x >> 1) & 0xF;
            let s = SBOX[i][row * 16 + col] as u64;
            sp[i][x] = permute(s << (28 - 4 * i), 32, &P) as u32;
            x += 1;
        }
        i += 1;
    }
    sp
}

static IP_LUT: [[u64; 256]; 8] = byte_lut(&IP);
static FP_LUT: [[u64; 256]; 8] = byte_lut(&FP);
static SP: [[u32; 64]; 8] = sp_boxes();

#[inline]
fn permute_lut(lut: &[[u64; 256]; 8], x: u64) -> u64 {
    let bytes = x.to_be_bytes();
    let mut out = 0;
    for (table, &byte) in lut.iter().zip(bytes.iter()) {
        out |= table[usize::from(byte)];
    }
    out
}

// ---------------------------------------------------------------------------
// Key schedule.

/// Error parsing a textual DES key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyError {
    /// The key did not have exactly 16 hex digits (the length found).
    WrongLength(usize),
    /// A character that is not a hex digit, at this character position.
    InvalidDigit {
        /// Zero-based character position.
        position: usize,
        /// The offending character.
        found: char,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::WrongLength(n) => {
                write!(
                    f,
                    "DES key must be exactly 16 hex digits, got {n} characters"
                )
            }
            KeyError::InvalidDigit { position, found } => {
                write!(
                    f,
                    "DES key has non-hex character {found:?} at position {position}"
                )
            }
        }
    }
}

impl std::error::Error for KeyError {}

/// The sixteen 48-bit round subkeys derived from a 64-bit DES key.
///
/// Parity bits (the least significant bit of each key byte) are ignored, as
/// the standard specifies. Each subkey is stored as eight 6-bit chunks, one
/// per S-box, ready to be XORed with the expanded half block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySchedule {
    subkeys: [[u8; 8]; 16],
}

impl KeySchedule {
    /// Derives the subkeys of `key` (key byte 1 is the most significant byte).
    pub fn new(key: u64) -> Self {
        let cd = permute(key, 64, &PC1);
        let mut c = (cd >> 28) as u32 & 0x0FFF_FFFF;
        let mut d = cd as u32 & 0x0FFF_FFFF;
        let rotl28 = |x: u32, n: u32| ((x << n) | (x >> (28 - n))) & 0x0FFF_FFFF;
        let mut subkeys = [[0u8; 8]; 16];
        for (sub, &shift) in subkeys.iter_mut().zip(SHIFTS.iter()) {
            c = rotl28(c, shift);
            d = rotl28(d, shift);
            let k = permute((u64::from(c) << 28) | u64::from(d), 56, &PC2);
            for (i, chunk) in sub.iter_mut().enumerate() {
                *chunk = ((k >> (42 - 6 * i)) & 0x3F) as u8;
            }
        }
        Self { subkeys }
    }

    /// Parses a key written as exactly 16 hex digits (either case), e.g.
    /// `"133457799BBCDFF1"`.
    pub fn from_hex(s: &str) -> Result<Self, KeyError> {
        let n = s.chars().count();
        if n != 16 {
            return Err(KeyError::WrongLength(n));
        }
        let mut key = 0u64;
        for (position, ch) in s.chars().enumerate() {
            let digit = ch.to_digit(16).ok_or(KeyError::InvalidDigit {
                position,
                found: ch,
            })?;
            key = (key << 4) | u64::from(digit);
        }
        Ok(Self::new(key))
    }

    /// The 48-bit subkey of round `i` (0-based), as an integer whose most
    /// significant of 48 bits is subkey bit 1.
    ///
    /// # Panics
    /// If `i >= 16`.
    pub fn subkey(&self, i: usize) -> u64 {
        self.subkeys[i]
            .iter()
            .fold(0u64, |acc, &c| (acc << 6) | u64::from(c))
    }
}

// ---------------------------------------------------------------------------
// Block steps.

/// The cipher function f(R, K): expansion, key mixing, S-boxes and P.
#[inline]
fn feistel(r: u32, k: &[u8; 8]) -> u32 {
    // 34-bit value: bit 32, bits 1..=32, bit 1 (DES numbering). The six
    // E-output bits for S-box i are bits 4i..=4i+5 of this value (0-based
    // from its top), which is how E duplicates the edge bits.
    let r = u64::from(r);
    let ext = ((r & 1) << 33) | (r << 1) | (r >> 31);
    let mut out = 0u32;
    for (i, (&kc, sp)) in k.iter().zip(SP.iter()).enumerate() {
        let idx = ((ext >> (28 - 4 * i)) as u8 & 0x3F) ^ kc;
        out |= sp[usize::from(idx)];
    }
    out
}

/// Step 1: the initial permutation IP, returning the halves `(L0, R0)`.
#[inline]
pub fn initial_permutation(block: u64) -> (u32, u32) {
    let x = permute_lut(&IP_LUT, block);
    ((x >> 32) as u32, x as u32)
}

/// Step 2: round `i` (0-based, `0..16`) of the Feistel network:
/// `(L, R)` → `(R, L ⊕ f(R, K))`.
///
/// For decryption the subkeys are used in reverse order, i.e. round `i`
/// uses subkey `15 - i`; the round function is otherwise identical.
///
/// # Panics
/// If `i >= 16`.
#[inline]
pub fn round(ks: &KeySchedule, i: usize, lr: (u32, u32), decrypt: bool) -> (u32, u32) {
    let k = if decrypt {
        &ks.subkeys[15 - i]
    } else {
        &ks.subkeys[i]
    };
    let (l, r) = lr;
    (r, l ^ feistel(r, k))
}

/// Step 3: swaps the halves (the pre-output is `R16 ‖ L16`) and applies the
/// final permutation IP⁻¹.
#[inline]
pub fn final_permutation(lr: (u32, u32)) -> u64 {
    let (l, r) = lr;
    permute_lut(&FP_LUT, (u64::from(r) << 32) | u64::from(l))
}

/// Encrypts or decrypts one block: [`initial_permutation`], 16 [`round`]s,
/// [`final_permutation`].
#[inline]
pub fn crypt_block(ks: &KeySchedule, block: u64, decrypt: bool) -> u64 {
    let mut lr = initial_permutation(block);
    for i in 0..16 {
        lr = round(ks, i, lr, decrypt);
    }
    final_permutation(lr)
}

/// Encrypts one 64-bit block.
#[inline]
pub fn encrypt_block(ks: &KeySchedule, block: u64) -> u64 {
    crypt_block(ks, block, false)
}

/// Decrypts one 64-bit block.
#[inline]
pub fn decrypt_block(ks: &KeySchedule, block: u64) -> u64 {
    crypt_block(ks, block, true)
}

// ---------------------------------------------------------------------------
// Batch steps (one pipeline message = one batch of blocks).

/// [`initial_permutation`] of every block of a batch.
pub fn initial_permutation_batch(blocks: &[u64]) -> Vec<(u32, u32)> {
    blocks.iter().map(|&b| initial_permutation(b)).collect()
}

/// Applies rounds `rounds` (a sub-range of `0..16`, e.g. `4..8` for a stage
/// doing four rounds) to every half-block pair of a batch, in place.
///
/// # Panics
/// If the range reaches past 16.
pub fn rounds_batch(ks: &KeySchedule, rounds: Range<usize>, lrs: &mut [(u32, u32)], decrypt: bool) {
    assert!(rounds.end <= 16, "DES has 16 rounds, got range {rounds:?}");
    for lr in lrs.iter_mut() {
        for i in rounds.clone() {
            *lr = round(ks, i, *lr, decrypt);
        }
    }
}

/// [`final_permutation`] of every half-block pair of a batch.
pub fn final_permutation_batch(lrs: &[(u32, u32)]) -> Vec<u64> {
    lrs.iter().map(|&lr| final_permutation(lr)).collect()
}

/// Encrypts a batch of blocks (no padding).
pub fn encrypt_blocks(ks: &KeySchedule, blocks: &[u64]) -> Vec<u64> {
    blocks.iter().map(|&b| encrypt_block(ks, b)).collect()
}

/// Decrypts a batch of blocks (no padding).
pub fn decrypt_blocks(ks: &KeySchedule, blocks: &[u64]) -> Vec<u64> {
    blocks.iter().map(|&b| decrypt_block(ks, b)).collect()
}

/// Splits a byte string whose length is a multiple of 8 into big-endian
/// blocks.
///
/// # Panics
/// If `data.len()` is not a multiple of [`BLOCK_BYTES`].
pub fn bytes_to_blocks(data: &[u8]) -> Vec<u64> {
    assert!(
        data.len().is_multiple_of(BLOCK_BYTES),
        "length {} is not a multiple of the DES block size",
        data.len()
    );
    data.chunks_exact(BLOCK_BYTES)
        .map(|c| {
            let mut b = [0u8; BLOCK_BYTES];
            b.copy_from_slice(c);
            u64::from_be_bytes(b)
        })
        .collect()
}

/// Concatenates blocks into a big-endian byte string.
pub fn blocks_to_bytes(blocks: &[u64]) -> Vec<u8> {
    blocks.iter().flat_map(|b| b.to_be_bytes()).collect()
}

// ---------------------------------------------------------------------------
// Padding and ECB.

/// Invalid PKCS#7 padding (or a ciphertext that cannot carry any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaddingError {
    /// The data is empty; padded data always has at least one block.
    Empty,
    /// The length (given) is not a multiple of the block size.
    NotBlockAligned(usize),
    /// The last byte (given) is not a valid pad length `1..=8`.
    BadPadLength(u8),
    /// The pad bytes are not all equal to the pad length.
    BadPadBytes,
}

impl fmt::Display for PaddingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PaddingError::Empty => write!(f, "padded data is empty"),
            PaddingError::NotBlockAligned(n) => {
                write!(f, "padded data length {n} is not a multiple of 8")
            }
            PaddingError::BadPadLength(b) => {
                write!(f, "invalid PKCS#7 pad length {b} (must be 1..=8)")
            }
            PaddingError::BadPadBytes => write!(f, "PKCS#7 pad bytes do not match the pad length"),
        }
    }
}

impl std::error::Error for PaddingError {}

/// Appends PKCS#7 padding: `n` bytes of value `n`, `1 <= n <= 8`, so the
/// result is block aligned (a full block is added to aligned input).
pub fn pkcs7_pad(data: &[u8]) -> Vec<u8> {
    let n = BLOCK_BYTES - data.len() % BLOCK_BYTES;
    let mut out = Vec::with_capacity(data.len() + n);
    out.extend_from_slice(data);
    out.resize(data.len() + n, n as u8);
    out
}

/// Checks and strips PKCS#7 padding, returning the unpadded prefix.
pub fn pkcs7_unpad(data: &[u8]) -> Result<&[u8], PaddingError> {
    if data.is_empty() {
        return Err(PaddingError::Empty);
    }
    if !data.len().is_multiple_of(BLOCK_BYTES) {
        return Err(PaddingError::NotBlockAligned(data.len()));
    }
    let n = data[data.len() - 1];
    if n == 0 || usize::from(n) > BLOCK_BYTES {
        return Err(PaddingError::BadPadLength(n));
    }
    let (body, pad) = data.split_at(data.len() - usize::from(n));
    if pad.iter().any(|&b| b != n) {
        return Err(PaddingError::BadPadBytes);
    }
    Ok(body)
}

/// Encrypts `data` in ECB mode after PKCS#7 padding; the result is 1..=8
/// bytes longer than the input.
pub fn encrypt_ecb(ks: &KeySchedule, data: &[u8]) -> Vec<u8> {
    let padded = pkcs7_pad(data);
    let mut out = Vec::with_capacity(padded.len());
    for c in padded.chunks_exact(BLOCK_BYTES) {
        let mut b = [0u8; BLOCK_BYTES];
        b.copy_from_slice(c);
        out.extend_from_slice(&encrypt_block(ks, u64::from_be_bytes(b)).to_be_bytes());
    }
    out
}

/// Decrypts ECB ciphertext produced by [`encrypt_ecb`] and strips the
/// padding.
pub fn decrypt_ecb(ks: &KeySchedule, data: &[u8]) -> Result<Vec<u8>, PaddingError> {
    if data.is_empty() {
        return Err(PaddingError::Empty);
    }
    if !data.len().is_multiple_of(BLOCK_BYTES) {
        return Err(PaddingError::NotBlockAligned(data.len()));
    }
    let mut out = Vec::with_capacity(data.len());
    for c in data.chunks_exact(BLOCK_BYTES) {
        let mut b = [0u8; BLOCK_BYTES];
        b.copy_from_slice(c);
        out.extend_from_slice(&decrypt_block(ks, u64::from_be_bytes(b)).to_be_bytes());
    }
    let len = pkcs7_unpad(&out)?.len();
    out.truncate(len);
    Ok(out)
}

/// Deterministic pseudo-random input of `len` bytes (SplitMix64 stream of
/// `seed`, little-endian words).
pub fn generate_input(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64::new(super::mix64(seed ^ 0xDE5D_E5DE_5DE5_DE5D));
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    out.truncate(len);
    out
}

#[cfg(test)]
mod tests;
