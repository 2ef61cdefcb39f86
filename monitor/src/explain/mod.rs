//! Explaining.

pub(crate) mod bottleneck;
pub(crate) mod findings;
pub(crate) mod placement;
pub(crate) mod task_graph;
pub(crate) mod verdict;
pub(crate) mod waits;
