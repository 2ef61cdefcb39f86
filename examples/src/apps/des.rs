//! DES (FIPS 46-3, ECB, PKCS#7) as a stream network.
//!
//! ```text
//!              ┌→ des/ip/0 → des/round/0/0 → … → des/round/0/S-1 → des/fp/0 ─┐
//! des/split ───┼→ des/ip/1 → des/round/1/0 → … → des/round/1/S-1 → des/fp/1 ─┼→ des/collect
//!              └→ …                                                          ┘
//! ```
//!
//! - `des/split` pads the input (PKCS#7, when encrypting), cuts it into
//!   messages of [`DesNet::batch`] blocks numbered in order, and deals them
//!   round-robin to the P pipelines (P = workers, at least 2).
//! - Pipeline `p` is `des/ip/p` (initial permutation), `S` round stages
//!   `des/round/p/s` doing `16/S` rounds each, and `des/fp/p` (final
//!   permutation).
//! - `des/collect` polls the pipelines' outputs, puts messages back in order
//!   by sequence number, strips the padding (when decrypting), and writes the
//!   output file if one was given.
//!
//! Verification: the output equals the sequential [`crate::kernels::des`] result
//! (itself tested against RustCrypto's `des`), and the network run the other
//! way (decrypting what it encrypted, or the reverse) gives the input back.
//!
//! Manual mapping: pipeline p on worker p mod W, splitter and collector on
//! worker 0.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, bail, Context, Result};
use rill::ManualTable;

use super::auto::{pilot_size, Pilot};
use serde::Serialize;

use super::{fnv64, run_timed, runtime_of, App, AppFigures, AppOpts, AppRun, NetRun, PollSet};
use crate::kernels::des::{self as k, KeySchedule, BLOCK_BYTES};

/// The default key (the classic worked-example key).
pub const DEFAULT_KEY: &str = "133457799BBCDFF1";
/// Default blocks per message.
pub const DEFAULT_BATCH: usize = 512;
/// Default round stages per pipeline (4 rounds each).
pub const DEFAULT_STAGES: usize = 4;
/// Default stream capacity (messages).
pub const DEFAULT_CAPACITY: usize = 8;

/// The shape of the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesNet {
    /// Blocks per message (at least 1).
    pub batch: usize,
    /// Round stages per pipeline; divides 16.
    pub stages: usize,
    /// Pipelines; `None`: the number of workers, at least 2.
    pub pipelines: Option<usize>,
}

impl Default for DesNet {
    fn default() -> Self {
        DesNet {
            batch: DEFAULT_BATCH,
            stages: DEFAULT_STAGES,
            pipelines: None,
        }
    }
}

impl DesNet {
    /// Checks the shape.
    pub fn validate(&self) -> Result<(), String> {
        if self.batch == 0 {
            return Err("DES batch must be at least 1 block".into());
        }
        if !matches!(self.stages, 1 | 2 | 4 | 8 | 16) {
            return Err(format!(
                "DES round stages must divide 16 (1, 2, 4, 8 or 16), got {}",
                self.stages
            ));
        }
        if self.pipelines == Some(0) {
            return Err("DES pipelines must be at least 1".into());
        }
        Ok(())
    }

    /// Pipelines on `workers` workers.
    pub fn pipelines(&self, workers: usize) -> usize {
        self.pipelines.unwrap_or(workers.max(2))
    }
}

/// Where the DES input comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DesInput {
    /// `generate_input(len, seed)`.
    Generated {
        /// Bytes.
        len: usize,
        /// Seed.
        seed: u64,
    },
    /// A file's contents.
    File(PathBuf),
}

/// A DES application run's configuration.
#[derive(Clone, Debug)]
pub struct DesConfig {
    /// The input.
    pub input: DesInput,
    /// Where to write the output (optional).
    pub output: Option<PathBuf>,
    /// The key, 16 hex digits.
    pub key: String,
    /// Decrypt instead of encrypt.
    pub decrypt: bool,
    /// The network's shape.
    pub net: DesNet,
}

