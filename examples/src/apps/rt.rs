//! The ray tracer as a stream network with load balancing.
//!
//! ```text
//!            ┌─ jobs ─→ rt/solver/0 ─ images ─┐
//! rt/dealer ─┼─ jobs ─→ rt/solver/1 ─ images ─┼→ rt/collect
//!     ↑      └─ …        (4 solvers)          ┘
//!     └──────── ready tokens, one stream per solver
//! ```
//!
//! - A solver asks for work by writing a ready token on its own stream to
//!   the dealer: two at start (so the next scene is already there when it
//!   finishes one), then one per finished scene.
//! - `rt/dealer` polls the ready streams ([`rill::poll`]); for each token it
//!   builds the next scene and hands it to that solver, and once the scenes
//!   are all out it closes the solver's job stream, which ends the solver. So
//!   a fast solver gets more scenes than a slow one.
//! - `rt/collect` polls the solvers' outputs, puts the images back in scene
//!   order, folds them into the checksum and writes them as PNG or PPM files
//!   when an output directory is given.
//!
//! Verification: the checksum equals the one of the sequential
//! [`crate::kernels::rt::render_all`].
//!
//! Manual mapping: solver k on worker k mod W; dealer and collector on
//! worker 0.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use anyhow::{anyhow, Context, Result};
use rill::{ManualTable, Writer};

use super::auto::{pilot_size, Pilot};
use serde::Serialize;

use super::{run_timed, runtime_of, App, AppConfig, AppFigures, AppOpts, AppRun, NetRun, PollSet};
use crate::bench::usize_from;
use crate::kernels::rt::{self as k, Checksum, Image, Scene};
use clap::value_parser;

/// Solvers in the network.
pub const DEFAULT_SOLVERS: usize = 4;
/// Default stream capacity of the solvers' outputs.
pub const DEFAULT_CAPACITY: usize = 4;

/// Image file format for `--out-dir`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ImageFormat {
    /// PNG, 8-bit RGB.
    #[default]
    Png,
    /// Binary PPM (P6).
    Ppm,
}

/// A ray tracer application run's configuration (`rill-bench rt`'s
/// arguments).
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct RtConfig {
    /// Scenes to render (`0..scenes`).
    #[arg(long, default_value_t = k::DEFAULT_SCENES, value_parser = value_parser!(u32).range(1..))]
    pub scenes: u32,
    /// Image width.
    #[arg(long, default_value_t = k::DEFAULT_WIDTH, value_parser = value_parser!(u32).range(1..))]
    pub width: u32,
    /// Image height.
    #[arg(long, default_value_t = k::DEFAULT_HEIGHT, value_parser = value_parser!(u32).range(1..))]
    pub height: u32,
    /// Write the images here (scene-NNNN.png or .ppm).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Image file format.
    #[arg(long, value_enum, default_value_t = ImageFormat::Png)]
    pub format: ImageFormat,
    /// Solver tasks.
    #[arg(long, default_value_t = DEFAULT_SOLVERS, value_parser = usize_from(1))]
    pub solvers: usize,
}

impl AppConfig for RtConfig {
    fn name(&self) -> &'static str {
        "rt"
    }

    fn app(&self) -> Result<Box<dyn App>> {
        Ok(Box::new(Rt::new(self.clone())?))
    }
}

impl Default for RtConfig {
    fn default() -> Self {
        RtConfig {
            scenes: k::DEFAULT_SCENES,
            width: k::DEFAULT_WIDTH,
            height: k::DEFAULT_HEIGHT,
            out_dir: None,
            format: ImageFormat::Png,
            solvers: DEFAULT_SOLVERS,
        }
    }
}

impl RtConfig {
    /// Checks the configuration, naming the first bad value.
    pub fn validate(&self) -> Result<(), String> {
        if self.scenes == 0 {
            return Err("scenes must be at least 1, got 0".into());
        }
        if self.width == 0 || self.height == 0 {
            return Err(format!(
                "image size must be at least 1x1, got {}x{}",
                self.width, self.height
            ));
        }
        if self.solvers == 0 {
            return Err("solvers must be at least 1".into());
        }
        Ok(())
    }
}

/// A job: the scene's index and the scene.
type Job = (u32, Arc<Scene>);

/// What the network computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtOutput {
    /// Checksum of the images in scene order.
    pub checksum: u64,
    /// Images received.
    pub images: u32,
    /// Scenes each solver rendered.
    pub per_solver: Vec<u32>,
}

/// The ray tracer application.
pub struct Rt {
    cfg: RtConfig,
    reference: OnceLock<u64>,
}

impl Rt {
    /// Checks the configuration and makes the output directory (argument
    /// errors).
    pub fn new(cfg: RtConfig) -> Result<Rt> {
        cfg.validate().map_err(|e| anyhow!(e))?;
        if let Some(d) = &cfg.out_dir {
            std::fs::create_dir_all(d)
                .with_context(|| format!("cannot create the output directory {}", d.display()))?;
        }
        Ok(Rt {
            cfg,
            reference: OnceLock::new(),
        })
    }

