//! The `rill-bench` command line: its arguments ([`args`]) and [`run`]
//! ([`dispatch`]), which turns them into benchmark runs on each chosen engine
//! and reports them.

pub mod args;
pub mod dispatch;

pub use args::*;
pub use dispatch::{run, CliError, Summary};