impl Default for DesConfig {
    fn default() -> Self {
        DesConfig {
            input: DesInput::Generated {
                len: k::DEFAULT_INPUT_LEN,
                seed: 1,
            },
            output: None,
            key: DEFAULT_KEY.into(),
            decrypt: false,
            net: DesNet::default(),
        }
    }
}

/// The DES application: configuration, input, key and (once computed) the
/// sequential reference output.
pub struct Des {
    cfg: DesConfig,
    ks: Arc<KeySchedule>,
    input: Arc<Vec<u8>>,
    reference: OnceLock<Result<Vec<u8>, String>>,
}

/// A message: its sequence number and its blocks (or half-block pairs).
type Msg<T> = (u64, Vec<T>);

impl Des {
    /// Reads or generates the input and checks the configuration. Errors
    /// here are argument errors (bad key, missing file, ciphertext that is
    /// not block aligned).
    pub fn new(cfg: DesConfig) -> Result<Des> {
        cfg.net.validate().map_err(|e| anyhow!(e))?;
        let ks = KeySchedule::from_hex(&cfg.key).map_err(|e| anyhow!("{e}"))?;
        let input = match &cfg.input {
            DesInput::Generated { len, seed } => k::generate_input(*len, *seed),
            DesInput::File(p) => fs::read(p)
                .with_context(|| format!("cannot read the input file {}", p.display()))?,
        };
        if cfg.decrypt && (input.is_empty() || input.len() % BLOCK_BYTES != 0) {
            bail!(
                "cannot decrypt {} bytes: DES ciphertext is a non-empty multiple of {BLOCK_BYTES} bytes",
                input.len()
            );
        }
        Ok(Des {
            cfg,
            ks: Arc::new(ks),
            input: Arc::new(input),
            reference: OnceLock::new(),
        })
    }

    /// The input bytes.
    pub fn input(&self) -> &[u8] {
        &self.input
    }

    /// The sequential reference output (computed once).
    pub fn reference(&self) -> &Result<Vec<u8>, String> {
        self.reference.get_or_init(|| {
            if self.cfg.decrypt {
                k::decrypt_ecb(&self.ks, &self.input).map_err(|e| e.to_string())
            } else {
                Ok(k::encrypt_ecb(&self.ks, &self.input))
            }
        })
    }

