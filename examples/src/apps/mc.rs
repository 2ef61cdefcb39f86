//! Monte Carlo option pricing as a network that unfolds at run time by
//! serial replication (S-Net's star combinator).
//!
//! ```text
//!              ┌→ mc/star/0/step/0 → mc/star/0/step/1 → … → mc/star/0/step/N-1 ─┐
//! mc/dispatch ─┼→ mc/star/1/step/0 → …                                         ├→ mc/collect
//!              └→ …  (C chains)                                                ┘
//! ```
//!
//! - `mc/dispatch` cuts the paths into records of [`McNet::batch`] paths
//!   and deals them round-robin to C chains. A chain's first stage is
//!   spawned when the first record for it comes.
//! - Stage `j` of chain `c` (`mc/star/c/step/j`) applies time step `j`
//!   ([`crate::kernels::mc::step`]) to each record. Its output starts as the
//!   chain's exit (the stream to the collector); when the first record that
//!   still has steps to go arrives, the stage unfolds the star: it spawns
//!   stage `j + 1`, redirects its output to it with [`rill::Writer::replace`]
//!   and hands it the exit. A record that has made every step leaves as its
//!   [`Partial`] payoff sums.
//! - `mc/collect` polls the C exits and merges the partials (exactly, in
//!   fixed point), so the prices are bit-identical for any number of
//!   workers, mapping or arrival order.
//!
//! Verification: every path arrived, and the call and put prices are within
//! 4 standard errors of the Black–Scholes closed form.
//!
//! Manual mapping keeps a whole chain on one worker (`mc/star/c/` on worker
//! c mod W; dispatcher and collector on worker 0): every hop inside a chain
//! is then a local hand-off. Round-robin scatters consecutive stages of a
//! chain over the workers, so hops cross workers: each one moves a record
//! to another core and, when the reader waits, wakes a task on another
//! worker. The run reports the share of chain links that cross workers
//! (`cross_links`). Under round-robin that share depends on the order in
//! which the chains happen to unfold (the mapper's counter is global), and
//! runs with more crossing links are slower.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Result};
use rill::dist::{Wire, WireError};
use rill::{ManualTable, Reader, Writer};

use super::auto::{pilot_size, Pilot};
use serde::Serialize;

use super::{run_timed, runtime_of, App, AppConfig, AppFigures, AppOpts, AppRun, NetRun, PollSet};
use crate::bench::usize_from;
use crate::kernels::mc::{self as k, McParams, Partial, PathBatch};
use clap::value_parser;

/// Default paths per record: records this small make a fine-grained
/// network (500,000 records for a million paths, 8 million hops), the kind
/// in which mapping matters. A step of 2 paths costs about 0.15 µs, about
/// what a hop that crosses workers costs more than a local one; measured on
/// 2 quiet cores, manual mapping beats round-robin by about 1.25x with 10
/// paths per record, 1.4x with 4 to 5, 1.55x with 1 to 2, and not at all
/// with 1,000 (the per-hop costs vanish in the computation).
pub const DEFAULT_BATCH: usize = 2;
/// Default capacity (records) of the streams between the stages of a chain:
/// one record, a stage hands each record on before it takes the next.
pub const DEFAULT_CAPACITY: usize = 1;
/// Capacity of the streams into a chain and out of it (dispatcher → first
/// stage, last stage → collector): deep, so that a chain on one worker does
/// not wait record by record for the dispatcher and collector on another.
pub const FEED_CAPACITY: usize = 1024;

/// The shape of the network.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct McNet {
    /// Paths per record.
    #[arg(long, value_name = "PATHS", default_value_t = DEFAULT_BATCH,
          value_parser = usize_from(1))]
    pub batch: usize,
    /// Chains (records are dealt round-robin over them; no more are made
    /// than there are records) [default: one per worker, at least 2].
    #[arg(long, value_parser = usize_from(1))]
    pub chains: Option<usize>,
}

impl Default for McNet {
    fn default() -> Self {
        McNet {
            batch: DEFAULT_BATCH,
            chains: None,
        }
    }
}

