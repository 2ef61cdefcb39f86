//! Summary.

pub(crate) mod summarize;
