//! The bottom layer: presentation that knows nothing of a run.
//!
//! | module | what |
//! |--------|------|
//! | `number` | durations with a unit ([`fmt_ns`](crate::fmt_ns)), milliseconds on an axis, an axis's tick step |
//! | `table` | plain-text tables |
//! | `prose` | prose wrapped to a width (`textwrap`) |
//! | `svg` | SVG text escaping ([`xml_escape`](crate::xml_escape)) and task colours ([`task_colour`](crate::task_colour)) |
//!
//! It imports nothing of this crate.

pub(crate) mod number;
pub(crate) mod prose;
pub(crate) mod svg;
pub(crate) mod table;
