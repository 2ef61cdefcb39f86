//! The allocation-free record scanner the analysis passes use: rill-log's
//! [`rill_log::Scanner`], which its owning [`rill_log::Decoder`] is built on
//! too.
//!
//! It decodes records into buffers it reuses (a period's stream entries,
//! ops and op times stay valid until the next call), and task names are
//! borrowed from the data. When it meets a damaged record it stops, and
//! [`Scanner::end_reason`] says where and why.

pub use rill_log::{Item, OpsKind, ScannedPeriod, Scanner};

use rill_log::{DecodeErrorKind, Decoder};

/// What is wrong with the record at `offset` of `data`, according to the
/// log format's decoder (`None` if it finds nothing wrong there).
pub fn damage_reason(data: &[u8], offset: u64) -> Option<DecodeErrorKind> {
    let rest = data.get(usize::try_from(offset).ok()?..)?;
    match Decoder::records(rest).next() {
        Some(Err(e)) => Some(e.kind),
        _ => None,
    }
}

/// The stream of the first read in the scanner's current period.
pub(crate) fn first_read(sc: &Scanner<'_>) -> Option<u64> {
    let io = sc.io();
    sc.first_read_op()
        .and_then(|op| io.get(usize::from(op.io_index)))
        .or_else(|| io.iter().find(|s| s.reads > 0))
        .map(|s| s.stream)
}
