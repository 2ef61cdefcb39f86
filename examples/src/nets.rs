//! The benchmarks that are one network on every blocking engine, written
//! once over [`Net`]: LPEL's pipe and ring (each a [`Bench`]: rill and OS
//! threads run the generic network, tokio its async copy), and the micro
//! rows that move messages (`handoff`, `cross_worker_roundtrip`). Each takes
//! its validated parameters, builds the network on engine `N`, runs it,
//! verifies what it computed, and returns the measurement with the engine's
//! figures.

use anyhow::{anyhow, bail, Result};
use rill::MonitorFlags;

use crate::bench::{
    busy_work, placed, verify_ring, work_steps_per_ns, BenchOpts, Measurement, ParamError, Params,
    PipeParams, Placement, RingParams, SequenceCheck, SumCheck, VerifyError,
};
use crate::engines::{monitor_name, Bench, Engine};
use crate::mapping::MappingChoice;
use crate::net::{Finished, Net, NetSpec, RillNet, ThreadNet};
use crate::peers::tokio_rt;

impl Bench for PipeParams {
    fn name(&self) -> &'static str {
        "pipe"
    }

    fn validate(&self) -> Result<(), ParamError> {
        PipeParams::validate(self)
    }

    fn params(&self) -> Params {
        Params {
            depth: Some(self.depth),
            messages: Some(self.messages),
            work_ns: (self.work_ns > 0).then_some(self.work_ns),
            slow: (!self.slow.is_empty()).then(|| self.slow.iter().copied().collect()),
            work_steps_per_us: self.has_work().then(|| work_steps_per_ns() * 1e3),
            ..net_params(
                &self.opts,
                self.placement,
                self.mapping.as_ref(),
                self.capacity,
            )
        }
    }

    fn title(&self) -> String {
        let mut t = format!(
            "pipe  depth={} messages={} capacity={} {} workers={}",
            self.depth,
            self.messages,
            self.capacity,
            placed(self.placement, self.mapping.as_ref()),
            self.opts.workers
        );
        if self.work_ns > 0 {
            t.push_str(&format!(" work={}ns", self.work_ns));
        }
        for (k, ns) in &self.slow {
            t.push_str(&format!(" slow={k}={ns}ns"));
        }
        t
    }

    fn crosses_workers(&self) -> bool {
        self.opts.workers > 1
    }

    fn variant(&self) -> Option<(&'static str, String)> {
        Some(("placement", self.placement.name().into()))
    }

    fn rill_mapping(&self) -> String {
        rill_mapping(self.placement, self.mapping.as_ref())
    }

    fn run(&self, engine: Engine) -> Result<Measurement> {
        match engine {
            Engine::Rill => pipe::<RillNet>(self),
            Engine::Threads => pipe::<ThreadNet>(self),
            Engine::Tokio => tokio_rt::pipe(self),
            Engine::Sequential => Err(engine.lacks("pipe")),
        }
    }
}

impl Bench for RingParams {
    fn name(&self) -> &'static str {
        "ring"
    }

    fn validate(&self) -> Result<(), ParamError> {
        RingParams::validate(self)
    }

    fn params(&self) -> Params {
        Params {
            size: Some(self.size),
            hops: Some(self.hops),
            ..net_params(
                &self.opts,
                self.placement,
                self.mapping.as_ref(),
                self.capacity,
            )
        }
    }

    fn title(&self) -> String {
        format!(
            "ring  size={} hops={} capacity={} {} workers={}",
            self.size,
            self.hops,
            self.capacity,
            placed(self.placement, self.mapping.as_ref()),
            self.opts.workers
        )
    }

    fn crosses_workers(&self) -> bool {
        self.opts.workers > 1
    }

    fn variant(&self) -> Option<(&'static str, String)> {
        Some(("placement", self.placement.name().into()))
    }

    fn rill_mapping(&self) -> String {
        rill_mapping(self.placement, self.mapping.as_ref())
    }

    fn run(&self, engine: Engine) -> Result<Measurement> {
        match engine {
            Engine::Rill => ring::<RillNet>(self),
            Engine::Threads => ring::<ThreadNet>(self),
            Engine::Tokio => tokio_rt::ring(self),
            Engine::Sequential => Err(engine.lacks("ring")),
        }
    }
}

/// The record parameters the pipe and the ring share.
fn net_params(
    opts: &BenchOpts,
    placement: Placement,
    mapping: Option<&MappingChoice>,
    capacity: usize,
) -> Params {
    Params {
        workers: Some(opts.workers),
        placement: Some(placement.name()),
        mapping: mapping.map(|m| m.name()),
        capacity: Some(capacity),
        monitor: monitor_name(opts.monitor),
        logs: opts.logs.clone(),
        ..Params::default()
    }
}