/// A Monte Carlo application run's configuration (`rill-bench mc`'s
/// arguments).
#[derive(Clone, Debug, clap::Args)]
pub struct McConfig {
    /// Paths to simulate.
    #[arg(long, default_value_t = k::DEFAULT_PATHS, value_parser = value_parser!(u64).range(1..))]
    pub paths: u64,
    /// Option and simulation parameters.
    #[command(flatten)]
    pub params: McParams,
    /// The network's shape.
    #[command(flatten)]
    pub net: McNet,
}

impl AppConfig for McConfig {
    fn name(&self) -> &'static str {
        "mc"
    }

    fn app(&self) -> Result<Box<dyn App>> {
        Ok(Box::new(Mc::new(self.clone())?))
    }
}

impl Default for McConfig {
    fn default() -> Self {
        McConfig {
            params: McParams::default(),
            paths: k::DEFAULT_PATHS,
            net: McNet::default(),
        }
    }
}

impl McConfig {
    /// Checks the configuration, naming the first bad value.
    pub fn validate(&self) -> Result<(), String> {
        self.params.validate()?;
        if self.paths == 0 {
            return Err("paths must be at least 1, got 0".into());
        }
        if self.net.batch == 0 {
            return Err("batch must be at least 1 path".into());
        }
        if self.net.chains == Some(0) {
            return Err("chains must be at least 1".into());
        }
        Ok(())
    }

    /// Records the paths are cut into.
    pub fn records(&self) -> u64 {
        k::batch_count(self.paths, self.net.batch)
    }

    /// Chains made on `workers` workers: no more than there are records.
    pub fn chains(&self, workers: usize) -> usize {
        let want = self.net.chains.unwrap_or(workers.max(2));
        (want as u64).min(self.records()).max(1) as usize
    }
}

/// A record travelling down a chain (the network across ranks,
/// `rill-bench mc` under mpirun, sends it between ranks as it is: [`Wire`]).
pub enum Rec {
    /// Paths still being stepped.
    Paths(PathBatch),
    /// The payoff sums of a finished record.
    Done(Partial),
}

impl Wire for Rec {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Rec::Paths(b) => {
                out.push(0);
                b.first_path.encode(out);
                b.log_s.encode(out);
                b.steps_done.encode(out);
            }
            Rec::Done(p) => {
                out.push(1);
                p.paths.encode(out);
                p.sum_call.encode(out);
                p.sumsq_call.encode(out);
                p.sum_put.encode(out);
                p.sumsq_put.encode(out);
            }
        }
    }

    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(match u8::decode(input)? {
            0 => Rec::Paths(PathBatch {
                first_path: u64::decode(input)?,
                log_s: Vec::decode(input)?,
                steps_done: u32::decode(input)?,
            }),
            1 => Rec::Done(Partial {
                paths: u64::decode(input)?,
                sum_call: u128::decode(input)?,
                sumsq_call: u128::decode(input)?,
                sum_put: u128::decode(input)?,
                sumsq_put: u128::decode(input)?,
            }),
            _ => return Err(WireError::Invalid("Rec")),
        })
    }
}

/// What the network computed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McOutput {
    /// The merged payoff sums.
    pub total: Partial,
    /// Records the collector received.
    pub records: u64,
    /// Chain links (stage j → j+1) made.
    pub links: u64,
    /// Of those, links whose two stages started on different workers.
    pub cross_links: u64,
}

/// Counters the stages share: the links between stages made as the chains
/// unfolded, and those that cross workers.
#[derive(Debug, Default)]
pub struct Links {
    made: AtomicU64,
    cross: AtomicU64,
}

/// The Monte Carlo application.
pub struct Mc {
    cfg: McConfig,
    params: Arc<McParams>,
}

fn current_worker() -> usize {
    rill::current().map(|t| t.worker).unwrap_or(0)
}

