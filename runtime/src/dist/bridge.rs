//! The bridge: one loop per rank that carries the cross-rank streams over
//! a [`Transport`], and ends the run on every rank together. The protocols
//! (flow control, termination, clock alignment) and the races they close
//! are in this module's README.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::endpoint::{InEnd, OutEnd};
use super::frame::{self, Record};
use super::transport::Transport;
use crate::worker::idle_work::IdlePass;

/// A frame grows to about this before it is sent within an iteration; a
/// larger message goes in a frame of its own.
pub(crate) const FRAME_BYTES: usize = 256 << 10;

/// How long after its last work the bridge polls without sleeping, then
/// yields, then sleeps; and its longest sleep, which bounds both the idle
/// cost (one poll of the transport per nap) and the latency of the first
/// message after a quiet spell. A sleep is an eighth of the quiet time so
/// far (at least `FIRST_NAP`): a message that comes after a quiet spell
/// waits at most an eighth longer than it would have with polling, so a
/// slow exchange (a busy host) does not fall into naps that slow it more.
/// The poll before yielding when the ranks' threads fit the machine's
/// cores; none when they do not (`Job::crowded`): a bridge that spins on a
/// shared core takes it from the worker whose reply it waits for.
/// `RILL_BRIDGE_SPIN_US` sets it.
fn spin_for(crowded: bool) -> Duration {
    static SPIN: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    let set = *SPIN.get_or_init(|| {
        std::env::var("RILL_BRIDGE_SPIN_US")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_micros)
    });
    set.unwrap_or(if crowded {
        Duration::ZERO
    } else {
        Duration::from_micros(50)
    })
}

const YIELD_FOR: Duration = Duration::from_millis(2);
const FIRST_NAP: Duration = Duration::from_micros(20);
pub(crate) const LONGEST_NAP: Duration = Duration::from_millis(4);
/// The bridge thread's nap while a worker of its rank carries the traffic.
const WORKERS_LOOK_NAP: Duration = Duration::from_micros(500);

/// How long a rank whose run was aborted by another waits for its own
/// tasks to end (their cross-rank ends are closed) before it gives up on
/// them.
pub(crate) const ABORT_GRACE: Duration = Duration::from_secs(3);

/// How long a rank's tasks must all have waited on other ranks, with its
/// bridge idle, before it tells rank 0 (so that the brief all-blocked
/// moments of a busy exchange send nothing).
const BLOCKED_REPORT: Duration = Duration::from_millis(50);

/// Pings per rank per clock measurement; the fastest round trip counts.
const PINGS: usize = 8;

/// A stream this rank writes to another rank.
pub(crate) struct Out {
    pub(crate) net: u32,
    pub(crate) to: usize,
    pub(crate) end: Box<dyn OutEnd>,
}

/// A stream this rank reads from another rank.
pub(crate) struct In {
    pub(crate) net: u32,
    pub(crate) from: usize,
    pub(crate) end: Box<dyn InEnd>,
}

/// What the rank's run tells its bridge, and the bridge the run.
#[derive(Default)]
pub(crate) struct Signals {
    /// Set (Release) once the local run has returned; the bridge's Acquire
    /// load pairs with it, so it then sees `local_error`.
    pub(crate) local_ended: AtomicBool,
    /// Why the local run failed, if it did.
    pub(crate) local_error: Mutex<Option<String>>,
}

/// Everything a bridge serves in one run.
pub(crate) struct Job {
    pub(crate) outs: Vec<Out>,
    pub(crate) ins: Vec<In>,
    pub(crate) signals: Arc<Signals>,
    /// The local run as the bridge sees it (every task waiting on other
    /// ranks?), and its end as deadlocked.
    pub(crate) watch: Arc<crate::run::watch::RunWatch>,
    /// The ranks on this machine have more threads (workers and bridges)
    /// than it has cores: the bridge does not spin.
    pub(crate) crowded: bool,
    /// Leave the process (status 1) when another rank aborted the run and
    /// this rank's tasks do not end within [`ABORT_GRACE`]: under mpirun
    /// there is no one else to end them.
    pub(crate) exit_when_stuck: bool,
    /// Where the run's idle workers find the bridge, when they may carry
    /// its traffic (the transport may be used from any thread, one at a
    /// time).
    pub(crate) pump: Option<Arc<Pump>>,
}

