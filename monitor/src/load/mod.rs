//! Loading a run: its log files read once, their headers checked, each
//! scanned into totals, into the [`RunLog`](crate::RunLog) model. Imports
//! only `render/` from outside; within, lowest first:
//!
//! | module | what |
//! |--------|------|
//! | `scan` | the record scanner ([`Scanner`](crate::scan::Scanner)) and a period's first read |
//! | `ids` | `IdMap` (a hash map keyed by ids) and `IdIndex` (ids to dense indices) |
//! | `bytes` | a log file's bytes, mapped or read, and the release of pages a pass has read |
//! | `chunks` | the chunk index of a log: stretches of periods a pass resumes at or skips |
//! | `groups` | task names folded into groups ([`group_of`](crate::group_of)) |
//! | `raw_latency` | what the latency replay leaves on a run (data) |
//! | `samples` | what a sample-mode run's sampler recorded ([`Sampled`](crate::Sampled)) |
//! | `files` | finding a run's log files, reading one with its header checked |
//! | `pool` | a small thread pool |
//! | `ranks/` | a run across ranks: its ranks' logs read, their clocks and ids aligned; `ranks/model` holds what the run keeps of them ([`Ranks`](crate::Ranks)) |
//! | `worker_log` | one worker's log as loaded ([`WorkerLog`](crate::WorkerLog)) |
//! | `model` | the run ([`RunLog`](crate::RunLog)), its tasks and streams |
//! | `aggregate` | a file's totals, record by record |
//! | `scan_file` | the one scan of a file, feeding a consumer of its periods (`PeriodFeed`) |
//! | `merge_files` | the scans merged into a run |
//! | `sampled` | sample mode's estimates from the sampler's windows |
//! | `open` | the loader ([`LoadOptions`](crate::LoadOptions)), with a pass beside its scans (`Beside`) that it does not name |
//!
//! The model is a leaf: `model` and `worker_log` import only data modules
//! of this layer (`raw_latency`, `samples`, `ranks/model`, `bytes`,
//! `chunks`, the scanner, a file's label), none of which imports the model
//! back, and name no pass.

pub(crate) mod aggregate;
pub(crate) mod bytes;
pub(crate) mod chunks;
pub(crate) mod files;
pub(crate) mod groups;
pub(crate) mod ids;
pub(crate) mod merge_files;
pub(crate) mod model;
pub(crate) mod open;
pub(crate) mod pool;
pub(crate) mod ranks;
pub(crate) mod raw_latency;
pub(crate) mod sampled;
pub(crate) mod samples;
pub mod scan;
pub(crate) mod scan_file;
pub(crate) mod worker_log;