/// Stage `j` of chain `chain`: steps records, unfolding the chain on demand
/// (stage `j + 1` spawned beside it, with streams of `cap`; the links
/// counted in `links`, a link from a stage on `parent_worker`, when given,
/// as crossing or not). The network across ranks runs the same stages: a
/// chain's stages after the first are spawned on its rank.
#[allow(clippy::too_many_arguments)]
pub fn stage(
    params: Arc<McParams>,
    chain: usize,
    j: u32,
    mut input: Reader<Rec>,
    mut out: Writer<Rec>,
    cap: usize,
    links: Arc<Links>,
    parent_worker: Option<usize>,
) {
    if let Some(pw) = parent_worker {
        links.made.fetch_add(1, Ordering::Relaxed);
        if pw != current_worker() {
            links.cross.fetch_add(1, Ordering::Relaxed);
        }
    }
    let mut unfolded = false;
    while let Some(rec) = input.read() {
        let msg = match rec {
            Rec::Paths(mut b) => {
                k::step(&params, &mut b, j);
                if b.steps_done == params.steps {
                    Rec::Done(k::payoff(&params, &b))
                } else {
                    if !unfolded {
                        // Serial replication: the next instance of the star's
                        // operand, spliced in between this stage and the exit.
                        unfolded = true;
                        let (w, r) = rill::stream(cap);
                        let exit = out.replace(w);
                        let (p, l) = (params.clone(), links.clone());
                        let me = current_worker();
                        rill::spawn(format!("mc/star/{chain}/step/{}", j + 1), move || {
                            stage(p, chain, j + 1, r, exit, cap, l, Some(me))
                        });
                    }
                    Rec::Paths(b)
                }
            }
            done @ Rec::Done(_) => done,
        };
        if out.write(msg).is_err() {
            return;
        }
    }
}

