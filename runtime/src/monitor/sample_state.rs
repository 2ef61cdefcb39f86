//! What a worker is doing, as one word (sample mode): the state in the
//! low bits, a task id above them. Written by the worker and by its
//! signal handler (`self_sample`), read by the sampler (`sampler`): the
//! low [`STATE_BITS`] bits are the state, the rest the running (or
//! spinning) task's id.

/// In the worker loop, between tasks: the worker's own word says it
/// from the loop's start, after each idle stretch and after each spin.
/// A dispatch stores no word at all: while a task runs, the signal
/// handler names it from the thread's current-task word
/// (`self_sample::sampled_word`). So the steps between dispatches are
/// sampled as `SCHED`, which `rill-mon` spreads over the window's
/// running samples. (A `RUN` word stored per dispatch, as before, cost
/// no difference this machine could show; `docs/measurements/sampling.md#sample-start-end`.)
pub(crate) const SCHED: u64 = 0;
/// Running the task whose id is in the high bits (only in samples).
pub(crate) const RUN: u64 = 1;
/// The task in the high bits spins before it blocks.
pub(crate) const SPIN: u64 = 2;
/// Idle and awake: looking for work.
pub(crate) const IDLE: u64 = 3;
/// Asleep.
pub(crate) const PARK: u64 = 4;
/// The default sampling rate (see the README for why).
pub(crate) const DEFAULT_HZ: u32 = 1000;

/// Bits of the state; a task id is shifted past them.
pub(crate) const STATE_BITS: u32 = 3;
/// The word of a worker running (or spinning in) task `id`.
#[inline(always)]
pub(crate) const fn task(id: u64, st: u64) -> u64 {
    id << STATE_BITS | st
}