/// The bridge as the run's idle workers reach it (`worker/idle_work.rs`):
/// after the clock phase the bridge's thread puts its state here and from
/// then on reaches it only through this lock, as the workers do; before
/// the end's clock phase it takes the state back.
///
/// Why: a message from another rank then reaches the task that waits for
/// it on the thread that runs that task. With a bridge thread alone, each
/// message crosses from the bridge to the worker (a post, and a wake when
/// the worker is parked) and each reply back; where the ranks' threads
/// outnumber the cores every such hand-over is a trip through the
/// scheduler.
#[derive(Default)]
pub(crate) struct Pump {
    bridge: Mutex<Option<BridgePtr>>,
    /// Workers now in their looking loop: the bridge's thread naps
    /// meanwhile instead of polling beside them.
    looking: AtomicUsize,
    /// A worker's pass moved something since the bridge's thread last
    /// looked (it counts as work for the bridge's quiet time).
    worked: AtomicBool,
    /// The workers of this machine's ranks outnumber its cores: a worker
    /// between empty passes yields (`IdleWork::gives_core`).
    gives_core: bool,
}

/// The bridge's state, its lifetime erased while it is lent to the workers.
struct BridgePtr(*mut Bridge<'static>);

// SAFETY: the pointer is used only while `Pump::bridge`'s lock is held, so
// one thread at a time reaches the bridge (its thread or a worker). What the
// bridge holds may move between threads: its ends are `Send`, and its
// transport is either `Send` (the loopback's channels) or MPI initialised
// with `MPI_THREAD_SERIALIZED` (any thread may call, one at a time: the
// lock). The bridge's thread takes the pointer out (`Pump::take`) before
// the state it points to is used directly again or goes away.
unsafe impl Send for BridgePtr {}

impl Pump {
    /// A pump whose looking workers yield between empty passes when
    /// `gives_core` (this machine's ranks' workers outnumber its cores;
    /// the bridge threads nap while workers look, so they do not count).
    pub(crate) fn new(gives_core: bool) -> Pump {
        Pump {
            gives_core,
            ..Pump::default()
        }
    }

    /// Lends `b` to the workers. `b` must not be used but through
    /// [`Pump::with`] until [`Pump::take`].
    fn lend(&self, b: &mut Bridge<'_>) {
        let p: *mut Bridge<'_> = b;
        *self.bridge.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(BridgePtr(p.cast::<Bridge<'static>>()));
    }

    /// Ends the loan: once this returns no worker is in a pass, and none
    /// will start one.
    fn take(&self) {
        *self.bridge.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Runs `f` on the lent bridge (the bridge's own thread).
    fn with<R>(&self, f: impl FnOnce(&mut Bridge<'_>) -> R) -> R {
        let g = self.bridge.lock().unwrap_or_else(|e| e.into_inner());
        let p = g
            .as_ref()
            .expect("the bridge is lent while its thread runs its loop");
        // SAFETY: the lock is held (see `BridgePtr`), and the bridge lives
        // until `take`, which waits for this lock.
        f(unsafe { &mut *p.0 })
    }
}

impl crate::worker::idle_work::IdleWork for Pump {
    fn pass(&self) -> IdlePass {
        let Ok(g) = self.bridge.try_lock() else {
            return IdlePass::Busy;
        };
        let Some(p) = g.as_ref() else {
            return IdlePass::Closed;
        };
        // SAFETY: as in `Pump::with`.
        let b = unsafe { &mut *p.0 };
        if b.closing() {
            return IdlePass::Closed;
        }
        if b.pass() {
            b.stats.carried_by_workers += 1;
            self.worked.store(true, Ordering::Relaxed);
            IdlePass::Worked
        } else {
            IdlePass::Nothing
        }
    }

    fn looking(&self, on: bool) {
        // Relaxed: a hint for the bridge thread's back-off; nothing is
        // published through it.
        if on {
            self.looking.fetch_add(1, Ordering::Relaxed);
        } else {
            self.looking.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn gives_core(&self) -> bool {
        self.gives_core
    }
}

/// How a bridge's run went.
#[derive(Debug, Default, Clone)]
pub struct BridgeStats {
    /// Frames sent to other ranks (data, credits, closes).
    pub frames_sent: u64,
    /// Frames received from other ranks.
    pub frames_received: u64,
    /// Messages sent over cross-rank streams.
    pub messages_sent: u64,
    /// Messages received over cross-rank streams.
    pub messages_received: u64,
    /// Bytes of messages sent.
    pub bytes_sent: u64,
    /// Passes over the bridge that idle workers made and that moved
    /// something (the rest were the bridge thread's).
    pub carried_by_workers: u64,
    /// Add to this rank's wall-clock nanoseconds to read them on rank 0's
    /// clock (measured at the start and the end of the run).
    pub clock_offset_ns: i64,
    /// The bound on the error of that offset, in nanoseconds.
    pub clock_residual_ns: u64,
}

/// The bridge's result: its statistics, and the other rank's abort if one
/// ended the run (its rank and why).
pub(crate) struct Outcome {
    pub(crate) stats: BridgeStats,
    pub(crate) aborted_by: Option<(u32, String)>,
    pub(crate) protocol_error: Option<String>,
    /// Rank 0 found every rank blocked with nothing in flight, and ended
    /// each rank's run as deadlocked.
    pub(crate) deadlocked: bool,
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Whether a frame is control (not counted for termination): clock,
/// done, end and abort records travel alone in their frames.
fn is_control(frame: &[u8]) -> bool {
    matches!(
        frame::records(frame).next(),
        Some(Ok(Record::Done { .. }
            | Record::End { .. }
            | Record::Abort { .. }
            | Record::Ping { .. }
            | Record::Pong { .. }
            | Record::Clock { .. }
            | Record::Stuck { .. }
            | Record::Idle { .. }
            | Record::Deadlock))
    )
}

/// What the bridge's thread does after a turn of its loop.
enum Step {
    /// Something moved: turn again at once.
    Again,
    /// Nothing moved for this long: back off by it (`back_off`).
    Quiet(Duration),
    /// Sleep this long, then turn again.
    Nap(Duration),
    /// The run has ended on this rank.
    Finished,
}

/// The bridge thread's pause after a quiet turn: poll for `spin`, then
/// yield until [`YIELD_FOR`], then sleep an eighth of the quiet time so far
/// (from [`FIRST_NAP`] to [`LONGEST_NAP`]). While workers carry the
/// traffic (`looking`) the thread only naps: it is the net for the moments
/// when every worker is busy or parked.
fn back_off(quiet: Duration, spin: Duration, looking: bool) {
    if looking {
        std::thread::sleep((quiet / 8).clamp(WORKERS_LOOK_NAP, LONGEST_NAP));
    } else if quiet < spin {
        std::hint::spin_loop();
    } else if quiet < YIELD_FOR {
        std::thread::yield_now();
    } else {
        std::thread::sleep((quiet / 8).clamp(FIRST_NAP, LONGEST_NAP));
    }
}

struct OutState {
    to: usize,
    end: Box<dyn OutEnd>,
    /// Messages sent and not yet released (the far reader has not taken
    /// them): the next to send is the `ahead`-th unread one.
    ahead: usize,
    /// The far reader's consumed count last heard.
    released: u64,
}

struct InState {
    from: usize,
    end: Box<dyn InEnd>,
    /// The consumed count last sent back.
    credited: u64,
}

struct Bridge<'t> {
    t: &'t mut dyn Transport,
    me: usize,
    n: usize,
    outs: Vec<Option<OutState>>,
    ins: Vec<Option<InState>>,
    live_outs: usize,
    live_ins: usize,
    bufs: Vec<Vec<u8>>,
    sent_to: Vec<u64>,
    received: u64,
    stats: BridgeStats,
    /// Frames that arrived during a clock measurement, for the main loop.
    stash: VecDeque<(usize, Vec<u8>)>,
    /// Rank 0: each rank's Done (frames it sent to each rank).
    dones: Vec<Option<Vec<u64>>>,
    done_sent: bool,
    /// Frames this rank must have received before it may finish (End).
    expect: Option<u64>,
    aborted_by: Option<(u32, String)>,
    protocol_error: Option<String>,
    /// Rank 0: each rank's last idle report (blocked, sent, received).
    idles: Vec<Option<(bool, Vec<u64>, u64)>>,
    /// What this rank last reported: blocked, and its counts then.
    reported: Option<(bool, Vec<u64>, u64)>,
    watch: Arc<crate::run::watch::RunWatch>,
    deadlocked: bool,
    /// Since when nothing has moved (the bridge thread's back-off).
    quiet_since: Option<Instant>,
    /// When another rank's abort arrived.
    abort_seen: Option<Instant>,
}

/// Serves `job` over `t` until the run has ended on every rank (or was
/// aborted). Runs on the transport's thread.
pub(crate) fn serve(t: &mut dyn Transport, job: Job) -> Outcome {
    let me = t.rank();
    let n = t.size();
    let nets = job
        .outs
        .iter()
        .map(|o| o.net)
        .chain(job.ins.iter().map(|i| i.net))
        .max()
        .map_or(0, |m| m as usize + 1);
    let mut b = Bridge {
        t,
        me,
        n,
        outs: (0..nets).map(|_| None).collect(),
        ins: (0..nets).map(|_| None).collect(),
        live_outs: job.outs.len(),
        live_ins: job.ins.len(),
        bufs: vec![Vec::new(); n],
        sent_to: vec![0; n],
        received: 0,
        stats: BridgeStats::default(),
        stash: VecDeque::new(),
        dones: vec![None; n],
        done_sent: false,
        expect: None,
        aborted_by: None,
        protocol_error: None,
        idles: vec![None; n],
        reported: None,
        watch: job.watch.clone(),
        deadlocked: false,
        quiet_since: None,
        abort_seen: None,
    };
    for o in job.outs {
        b.outs[o.net as usize] = Some(OutState {
            to: o.to,
            end: o.end,
            ahead: 0,
            released: 0,
        });
    }
    for i in job.ins {
        b.ins[i.net as usize] = Some(InState {
            from: i.from,
            end: i.end,
            credited: 0,
        });
    }
    let start = b.clock_phase();
    let spin = spin_for(job.crowded);
    match &job.pump {
        Some(pump) => {
            pump.lend(&mut b);
            loop {
                let elsewhere = pump.worked.swap(false, Ordering::Relaxed);
                match pump.with(|b| b.step(&job.signals, job.exit_when_stuck, elsewhere)) {
                    Step::Again => {}
                    Step::Quiet(q) => back_off(q, spin, pump.looking.load(Ordering::Relaxed) > 0),
                    Step::Nap(d) => std::thread::sleep(d),
                    Step::Finished => break,
                }
            }
            pump.take();
        }
        None => loop {
            match b.step(&job.signals, job.exit_when_stuck, false) {
                Step::Again => {}
                Step::Quiet(q) => back_off(q, spin, false),
                Step::Nap(d) => std::thread::sleep(d),
                Step::Finished => break,
            }
        },
    }
    if b.aborted_by.is_none() && b.protocol_error.is_none() && b.finished_cleanly() {
        let end = b.clock_phase();
        b.stats.clock_offset_ns = (start.0 + end.0) / 2;
        b.stats.clock_residual_ns = start.1.max(end.1) + start.0.abs_diff(end.0) / 2;
    } else {
        b.stats.clock_offset_ns = start.0;
        b.stats.clock_residual_ns = start.1;
    }
    while !b.t.sends_done() {
        std::thread::yield_now();
    }
    Outcome {
        stats: b.stats,
        aborted_by: b.aborted_by,
        protocol_error: b.protocol_error,
        deadlocked: b.deadlocked,
    }
}

impl Bridge<'_> {
    fn finished_cleanly(&self) -> bool {
        self.expect.is_some_and(|e| self.received >= e)
    }

    /// Sends a control record in a frame of its own (not counted).
    fn control(&mut self, to: usize, r: &Record<'_>) {
        let mut f = Vec::new();
        frame::put(&mut f, r);
        self.t.send(to, f);
    }

    /// Sends what is buffered for `to` (counted).
    fn flush(&mut self, to: usize) {
        if !self.bufs[to].is_empty() {
            let f = std::mem::take(&mut self.bufs[to]);
            self.t.send(to, f);
            self.sent_to[to] += 1;
            self.stats.frames_sent += 1;
        }
    }

    fn recv(&mut self) -> Option<(usize, Vec<u8>)> {
        self.t.try_recv()
    }

    /// Rank 0 measures every rank's clock against its own; every other
    /// rank answers and learns its offset. Returns this rank's (offset,
    /// residual). Frames of the main loop that arrive meanwhile wait in the
    /// stash.
    fn clock_phase(&mut self) -> (i64, u64) {
        if self.n == 1 {
            return (0, 0);
        }
        if self.me == 0 {
            for r in 1..self.n {
                let mut best: Option<(u64, i64)> = None;
                for _ in 0..PINGS {
                    let t0 = unix_ns();
                    self.control(r, &Record::Ping { t0 });
                    let t1 = loop {
                        match self.recv() {
                            Some((from, f)) if from == r && is_control(&f) => {
                                if let Some(Ok(Record::Pong { t0: back, t1 })) =
                                    frame::records(&f).next()
                                {
                                    if back == t0 {
                                        break Some(t1);
                                    }
                                }
                                self.note_control(from, &f);
                            }
                            Some(other) => self.stash.push_back(other),
                            None => std::hint::spin_loop(),
                        }
                        if self.aborted_by.is_some() {
                            break None;
                        }
                    };
                    let Some(t1) = t1 else { return (0, 0) };
                    let t2 = unix_ns();
                    let rtt = t2.saturating_sub(t0);
                    let offset = ((t0 as i128 + t2 as i128) / 2 - t1 as i128) as i64;
                    if best.is_none_or(|(b, _)| rtt < b) {
                        best = Some((rtt, offset));
                    }
                }
                let (rtt, offset) = best.expect("PINGS > 0");
                self.control(
                    r,
                    &Record::Clock {
                        offset,
                        residual: rtt / 2,
                    },
                );
            }
            (0, 0)
        } else {
            loop {
                match self.recv() {
                    Some((0, f)) if is_control(&f) => match frame::records(&f).next() {
                        Some(Ok(Record::Ping { t0 })) => {
                            let t1 = unix_ns();
                            self.control(0, &Record::Pong { t0, t1 });
                        }
                        Some(Ok(Record::Clock { offset, residual })) => return (offset, residual),
                        _ => {
                            self.note_control(0, &f);
                            if self.aborted_by.is_some() {
                                return (0, 0);
                            }
                        }
                    },
                    Some(other) => self.stash.push_back(other),
                    None => std::hint::spin_loop(),
                }
            }
        }
    }

    /// Handles a control frame outside its phase: an abort, a done or an
    /// end (which may come early), a stray ping.
    fn note_control(&mut self, from: usize, f: &[u8]) {
        match frame::records(f).next() {
            Some(Ok(Record::Abort { rank, text })) if self.aborted_by.is_none() => {
                self.aborted_by = Some((rank, text));
            }
            Some(Ok(Record::Done { sent })) if from < self.n => {
                self.dones[from] = Some(sent);
            }
            Some(Ok(Record::End { expect })) => self.expect = Some(expect),
            Some(Ok(Record::Idle {
                blocked,
                sent,
                received,
            })) if from < self.n => self.idles[from] = Some((blocked, sent, received)),
            Some(Ok(Record::Deadlock)) => self.end_deadlocked(),
            Some(Ok(Record::Ping { t0 })) => {
                let t1 = unix_ns();
                self.control(from, &Record::Pong { t0, t1 });
            }
            _ => {}
        }
    }

    /// Everything that has arrived: frames applied, control noted. True
    /// when anything came.
    fn receive_all(&mut self) -> bool {
        let mut work = false;
        while self.receive_one() {
            work = true;
        }
        work
    }

    /// The run is ending abnormally: only the bridge's thread acts now.
    fn closing(&self) -> bool {
        self.protocol_error.is_some() || self.aborted_by.is_some() || self.deadlocked
    }

    /// One pass as an idle worker makes it: what the local ends have out,
    /// then one frame in. In that order, so that a task's answer leaves
    /// before the pass looks for more, and a frame that wakes a task ends
    /// the pass (its worker runs the task next; the credit for what the
    /// task reads goes with the next pass's sends). True when anything
    /// moved.
    fn pass(&mut self) -> bool {
        let mut work = false;
        if !self.closing() {
            work = self.pump();
            for to in 0..self.n {
                self.flush(to);
            }
        }
        work | self.receive_one()
    }

    /// Receives and applies one frame, if one has arrived: a worker's pass
    /// takes one, so that a frame that wakes a task is followed by that
    /// task, not by another look at the transport (the look loop passes
    /// again at once when no task is ready).
    fn receive_one(&mut self) -> bool {
        let Some((from, f)) = self.stash.pop_front().or_else(|| self.recv()) else {
            return false;
        };
        if is_control(&f) {
            self.note_control(from, &f);
        } else {
            self.received += 1;
            self.stats.frames_received += 1;
            self.take_frame(from, &f);
        }
        true
    }

    /// One turn of the bridge thread's loop: a pass, and the run's end on
    /// every rank (done, end, abort, deadlock). `elsewhere`: a worker's pass
    /// moved something since the last turn.
    fn step(&mut self, signals: &Signals, exit_when_stuck: bool, elsewhere: bool) -> Step {
        let mut work = self.receive_all();
        if self.protocol_error.is_some() {
            let text = self.protocol_error.clone().unwrap_or_default();
            self.abort_others(&text);
            self.drop_ends();
            return Step::Finished;
        }
        let ended = signals.local_ended.load(Ordering::Acquire);
        if ended {
            let err = signals
                .local_error
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(text) = err {
                if self.aborted_by.is_none() && !self.deadlocked {
                    self.abort_others(&text);
                }
                self.drop_ends();
                return Step::Finished;
            }
        }
        if self.deadlocked && ended {
            // Every rank's run is ending as deadlocked; nothing more will
            // cross.
            self.drop_ends();
            return Step::Finished;
        }
        if self.aborted_by.is_some() {
            self.drop_ends();
            if ended {
                return Step::Finished;
            }
            let since = *self.abort_seen.get_or_insert_with(Instant::now);
            if exit_when_stuck && since.elapsed() > ABORT_GRACE {
                let (rank, text) = self.aborted_by.clone().unwrap_or_default();
                eprintln!(
                    "rill: rank {rank} ended the run ({text}); rank {}'s tasks did not end within {:?} of it, so this process exits",
                    self.me, ABORT_GRACE
                );
                std::process::exit(1);
            }
            return Step::Nap(Duration::from_millis(1));
        }
        work |= self.pump();
        for to in 0..self.n {
            self.flush(to);
        }
        if ended && !self.done_sent && self.live_outs == 0 && self.live_ins == 0 {
            self.done_sent = true;
            let sent = self.sent_to.clone();
            if self.me == 0 {
                self.dones[0] = Some(sent);
            } else {
                self.control(0, &Record::Done { sent });
            }
            work = true;
        }
        if self.me == 0 && self.expect.is_none() && self.dones.iter().all(Option::is_some) {
            for to in 0..self.n {
                let expect: u64 = self
                    .dones
                    .iter()
                    .map(|d| d.as_ref().map_or(0, |s| s.get(to).copied().unwrap_or(0)))
                    .sum();
                if to == 0 {
                    self.expect = Some(expect);
                } else {
                    self.control(to, &Record::End { expect });
                }
            }
        }
        if self.done_sent && self.finished_cleanly() {
            return Step::Finished;
        }
        if work || elsewhere {
            self.quiet_since = None;
            if self.reported.as_ref().is_some_and(|r| r.0) {
                self.report_idle(false);
            }
            // Work the workers did resets the quiet time but is theirs to
            // go on with: the thread turns again at once only after work
            // of its own.
            return if work {
                Step::Again
            } else {
                Step::Quiet(Duration::ZERO)
            };
        }
        let since = *self.quiet_since.get_or_insert_with(Instant::now);
        let quiet = since.elapsed();
        if quiet >= BLOCKED_REPORT && !self.deadlocked {
            let blocked = ended || self.watch.all_waiting_outside();
            let now = (blocked, self.sent_to.clone(), self.received);
            if self.reported.as_ref() != Some(&now) {
                self.report_idle(blocked);
            }
            if self.me == 0 {
                self.find_deadlock();
            }
        }
        Step::Quiet(quiet)
    }

    /// Tells rank 0 whether this rank is blocked, with its frame counts.
    fn report_idle(&mut self, blocked: bool) {
        let now = (blocked, self.sent_to.clone(), self.received);
        self.reported = Some(now.clone());
        if self.me == 0 {
            self.idles[0] = Some(now);
        } else {
            let (blocked, sent, received) = now;
            self.control(
                0,
                &Record::Idle {
                    blocked,
                    sent,
                    received,
                },
            );
        }
    }

    /// Rank 0: every rank reports itself blocked, and every frame any rank
    /// sent has been received (a blocked rank sends nothing until it
    /// receives, so the reports cannot all hold while a frame is on its
    /// way): no rank can move again. Ends every rank's run as deadlocked.
    fn find_deadlock(&mut self) {
        let all_blocked = self.idles.iter().all(|i| i.as_ref().is_some_and(|i| i.0));
        if !all_blocked || self.dones.iter().all(Option::is_some) {
            return;
        }
        let quiet = (0..self.n).all(|to| {
            let sent: u64 = self
                .idles
                .iter()
                .map(|i| i.as_ref().map_or(0, |i| i.1.get(to).copied().unwrap_or(0)))
                .sum();
            self.idles[to].as_ref().is_some_and(|i| i.2 == sent)
        });
        if !quiet {
            return;
        }
        for to in 1..self.n {
            self.control(to, &Record::Deadlock);
        }
        self.end_deadlocked();
    }

    fn end_deadlocked(&mut self) {
        self.deadlocked = true;
        self.watch.end_deadlocked();
    }

    fn abort_others(&mut self, text: &str) {
        let me = self.me;
        for to in (0..self.n).filter(|&r| r != me) {
            self.control(
                to,
                &Record::Abort {
                    rank: self.me as u32,
                    text: text.to_string(),
                },
            );
        }
    }

    /// Drops every cross-rank end: local readers see the end of their
    /// streams, local writers `StreamClosed`.
    fn drop_ends(&mut self) {
        self.outs.iter_mut().for_each(|o| *o = None);
        self.ins.iter_mut().for_each(|i| *i = None);
        self.live_outs = 0;
        self.live_ins = 0;
    }

    /// Applies one counted frame from `from`.
    fn take_frame(&mut self, from: usize, f: &[u8]) {
        for r in frame::records(f) {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    self.protocol_error = Some(format!(
                        "rank {}: a frame from rank {from} is bad: {e}",
                        self.me
                    ));
                    return;
                }
            };
            match r {
                Record::Data {
                    stream,
                    count,
                    bytes,
                } => {
                    let slot = self.ins.get_mut(stream as usize);
                    let Some(Some(st)) = slot else { continue };
                    self.stats.messages_received += u64::from(count);
                    match st.end.push(count, bytes) {
                        Ok(true) => {}
                        Ok(false) => {
                            let to = st.from;
                            self.ins[stream as usize] = None;
                            self.live_ins -= 1;
                            frame::put(&mut self.bufs[to], &Record::Gone { stream });
                        }
                        Err(e) => {
                            self.protocol_error = Some(format!(
                                "rank {}: cross-rank stream {stream} from rank {from}: {e}",
                                self.me
                            ));
                            return;
                        }
                    }
                }
                Record::Credit { stream, consumed } => {
                    let Some(Some(st)) = self.outs.get_mut(stream as usize) else {
                        continue;
                    };
                    let newly = consumed.saturating_sub(st.released) as usize;
                    let newly = newly.min(st.ahead);
                    st.end.release(newly);
                    st.ahead -= newly;
                    st.released += newly as u64;
                }
                Record::Close { stream } => {
                    if let Some(slot @ Some(_)) = self.ins.get_mut(stream as usize) {
                        *slot = None;
                        self.live_ins -= 1;
                    }
                }
                Record::Gone { stream } => {
                    if let Some(slot @ Some(_)) = self.outs.get_mut(stream as usize) {
                        *slot = None;
                        self.live_outs -= 1;
                    }
                }
                other => {
                    self.protocol_error = Some(format!(
                        "rank {}: a control record in a data frame from rank {from}: {other:?}",
                        self.me
                    ));
                    return;
                }
            }
        }
    }

    /// Moves what the local ends have: new messages out, credits and
    /// closes back. True when anything moved.
    fn pump(&mut self) -> bool {
        let mut work = false;
        for net in 0..self.outs.len() {
            let Some(st) = self.outs[net].as_mut() else {
                continue;
            };
            let to = st.to;
            let buf = &mut self.bufs[to];
            let at = frame::start_data(buf);
            let before = buf.len();
            let (k, ended) = st
                .end
                .encode_from(st.ahead, u32::MAX as usize, FRAME_BYTES, buf);
            self.stats.bytes_sent += (buf.len() - before) as u64;
            frame::finish_data(buf, at, net as u32, k as u32);
            st.ahead += k;
            self.stats.messages_sent += k as u64;
            if ended {
                frame::put(buf, &Record::Close { stream: net as u32 });
                self.outs[net] = None;
                self.live_outs -= 1;
            }
            if k > 0 || ended {
                work = true;
            }
            if self.bufs[to].len() >= FRAME_BYTES {
                self.flush(to);
            }
        }
        for net in 0..self.ins.len() {
            let Some(st) = self.ins[net].as_mut() else {
                continue;
            };
            let from = st.from;
            if st.end.reader_gone() {
                self.ins[net] = None;
                self.live_ins -= 1;
                frame::put(&mut self.bufs[from], &Record::Gone { stream: net as u32 });
                work = true;
                continue;
            }
            let c = st.end.consumed();
            if c > st.credited {
                st.credited = c;
                frame::put(
                    &mut self.bufs[from],
                    &Record::Credit {
                        stream: net as u32,
                        consumed: c,
                    },
                );
                work = true;
            }
        }
        work
    }
}
