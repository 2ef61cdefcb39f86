//! Stream benchmarks on rill (skeleton).
