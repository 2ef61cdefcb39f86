//! Work an idle worker may do for a layer above the runtime between its
//! tasks: a network across ranks lets its workers carry the bridge's
//! traffic (`dist/bridge.rs`, [`IdleWork`]), so that a message from another
//! rank reaches the task that waits for it on the thread that runs it,
//! without a hand-over between threads.

use std::time::{Duration, Instant};

/// One look at the layer's work, as a worker that has nothing to run does
/// it. Called on a worker thread outside any task (the thread's current
/// worker cleared, so that stream operations inside it are those of a
/// thread outside the run).
pub(crate) trait IdleWork: Send + Sync {
    /// Does what is waiting, if the work is free to be done here.
    fn pass(&self) -> IdlePass;

    /// A worker starts (`true`) or stops (`false`) looking in a loop, so
    /// that the layer's own thread can step back meanwhile.
    fn looking(&self, on: bool);

    /// Whether a worker gives its core away between passes that found
    /// nothing: where the threads that look outnumber the cores, the peer
    /// a pass waits for may need this one. Where they fit, a yield only
    /// delays the next look (a system call, about 1 µs here, on every
    /// turn of a message exchange).
    fn gives_core(&self) -> bool;
}

/// What a [`IdleWork::pass`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdlePass {
    /// Something moved.
    Worked,
    /// Nothing to do now.
    Nothing,
    /// Another thread is doing it.
    Busy,
    /// There will be nothing more to do in this run.
    Closed,
}

/// How long an idle worker keeps looking after the last pass that moved
/// something (or after it ran out of tasks) before it goes on to its spin
/// and park: a message exchange whose replies come within this window is
/// carried by the worker alone.
pub(crate) const LOOK_FOR: Duration = Duration::from_millis(2);

/// Where a worker does not yield between empty passes, how many of them go
/// by between two looks at the clock (a pass costs some hundreds of
/// nanoseconds: a look at the clock is then a tenth of it).
const CLOCK_EVERY: u32 = 16;

/// The idle worker's loop over `work`: passes until a task is ready
/// (`ready()` true: returns `Some(true)`), the run stops (`Some(false)`),
/// or nothing moved for [`LOOK_FOR`] or the work closed (`None`: the caller
/// goes on to spin and park). Between passes that found nothing the thread
/// yields where the work says so ([`IdleWork::gives_core`]: the peer it
/// waits for may need this core), and pauses otherwise, reading the clock
/// only every [`CLOCK_EVERY`]th such pass.
/// `outside` runs a pass as a thread outside the run (the caller clears the
/// thread's current worker around it).
pub(crate) fn look(
    work: &dyn IdleWork,
    running: impl Fn() -> bool,
    ready: impl Fn() -> bool,
    outside: impl Fn(&dyn Fn() -> IdlePass) -> IdlePass,
) -> Option<bool> {
    // When the last pass moved something (or the look began), read from
    // the clock lazily: at the first look at it after a pass that worked,
    // so that a message exchange reads no clock on its way (the window is
    // then longer by the passes before that look, some microseconds).
    let mut last: Option<Instant> = None;
    let gives_core = work.gives_core();
    let mut empty = 0u32;
    work.looking(true);
    let found = loop {
        if !running() {
            break Some(false);
        }
        if ready() {
            break Some(true);
        }
        match outside(&|| work.pass()) {
            IdlePass::Worked => {
                empty = 0;
                last = None;
                continue;
            }
            IdlePass::Closed => break None,
            IdlePass::Nothing | IdlePass::Busy => {}
        }
        empty = empty.wrapping_add(1);
        if gives_core || empty.is_multiple_of(CLOCK_EVERY) {
            let now = Instant::now();
            match last {
                Some(t) if now.duration_since(t) >= LOOK_FOR => break None,
                Some(_) => {}
                None => last = Some(now),
            }
        }
        if gives_core {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    };
    work.looking(false);
    found
}
