//! DES tests: FIPS 81 / NIST SP 800-17 known answers, comparison with the
//! RustCrypto `des` crate, padding and batching.

use super::*;
use ::des::cipher::generic_array::GenericArray;
use ::des::cipher::{BlockDecrypt, BlockEncrypt, KeyInit};
use proptest::prelude::*;

/// Encrypts one block with the RustCrypto implementation (test oracle).
fn oracle_block(key: u64, block: u64) -> u64 {
    let c = ::des::Des::new_from_slice(&key.to_be_bytes()).unwrap();
    let mut b = GenericArray::clone_from_slice(&block.to_be_bytes());
    c.encrypt_block(&mut b);
    u64::from_be_bytes(b.as_slice().try_into().unwrap())
}

/// ECB + PKCS#7 around the RustCrypto block cipher (test oracle).
fn oracle_ecb(key: u64, data: &[u8]) -> Vec<u8> {
    let c = ::des::Des::new_from_slice(&key.to_be_bytes()).unwrap();
    let n = 8 - data.len() % 8;
    let mut padded = data.to_vec();
    padded.extend(std::iter::repeat_n(n as u8, n));
    for chunk in padded.chunks_exact_mut(8) {
        c.encrypt_block(GenericArray::from_mut_slice(chunk));
    }
    padded
}

fn oracle_decrypt_block(key: u64, block: u64) -> u64 {
    let c = ::des::Des::new_from_slice(&key.to_be_bytes()).unwrap();
    let mut b = GenericArray::clone_from_slice(&block.to_be_bytes());
    c.decrypt_block(&mut b);
    u64::from_be_bytes(b.as_slice().try_into().unwrap())
}

/// Checks one known-answer vector both ways, and against the oracle.
fn check_kat(key: u64, plain: u64, cipher: u64) {
    let ks = KeySchedule::new(key);
    assert_eq!(
        encrypt_block(&ks, plain),
        cipher,
        "key {key:016X} plain {plain:016X}"
    );
    assert_eq!(decrypt_block(&ks, cipher), plain, "key {key:016X} decrypt");
    assert_eq!(
        oracle_block(key, plain),
        cipher,
        "oracle disagrees with vector"
    );
}

#[test]
fn classic_textbook_vector() {
    check_kat(
        0x1334_5779_9BBC_DFF1,
        0x0123_4567_89AB_CDEF,
        0x85E8_1354_0F0A_B405,
    );
}

#[test]
fn textbook_subkeys() {
    // Subkeys K1 and K16 of the well-known worked example.
    let ks = KeySchedule::from_hex("133457799BBCDFF1").unwrap();
    assert_eq!(
        ks.subkey(0),
        0b000110_110000_001011_101111_111111_000111_000001_110010
    );
    assert_eq!(
        ks.subkey(15),
        0b110010_110011_110110_001011_000011_100001_011111_110101
    );
}

#[test]
fn fips81_ecb_example() {
    // FIPS 81 Appendix B, ECB mode: key 0123456789abcdef.
    let ks = KeySchedule::from_hex("0123456789abcdef").unwrap();
    let plain = b"Now is the time for all ";
    let expected = [
        0x3FA4_0E8A_984D_4815_u64,
        0x6A27_1787_AB88_83F9,
        0x893D_51EC_4B56_3B53,
    ];
    assert_eq!(encrypt_blocks(&ks, &bytes_to_blocks(plain)), expected);
    assert_eq!(decrypt_blocks(&ks, &expected), bytes_to_blocks(plain));
    // With padding, the three blocks are followed by one full pad block.
    let ct = encrypt_ecb(&ks, plain);
    assert_eq!(ct.len(), 32);
    assert_eq!(&ct[..24], blocks_to_bytes(&expected).as_slice());
    assert_eq!(decrypt_ecb(&ks, &ct).unwrap(), plain);
}