impl Mc {
    /// Checks the configuration (argument errors).
    pub fn new(cfg: McConfig) -> Result<Mc> {
        cfg.validate().map_err(|e| anyhow!(e))?;
        Ok(Mc {
            params: Arc::new(cfg.params.clone()),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &McConfig {
        &self.cfg
    }

    /// Runs the network once.
    pub fn network(&self, opts: &AppOpts) -> Result<NetRun<McOutput>> {
        let chains = self.cfg.chains(opts.workers);
        let records = self.cfg.records();
        let (paths, batch) = (self.cfg.paths, self.cfg.net.batch);
        let cap = opts.capacity_or(DEFAULT_CAPACITY);
        let mut rt = runtime_of(self, opts)?;
        let links = Arc::new(Links::default());

        let mut exits = Vec::with_capacity(chains);
        let mut from_chains = PollSet::new();
        for _ in 0..chains {
            let (w, r) = rill::stream::<Rec>(FEED_CAPACITY);
            exits.push(Some(w));
            from_chains.push(r);
        }

        let params = self.params.clone();
        let l = links.clone();
        rt.spawn("mc/dispatch", move || {
            let mut heads: Vec<Option<Writer<Rec>>> = (0..chains).map(|_| None).collect();
            for b in 0..records {
                let c = (b % chains as u64) as usize;
                let head = heads[c].get_or_insert_with(|| {
                    let (w, r) = rill::stream(FEED_CAPACITY);
                    let exit = exits[c].take().expect("one exit per chain");
                    let (p, l) = (params.clone(), l.clone());
                    rill::spawn(format!("mc/star/{c}/step/0"), move || {
                        stage(p, c, 0, r, exit, cap, l, None)
                    });
                    w
                });
                let (first, n) = k::batch_bounds(paths, batch, b);
                if head
                    .write(Rec::Paths(k::new_batch(&params, first, n)))
                    .is_err()
                {
                    return;
                }
            }
        });

        let params = self.params.clone();
        let r = run_timed(rt, "mc/collect", "Monte Carlo", move || {
            let mut total = Partial::default();
            let mut records = 0u64;
            for (_, rec) in from_chains {
                let part = match rec {
                    Rec::Done(p) => p,
                    // A record that left its chain early: cannot happen, but
                    // pricing it as it is keeps the count honest.
                    Rec::Paths(b) => {
                        if b.steps_done != params.steps {
                            continue;
                        }
                        k::payoff(&params, &b)
                    }
                };
                total.merge(&part);
                records += 1;
            }
            (total, records)
        })?;
        let (total, records) = r.value;
        Ok(NetRun {
            value: McOutput {
                total,
                records,
                links: links.made.load(Ordering::Relaxed),
                cross_links: links.cross.load(Ordering::Relaxed),
            },
            wall: r.wall,
            stats: r.stats,
        })
    }
}

impl App for Mc {
    fn name(&self) -> &'static str {
        "mc"
    }

    fn describe(&self) -> String {
        let p = &self.cfg.params;
        let chains = match self.cfg.net.chains {
            Some(c) => format!("{c} chains"),
            None => "a chain per worker".into(),
        };
        format!(
            "mc {} paths x {} steps, {} paths/record, {chains} (S={} K={} r={} v={} T={})",
            self.cfg.paths,
            p.steps,
            self.cfg.net.batch,
            p.spot,
            p.strike,
            p.rate,
            p.vol,
            p.maturity
        )
    }

    fn manual_table(&self, workers: usize) -> ManualTable {
        let mut t = ManualTable::new()
            .with("mc/dispatch", 0)
            .with("mc/collect", 0);
        for c in 0..self.cfg.chains(workers) {
            t.insert(format!("mc/star/{c}/"), c % workers);
        }
        t
    }

    /// 1/`divisor` of the paths, at least 2000 and 4 records per chain, on
    /// the same number of chains (so the same task names).
    fn pilot(&self, workers: usize, divisor: u64) -> Result<Pilot> {
        let chains = self.cfg.chains(workers);
        let floor = 2000u64.max(4 * chains as u64 * self.cfg.net.batch as u64);
        let paths = pilot_size(self.cfg.paths, divisor, floor);
        let cfg = McConfig {
            paths,
            net: McNet {
                chains: Some(chains),
                ..self.cfg.net.clone()
            },
            ..self.cfg.clone()
        };
        Ok(Pilot {
            app: Box::new(Mc::new(cfg)?),
            size: format!("{paths} of {} paths", self.cfg.paths),
        })
    }

    fn parts(&self, workers: usize) -> Vec<String> {
        let mut v = vec!["mc/dispatch".to_string()];
        v.extend((0..self.cfg.chains(workers)).map(|c| format!("mc/star/{c}/")));
        v.push("mc/collect".into());
        v
    }

    fn run(&self, opts: &AppOpts) -> Result<AppRun> {
        let r = self.network(opts)?;
        let out = r.value;
        let est = k::finish(&[out.total]);
        let p = &self.cfg.params;
        let (bs_call, bs_put) = (p.bs_call(), p.bs_put());
        let mut run = AppRun::new("mc", r.wall, r.stats);
        let cross = if out.links > 0 {
            out.cross_links as f64 / out.links as f64
        } else {
            0.0
        };
        run.figures = Some(AppFigures::Mc(McFigures {
            paths: self.cfg.paths,
            steps: p.steps,
            batch: self.cfg.net.batch,
            chains: self.cfg.chains(opts.workers),
            records: out.records,
            call_price: est.call,
            put_price: est.put,
            std_err: est.call_std_err,
            put_std_err: est.put_std_err,
            closed_form_call: bs_call,
            closed_form_put: bs_put,
            cross_links: cross,
        }));
        run.check(est.paths == self.cfg.paths, || {
            format!("{} paths priced, {} asked for", est.paths, self.cfg.paths)
        });
        run.check(out.records == self.cfg.records(), || {
            format!(
                "{} records arrived, {} were sent",
                out.records,
                self.cfg.records()
            )
        });
        // With a single path there is no standard error; ask for an exact
        // match with the sequential reference instead.
        if est.paths >= 2 {
            let within = |x: f64, exact: f64, se: f64| (x - exact).abs() <= 4.0 * se;
            run.check(within(est.call, bs_call, est.call_std_err), || {
                format!(
                    "call {:.6} is more than 4 standard errors ({:.6}) from {bs_call:.6}",
                    est.call, est.call_std_err
                )
            });
            run.check(within(est.put, bs_put, est.put_std_err), || {
                format!(
                    "put {:.6} is more than 4 standard errors ({:.6}) from {bs_put:.6}",
                    est.put, est.put_std_err
                )
            });
        } else {
            let seq = reference(&self.cfg);
            run.check(
                seq.call.to_bits() == est.call.to_bits() && seq.put.to_bits() == est.put.to_bits(),
                || "differs from the sequential reference".into(),
            );
        }
        run.summary = format!(
            "call {:.4} ± {:.4} (closed form {bs_call:.4}), put {:.4} ± {:.4} (closed form {bs_put:.4}); {:.0}% of chain links cross workers",
            est.call,
            est.call_std_err,
            est.put,
            est.put_std_err,
            cross * 100.0
        );
        Ok(run)
    }
}

/// The sequential reference price (the same steps, batches and merge).
pub fn reference(cfg: &McConfig) -> k::Estimate {
    k::price_sequential(&cfg.params, cfg.paths, cfg.net.batch)
}

/// What a Monte Carlo run reports besides its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct McFigures {
    /// Paths priced.
    pub paths: u64,
    /// Time steps per path.
    pub steps: u32,
    /// Paths per record.
    pub batch: usize,
    /// Chains of step tasks.
    pub chains: usize,
    /// Records that went through the chains.
    pub records: u64,
    /// The call's price.
    pub call_price: f64,
    /// The put's price.
    pub put_price: f64,
    /// The call's standard error.
    pub std_err: f64,
    /// The put's standard error.
    pub put_std_err: f64,
    /// Black-Scholes' call price.
    pub closed_form_call: f64,
    /// Black-Scholes' put price.
    pub closed_form_put: f64,
    /// The share of hand-offs between step tasks that crossed workers.
    pub cross_links: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;

    fn small(paths: u64, batch: usize, chains: usize, steps: u32) -> Mc {
        Mc::new(McConfig {
            params: McParams {
                steps,
                ..McParams::default()
            },
            paths,
            net: McNet {
                batch,
                chains: Some(chains),
            },
        })
        .unwrap()
    }

    #[test]
    fn verifies_on_every_mapping_bit_identical() {
        let mc = small(4000, 100, 3, 5);
        let seq = reference(mc.config());
        for workers in [1, 2] {
            for m in ["rr", "manual", "parts", "steal"] {
                let opts = AppOpts::new(workers, m.parse().unwrap());
                let run = mc.run(&opts).unwrap();
                assert!(run.verified, "{workers} workers {m}: {:?}", run.problems);
                let net = mc.network(&opts).unwrap().value;
                let est = k::finish(&[net.total]);
                // Bit-identical to the sequential reference, so to each other.
                assert_eq!(est.call.to_bits(), seq.call.to_bits(), "{workers} {m}");
                assert_eq!(est.put.to_bits(), seq.put.to_bits(), "{workers} {m}");
                assert_eq!(run.figure("call_price"), seq.call);
                // 3 chains of 5 stages unfolded, dispatcher, collector.
                assert_eq!(run.stats.tasks_created, 17, "{workers} {m}");
                assert_eq!(net.links, 12);
            }
        }
    }

    #[test]
    fn manual_keeps_chains_on_one_worker() {
        let mc = small(2000, 100, 4, 6);
        let net = mc
            .network(&AppOpts::new(2, MappingChoice::Manual))
            .unwrap()
            .value;
        assert_eq!((net.links, net.cross_links), (20, 0));
    }

    #[test]
    fn edge_sizes() {
        let opts = AppOpts::new(2, MappingChoice::Rr);
        for (paths, batch, chains, steps) in [(1, 10, 4, 3), (7, 3, 8, 1), (10, 1, 2, 2)] {
            let run = small(paths, batch, chains, steps).run(&opts).unwrap();
            assert!(run.verified, "{paths} {batch}: {:?}", run.problems);
        }
    }

    #[test]
    fn argument_errors() {
        let e = |cfg: McConfig| Mc::new(cfg).err().unwrap().to_string();
        assert!(e(McConfig {
            paths: 0,
            ..McConfig::default()
        })
        .contains("paths must be at least 1"));
        assert!(e(McConfig {
            params: McParams {
                vol: -1.0,
                ..McParams::default()
            },
            ..McConfig::default()
        })
        .contains("vol"));
    }

    #[test]
    fn mapping_file_matches_the_code_table() {
        let mc = Mc::new(McConfig::default()).unwrap();
        let file = ManualTable::load(crate::apps::mapping_file("mc")).unwrap();
        let code = mc.manual_table(2);
        for c in 0..mc.config().chains(2) {
            for j in [0, 5, 15] {
                let n = format!("mc/star/{c}/step/{j}");
                assert_eq!(file.lookup(&n), code.lookup(&n), "{n}");
            }
        }
        for n in ["mc/dispatch", "mc/collect"] {
            assert_eq!(file.lookup(n), code.lookup(n), "{n}");
        }
    }
}