    /// Runs the network once on `data` (`decrypt` chooses the direction),
    /// writing `output` if given. The value is the output, or why the
    /// ciphertext could not be decrypted (bad padding).
    pub fn network(
        &self,
        opts: &AppOpts,
        data: Arc<Vec<u8>>,
        decrypt: bool,
        output: Option<PathBuf>,
    ) -> Result<NetRun<Result<Vec<u8>, String>>> {
        let net = &self.cfg.net;
        let p = net.pipelines(opts.workers);
        let per_stage = 16 / net.stages;
        let cap = opts.capacity_or(DEFAULT_CAPACITY);
        let batch = net.batch;
        let mut rt = runtime_of(self, opts)?;

        let mut to_pipes = Vec::with_capacity(p);
        let mut from_pipes = PollSet::new();
        for i in 0..p {
            let (w_in, mut r) = rill::stream::<Msg<u64>>(cap);
            to_pipes.push(w_in);
            // IP: blocks → half-block pairs.
            let (mut w, r_next) = rill::stream::<Msg<(u32, u32)>>(cap);
            rt.spawn(format!("des/ip/{i}"), move || {
                while let Some((seq, blocks)) = r.read() {
                    if w.write((seq, k::initial_permutation_batch(&blocks)))
                        .is_err()
                    {
                        return;
                    }
                }
            });
            let mut r_lr = r_next;
            for s in 0..net.stages {
                let (mut w, r_next) = rill::stream::<Msg<(u32, u32)>>(cap);
                let mut r = std::mem::replace(&mut r_lr, r_next);
                let ks = self.ks.clone();
                let rounds = s * per_stage..(s + 1) * per_stage;
                rt.spawn(format!("des/round/{i}/{s}"), move || {
                    while let Some((seq, mut lrs)) = r.read() {
                        k::rounds_batch(&ks, rounds.clone(), &mut lrs, decrypt);
                        if w.write((seq, lrs)).is_err() {
                            return;
                        }
                    }
                });
            }
            // FP: half-block pairs → blocks, to the collector.
            let (mut w, r_out) = rill::stream::<Msg<u64>>(cap);
            let mut r = r_lr;
            rt.spawn(format!("des/fp/{i}"), move || {
                while let Some((seq, lrs)) = r.read() {
                    if w.write((seq, k::final_permutation_batch(&lrs))).is_err() {
                        return;
                    }
                }
            });
            from_pipes.push(r_out);
        }

        rt.spawn("des/split", move || {
            let padded;
            let bytes: &[u8] = if decrypt {
                &data
            } else {
                padded = k::pkcs7_pad(&data);
                &padded
            };
            for (seq, chunk) in bytes.chunks(batch * BLOCK_BYTES).enumerate() {
                let out = &mut to_pipes[seq % p];
                if out.write((seq as u64, k::bytes_to_blocks(chunk))).is_err() {
                    return;
                }
            }
        });

        run_timed(rt, "des/collect", "DES", move || {
            let mut out: Vec<u8> = Vec::with_capacity(0);
            let mut pending: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
            let mut next = 0u64;
            for (_, (seq, blocks)) in from_pipes {
                pending.insert(seq, blocks);
                while let Some(blocks) = pending.remove(&next) {
                    out.reserve(blocks.len() * BLOCK_BYTES);
                    for b in blocks {
                        out.extend_from_slice(&b.to_be_bytes());
                    }
                    next += 1;
                }
            }
            if !pending.is_empty() {
                return Err(format!(
                    "message {next} never arrived ({} later ones did)",
                    pending.len()
                ));
            }
            if decrypt {
                match k::pkcs7_unpad(&out) {
                    Ok(body) => {
                        let n = body.len();
                        out.truncate(n);
                    }
                    Err(e) => {
                        return Err(format!("the decrypted data has {e}"));
                    }
                }
            }
            if let Some(path) = output {
                let written = fs::File::create(&path).and_then(|mut f| {
                    f.write_all(&out)?;
                    f.flush()
                });
                if let Err(e) = written {
                    return Err(format!("writing {}: {e}", path.display()));
                }
            }
            Ok(out)
        })
    }
}

