//! The ant colony as a stream network: a colony task and a pool of ant
//! tasks, one per ant, living across the iterations.
//!
//! ```text
//!              ┌─ colony ─→ ant/ant/0 ── result ─┐
//! ant/colony ──┼─ colony ─→ ant/ant/1 ── result ─┼─→ ant/colony
//!              └─ …          (one task per ant)  ┘
//! ```
//!
//! Every iteration `ant/colony` sends the current colony (pheromone and
//! best-so-far, shared read-only behind an `Arc`) to every ant task; ant `a`
//! runs [`crate::kernels::ant::run_ant`] for `(a, iteration)` (its random choices
//! depend only on the seed, the iteration and `a`, so it does not matter
//! which task or worker runs it), drops its reference to the colony and
//! sends back its schedule and cost. The colony task reduces the results in
//! ant order as they come ([`crate::kernels::ant::iteration_best`]: lowest cost,
//! then lowest ant index), applies [`crate::kernels::ant::update`] (in place: the
//! ants have let go of the colony by then) and starts the next iteration.
//!
//! What pipelines: the ants of an iteration run in parallel and the
//! reduction overlaps them (results are folded in ant order while later
//! ants still run). Iteration i+1 cannot start constructing before
//! `update` of iteration i, since every construction reads the updated
//! pheromone; that dependence is the kernel's, so iterations do not
//! overlap.
//!
//! Verification: the schedule is a permutation of the jobs, its cost
//! recomputed equals the reported one, it beats the earliest-due-date
//! schedule, and it equals [`crate::kernels::ant::solve_sequential`] with the same
//! seed.
//!
//! Manual mapping: ant a on worker a mod W, the colony on worker
//! `ants mod W` (where the deal would put the next ant, so on a worker with
//! one ant fewer when W does not divide the ants).

use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, Result};
use rill::dist::{Wire, WireError};
use rill::{ManualTable, Reader, Writer};

use super::auto::{pilot_size, Pilot};
use serde::Serialize;

use super::{run_timed, runtime_of, App, AppConfig, AppFigures, AppOpts, AppRun, NetRun};
use crate::bench::usize_from;
use crate::kernels::ant::{self as k, AcoParams, Colony, Instance};
use clap::value_parser;

/// An ant colony application run's configuration (`rill-bench ant`'s
/// arguments).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct AntConfig {
    /// Jobs in the generated instance.
    #[arg(long, default_value_t = k::DEFAULT_JOBS, value_parser = usize_from(1))]
    pub jobs: usize,
    /// Ants per iteration.
    #[arg(long, default_value_t = k::DEFAULT_ANTS, value_parser = value_parser!(u32).range(1..))]
    pub ants: u32,
    /// Iterations.
    #[arg(long, default_value_t = k::DEFAULT_ITERATIONS, value_parser = value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Seed of the instance and the colony.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl AppConfig for AntConfig {
    fn name(&self) -> &'static str {
        "ant"
    }

    fn app(&self) -> Result<Box<dyn App>> {
        Ok(Box::new(Ant::new(self.clone())?))
    }
}

impl Default for AntConfig {
    fn default() -> Self {
        AntConfig {
            jobs: k::DEFAULT_JOBS,
            ants: k::DEFAULT_ANTS,
            iterations: k::DEFAULT_ITERATIONS,
            seed: 1,
        }
    }
}

impl AntConfig {
    /// Checks the configuration, naming the first bad value.
    pub fn validate(&self) -> Result<(), String> {
        if self.jobs == 0 {
            return Err("jobs must be at least 1, got 0".into());
        }
        if self.ants == 0 {
            return Err("ants must be at least 1, got 0".into());
        }
        if self.iterations == 0 {
            return Err("iterations must be at least 1, got 0".into());
        }
        Ok(())
    }
}

/// The ant colony application.
pub struct Ant {
    cfg: AntConfig,
    inst: Arc<Instance>,
    reference: OnceLock<(Vec<u32>, u64)>,
}

/// An ant's answer: its index, schedule and cost.
pub type AntResult = (u32, Vec<u32>, u64);

/// The colony sent to the ants: shared behind an `Arc` by the ants of the
/// colony's process; the network across ranks (`rill-bench ant` under
/// mpirun) encodes it (size, pheromone, best-so-far) for an ant on another
/// rank, which decodes its own copy (the parameters are
/// [`AcoParams::default`] on every rank, as [`colony_task`] makes them).
pub struct SharedColony(pub Arc<Colony>);

impl Wire for SharedColony {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.0.n as u64).encode(out);
        self.0.pheromone.encode(out);
        self.0.best.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Result<Self, WireError> {
        Ok(SharedColony(Arc::new(Colony {
            n: u64::decode(input)? as usize,
            pheromone: Vec::decode(input)?,
            best: Option::decode(input)?,
            params: AcoParams::default(),
        })))
    }
}