/// NIST SP 800-17 Table 1 (variable plaintext known answer test): key
/// 0101010101010101, plaintext with only bit `i + 1` set.
const VARIABLE_PLAINTEXT: [u64; 64] = [
    0x95F8A5E5DD31D900,
    0xDD7F121CA5015619,
    0x2E8653104F3834EA,
    0x4BD388FF6CD81D4F,
    0x20B9E767B2FB1456,
    0x55579380D77138EF,
    0x6CC5DEFAAF04512F,
    0x0D9F279BA5D87260,
    0xD9031B0271BD5A0A,
    0x424250B37C3DD951,
    0xB8061B7ECD9A21E5,
    0xF15D0F286B65BD28,
    0xADD0CC8D6E5DEBA1,
    0xE6D5F82752AD63D1,
    0xECBFE3BD3F591A5E,
    0xF356834379D165CD,
    0x2B9F982F20037FA9,
    0x889DE068A16F0BE6,
    0xE19E275D846A1298,
    0x329A8ED523D71AEC,
    0xE7FCE22557D23C97,
    0x12A9F5817FF2D65D,
    0xA484C3AD38DC9C19,
    0xFBE00A8A1EF8AD72,
    0x750D079407521363,
    0x64FEED9C724C2FAF,
    0xF02B263B328E2B60,
    0x9D64555A9A10B852,
    0xD106FF0BED5255D7,
    0xE1652C6B138C64A5,
    0xE428581186EC8F46,
    0xAEB5F5EDE22D1A36,
    0xE943D7568AEC0C5C,
    0xDF98C8276F54B04B,
    0xB160E4680F6C696F,
    0xFA0752B07D9C4AB8,
    0xCA3A2B036DBC8502,
    0x5E0905517BB59BCF,
    0x814EEB3B91D90726,
    0x4D49DB1532919C9F,
    0x25EB5FC3F8CF0621,
    0xAB6A20C0620D1C6F,
    0x79E90DBC98F92CCA,
    0x866ECEDD8072BB0E,
    0x8B54536F2F3E64A8,
    0xEA51D3975595B86B,
    0xCAFFC6AC4542DE31,
    0x8DD45A2DDF90796C,
    0x1029D55E880EC2D0,
    0x5D86CB23639DBEA9,
    0x1D1CA853AE7C0C5F,
    0xCE332329248F3228,
    0x8405D1ABE24FB942,
    0xE643D78090CA4207,
    0x48221B9937748A23,
    0xDD7C0BBD61FAFD54,
    0x2FBC291A570DB5C4,
    0xE07C30D7E4E26E12,
    0x0953E2258E8E90A1,
    0x5B711BC4CEEBF2EE,
    0xCC083F1E6D9E85F6,
    0xD2FD8867D50D2DFE,
    0x06E7EA22CE92708F,
    0x166B40B44ABA4BD6,
];

#[test]
fn sp800_17_variable_plaintext() {
    for (i, &ct) in VARIABLE_PLAINTEXT.iter().enumerate() {
        check_kat(0x0101_0101_0101_0101, 1u64 << (63 - i), ct);
    }
}

