//! Word count: the text, its words and their counts.
//!
//! A word is a maximal run of non-whitespace characters (`str::split_whitespace`,
//! Unicode whitespace); words are counted as they are, case and punctuation
//! included. Everything a word count network does is built from the steps
//! here, and so is the sequential reference [`count_words`]:
//!
//! - [`generate_text`]: deterministic text from a seed, Zipf-distributed words
//!   over a vocabulary of [`VOCABULARY`] words, lines of 0 to 24 words.
//! - [`chunks`]: the text cut into pieces of at least N bytes, each ending just
//!   after an ASCII whitespace byte, so that no word is cut (what a source
//!   sends).
//! - [`Batcher`]: the splitter's state: the words of each chunk gathered into
//!   batches, one per counter, each word going to the counter [`route`] names.
//! - [`add_batch`] (a counter), [`merge_into`] (the merger), [`compare`] (the
//!   check of a network's counts against the reference).
//! - [`Corpus`]: a text made or read once, shared by every run, with its
//!   reference count computed on first use.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::{mix64, SplitMix64};

/// Word counts: each distinct word and how often it occurs.
pub type Counts = HashMap<String, u64>;

/// Default size of the generated text of `rill-bench wordcount`, in bytes.
pub const DEFAULT_BYTES: usize = 20_000_000;

/// Distinct words the generator draws from.
pub const VOCABULARY: usize = 30_000;

/// Exponent of the generator's Zipf distribution (word of rank r has weight
/// 1 / r^s; about 1 for English text).
pub const ZIPF_EXPONENT: f64 = 1.0;

/// The most common English words, the generator's first ranks; the other
/// ranks are made-up words, longer as they get rarer.
const COMMON: [&str; 48] = [
    "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for", "on",
    "are", "with", "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had",
    "by", "not", "word", "but", "what", "some", "we", "can", "out", "other", "were", "all",
    "there", "when", "up", "use", "your", "how", "said", "an", "each",
];

/// Letters of made-up words, common ones repeated so that they come up more.
const LETTERS: &[u8] =
    b"eeeeeeettttttaaaaaoooooiiiiinnnnnsssssrrrrrhhhhlllddduuccmmwwffggyyppbbvkjxqz";

/// The generator's vocabulary, most frequent first: the common English words, then distinct
/// made-up lowercase words whose length grows with their rank.
pub fn vocabulary(size: usize, seed: u64) -> Vec<String> {
    let mut words: Vec<String> = COMMON.iter().take(size).map(|w| w.to_string()).collect();
    let mut seen: HashSet<String> = words.iter().cloned().collect();
    let mut rng = SplitMix64::from_keys(&[seed, 0x0076_6f63_6162]);
    while words.len() < size {
        let rank = words.len() as f64;
        // About 4 letters after the common words, 9 at rank 30,000, give or
        // take 2.
        let base = 1.0 + rank.log2() * 0.55;
        let len = (base as u32 + rng.range_u32(0, 4)).saturating_sub(2).max(2);
        let w: String = (0..len)
            .map(|_| LETTERS[rng.range_u32(0, LETTERS.len() as u32 - 1) as usize] as char)
            .collect();
        if seen.insert(w.clone()) {
            words.push(w);
        }
    }
    words
}

/// Draws ranks from a Zipf distribution over `n` ranks.
struct Zipf {
    /// Cumulative weights, the last one 1.
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize, s: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(n);
        let mut sum = 0.0;
        for r in 1..=n {
            sum += 1.0 / (r as f64).powf(s);
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { cdf }
    }

