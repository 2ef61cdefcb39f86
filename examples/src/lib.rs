//! Stream benchmarks on rill (skeleton).

pub mod kernels;