/// NIST SP 800-17 Table 2 (variable key known answer test): plaintext 0,
/// key with a single non-parity bit set (parity bits kept odd).
const VARIABLE_KEY: [(u64, u64); 56] = [
    (0x8001010101010101, 0x95A8D72813DAA94D),
    (0x4001010101010101, 0x0EEC1487DD8C26D5),
    (0x2001010101010101, 0x7AD16FFB79C45926),
    (0x1001010101010101, 0xD3746294CA6A6CF3),
    (0x0801010101010101, 0x809F5F873C1FD761),
    (0x0401010101010101, 0xC02FAFFEC989D1FC),
    (0x0201010101010101, 0x4615AA1D33E72F10),
    (0x0180010101010101, 0x2055123350C00858),
    (0x0140010101010101, 0xDF3B99D6577397C8),
    (0x0120010101010101, 0x31FE17369B5288C9),
    (0x0110010101010101, 0xDFDD3CC64DAE1642),
    (0x0108010101010101, 0x178C83CE2B399D94),
    (0x0104010101010101, 0x50F636324A9B7F80),
    (0x0102010101010101, 0xA8468EE3BC18F06D),
    (0x0101800101010101, 0xA2DC9E92FD3CDE92),
    (0x0101400101010101, 0xCAC09F797D031287),
    (0x0101200101010101, 0x90BA680B22AEB525),
    (0x0101100101010101, 0xCE7A24F350E280B6),
    (0x0101080101010101, 0x882BFF0AA01A0B87),
    (0x0101040101010101, 0x25610288924511C2),
    (0x0101020101010101, 0xC71516C29C75D170),
    (0x0101018001010101, 0x5199C29A52C9F059),
    (0x0101014001010101, 0xC22F0A294A71F29F),
    (0x0101012001010101, 0xEE371483714C02EA),
    (0x0101011001010101, 0xA81FBD448F9E522F),
    (0x0101010801010101, 0x4F644C92E192DFED),
    (0x0101010401010101, 0x1AFA9A66A6DF92AE),
    (0x0101010201010101, 0xB3C1CC715CB879D8),
    (0x0101010180010101, 0x19D032E64AB0BD8B),
    (0x0101010140010101, 0x3CFAA7A7DC8720DC),
    (0x0101010120010101, 0xB7265F7F447AC6F3),
    (0x0101010110010101, 0x9DB73B3C0D163F54),
    (0x0101010108010101, 0x8181B65BABF4A975),
    (0x0101010104010101, 0x93C9B64042EAA240),
    (0x0101010102010101, 0x5570530829705592),
    (0x0101010101800101, 0x8638809E878787A0),
    (0x0101010101400101, 0x41B9A79AF79AC208),
    (0x0101010101200101, 0x7A9BE42F2009A892),
    (0x0101010101100101, 0x29038D56BA6D2745),
    (0x0101010101080101, 0x5495C6ABF1E5DF51),
    (0x0101010101040101, 0xAE13DBD561488933),
    (0x0101010101020101, 0x024D1FFA8904E389),
    (0x0101010101018001, 0xD1399712F99BF02E),
    (0x0101010101014001, 0x14C1D7C1CFFEC79E),
    (0x0101010101012001, 0x1DE5279DAE3BED6F),
    (0x0101010101011001, 0xE941A33F85501303),
    (0x0101010101010801, 0xDA99DBBC9A03F379),
    (0x0101010101010401, 0xB7FC92F91D8E92E9),
    (0x0101010101010201, 0xAE8E5CAA3CA04E85),
    (0x0101010101010180, 0x9CC62DF43B6EED74),
    (0x0101010101010140, 0xD863DBB5C59A91A0),
    (0x0101010101010120, 0xA1AB2190545B91D7),
    (0x0101010101010110, 0x0875041E64C570F7),
    (0x0101010101010108, 0x5A594528BEBEF1CC),
    (0x0101010101010104, 0xFCDB3291DE21F0C0),
    (0x0101010101010102, 0x869EFD7F9F265A09),
];

#[test]
fn sp800_17_variable_key() {
    for &(key, ct) in VARIABLE_KEY.iter() {
        check_kat(key, 0, ct);
    }
}

/// NIST SP 800-17 Table 4 (substitution table known answer test).
const SBOX_KAT: [(u64, u64, u64); 19] = [
    (0x7CA110454A1A6E57, 0x01A1D6D039776742, 0x690F5B0D9A26939B),
    (0x0131D9619DC1376E, 0x5CD54CA83DEF57DA, 0x7A389D10354BD271),
    (0x07A1133E4A0B2686, 0x0248D43806F67172, 0x868EBB51CAB4599A),
    (0x3849674C2602319E, 0x51454B582DDF440A, 0x7178876E01F19B2A),
    (0x04B915BA43FEB5B6, 0x42FD443059577FA2, 0xAF37FB421F8C4095),
    (0x0113B970FD34F2CE, 0x059B5E0851CF143A, 0x86A560F10EC6D85B),
    (0x0170F175468FB5E6, 0x0756D8E0774761D2, 0x0CD3DA020021DC09),
    (0x43297FAD38E373FE, 0x762514B829BF486A, 0xEA676B2CB7DB2B7A),
    (0x07A7137045DA2A16, 0x3BDD119049372802, 0xDFD64A815CAF1A0F),
    (0x04689104C2FD3B2F, 0x26955F6835AF609A, 0x5C513C9C4886C088),
    (0x37D06BB516CB7546, 0x164D5E404F275232, 0x0A2AEEAE3FF4AB77),
    (0x1F08260D1AC2465E, 0x6B056E18759F5CCA, 0xEF1BF03E5DFA575A),
    (0x584023641ABA6176, 0x004BD6EF09176062, 0x88BF0DB6D70DEE56),
    (0x025816164629B007, 0x480D39006EE762F2, 0xA1F9915541020B56),
    (0x49793EBC79B3258F, 0x437540C8698F3CFA, 0x6FBF1CAFCFFD0556),
    (0x4FB05E1515AB73A7, 0x072D43A077075292, 0x2F22E49BAB7CA1AC),
    (0x49E95D6D4CA229BF, 0x02FE55778117F12A, 0x5A6B612CC26CCE4A),
    (0x018310DC409B26D6, 0x1D9D5C5018F728C2, 0x5F4C038ED12B2E41),
    (0x1C587F1C13924FEF, 0x305532286D6F295A, 0x63FAC0D034D9F793),
];

