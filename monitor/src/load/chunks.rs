//! The chunk index of a log: [`Chunk`], a stretch of [`CHUNK_PERIODS`]
//! periods a pass can resume at or skip.

/// Periods per [`Chunk`].
pub(crate) const CHUNK_PERIODS: u32 = 1024;

/// A stretch of a log's records holding [`CHUNK_PERIODS`] of its periods
/// (the last one fewer), noted by the load's scan: where a scanner resumes
/// to read it (the offset and the time base) and the range of times its
/// periods and worker waits cover (`min_t`, the earliest start; `max_t`,
/// the latest end). The range bounds every time in the chunk, whatever
/// their order, so what follows holds for a damaged log too:
///
/// - a pass that counts periods per time bucket takes a chunk whose range
///   lies in one bucket whole, without decoding it (`trace/detail.rs`);
/// - a pass drawing a window of the run skips the chunks that end before
///   the window or start after it (`trace/timeline.rs`).
///
/// Chunks follow one another: each starts where the one before ended, the
/// first at the log's first record, the last ends where the load's scan
/// stopped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Chunk {
    pub offset: usize,
    pub last: u64,
    pub periods: u32,
    pub min_t: u64,
    pub max_t: u64,
}

impl Chunk {
    pub(crate) fn at(offset: usize, last: u64) -> Self {
        Chunk {
            offset,
            last,
            periods: 0,
            min_t: u64::MAX,
            max_t: 0,
        }
    }

    #[inline]
    pub(crate) fn add(&mut self, start: u64, end: u64) {
        self.periods += 1;
        self.span(start, end.max(start));
    }

    #[inline]
    pub(crate) fn span(&mut self, a: u64, b: u64) {
        self.min_t = self.min_t.min(a);
        self.max_t = self.max_t.max(b);
    }

    /// Whether it holds a period or a wait.
    pub(crate) fn any(&self) -> bool {
        self.min_t <= self.max_t
    }
}
