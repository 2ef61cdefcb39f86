//! Word count as a stream network, on rill and on OS threads.
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
//! - `wc/merge` reads the counters' streams as one ([`Net::merge`]: on rill
//!   a [`rill::PollSet`]) and adds up the maps as they come.
//!
//! The network is written once over [`Net`]: rill runs it as [`run`], the
//! OS-threads peer as [`network`]`::<ThreadNet>`. Each task is handed its
//! channel ends ([`Net::spawn_with`]), so that rill's default mapping cuts
//! the network's stream graph (on 2 workers: source, splitter and counter
//! 0 | the other counters and the merger).
//!
//! Task creation order (for round-robin): source, split, counters, merge.
//! Manual mapping: see [`manual_table`]. Parts: the tasks in that order cut
//! into W blocks.

use anyhow::Result;
use rill::{ManualTable, MonitorConfig};

use super::NetRun;
use crate::bench::WordcountParams;
use crate::kernels::wordcount::{self as kernels, Counts, OwnedWords, SliceWords, WordsAs};
use crate::net::{Finished, Net, NetSpec, RillNet};

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

/// Runs the word count once on rill under `mon`; the value is the merged
/// counts. `wall` is the time of `Runtime::run`; the counts are not checked
/// here.
pub fn run(p: &WordcountParams, mon: &MonitorConfig) -> Result<NetRun<Counts>> {
    let (value, run) = network::<RillNet>(p, Some(mon.flags), mon.dir.clone())?;
    let stats = run.stats.expect("a rill run has statistics");
    Ok(NetRun {
        value,
        wall: run.wall,
        stats,
    })
}

/// The word count network on engine `N` (see the module doc), monitored
/// as `monitor` says into `logs` (rill only); its merged counts and the
/// run.
pub fn network<N: Net>(
    p: &WordcountParams,
    monitor: Option<rill::MonitorFlags>,
    logs: Option<std::path::PathBuf>,
) -> Result<(Counts, Finished)> {
    let names = parts(p.counters);
    let mut net = N::build(&NetSpec {
        bench: "wordcount",
        workers: p.opts.workers,
        capacity: p.capacity,
        mapping: Some(&p.mapping),
        names: &names,
        manual: manual_table(p.counters, p.opts.workers),
        monitor,
        logs,
    })?;
    let merged = match p.words {
        WordsAs::Owned => spawn_net::<N, OwnedWords>(&mut net, p)?,
        WordsAs::Slices => spawn_net::<N, SliceWords>(&mut net, p)?,
    };
    let run = net.finish()?;
    Ok((merged.take("wc/merge")?, run))
}

/// The tasks, with messages as `W` makes them; the merger's slot.
fn spawn_net<N: Net, W: kernels::Words>(
    net: &mut N,
    p: &WordcountParams,
) -> Result<crate::net::Slot<Counts>> {
    let (k, batch, chunk) = (p.counters, p.batch, p.chunk);
    let (to_split, chunks_in) = N::channel::<W::Chunk>(p.capacity);
    let text = p.corpus.text().clone();
    // Each task is handed its ends, so that rill sees the network before
    // it places the tasks.
    net.spawn_with("wc/source".into(), 0, to_split, move |mut to_split| {
        for c in kernels::chunks(&text, chunk) {
            if !N::send(&mut to_split, W::chunk(c)) {
                return;
            }
        }
    })?;
    let (to_counters, counter_ins): (Vec<_>, Vec<_>) =
        (0..k).map(|_| N::channel::<W::Batch>(p.capacity)).unzip();
    net.spawn_with(
        "wc/split".into(),
        0,
        (chunks_in, to_counters),
        move |(mut chunks_in, mut to_counters)| {
            let mut s = W::splitter(k, batch);
            let mut emit = |c: usize, b| N::send(&mut to_counters[c], b);
            while let Some(chunk) = N::recv(&mut chunks_in) {
                if !W::split(&mut s, &chunk, &mut emit) {
                    return;
                }
            }
            W::finish(s, emit);
        },
    )?;
    let mut results = Vec::with_capacity(k);
    for (i, words_in) in counter_ins.into_iter().enumerate() {
        let (out, r) = N::channel::<Counts>(RESULT_CAPACITY);
        results.push(r);
        net.spawn_with(
            format!("wc/count/{i}"),
            0,
            (words_in, out),
            move |(mut words_in, mut out)| {
                let mut counts = Counts::new();
                while let Some(words) = N::recv(&mut words_in) {
                    W::count(&mut counts, words);
                }
                N::send(&mut out, counts);
            },
        )?;
    }
    net.spawn_value_with("wc/merge".into(), 0, results, move |results| {
        let mut total = Counts::new();
        for part in N::merge(results) {
            kernels::merge_into(&mut total, part);
        }
        total
    })
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