    fn sample(&self, rng: &mut SplitMix64) -> usize {
        let u = rng.next_f64();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

/// Exactly `bytes` bytes of text, the same for the same seed: lines of 0 to
/// 24 words separated by single spaces, the first word capitalised and a
/// period after the last, words drawn from a Zipf distribution over
/// [`VOCABULARY`] words. The text is ASCII; its end may cut a word short.
pub fn generate_text(bytes: usize, seed: u64) -> String {
    let vocab = vocabulary(VOCABULARY, seed);
    let zipf = Zipf::new(vocab.len(), ZIPF_EXPONENT);
    let mut rng = SplitMix64::from_keys(&[seed, 0x7465_7874]);
    let mut text = String::with_capacity(bytes + 256);
    while text.len() < bytes {
        let words = rng.range_u32(0, 24);
        for i in 0..words {
            let w = &vocab[zipf.sample(&mut rng)];
            if i == 0 {
                let mut cs = w.chars();
                if let Some(c) = cs.next() {
                    text.push(c.to_ascii_uppercase());
                    text.push_str(cs.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(w);
            }
        }
        if words > 0 {
            text.push('.');
        }
        text.push('\n');
    }
    text.truncate(bytes);
    text
}

/// The pieces of `text` a source sends: each at least `min_bytes` long (the
/// last one may be shorter) and ending just after an ASCII whitespace byte
/// or at the end of the text, so no word is split between two pieces. Their
/// concatenation is `text`. `min_bytes` must be at least 1.
pub fn chunks(text: &str, min_bytes: usize) -> Chunks<'_> {
    assert!(min_bytes >= 1, "chunks of at least 1 byte");
    Chunks {
        rest: text,
        min_bytes,
    }
}

/// The iterator of [`chunks`].
#[derive(Clone, Debug)]
pub struct Chunks<'a> {
    rest: &'a str,
    min_bytes: usize,
}

impl<'a> Iterator for Chunks<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let bytes = self.rest.as_bytes();
        let from = self.min_bytes - 1;
        let end = match bytes.get(from..) {
            None => bytes.len(),
            Some(tail) => tail
                .iter()
                .position(u8::is_ascii_whitespace)
                .map_or(bytes.len(), |i| from + i + 1),
        };
        // Cutting just after an ASCII byte is a char boundary.
        let (chunk, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(chunk)
    }
}

/// The counter, of `counters`, that counts `word`: the same for every engine
/// and every run (FNV-1a, mixed, then a multiply-shift into `0..counters`).
#[inline]
pub fn route(word: &str, counters: usize) -> usize {
    let mut h = 0xCBF2_9CE4_8422_2325u64;
    for &b in word.as_bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
    }
    ((u128::from(mix64(h)) * counters as u128) >> 64) as usize
}

/// The splitter's state: a batch being filled for each counter.
#[derive(Debug)]
pub struct Batcher {
    batch: usize,
    pending: Vec<Vec<String>>,
}

impl Batcher {
    /// Batches of `batch` words for `counters` counters (both at least 1).
    pub fn new(counters: usize, batch: usize) -> Batcher {
        assert!(counters >= 1 && batch >= 1, "at least 1 counter and 1 word");
        Batcher {
            batch,
            pending: (0..counters).map(|_| Vec::with_capacity(batch)).collect(),
        }
    }

    /// Adds `word` to its counter's batch; returns the counter and its batch
    /// when the batch is full.
    #[inline]
    pub fn push(&mut self, word: &str) -> Option<(usize, Vec<String>)> {
        let k = route(word, self.pending.len());
        let b = &mut self.pending[k];
        b.push(word.to_owned());
        (b.len() == self.batch).then(|| (k, std::mem::replace(b, Vec::with_capacity(self.batch))))
    }

    /// The batches not yet full and not empty, with their counters.
    pub fn finish(self) -> impl Iterator<Item = (usize, Vec<String>)> {
        self.pending
            .into_iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
    }
}

/// How the splitter hands words to the counters (`--words`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WordsAs {
    /// A `String` per word, batched in a `Vec<String>`: what a program
    /// written the plain way sends. The splitter allocates every word and
    /// the counter frees it (on another worker when they are apart).
    #[default]
    Owned,
    /// Byte ranges into the text chunk, which the source sends as an
    /// `Arc<str>`: no allocation per word, nothing for a counter to free,
    /// and a counter reads the chunk's bytes where the source wrote them.
    Slices,
}

impl WordsAs {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            WordsAs::Owned => "owned",
            WordsAs::Slices => "slices",
        }
    }
}

/// What travels in one format of [`WordsAs`]: the source's chunks and the
/// counters' batches, made and counted the same way on every engine. (The
/// splitters differ in shape and stay with each engine.)
pub trait Words: 'static {
    /// What the source sends the splitter.
    type Chunk: Send + 'static;
    /// What the splitter sends a counter.
    type Batch: Send + 'static;
    /// The source's message for a piece of the text.
    fn chunk(piece: &str) -> Self::Chunk;
    /// A counter's step.
    fn count(counts: &mut Counts, batch: Self::Batch);
    /// The splitter's state.
    type Splitter: Send + 'static;
    /// A splitter for `counters` counters and batches of `batch` words.
    fn splitter(counters: usize, batch: usize) -> Self::Splitter;
    /// Cuts `chunk` into words and hands each batch that fills up to `emit`
    /// with its counter, as soon as it does; `false` from `emit` stops the
    /// cut (the counter has ended) and is returned.
    fn split(
        s: &mut Self::Splitter,
        chunk: &Self::Chunk,
        emit: impl FnMut(usize, Self::Batch) -> bool,
    ) -> bool;
    /// The batches left at the end of the text, to `emit` (as in `split`).
    fn finish(s: Self::Splitter, emit: impl FnMut(usize, Self::Batch) -> bool) -> bool;
}

