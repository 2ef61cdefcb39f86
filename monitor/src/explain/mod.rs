//! Explaining.

pub(crate) mod bottleneck;
pub(crate) mod placement;
pub(crate) mod verdict;
pub(crate) mod waits;