/// Ant `a`'s task: for each iteration's colony it reads, it runs
/// [`k::run_ant`] and answers its schedule and cost; it ends with its input.
pub fn ant_task(
    inst: &Instance,
    a: u32,
    seed: u64,
    input: Reader<(u32, SharedColony)>,
    mut out: Writer<AntResult>,
) {
    for (it, colony) in input {
        let (s, c) = k::run_ant(inst, &colony.0, a, it, seed);
        drop(colony); // lets the colony task update in place
        if out.write((a, s, c)).is_err() {
            return;
        }
    }
}

/// The colony's task: each iteration sends the colony to every ant,
/// reduces their answers in ant order while later ants still run (the
/// first lowest cost: [`k::iteration_best`]'s tie rule) and updates the
/// colony; then it ends the ants. The best schedule and its cost, or
/// `None` when an ant ended early.
pub fn colony_task(
    inst: &Instance,
    iterations: u32,
    mut to_ants: Vec<Writer<(u32, SharedColony)>>,
    mut from_ants: Vec<Reader<AntResult>>,
) -> Option<(Vec<u32>, u64)> {
    let mut colony = Arc::new(Colony::new(inst, AcoParams::default()));
    for it in 0..iterations {
        for w in to_ants.iter_mut() {
            w.write((it, SharedColony(colony.clone()))).ok()?;
        }
        let mut best: Option<AntResult> = None;
        for r in from_ants.iter_mut() {
            let res = r.read()?;
            if best.as_ref().is_none_or(|b| res.2 < b.2) {
                best = Some(res);
            }
        }
        let (_, schedule, cost) = best.expect("at least one ant");
        // The ants of this process dropped their clones before answering,
        // so this updates in place unless a copy still waits to cross to
        // another rank.
        k::update(Arc::make_mut(&mut colony), &schedule, cost);
    }
    drop(to_ants); // ends the ants
    Arc::try_unwrap(colony).map_or_else(|c| c.best.clone(), |c| c.best)
}

impl Ant {
    /// Generates the instance (argument errors for bad sizes).
    pub fn new(cfg: AntConfig) -> Result<Ant> {
        cfg.validate().map_err(|e| anyhow!(e))?;
        Ok(Ant {
            inst: Arc::new(k::generate(cfg.jobs, cfg.seed)),
            cfg,
            reference: OnceLock::new(),
        })
    }

    /// The instance.
    pub fn instance(&self) -> &Instance {
        &self.inst
    }

    /// The sequential reference solution (computed once).
    pub fn reference(&self) -> &(Vec<u32>, u64) {
        self.reference.get_or_init(|| {
            k::solve_sequential(
                &self.inst,
                self.cfg.ants,
                self.cfg.iterations,
                self.cfg.seed,
            )
        })
    }

    /// Runs the network once; the value is the best schedule and its cost.
    pub fn network(&self, opts: &AppOpts) -> Result<NetRun<(Vec<u32>, u64)>> {
        let AntConfig {
            ants,
            iterations,
            seed,
            ..
        } = self.cfg;
        let mut rt = runtime_of(self, opts)?;
        let mut to_ants = Vec::new();
        let mut from_ants = Vec::new();
        for a in 0..ants {
            // One message per iteration is outstanding each way.
            let (w, r) = rill::stream::<(u32, SharedColony)>(1);
            let (out, back) = rill::stream::<AntResult>(1);
            to_ants.push(w);
            from_ants.push(back);
            let inst = self.inst.clone();
            rt.spawn(format!("ant/ant/{a}"), move || {
                ant_task(&inst, a, seed, r, out)
            });
        }
        let inst = self.inst.clone();
        let r = run_timed(rt, "ant/colony", "ant colony", move || {
            colony_task(&inst, iterations, to_ants, from_ants)
        })?;
        let value = r
            .value
            .ok_or_else(|| anyhow!("the ant colony network ended without a result"))?;
        Ok(NetRun {
            value,
            wall: r.wall,
            stats: r.stats,
        })
    }
}

