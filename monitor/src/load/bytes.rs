//! A log file's bytes ([`Bytes`], mapped or read) and the release of the
//! pages a pass has read ([`Behind`]).

/// A log file's bytes: mapped, or (where mapping fails, or the bytes were
/// made in memory) read.
pub(crate) enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

/// Pages released behind a pass at a time ([`Behind`]).
const RELEASE_STRIDE: usize = 16 << 20;

/// The alignment of released ranges: a multiple of every page size Linux
/// uses (4 KiB, 16 KiB, 64 KiB).
const RELEASE_ALIGN: usize = 64 << 10;

impl Bytes {
    /// Drops the pages of `[from, to)` (rounded inwards to
    /// [`RELEASE_ALIGN`]) from this process's resident memory, for a
    /// mapped file; they stay in the page cache, and a later read maps them
    /// again.
    fn release(&self, from: usize, to: usize) {
        let Bytes::Mapped(map) = self else { return };
        let a = from.next_multiple_of(RELEASE_ALIGN);
        let b = to.min(map.len()) / RELEASE_ALIGN * RELEASE_ALIGN;
        if b > a {
            // SAFETY: the map is a read-only shared mapping of a file that
            // nobody writes while it is mapped (see `map_or_read`). Dropping
            // its pages is what the kernel does to clean file pages under
            // memory pressure: the next access reads the same bytes from the
            // file again, so slices borrowed from the range stay valid and
            // unchanged. The range lies within the map.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, a, b - a) };
        }
    }
}

/// A front-to-back pass over a log releases the pages it has read, every
/// [`RELEASE_STRIDE`] bytes, so that a pass over a log of any size keeps
/// a bounded part of it resident (without this, the kernel leaves every
/// page read in the process's memory until it needs the room).
#[derive(Default)]
pub(crate) struct Behind {
    done: usize,
}

impl Behind {
    #[inline]
    pub(crate) fn advance_bytes(&mut self, data: &Bytes, offset: usize) {
        if offset >= self.done + RELEASE_STRIDE {
            data.release(self.done, offset);
            self.done = offset / RELEASE_ALIGN * RELEASE_ALIGN;
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }
}
