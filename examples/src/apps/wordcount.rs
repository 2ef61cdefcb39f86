//! Word count as a stream network on rill.
//!
//! ```text
//!                        ┌→ wc/count/0 ─┐
//! wc/source → wc/split ──┼→ wc/count/1 ─┼→ wc/merge
//!                        └→ …           ┘
//! ```
//!
//! - `wc/source` sends the text in chunks ([`kernels::chunks`]), each a new
//!   `String`.
//! - `wc/split` cuts each chunk into words and sends them in batches of
//!   [`WordcountParams::batch`] words (`Vec<String>`) to the counter each
//!   word's hash names ([`kernels::Batcher`]), then the batches not yet full.
//! - `wc/count/k` counts its words in a `HashMap<String, u64>` and, when its
//!   input ends, sends the map to the merger.
//! - `wc/merge` polls the counters' streams ([`rill::poll`]) and adds up the
//!   maps as they come.
//!
//! Task creation order (for round-robin): source, split, counters, merge.
//! Manual mapping: see [`manual_table`]. Parts: the tasks in that order cut
//! into W blocks.

use anyhow::Result;
use rill::{ManualTable, MonitorConfig, Runtime};

use super::{mapping_for, run_timed, NetRun, PollSet, Slot};
use crate::bench::WordcountParams;
use crate::kernels::wordcount::{self as kernels, Counts, WordsAs};
use rill::{Reader, Writer};

/// Capacity of the streams that carry the counters' final maps.
const RESULT_CAPACITY: usize = 1;

/// The placement table of `manual` mapping on `workers` workers: the
/// splitter, the heaviest stage (about two counters' work in a monitored
/// run), on the last worker; source and merger on worker 0. On 2 workers
/// counter 1 joins the splitter and the others stay on worker 0; on more,
/// the counters go round the workers before the last.
pub fn manual_table(counters: usize, workers: usize) -> ManualTable {
    let w = workers.max(1);
    let mut t = ManualTable::new()
        .with("wc/source", 0)
        .with("wc/split", w - 1)
        .with("wc/merge", 0);
    for k in 0..counters {
        let on = match w {
            1 => 0,
            2 => usize::from(k == 1),
            _ => k % (w - 1),
        };
        t.insert(format!("wc/count/{k}"), on);
    }
    t
}

/// The task names in network order, the list `parts` mapping cuts.
pub fn parts(counters: usize) -> Vec<String> {
    let mut v = vec!["wc/source".to_string(), "wc/split".to_string()];
    v.extend((0..counters).map(|k| format!("wc/count/{k}")));
    v.push("wc/merge".into());
    v
}

/// Runs the word count network once; the value is the merged counts. `wall`
/// is the time of `Runtime::run`; the counts are not checked here.
pub fn run(p: &WordcountParams, mon: &MonitorConfig) -> Result<NetRun<Counts>> {
    let k = p.counters;
    let mapping = mapping_for(&p.mapping, manual_table(k, p.workers), parts(k))?;
    let mut rt = Runtime::builder()
        .workers(p.workers)
        .mapping(mapping)
        .capacity(p.capacity)
        .monitor(mon.clone())
        .profile_planner(rill_monitor::profile_planner)
        .build()?;

    let (k, batch) = (p.counters, p.batch);
    let mut results = match p.words {
        WordsAs::Owned => {
            spawn_net::<kernels::OwnedWords>(&mut rt, p, move |mut chunks_in, mut to| {
                let mut batcher = kernels::Batcher::new(k, batch);
                while let Some(chunk) = chunks_in.read() {
                    for word in chunk.split_whitespace() {
                        if let Some((c, full)) = batcher.push(word) {
                            if to[c].write(full).is_err() {
                                return;
                            }
                        }
                    }
                }
                for (c, rest) in batcher.finish() {
                    if to[c].write(rest).is_err() {
                        return;
                    }
                }
            })
        }
        WordsAs::Slices => {
            spawn_net::<kernels::SliceWords>(&mut rt, p, move |mut chunks_in, mut to| {
                let mut batcher = kernels::SliceBatcher::new(k, batch);
                let mut out = Vec::new();
                while let Some(chunk) = chunks_in.read() {
                    batcher.split(&chunk, &mut out);
                    for (c, b) in out.drain(..) {
                        if to[c].write(b).is_err() {
                            return;
                        }
                    }
                }
            })
        }
    };

    let slot = Slot::default();
    let result = slot.clone();
    rt.spawn("wc/merge", move || {
        let mut total = Counts::new();
        while let Some((_, part)) = results.next() {
            kernels::merge_into(&mut total, part);
        }
        result.put(total);
    });
    run_timed(rt, &slot, "word count")
}