/// [`WordsAs::Owned`]: `String` chunks, `Vec<String>` batches.
pub enum OwnedWords {}

impl Words for OwnedWords {
    type Chunk = String;
    type Batch = Vec<String>;
    fn chunk(piece: &str) -> String {
        piece.to_owned()
    }
    fn count(counts: &mut Counts, batch: Vec<String>) {
        add_batch(counts, batch);
    }
    type Splitter = Batcher;
    fn splitter(counters: usize, batch: usize) -> Batcher {
        Batcher::new(counters, batch)
    }
    #[inline]
    fn split(
        s: &mut Batcher,
        chunk: &String,
        mut emit: impl FnMut(usize, Vec<String>) -> bool,
    ) -> bool {
        for word in chunk.split_whitespace() {
            if let Some((c, full)) = s.push(word) {
                if !emit(c, full) {
                    return false;
                }
            }
        }
        true
    }
    fn finish(s: Batcher, mut emit: impl FnMut(usize, Vec<String>) -> bool) -> bool {
        s.finish().all(|(c, rest)| emit(c, rest))
    }
}

/// [`WordsAs::Slices`]: `Arc<str>` chunks, [`Slices`] batches.
pub enum SliceWords {}

impl Words for SliceWords {
    type Chunk = Arc<str>;
    type Batch = Slices;
    fn chunk(piece: &str) -> Arc<str> {
        Arc::from(piece)
    }
    fn count(counts: &mut Counts, batch: Slices) {
        add_slices(counts, &batch);
    }
    type Splitter = (SliceBatcher, Vec<(usize, Slices)>);
    fn splitter(counters: usize, batch: usize) -> Self::Splitter {
        (SliceBatcher::new(counters, batch), Vec::new())
    }
    fn split(
        (s, out): &mut Self::Splitter,
        chunk: &Arc<str>,
        mut emit: impl FnMut(usize, Slices) -> bool,
    ) -> bool {
        s.split(chunk, out);
        out.drain(..).all(|(c, b)| emit(c, b))
    }
    fn finish(_: Self::Splitter, _: impl FnMut(usize, Slices) -> bool) -> bool {
        // A batch never spans chunks: nothing is left.
        true
    }
}

/// A batch of words for one counter as byte ranges of one chunk
/// ([`WordsAs::Slices`]).
#[derive(Debug)]
pub struct Slices {
    /// The chunk the ranges index.
    pub chunk: Arc<str>,
    /// `start..end` of each word in `chunk`.
    pub ranges: Vec<(usize, usize)>,
}

/// The splitter's state for [`WordsAs::Slices`]: the ranges being gathered
/// for each counter from the current chunk.
#[derive(Debug)]
pub struct SliceBatcher {
    batch: usize,
    pending: Vec<Vec<(usize, usize)>>,
}

impl SliceBatcher {
    /// Batches of up to `batch` words for `counters` counters (both at
    /// least 1).
    pub fn new(counters: usize, batch: usize) -> SliceBatcher {
        assert!(counters >= 1 && batch >= 1, "at least 1 counter and 1 word");
        SliceBatcher {
            batch,
            pending: (0..counters).map(|_| Vec::with_capacity(batch)).collect(),
        }
    }