impl App for Des {
    fn name(&self) -> &'static str {
        "des"
    }

    fn describe(&self) -> String {
        let src = match &self.cfg.input {
            DesInput::Generated { len, .. } => format!("{len} generated bytes"),
            DesInput::File(p) => format!("{} ({} bytes)", p.display(), self.input.len()),
        };
        format!(
            "des {} {src}, {} blocks/message, {} round stages",
            if self.cfg.decrypt {
                "decrypt"
            } else {
                "encrypt"
            },
            self.cfg.net.batch,
            self.cfg.net.stages
        )
    }

    fn manual_table(&self, workers: usize) -> ManualTable {
        let mut t = ManualTable::new()
            .with("des/split", 0)
            .with("des/collect", 0);
        for i in 0..self.cfg.net.pipelines(workers) {
            let w = i % workers;
            t.insert(format!("des/ip/{i}"), w);
            t.insert(format!("des/round/{i}/"), w);
            t.insert(format!("des/fp/{i}"), w);
        }
        t
    }

    /// 1/`divisor` of the input's bytes, at least 64 KiB (or all of it),
    /// generated and encrypted whatever the real run does (the rounds cost
    /// the same both ways, and generated plaintext always pads right); same
    /// key and network, no output file.
    fn pilot(&self, _workers: usize, divisor: u64) -> Result<Pilot> {
        let len = pilot_size(self.input.len() as u64, divisor, 64 << 10) as usize;
        let seed = match self.cfg.input {
            DesInput::Generated { seed, .. } => seed,
            DesInput::File(_) => 1,
        };
        let cfg = DesConfig {
            input: DesInput::Generated { len, seed },
            output: None,
            decrypt: false,
            ..self.cfg.clone()
        };
        Ok(Pilot {
            app: Box::new(Des::new(cfg)?),
            size: format!("{len} of {} bytes", self.input.len()),
        })
    }

    fn parts(&self, workers: usize) -> Vec<String> {
        let mut v = vec!["des/split".to_string()];
        for i in 0..self.cfg.net.pipelines(workers) {
            v.push(format!("des/ip/{i}"));
            v.push(format!("des/round/{i}/"));
            v.push(format!("des/fp/{i}"));
        }
        v.push("des/collect".into());
        v
    }

    fn run(&self, opts: &AppOpts) -> Result<AppRun> {
        let decrypt = self.cfg.decrypt;
        let r = self.network(opts, self.input.clone(), decrypt, self.cfg.output.clone())?;
        let mut run = AppRun::new("des", r.wall, r.stats);
        let mut figures = DesFigures {
            mode: if decrypt { "decrypt" } else { "encrypt" },
            bytes: self.input.len(),
            key: self.cfg.key.to_uppercase(),
            batch: self.cfg.net.batch,
            stages: self.cfg.net.stages,
            pipelines: self.cfg.net.pipelines(opts.workers),
            output_bytes: None,
            output_fnv: None,
        };
        let out = match r.value {
            Ok(out) => out,
            Err(e) => {
                run.figures = Some(AppFigures::Des(figures));
                run.check(false, || e);
                run.summary = "no output".into();
                return Ok(run);
            }
        };
        figures.output_bytes = Some(out.len());
        figures.output_fnv = Some(format!("{:016x}", fnv64(&out)));
        run.figures = Some(AppFigures::Des(figures));
        match self.reference() {
            Ok(reference) => run.check(out == *reference, || {
                let at = out
                    .iter()
                    .zip(reference.iter())
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.len().min(reference.len()));
                format!(
                    "output differs from the sequential reference at byte {at} ({} vs {} bytes)",
                    out.len(),
                    reference.len()
                )
            }),
            Err(e) => run.check(false, || format!("the sequential reference failed: {e}")),
        }
        // The round trip, through the network again, the other way.
        let back = self.network(&opts.unmonitored(), Arc::new(out.clone()), !decrypt, None)?;
        match back.value {
            Ok(back) => run.check(back == *self.input, || {
                format!(
                    "{} the output with the network does not give the input back",
                    if decrypt { "encrypting" } else { "decrypting" }
                )
            }),
            Err(e) => run.check(false, || format!("the round trip failed: {e}")),
        }
        run.summary = format!(
            "{} {} bytes -> {} bytes (fnv {:016x})",
            if decrypt { "decrypted" } else { "encrypted" },
            self.input.len(),
            out.len(),
            fnv64(&out)
        );
        Ok(run)
    }
}