/// The source, the splitter `split` (given the chunks' reader and a writer
/// per counter) and the counters, with messages as `W` makes them; returns
/// the counters' result streams.
fn spawn_net<W: kernels::Words>(
    rt: &mut Runtime,
    p: &WordcountParams,
    split: impl FnOnce(Reader<W::Chunk>, Vec<Writer<W::Batch>>) + Send + 'static,
) -> PollSet<Counts> {
    let (mut to_split, chunks_in) = rill::stream::<W::Chunk>(p.capacity);
    let text = p.corpus.text().clone();
    let chunk = p.chunk;
    rt.spawn("wc/source", move || {
        for c in kernels::chunks(&text, chunk) {
            if to_split.write(W::chunk(c)).is_err() {
                return;
            }
        }
    });

    let (to_counters, counter_ins): (Vec<_>, Vec<_>) = (0..p.counters)
        .map(|_| rill::stream::<W::Batch>(p.capacity))
        .unzip();
    rt.spawn("wc/split", move || split(chunks_in, to_counters));

    let mut results = PollSet::new();
    for (i, mut words_in) in counter_ins.into_iter().enumerate() {
        let (mut out, r) = rill::stream::<Counts>(RESULT_CAPACITY);
        results.push(r);
        rt.spawn(format!("wc/count/{i}"), move || {
            let mut counts = Counts::new();
            while let Some(words) = words_in.read() {
                W::count(&mut counts, words);
            }
            let _ = out.write(counts);
        });
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::MappingChoice;
    use crate::kernels::wordcount::{Corpus, TextSource};

    fn params(workers: usize) -> WordcountParams {
        let corpus = Corpus::new(TextSource::Generated {
            bytes: 60_000,
            seed: 5,
        })
        .unwrap();
        WordcountParams {
            batch: 50,
            counters: 3,
            chunk: 4096,
            ..WordcountParams::new(corpus, workers)
        }
    }

    #[test]
    fn counts_match_the_sequential_count_under_every_mapping() {
        for m in ["rr", "manual", "parts", "steal"] {
            for words in [WordsAs::Owned, WordsAs::Slices] {
                let p = WordcountParams {
                    mapping: m.parse().unwrap(),
                    words,
                    ..params(2)
                };
                let run = run(&p, &MonitorConfig::off()).unwrap();
                p.verify(&run.value).unwrap();
                assert_eq!(run.stats.tasks_created, 6, "{m}");
            }
        }
    }

    #[test]
    fn one_word_per_message_and_one_counter() {
        let p = WordcountParams {
            batch: 1,
            counters: 1,
            chunk: 1,
            capacity: 1,
            mapping: MappingChoice::Rr,
            ..params(1)
        };
        let run = run(&p, &MonitorConfig::off()).unwrap();
        p.verify(&run.value).unwrap();
    }

    #[test]
    fn manual_table_and_parts() {
        let t = manual_table(4, 2);
        assert_eq!(t.lookup("wc/split"), Some(1));
        assert_eq!(t.lookup("wc/count/0"), Some(0));
        assert_eq!(t.lookup("wc/count/1"), Some(1));
        assert_eq!(t.lookup("wc/count/3"), Some(0));
        let t = manual_table(12, 3);
        assert_eq!(t.lookup("wc/split"), Some(2));
        assert_eq!(t.lookup("wc/count/10"), Some(0));
        assert_eq!(t.lookup("wc/count/11"), Some(1));
        assert_eq!(manual_table(4, 1).lookup("wc/split"), Some(0));
        assert_eq!(
            parts(2),
            [
                "wc/source",
                "wc/split",
                "wc/count/0",
                "wc/count/1",
                "wc/merge"
            ]
        );
    }
}