/// Where rill puts the pipe's or the ring's tasks: `--mapping`'s name, or
/// the placement's.
fn rill_mapping(placement: Placement, mapping: Option<&MappingChoice>) -> String {
    mapping.map_or_else(|| placement.name().to_string(), |m| m.name())
}

/// The pipe's task names in creation order: `pipe/source`,
/// `pipe/relay/0` to `pipe/relay/{depth-3}`, `pipe/sink`.
pub fn pipe_task_names(depth: usize) -> Vec<String> {
    let mut v = vec!["pipe/source".to_string()];
    v.extend((0..depth.saturating_sub(2)).map(|k| format!("pipe/relay/{k}")));
    v.push("pipe/sink".into());
    v
}

/// The worker of task `i` of the pipe's names under `p.placement` (LPEL's
/// test, not [`Placement::worker_of`]): the source on worker 0 and the sink
/// on worker 1 (when there are two workers); `const` puts every relay on
/// worker 0, `rr` relay `k` on worker `(k + 1) mod W`, `parts` the relays
/// cut into two contiguous halves on the source's and the sink's workers.
fn pipe_worker(p: &PipeParams, i: usize) -> usize {
    let (workers, relays) = (p.opts.workers, p.relays());
    let last = workers.min(2) - 1;
    if i == 0 {
        return 0;
    }
    if i > relays {
        return last;
    }
    let k = i - 1;
    match p.placement {
        Placement::Const => 0,
        Placement::Rr => (k + 1) % workers,
        Placement::Parts => {
            if k < relays / 2 {
                0
            } else {
                last
            }
        }
    }
}

fn spec<'a>(
    bench: &'a str,
    workers: usize,
    capacity: usize,
    mapping: Option<&'a crate::mapping::MappingChoice>,
    names: &'a [String],
    monitor: Option<MonitorFlags>,
    logs: Option<std::path::PathBuf>,
) -> NetSpec<'a> {
    NetSpec {
        bench,
        workers,
        capacity,
        mapping,
        names,
        manual: rill::ManualTable::new(),
        monitor,
        logs,
    }
}

/// LPEL's pipe: a source, `depth - 2` relays and a sink; relay `k` does
/// [`PipeParams::work_of`]`(k)` nanoseconds of [`busy_work`] per message
/// (calibrated before the clock starts). Fails unless the sink got exactly
/// `0..messages` in order.
pub fn pipe<N: Net>(p: &PipeParams) -> Result<Measurement> {
    let names = pipe_task_names(p.depth);
    let steps = p.relay_steps();
    let messages = p.messages;
    let mut net = N::build(&spec(
        "pipe",
        p.opts.workers,
        p.capacity,
        p.mapping.as_ref(),
        &names,
        p.opts.monitor,
        p.opts.logs.clone(),
    ))?;
    let (mut w, mut r) = N::channel::<u64>(p.capacity);
    net.spawn(names[0].clone(), pipe_worker(p, 0), move || {
        for i in 0..messages {
            // A write fails only when the sink ended early; it says why.
            if !N::send(&mut w, i) {
                return;
            }
        }
    })?;
    for (k, &work) in steps.iter().enumerate() {
        let (mut w2, r2) = N::channel::<u64>(p.capacity);
        let mut input = std::mem::replace(&mut r, r2);
        net.spawn(names[k + 1].clone(), pipe_worker(p, k + 1), move || {
            while let Some(v) = N::recv(&mut input) {
                if work > 0 {
                    busy_work(work);
                }
                if !N::send(&mut w2, v) {
                    return;
                }
            }
        })?;
    }
    let sink = net.spawn_value(
        names[steps.len() + 1].clone(),
        pipe_worker(p, steps.len() + 1),
        move || -> Result<(), VerifyError> {
            let mut check = SequenceCheck::new();
            while let Some(v) = N::recv(&mut r) {
                check.push(v)?;
            }
            check.finish(messages)
        },
    )?;
    let run = net.finish()?;
    sink.take("pipe/sink")??;
    Ok(N::figures(
        Measurement::new(run.wall, p.channel_hops()),
        &run,
    ))
}