impl App for Ant {
    fn name(&self) -> &'static str {
        "ant"
    }

    fn describe(&self) -> String {
        format!(
            "ant {} jobs, {} ants, {} iterations, seed {}",
            self.cfg.jobs, self.cfg.ants, self.cfg.iterations, self.cfg.seed
        )
    }

    /// Ant a on worker a mod W; the colony goes where the deal would put the
    /// next ant (a worker with one ant fewer when W does not divide the ants).
    fn manual_table(&self, workers: usize) -> ManualTable {
        let colony = self.cfg.ants as usize % workers;
        let mut t = ManualTable::new().with("ant/colony", colony);
        for a in 0..self.cfg.ants {
            t.insert(format!("ant/ant/{a}"), a as usize % workers);
        }
        t
    }

    /// 1/`divisor` of the iterations, at least one; the same instance and
    /// ants.
    fn pilot(&self, _workers: usize, divisor: u64) -> Result<Pilot> {
        let iterations = pilot_size(u64::from(self.cfg.iterations), divisor, 1) as u32;
        let cfg = AntConfig {
            iterations,
            ..self.cfg.clone()
        };
        Ok(Pilot {
            app: Box::new(Ant::new(cfg)?),
            size: format!("{iterations} of {} iterations", self.cfg.iterations),
        })
    }

    fn parts(&self, _workers: usize) -> Vec<String> {
        let mut v = vec!["ant/colony".to_string()];
        v.extend((0..self.cfg.ants).map(|a| format!("ant/ant/{a}")));
        v
    }

    fn run(&self, opts: &AppOpts) -> Result<AppRun> {
        let r = self.network(opts)?;
        let (schedule, cost) = r.value;
        let inst = &self.inst;
        let edd = k::cost(inst, &k::edd(inst));
        let mut run = AppRun::new("ant", r.wall, r.stats);
        let valid = k::validate(inst, &schedule);
        run.check(valid.is_ok(), || {
            format!("not a schedule: {}", valid.clone().unwrap_err())
        });
        if valid.is_ok() {
            let recomputed = k::cost(inst, &schedule);
            run.check(recomputed == cost, || {
                format!("reported cost {cost}, recomputed {recomputed}")
            });
        }
        // An instance with no tardiness at all cannot be beaten; equal is fine.
        run.check(cost < edd || edd == 0, || {
            format!("cost {cost} does not beat EDD's {edd}")
        });
        let (ref_s, ref_c) = self.reference();
        run.figures = Some(AppFigures::Ant(AntFigures {
            jobs: self.cfg.jobs,
            ants: self.cfg.ants,
            iterations: self.cfg.iterations,
            seed: self.cfg.seed,
            best_cost: cost,
            edd_cost: edd,
            reference_cost: *ref_c,
        }));
        run.check(*ref_c == cost && *ref_s == schedule, || {
            format!("differs from the sequential reference (cost {ref_c})")
        });
        run.summary = format!(
            "best cost {cost} (EDD {edd}, {:.1}% better)",
            if edd > 0 {
                100.0 * (edd - cost.min(edd)) as f64 / edd as f64
            } else {
                0.0
            }
        );
        Ok(run)
    }
}

/// What an ant colony run reports besides its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AntFigures {
    /// Jobs to schedule.
    pub jobs: usize,
    /// Ants per iteration.
    pub ants: u32,
    /// Iterations.
    pub iterations: u32,
    /// The instance's seed.
    pub seed: u64,
    /// The best schedule's total tardiness.
    pub best_cost: u64,
    /// Earliest-due-date's total tardiness.
    pub edd_cost: u64,
    /// The sequential reference's.
    pub reference_cost: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;

    #[test]
    fn verifies_on_every_mapping_and_agrees() {
        let app = Ant::new(AntConfig {
            jobs: 30,
            ants: 5,
            iterations: 3,
            seed: 4,
        })
        .unwrap();
        let reference = app.reference().1;
        for workers in [1, 2] {
            for m in ["rr", "manual", "parts", "steal"] {
                let opts = AppOpts::new(workers, m.parse().unwrap());
                let run = app.run(&opts).unwrap();
                assert!(run.verified, "{workers} workers {m}: {:?}", run.problems);
                assert_eq!(run.figure("best_cost"), reference);
                assert_eq!(run.stats.tasks_created, 6);
            }
        }
    }

    #[test]
    fn one_ant_one_iteration() {
        let app = Ant::new(AntConfig {
            jobs: 12,
            ants: 1,
            iterations: 1,
            seed: 9,
        })
        .unwrap();
        let run = app.run(&AppOpts::new(2, MappingChoice::Manual)).unwrap();
        assert!(run.verified, "{:?}", run.problems);
    }

    #[test]
    fn argument_errors() {
        for cfg in [
            AntConfig {
                jobs: 0,
                ..AntConfig::default()
            },
            AntConfig {
                ants: 0,
                ..AntConfig::default()
            },
            AntConfig {
                iterations: 0,
                ..AntConfig::default()
            },
        ] {
            assert!(Ant::new(cfg).is_err());
        }
    }

    #[test]
    fn mapping_file_matches_the_code_table() {
        let app = Ant::new(AntConfig {
            jobs: 5,
            ..AntConfig::default()
        })
        .unwrap();
        let file = ManualTable::load(crate::apps::mapping_file("ant")).unwrap();
        let code = app.manual_table(2);
        let mut names = vec!["ant/colony".to_string()];
        names.extend((0..k::DEFAULT_ANTS).map(|a| format!("ant/ant/{a}")));
        for n in &names {
            assert_eq!(file.lookup(n), code.lookup(n), "{n}");
        }
    }
}