    /// The checksum of the sequential reference (computed once).
    pub fn reference(&self) -> u64 {
        *self.reference.get_or_init(|| {
            let mut c = Checksum::new();
            for i in 0..self.cfg.scenes {
                c.add(&k::render(&k::scene(i), self.cfg.width, self.cfg.height));
            }
            c.value()
        })
    }

    /// Runs the network once.
    pub fn network(&self, opts: &AppOpts) -> Result<NetRun<Result<RtOutput, String>>> {
        let RtConfig {
            scenes,
            width,
            height,
            solvers,
            format,
            ..
        } = self.cfg;
        let out_dir = self.cfg.out_dir.clone();
        let cap = opts.capacity_or(DEFAULT_CAPACITY);
        let mut rt = runtime_of(self, opts)?;

        // Added in chain order, the producer first: the dealer, the
        // solvers, the collector last. The default mapping cuts the tasks
        // added before the run into contiguous blocks in this order, so the
        // solvers are shared evenly between the workers and the dealer's
        // work shows at once.
        let mut ready = PollSet::new();
        let mut jobs: Vec<Option<Writer<Job>>> = Vec::new();
        let mut images = PollSet::new();
        let mut solver_ends = Vec::with_capacity(solvers);
        for _ in 0..solvers {
            // Two tokens may be outstanding, so two jobs at most.
            let (ready_w, ready_r) = rill::stream::<()>(2);
            let (job_w, job_r) = rill::stream::<Job>(2);
            let (img_w, img_r) = rill::stream::<(u32, Image)>(cap);
            ready.push(ready_r);
            jobs.push(Some(job_w));
            images.push(img_r);
            solver_ends.push((ready_w, job_r, img_w));
        }

        rt.spawn("rt/dealer", move || {
            let mut next = 0u32;
            for (s, ()) in ready {
                let Some(w) = jobs[s].as_mut() else {
                    continue;
                };
                if next < scenes {
                    let scene = Arc::new(k::scene(next));
                    if w.write((next, scene)).is_ok() {
                        next += 1;
                    }
                } else {
                    jobs[s] = None; // closes the solver's job stream
                }
            }
        });

        for (s, (mut ready_w, mut job_r, mut img_w)) in solver_ends.into_iter().enumerate() {
            rt.spawn(format!("rt/solver/{s}"), move || {
                for _ in 0..2 {
                    if ready_w.write(()).is_err() {
                        return;
                    }
                }
                while let Some((i, scene)) = job_r.read() {
                    let image = k::render(&scene, width, height);
                    drop(scene);
                    if img_w.write((i, image)).is_err() {
                        return;
                    }
                    // The dealer may be gone once every scene is out.
                    let _ = ready_w.write(());
                }
            });
        }

        run_timed(rt, "rt/collect", "ray tracer", move || {
            let mut pending: BTreeMap<u32, Image> = BTreeMap::new();
            let mut next = 0u32;
            let mut sum = Checksum::new();
            let mut per_solver = vec![0u32; solvers];
            let mut error = None;
            for (s, (i, image)) in images {
                per_solver[s] += 1;
                pending.insert(i, image);
                while let Some(image) = pending.remove(&next) {
                    sum.add(&image);
                    if let (Some(dir), None) = (&out_dir, &error) {
                        let written = match format {
                            ImageFormat::Png => {
                                k::write_png(dir.join(format!("scene-{next:04}.png")), &image)
                            }
                            ImageFormat::Ppm => {
                                k::write_ppm(dir.join(format!("scene-{next:04}.ppm")), &image)
                            }
                        };
                        if let Err(e) = written {
                            error = Some(format!("writing scene {next}: {e}"));
                        }
                    }
                    next += 1;
                }
            }
            match error {
                Some(e) => Err(e),
                None if !pending.is_empty() => Err(format!(
                    "scene {next} never arrived ({} later ones did)",
                    pending.len()
                )),
                None => Ok(RtOutput {
                    checksum: sum.value(),
                    images: next,
                    per_solver,
                }),
            }
        })
    }
}