/// LPEL's ring: one token passed around `size` tasks for `hops` hops in
/// total (see [`RingParams`] for the protocol). Task `i` (`ring/i`) runs on
/// [`Placement::worker_of`]`(i, size, workers)`, or where `--mapping` puts
/// it when one is given; task 0 writes the first token.
pub fn ring<N: Net>(p: &RingParams) -> Result<Measurement> {
    let (size, hops) = (p.size, p.hops);
    let names: Vec<String> = (0..size).map(|i| format!("ring/{i}")).collect();
    let mut net = N::build(&spec(
        "ring",
        p.opts.workers,
        p.capacity,
        p.mapping.as_ref(),
        &names,
        p.opts.monitor,
        p.opts.logs.clone(),
    ))?;
    let (mut writers, mut readers): (Vec<_>, Vec<_>) = (0..size)
        .map(|_| {
            let (w, r) = N::channel::<u64>(p.capacity);
            (Some(w), Some(r))
        })
        .unzip();
    let mut finals = Vec::with_capacity(size);
    for (i, name) in names.into_iter().enumerate() {
        let mut input = readers[i].take().expect("each reader is taken once");
        let mut output = writers[(i + 1) % size]
            .take()
            .expect("each writer is taken once");
        let worker = p.placement.worker_of(i, size, p.opts.workers);
        finals.push(net.spawn_value(name, worker, move || {
            if i == 0 && !N::send(&mut output, 0) {
                return None;
            }
            while let Some(t) = N::recv(&mut input) {
                if t >= hops {
                    return Some(t);
                }
                if !N::send(&mut output, t + 1) {
                    break;
                }
            }
            None
        })?);
    }
    let run = net.finish()?;
    let finals = finals
        .iter()
        .map(|t| t.take("ring task"))
        .collect::<Result<Vec<_>>>()?;
    verify_ring(&finals, hops)?;
    Ok(N::figures(Measurement::new(run.wall, hops), &run))
}

/// The `handoff` row: a writer sends `0..ops` to a reader through one
/// channel of `capacity`, both on worker 0 of one; the reader checks the
/// sequence. Times the run.
pub fn handoff<N: Net>(
    ops: u64,
    capacity: usize,
    spec: &NetSpec,
) -> Result<(Measurement, Finished)> {
    let mut net = N::build(spec)?;
    let (mut w, mut r) = N::channel::<u64>(capacity);
    net.spawn("micro/writer".into(), 0, move || {
        // A send fails only once the reader has ended early, which fails
        // the run anyway; the loop has no second exit, so that the write's
        // suspend stays inline (an exit on a failed write left it a call:
        // `scripts/instructions.sh` lists such sites).
        for i in 0..ops {
            let _ = N::send(&mut w, i);
        }
    })?;
    let reader = net.spawn_value("micro/reader".into(), 0, move || {
        let mut check = SumCheck::default();
        while let Some(v) = N::recv(&mut r) {
            check.push(v);
        }
        check.finish(ops)
    })?;
    let run = net.finish()?;
    reader.take("micro/reader")??;
    Ok((Measurement::new(run.wall, ops), run))
}

/// The `cross_worker_roundtrip` row: `micro/ping` on worker 0 sends `0..ops`
/// one at a time to `micro/pong` on worker 1 and waits for each to come
/// back through a second channel; times the ping's loop.
pub fn roundtrip<N: Net>(
    ops: u64,
    capacity: usize,
    spec: &NetSpec,
) -> Result<(Measurement, Finished)> {
    let mut net = N::build(spec)?;
    let (mut ping_w, mut ping_r) = N::channel::<u64>(capacity);
    let (mut pong_w, mut pong_r) = N::channel::<u64>(capacity);
    let ping = net.spawn_value("micro/ping".into(), 0, move || {
        let t0 = std::time::Instant::now();
        for v in 0..ops {
            if !N::send(&mut ping_w, v) {
                bail!("the pong task ended early");
            }
            match N::recv(&mut pong_r) {
                Some(back) if back == v => {}
                Some(back) => return Err(VerifyError(format!("sent {v}, got {back} back")).into()),
                None => return Err(anyhow!("the pong task ended early")),
            }
        }
        Ok(t0.elapsed())
    })?;
    net.spawn("micro/pong".into(), 1, move || {
        while let Some(v) = N::recv(&mut ping_r) {
            if !N::send(&mut pong_w, v) {
                return;
            }
        }
    })?;
    let run = net.finish()?;
    let wall = ping.take("micro/ping")??;
    Ok((Measurement::new(wall, ops), run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_and_ring_verify_on_every_engine() {
        for engine in Engine::NETWORKS {
            for (depth, workers) in [(2, 1), (3, 2), (7, 2)] {
                let p = PipeParams {
                    opts: BenchOpts::on(workers),
                    depth,
                    messages: 1000,
                    capacity: 4,
                    ..PipeParams::default()
                };
                let m = p.run(engine).unwrap();
                assert_eq!(m.ops, 1000 * (depth as u64 - 1), "{engine}");
            }
            for (size, hops) in [(2, 1), (2, 2), (3, 100), (10, 1000)] {
                let p = RingParams {
                    opts: BenchOpts::on(2),
                    size,
                    hops,
                    capacity: 2,
                    ..RingParams::default()
                };
                assert_eq!(p.run(engine).unwrap().ops, hops, "{engine}");
            }
        }
    }
}
