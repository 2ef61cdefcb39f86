//! Planning.

pub(crate) mod mapfile;
pub(crate) mod partition;
pub(crate) mod planner;
pub(crate) mod rankmap;