/// What a DES run reports besides its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DesFigures {
    /// `encrypt` or `decrypt`.
    pub mode: &'static str,
    /// Input bytes.
    pub bytes: usize,
    /// The key, in hex.
    pub key: String,
    /// Blocks per message.
    pub batch: usize,
    /// Round stages per pipeline.
    pub stages: usize,
    /// Pipelines.
    pub pipelines: usize,
    /// Output bytes, when there was output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<usize>,
    /// FNV-1a of the output, in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_fnv: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;

    fn small(len: usize) -> Des {
        Des::new(DesConfig {
            input: DesInput::Generated { len, seed: 7 },
            net: DesNet {
                batch: 16,
                ..DesNet::default()
            },
            ..DesConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn verifies_on_every_mapping_and_agrees() {
        let des = small(3000);
        let mut outputs = Vec::new();
        for workers in [1, 2] {
            for m in ["rr", "manual", "parts", "steal"] {
                let opts = AppOpts::new(workers, m.parse().unwrap());
                let run = des.run(&opts).unwrap();
                assert!(run.verified, "{workers} workers {m}: {:?}", run.problems);
                outputs.push(run.figure("output_fnv"));
                // Names are places: 2 pipelines of 1 + 4 + 1 tasks, split, collect.
                assert_eq!(run.stats.tasks_created, 14, "{workers} {m}");
            }
        }
        assert!(outputs.windows(2).all(|w| w[0] == w[1]), "{outputs:?}");
    }

    #[test]
    fn sizes_around_block_and_batch_edges() {
        let opts = AppOpts::new(2, MappingChoice::Rr);
        for len in [0, 1, 7, 8, 9, 127, 128, 129] {
            let run = small(len).run(&opts).unwrap();
            assert!(run.verified, "len {len}: {:?}", run.problems);
            assert_eq!(run.figure("output_bytes"), (len / 8 + 1) * 8);
        }
        // Sixteen one-round stages, three pipelines.
        let des = Des::new(DesConfig {
            input: DesInput::Generated { len: 500, seed: 1 },
            net: DesNet {
                batch: 3,
                stages: 16,
                pipelines: Some(3),
            },
            ..DesConfig::default()
        })
        .unwrap();
        assert!(des.run(&opts).unwrap().verified);
    }

    #[test]
    fn decrypt_mode_and_files() {
        let dir = std::env::temp_dir().join(format!("rill-des-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let plain = k::generate_input(1000, 3);
        let ks = KeySchedule::from_hex("0123456789ABCDEF").unwrap();
        let cipher = k::encrypt_ecb(&ks, &plain);
        fs::write(dir.join("c.bin"), &cipher).unwrap();
        let des = Des::new(DesConfig {
            input: DesInput::File(dir.join("c.bin")),
            output: Some(dir.join("p.bin")),
            key: "0123456789abcdef".into(),
            decrypt: true,
            net: DesNet {
                batch: 8,
                ..DesNet::default()
            },
        })
        .unwrap();
        let run = des.run(&AppOpts::new(2, MappingChoice::Manual)).unwrap();
        assert!(run.verified, "{:?}", run.problems);
        assert_eq!(fs::read(dir.join("p.bin")).unwrap(), plain);
        // Decrypting with the wrong key: bad padding, not verified, no panic.
        let wrong = Des::new(DesConfig {
            input: DesInput::File(dir.join("c.bin")),
            key: DEFAULT_KEY.into(),
            decrypt: true,
            ..DesConfig::default()
        })
        .unwrap();
        let run = wrong.run(&AppOpts::new(1, MappingChoice::Rr)).unwrap();
        assert!(!run.verified);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn argument_errors() {
        let e = |cfg: DesConfig| Des::new(cfg).err().unwrap().to_string();
        assert!(e(DesConfig {
            key: "0123".into(),
            ..DesConfig::default()
        })
        .contains("16 hex digits"));
        assert!(e(DesConfig {
            input: DesInput::File("/no/such/input".into()),
            ..DesConfig::default()
        })
        .contains("/no/such/input"));
        assert!(e(DesConfig {
            input: DesInput::Generated { len: 12, seed: 1 },
            decrypt: true,
            ..DesConfig::default()
        })
        .contains("multiple of 8"));
        assert!(e(DesConfig {
            net: DesNet {
                stages: 3,
                ..DesNet::default()
            },
            ..DesConfig::default()
        })
        .contains("divide 16"));
    }

    #[test]
    fn mapping_file_matches_the_code_table() {
        let des = Des::new(DesConfig::default()).unwrap();
        let file = ManualTable::load(crate::apps::mapping_file("des")).unwrap();
        let code = des.manual_table(2);
        let mut names = vec!["des/split".to_string(), "des/collect".to_string()];
        for i in 0..2 {
            names.push(format!("des/ip/{i}"));
            names.push(format!("des/fp/{i}"));
            for s in 0..DEFAULT_STAGES {
                names.push(format!("des/round/{i}/{s}"));
            }
        }
        for n in &names {
            assert_eq!(file.lookup(n), code.lookup(n), "{n}");
            assert!(code.lookup(n).is_some(), "{n}");
        }
    }
}