    /// Cuts `chunk` into words and routes each as [`route`] does; appends to
    /// `out` each batch that fills up and, at the chunk's end, each one not
    /// empty (a batch never spans chunks), with its counter.
    pub fn split(&mut self, chunk: &Arc<str>, out: &mut Vec<(usize, Slices)>) {
        let base = chunk.as_ptr() as usize;
        let n = self.pending.len();
        for word in chunk.split_whitespace() {
            let start = word.as_ptr() as usize - base;
            let k = route(word, n);
            let b = &mut self.pending[k];
            b.push((start, start + word.len()));
            if b.len() == self.batch {
                let ranges = std::mem::replace(b, Vec::with_capacity(self.batch));
                out.push((
                    k,
                    Slices {
                        chunk: chunk.clone(),
                        ranges,
                    },
                ));
            }
        }
        for (k, b) in self.pending.iter_mut().enumerate() {
            if !b.is_empty() {
                let ranges = std::mem::replace(b, Vec::with_capacity(self.batch));
                out.push((
                    k,
                    Slices {
                        chunk: chunk.clone(),
                        ranges,
                    },
                ));
            }
        }
    }
}

/// A counter's step for [`WordsAs::Slices`]: a word seen for the first
/// time is copied into a `String` key; a known one costs a lookup.
pub fn add_slices(counts: &mut Counts, s: &Slices) {
    for &(a, b) in &s.ranges {
        let w = &s.chunk[a..b];
        match counts.get_mut(w) {
            Some(c) => *c += 1,
            None => {
                counts.insert(w.to_owned(), 1);
            }
        }
    }
}

/// A counter's step: counts the words of a batch (a new word's `String` is
/// kept as the key, a known one's is dropped).
pub fn add_batch(counts: &mut Counts, batch: Vec<String>) {
    for w in batch {
        match counts.get_mut(w.as_str()) {
            Some(c) => *c += 1,
            None => {
                counts.insert(w, 1);
            }
        }
    }
}

/// The merger's step: adds a counter's counts to the total.
pub fn merge_into(total: &mut Counts, part: Counts) {
    if total.is_empty() {
        *total = part;
        return;
    }
    for (w, c) in part {
        *total.entry(w).or_insert(0) += c;
    }
}

/// The sequential word count: every word of `text`, counted in one loop.
pub fn count_words(text: &str) -> Counts {
    let mut counts = Counts::new();
    for w in text.split_whitespace() {
        match counts.get_mut(w) {
            Some(c) => *c += 1,
            None => {
                counts.insert(w.to_owned(), 1);
            }
        }
    }
    counts
}

/// Words counted in all (the sum of the counts).
pub fn total_words(counts: &Counts) -> u64 {
    counts.values().sum()
}

/// Checks `got` against `expected`; the error says how many words differ and
/// shows the first few (in word order).
pub fn compare(got: &Counts, expected: &Counts) -> Result<(), String> {
    if got == expected {
        return Ok(());
    }
    let mut diffs: Vec<(&str, u64, u64)> = expected
        .iter()
        .filter_map(|(w, &e)| {
            let g = got.get(w).copied().unwrap_or(0);
            (g != e).then_some((w.as_str(), g, e))
        })
        .chain(
            got.iter()
                .filter(|(w, _)| !expected.contains_key(*w))
                .map(|(w, &g)| (w.as_str(), g, 0)),
        )
        .collect();
    diffs.sort_unstable();
    let shown: Vec<String> = diffs
        .iter()
        .take(3)
        .map(|(w, g, e)| format!("'{w}' counted {g} times, expected {e}"))
        .collect();
    Err(format!(
        "{} of {} distinct words counted wrong ({} words counted, {} expected): {}{}",
        diffs.len(),
        expected.len(),
        total_words(got),
        total_words(expected),
        shown.join("; "),
        if diffs.len() > shown.len() {
            "; ..."
        } else {
            ""
        }
    ))
}

/// Where a word count's text comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextSource {
    /// [`generate_text`]`(bytes, seed)`.
    Generated {
        /// Bytes of text.
        bytes: usize,
        /// Seed of the generator.
        seed: u64,
    },
    /// A UTF-8 text file.
    File(PathBuf),
}

impl fmt::Display for TextSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TextSource::Generated { bytes, seed } => {
                write!(f, "{bytes} generated bytes (seed {seed})")
            }
            TextSource::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A text to count, made or read once and shared by every run and engine,
/// with its sequential count computed on first use and kept.
///
/// Two corpora are equal when they come from the same source and hold the
/// same text.
#[derive(Clone)]
pub struct Corpus {
    source: TextSource,
    text: Arc<String>,
    reference: Arc<OnceLock<Counts>>,
}

impl Default for Corpus {
    /// No text (generated, 0 bytes): what a word count's parameters hold
    /// until their text is made.
    fn default() -> Self {
        Corpus::of(TextSource::Generated { bytes: 0, seed: 0 }, String::new())
    }
}