#[test]
fn sp800_17_substitution_table() {
    for &(key, pt, ct) in SBOX_KAT.iter() {
        check_kat(key, pt, ct);
    }
}

#[test]
fn tables_are_consistent() {
    // FP is the inverse of IP.
    for x in [
        0u64,
        1,
        0x0123_4567_89AB_CDEF,
        u64::MAX,
        0x8000_0000_0000_0001,
    ] {
        assert_eq!(permute(permute(x, 64, &IP), 64, &FP), x);
        let (l, r) = initial_permutation(x);
        // final_permutation swaps halves, so swap them back first.
        assert_eq!(final_permutation((r, l)), x);
    }
    // The shift-based expansion equals the E table.
    let mut rng = crate::kernels::SplitMix64::new(3);
    for _ in 0..1000 {
        let r = rng.next_u64() as u32;
        let e = permute(u64::from(r), 32, &E);
        let rr = u64::from(r);
        let ext = ((rr & 1) << 33) | (rr << 1) | (rr >> 31);
        for i in 0..8 {
            assert_eq!((e >> (42 - 6 * i)) & 0x3F, (ext >> (28 - 4 * i)) & 0x3F);
        }
    }
}

#[test]
fn steps_compose_to_block_cipher() {
    let ks = KeySchedule::new(0x0E32_9232_EA6D_0D73);
    let blocks: Vec<u64> = (0..37u64).map(crate::kernels::mix64).collect();
    // A "pipeline": IP stage, four stages of four rounds, FP stage.
    let mut lrs = initial_permutation_batch(&blocks);
    for s in 0..4 {
        rounds_batch(&ks, 4 * s..4 * s + 4, &mut lrs, false);
    }
    let ct = final_permutation_batch(&lrs);
    assert_eq!(ct, encrypt_blocks(&ks, &blocks));
    let mut lrs = initial_permutation_batch(&ct);
    rounds_batch(&ks, 0..16, &mut lrs, true);
    assert_eq!(final_permutation_batch(&lrs), blocks);
}

#[test]
fn key_parsing() {
    assert!(KeySchedule::from_hex("0123456789ABCDEF").is_ok());
    assert_eq!(
        KeySchedule::from_hex("0123456789abcdef").unwrap(),
        KeySchedule::new(0x0123_4567_89AB_CDEF)
    );
    assert_eq!(KeySchedule::from_hex("0123"), Err(KeyError::WrongLength(4)));
    assert_eq!(
        KeySchedule::from_hex("0123456789abcdef0"),
        Err(KeyError::WrongLength(17))
    );
    let err = KeySchedule::from_hex("0123456789abcdeg").unwrap_err();
    assert_eq!(
        err,
        KeyError::InvalidDigit {
            position: 15,
            found: 'g'
        }
    );
    assert!(err.to_string().contains("position 15"));
    assert!(KeyError::WrongLength(3)
        .to_string()
        .contains("16 hex digits"));
    // Parity bits do not matter.
    assert_eq!(KeySchedule::new(0x0101_0101_0101_0101), KeySchedule::new(0));
}

