//! Rendering.

pub(crate) mod number;
pub(crate) mod svg;
pub(crate) mod table;