impl Corpus {
    /// Generates or reads the text. A file must exist and be UTF-8 text; the
    /// error says why not.
    pub fn new(source: TextSource) -> Result<Corpus, String> {
        let text = match &source {
            TextSource::Generated { bytes, seed } => generate_text(*bytes, *seed),
            TextSource::File(p) => {
                let bytes = std::fs::read(p)
                    .map_err(|e| format!("cannot read the input file {}: {e}", p.display()))?;
                String::from_utf8(bytes).map_err(|e| {
                    format!(
                        "the input file {} is not UTF-8 text (invalid byte at offset {})",
                        p.display(),
                        e.utf8_error().valid_up_to()
                    )
                })?
            }
        };
        Ok(Corpus::of(source, text))
    }

    /// A corpus of `text`, said to come from `source`.
    pub fn of(source: TextSource, text: String) -> Corpus {
        Corpus {
            source,
            text: Arc::new(text),
            reference: Arc::new(OnceLock::new()),
        }
    }

    /// Where the text came from.
    pub fn source(&self) -> &TextSource {
        &self.source
    }

    /// The text, shared.
    pub fn text(&self) -> &Arc<String> {
        &self.text
    }

    /// Bytes of text.
    pub fn len(&self) -> usize {
        self.text.len()
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The sequential count of the text (computed on the first call).
    pub fn reference(&self) -> &Counts {
        self.reference.get_or_init(|| count_words(&self.text))
    }
}

impl PartialEq for Corpus {
    fn eq(&self, other: &Corpus) -> bool {
        self.source == other.source
            && (Arc::ptr_eq(&self.text, &other.text) || self.text == other.text)
    }
}

impl fmt::Debug for Corpus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Corpus")
            .field("source", &self.source)
            .field("bytes", &self.text.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_text_is_deterministic_and_exact() {
        let a = generate_text(50_000, 7);
        assert_eq!(a.len(), 50_000);
        assert_eq!(a, generate_text(50_000, 7));
        assert_ne!(a, generate_text(50_000, 8));
        assert!(a.is_ascii());
        assert_eq!(generate_text(0, 1), "");
        // Lines of varied length, some of them empty.
        let lens: HashSet<usize> = a.lines().map(|l| l.split_whitespace().count()).collect();
        assert!(lens.contains(&0) && lens.len() > 15, "{lens:?}");
    }

    #[test]
    fn generated_words_look_like_text() {
        let counts = count_words(&generate_text(400_000, 1));
        let total = total_words(&counts);
        let mut by_freq: Vec<(&String, &u64)> = counts.iter().collect();
        by_freq.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        // "the" leads, about 1/ln(30,000) ~ 10% of the words minus those
        // capitalised at the start of a line.
        assert_eq!(by_freq[0].0, "the");
        let share = *by_freq[0].1 as f64 / total as f64;
        assert!((0.05..0.12).contains(&share), "{share}");
        // Thousands of distinct words, most of them rare.
        assert!(counts.len() > 10_000, "{}", counts.len());
        let once = counts.values().filter(|&&c| c == 1).count();
        assert!(once * 4 > counts.len(), "{once} of {}", counts.len());
    }

    #[test]
    fn vocabulary_is_distinct() {
        let v = vocabulary(VOCABULARY, 3);
        assert_eq!(v.len(), VOCABULARY);
        assert_eq!(v.iter().collect::<HashSet<_>>().len(), VOCABULARY);
        assert_eq!(&v[..3], ["the", "of", "and"]);
        assert_eq!(vocabulary(2, 3), ["the", "of"]);
    }

    #[test]
    fn chunks_cover_the_text_and_cut_no_word() {
        let text = "alpha beta\tgamma\n\ndelta  épsilon\u{3000}zeta eta";
        for min in [1, 2, 5, 7, 11, 100] {
            let pieces: Vec<&str> = chunks(text, min).collect();
            assert_eq!(pieces.concat(), text, "min {min}");
            for p in &pieces[..pieces.len() - 1] {
                assert!(p.len() >= min, "{p:?} min {min}");
                assert!(p.as_bytes().last().unwrap().is_ascii_whitespace(), "{p:?}");
            }
            let words: Vec<&str> = pieces.iter().flat_map(|p| p.split_whitespace()).collect();
            assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
        }
        assert_eq!(chunks("", 4).count(), 0);
        assert_eq!(chunks("nospace", 2).collect::<Vec<_>>(), ["nospace"]);
    }

    #[test]
    fn routes_are_stable_and_spread() {
        let mut hits = [0u32; 4];
        for w in vocabulary(4_000, 1) {
            let k = route(&w, 4);
            assert_eq!(k, route(&w, 4));
            hits[k] += 1;
        }
        assert!(hits.iter().all(|&h| h > 800), "{hits:?}");
        assert_eq!(route("anything", 1), 0);
    }

    #[test]
    fn slice_batches_count_what_the_sequential_loop_counts() {
        let text = generate_text(30_000, 9);
        for (batch, counters, chunk) in [(1, 1, 1), (7, 3, 500), (1000, 4, 4096)] {
            let mut sb = SliceBatcher::new(counters, batch);
            let mut out = Vec::new();
            let mut parts: Vec<Counts> = (0..counters).map(|_| Counts::new()).collect();
            for c in chunks(&text, chunk) {
                let c: Arc<str> = Arc::from(c);
                sb.split(&c, &mut out);
                for (k, s) in out.drain(..) {
                    assert!(s.ranges.len() <= batch && !s.ranges.is_empty());
                    for &(a, b) in &s.ranges {
                        assert_eq!(
                            route(&s.chunk[a..b], counters),
                            k,
                            "routed as owned words are"
                        );
                    }
                    add_slices(&mut parts[k], &s);
                }
            }
            let mut total = Counts::new();
            for part in parts {
                merge_into(&mut total, part);
            }
            compare(&total, &count_words(&text)).unwrap();
        }
    }

    #[test]
    fn batcher_routes_every_word_once() {
        let text = generate_text(20_000, 2);
        for (counters, batch) in [(1, 1), (3, 7), (4, 1024)] {
            let mut b = Batcher::new(counters, batch);
            let mut parts = vec![Counts::new(); counters];
            for w in text.split_whitespace() {
                if let Some((k, full)) = b.push(w) {
                    assert_eq!(full.len(), batch);
                    assert!(full.iter().all(|w| route(w, counters) == k));
                    add_batch(&mut parts[k], full);
                }
            }
            for (k, rest) in b.finish() {
                assert!(!rest.is_empty() && rest.len() < batch);
                add_batch(&mut parts[k], rest);
            }
            let mut total = Counts::new();
            for p in parts {
                merge_into(&mut total, p);
            }
            compare(&total, &count_words(&text)).unwrap();
        }
    }

    #[test]
    fn compare_names_the_differences() {
        let expected = count_words("a b b c");
        compare(&count_words("b c b a"), &expected).unwrap();
        let e = compare(&count_words("a b c d"), &expected).unwrap_err();
        assert!(e.starts_with("2 of 3 distinct words"), "{e}");
        assert!(e.contains("'b' counted 1 times, expected 2"), "{e}");
        assert!(e.contains("'d' counted 1 times, expected 0"), "{e}");
        let e = compare(&Counts::new(), &expected).unwrap_err();
        assert!(e.contains("0 words counted, 4 expected"), "{e}");
    }

    #[test]
    fn merge_adds_counts() {
        let mut total = count_words("x y");
        merge_into(&mut total, count_words("y z"));
        assert_eq!(total, count_words("x y y z"));
    }

    #[test]
    fn corpus_from_a_file() {
        let dir = std::env::temp_dir().join(format!("rill-wc-corpus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.txt");
        std::fs::write(&good, "to be or not to be\n").unwrap();
        let c = Corpus::new(TextSource::File(good.clone())).unwrap();
        assert_eq!(c.reference()["be"], 2);
        assert_eq!(c.len(), 19);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, b"ok \xff\xfe").unwrap();
        let e = Corpus::new(TextSource::File(bad)).unwrap_err();
        assert!(e.contains("not UTF-8") && e.contains("offset 3"), "{e}");
        let e = Corpus::new(TextSource::File(dir.join("missing.txt"))).unwrap_err();
        assert!(e.contains("cannot read the input file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let g = Corpus::new(TextSource::Generated {
            bytes: 1000,
            seed: 1,
        })
        .unwrap();
        assert_eq!(g, g.clone());
        assert_eq!(
            format!("{g:?}"),
            "Corpus { source: Generated { bytes: 1000, seed: 1 }, bytes: 1000, .. }"
        );
    }
}