#[test]
fn padding() {
    for len in 0..20 {
        let data: Vec<u8> = (0..len as u8).collect();
        let p = pkcs7_pad(&data);
        let n = 8 - len % 8;
        assert_eq!(p.len(), len + n);
        assert!(p[len..].iter().all(|&b| usize::from(b) == n));
        assert_eq!(pkcs7_unpad(&p).unwrap(), data.as_slice());
    }
    assert_eq!(pkcs7_unpad(&[]), Err(PaddingError::Empty));
    assert_eq!(pkcs7_unpad(&[1; 7]), Err(PaddingError::NotBlockAligned(7)));
    assert_eq!(pkcs7_unpad(&[0; 8]), Err(PaddingError::BadPadLength(0)));
    assert_eq!(pkcs7_unpad(&[9; 8]), Err(PaddingError::BadPadLength(9)));
    assert_eq!(
        pkcs7_unpad(&[1, 2, 3, 4, 5, 3, 2, 3]),
        Err(PaddingError::BadPadBytes)
    );
    assert_eq!(pkcs7_unpad(&[8; 8]).unwrap(), &[] as &[u8]);
    for e in [
        PaddingError::Empty,
        PaddingError::NotBlockAligned(3),
        PaddingError::BadPadLength(0),
        PaddingError::BadPadBytes,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn decrypt_rejects_bad_ciphertext() {
    let ks = KeySchedule::new(0x0123_4567_89AB_CDEF);
    assert_eq!(decrypt_ecb(&ks, &[]), Err(PaddingError::Empty));
    assert_eq!(
        decrypt_ecb(&ks, &[0; 12]),
        Err(PaddingError::NotBlockAligned(12))
    );
    // A ciphertext whose plaintext ends in 0x00 has invalid padding.
    let bad = encrypt_block(&ks, 0x4142_4344_4546_4700);
    assert_eq!(
        decrypt_ecb(&ks, &bad.to_be_bytes()),
        Err(PaddingError::BadPadLength(0))
    );
    // Corrupting the padding block's pad bytes is detected.
    let mut pad_block = [b'x', b'y', b'z', 5, 5, 5, 4, 5];
    let ct = encrypt_block(&ks, u64::from_be_bytes(pad_block)).to_be_bytes();
    assert_eq!(decrypt_ecb(&ks, &ct), Err(PaddingError::BadPadBytes));
    pad_block[6] = 5;
    let ct = encrypt_block(&ks, u64::from_be_bytes(pad_block)).to_be_bytes();
    assert_eq!(decrypt_ecb(&ks, &ct).unwrap(), b"xyz");
}

#[test]
fn byte_block_conversion() {
    let data: Vec<u8> = (0..24).collect();
    let blocks = bytes_to_blocks(&data);
    assert_eq!(blocks[0], 0x0001_0203_0405_0607);
    assert_eq!(blocks_to_bytes(&blocks), data);
}

#[test]
#[should_panic(expected = "multiple of the DES block size")]
fn bytes_to_blocks_rejects_partial_block() {
    bytes_to_blocks(&[0; 9]);
}

#[test]
fn generated_input_is_deterministic() {
    let a = generate_input(1003, 42);
    assert_eq!(a.len(), 1003);
    assert_eq!(a, generate_input(1003, 42));
    assert_eq!(&a[..500], &generate_input(500, 42)[..]);
    assert_ne!(a, generate_input(1003, 43));
    // Roughly uniform bytes.
    let big = generate_input(DEFAULT_INPUT_LEN, 1);
    let mean = big.iter().map(|&b| f64::from(b)).sum::<f64>() / big.len() as f64;
    assert!((mean - 127.5).abs() < 1.0, "mean {mean}");
}

#[test]
fn default_input_matches_oracle() {
    let data = generate_input(DEFAULT_INPUT_LEN, 7);
    let key = 0x1334_5779_9BBC_DFF1;
    let ks = KeySchedule::new(key);
    let ct = encrypt_ecb(&ks, &data);
    assert_eq!(ct, oracle_ecb(key, &data));
    assert_eq!(decrypt_ecb(&ks, &ct).unwrap(), data);
}

proptest! {
    #[test]
    fn ecb_matches_rustcrypto(key: u64, data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let ks = KeySchedule::new(key);
        prop_assert_eq!(encrypt_ecb(&ks, &data), oracle_ecb(key, &data));
    }

    #[test]
    fn blocks_match_rustcrypto(key: u64, block: u64) {
        let ks = KeySchedule::new(key);
        prop_assert_eq!(encrypt_block(&ks, block), oracle_block(key, block));
        prop_assert_eq!(decrypt_block(&ks, block), oracle_decrypt_block(key, block));
    }

    #[test]
    fn ecb_round_trip(key: u64, data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let ks = KeySchedule::new(key);
        let ct = encrypt_ecb(&ks, &data);
        prop_assert_eq!(ct.len(), (data.len() / 8 + 1) * 8);
        prop_assert_eq!(decrypt_ecb(&ks, &ct).unwrap(), data);
    }
}

/// Rough single-thread throughput; run with
/// `cargo test --release -p rill-examples --lib kernels::des -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run in release"]
fn throughput() {
    let data = generate_input(DEFAULT_INPUT_LEN, 1);
    let ks = KeySchedule::new(0x1334_5779_9BBC_DFF1);
    let reps = 20;
    let t = std::time::Instant::now();
    let mut x = 0u8;
    for _ in 0..reps {
        x ^= encrypt_ecb(&ks, &data)[0];
    }
    let dt = t.elapsed().as_secs_f64() / f64::from(reps);
    println!(
        "DES ECB encrypt {} bytes: {:.2} ms ({:.1} MB/s) [{x}]",
        data.len(),
        dt * 1e3,
        data.len() as f64 / dt / 1e6
    );
}