impl App for Rt {
    fn name(&self) -> &'static str {
        "rt"
    }

    fn describe(&self) -> String {
        format!(
            "rt {} scenes {}x{}, {} solvers",
            self.cfg.scenes, self.cfg.width, self.cfg.height, self.cfg.solvers
        )
    }

    fn manual_table(&self, workers: usize) -> ManualTable {
        let mut t = ManualTable::new()
            .with("rt/dealer", 0)
            .with("rt/collect", 0);
        for s in 0..self.cfg.solvers {
            t.insert(format!("rt/solver/{s}"), s % workers);
        }
        t
    }

    /// The collector encodes PNG files, which takes more stack than the
    /// default (in debug builds especially).
    fn stack_size(&self) -> Option<usize> {
        self.cfg.out_dir.as_ref().map(|_| 4 << 20)
    }

    /// 1/`divisor` of the scenes (the first ones), at least two per
    /// solver; the same image size and solvers, no image files.
    fn pilot(&self, _workers: usize, divisor: u64) -> Result<Pilot> {
        let floor = 2 * self.cfg.solvers as u64;
        let scenes = pilot_size(u64::from(self.cfg.scenes), divisor, floor) as u32;
        let cfg = RtConfig {
            scenes,
            out_dir: None,
            ..self.cfg.clone()
        };
        Ok(Pilot {
            app: Box::new(Rt::new(cfg)?),
            size: format!("{scenes} of {} scenes", self.cfg.scenes),
        })
    }

    fn parts(&self, _workers: usize) -> Vec<String> {
        let mut v = vec!["rt/dealer".to_string()];
        v.extend((0..self.cfg.solvers).map(|s| format!("rt/solver/{s}")));
        v.push("rt/collect".into());
        v
    }

    fn run(&self, opts: &AppOpts) -> Result<AppRun> {
        let r = self.network(opts)?;
        let mut run = AppRun::new("rt", r.wall, r.stats);
        let mut figures = RtFigures {
            scenes: self.cfg.scenes,
            width: self.cfg.width,
            height: self.cfg.height,
            solvers: self.cfg.solvers,
            checksum: None,
            reference_checksum: None,
            per_solver: None,
        };
        let out = match r.value {
            Ok(out) => out,
            Err(e) => {
                run.figures = Some(AppFigures::Rt(figures));
                run.check(false, || e);
                run.summary = "no result".into();
                return Ok(run);
            }
        };
        let reference = self.reference();
        figures.checksum = Some(format!("{:016x}", out.checksum));
        figures.reference_checksum = Some(format!("{reference:016x}"));
        figures.per_solver = Some(out.per_solver.clone());
        run.figures = Some(AppFigures::Rt(figures));
        run.check(out.images == self.cfg.scenes, || {
            format!("{} images, {} scenes", out.images, self.cfg.scenes)
        });
        run.check(out.checksum == reference, || {
            format!(
                "checksum {:016x} differs from the sequential {reference:016x}",
                out.checksum
            )
        });
        run.summary = format!(
            "{} images, checksum {:016x}, scenes per solver {:?}",
            out.images, out.checksum, out.per_solver
        );
        Ok(run)
    }
}

/// What a ray tracing run reports besides its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RtFigures {
    /// Scenes rendered.
    pub scenes: u32,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Solver tasks.
    pub solvers: usize,
    /// Checksum of the images, in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
    /// The sequential renderer's checksum, in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_checksum: Option<String>,
    /// Scenes each solver rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_solver: Option<Vec<u32>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;

    fn small(scenes: u32) -> Rt {
        Rt::new(RtConfig {
            scenes,
            width: 12,
            height: 9,
            ..RtConfig::default()
        })
        .unwrap()
    }

    #[test]
    fn verifies_on_every_mapping_and_agrees() {
        let app = small(9);
        let reference = k::checksum(&k::render_all(9, 12, 9));
        assert_eq!(app.reference(), reference);
        for workers in [1, 2] {
            for m in ["rr", "manual", "parts", "steal"] {
                let opts = AppOpts::new(workers, m.parse().unwrap());
                let run = app.run(&opts).unwrap();
                assert!(run.verified, "{workers} workers {m}: {:?}", run.problems);
                assert_eq!(run.figure("checksum"), format!("{reference:016x}"));
                let per: u64 = run
                    .figure("per_solver")
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .sum();
                assert_eq!(per, 9);
            }
        }
    }

    #[test]
    fn fewer_scenes_than_solvers_and_files() {
        let dir = std::env::temp_dir().join(format!("rill-rt-{}", std::process::id()));
        let app = Rt::new(RtConfig {
            scenes: 2,
            width: 8,
            height: 6,
            out_dir: Some(dir.clone()),
            format: ImageFormat::Ppm,
            ..RtConfig::default()
        })
        .unwrap();
        let run = app.run(&AppOpts::new(2, MappingChoice::Manual)).unwrap();
        assert!(run.verified, "{:?}", run.problems);
        let ppm = std::fs::read(dir.join("scene-0001.ppm")).unwrap();
        assert_eq!(ppm, k::encode_ppm(&k::render(&k::scene(1), 8, 6)));
        let png = Rt::new(RtConfig {
            scenes: 1,
            width: 4,
            height: 4,
            out_dir: Some(dir.clone()),
            ..RtConfig::default()
        })
        .unwrap();
        assert!(
            png.run(&AppOpts::new(1, MappingChoice::Rr))
                .unwrap()
                .verified
        );
        assert!(dir.join("scene-0000.png").is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn argument_errors() {
        let e = Rt::new(RtConfig {
            scenes: 0,
            ..RtConfig::default()
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("scenes must be at least 1"), "{e}");
    }

    #[test]
    fn mapping_file_matches_the_code_table() {
        let app = Rt::new(RtConfig::default()).unwrap();
        let file = ManualTable::load(crate::apps::mapping_file("rt")).unwrap();
        let code = app.manual_table(2);
        for n in [
            "rt/dealer",
            "rt/collect",
            "rt/solver/0",
            "rt/solver/1",
            "rt/solver/2",
            "rt/solver/3",
        ] {
            assert_eq!(file.lookup(n), code.lookup(n), "{n}");
        }
    }
}
