//! `rill-bench`: runs LPEL's stream micro-benchmarks on rill and its peers.
//! See `rill-bench --help`.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use rill_examples::cli::{self, Cli, CliError};

/// mimalloc keeps a heap per thread and takes a block freed by another thread
/// back without a lock, so networks that hand owned values (a word's
/// `String`) from worker to worker do not serialise on the allocator. Its
/// thread-local state is read inside each (non-inlined) C call, never kept by
/// a task's code across a switch to another worker.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The allocator's name for the reports.
const ALLOCATOR: &str = if cfg!(feature = "system-alloc") {
    "system"
} else {
    "mimalloc"
};

#[cfg(feature = "mpi")]
mod mpi_auto;
#[cfg(feature = "mpi")]
mod mpi_bench;
#[cfg(feature = "mpi")]
mod mpi_des;
#[cfg(feature = "mpi")]
mod mpi_mc;
#[cfg(feature = "mpi")]
mod mpi_nets;

/// The size of the mpirun job this process is in (1 outside one), from
/// what the launcher sets before MPI starts.
fn job_ranks() -> usize {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(1)
}

/// This process's rank in its mpirun job (0 outside one).
fn job_rank() -> usize {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Under mpirun with more than one rank, the applications that run across
/// ranks run there (`rill-bench des|mc|pipe|ring ...`, rank 0 printing);
/// anything else is refused once, by rank 0, rather than run R times.
fn across_ranks(ranks: usize) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let first = args.first().map(String::as_str).unwrap_or("");
    #[cfg(feature = "mpi")]
    if ["des", "mc", "pipe", "ring", "rt", "ant", "wordcount"].contains(&first) {
        return mpi_bench::main_with(args);
    }
    if job_rank() == 0 {
        if cfg!(feature = "mpi") {
            eprintln!(
                "rill-bench: '{first}' does not run across ranks; under mpirun with {ranks} ranks \
                 rill-bench runs des, mc, pipe, ring, rt, ant, wordcount and mpi (or run it without mpirun, or with -n 1)"
            );
        } else {
            eprintln!(
                "rill-bench: running under mpirun with {ranks} ranks, but this rill-bench was built \
                 without the mpi feature; build it with `cargo build --release -p rill-examples \
                 --features mpi --bin rill-bench` (needs openmpi-bin, libopenmpi-dev and libclang-dev)"
            );
        }
    }
    ExitCode::from(2)
}

fn main() -> ExitCode {
    // `rill-bench mpi` runs under mpirun, with a CLI of its own.
    if std::env::args().nth(1).as_deref() == Some("mpi") {
        #[cfg(feature = "mpi")]
        return mpi_bench::main();
        #[cfg(not(feature = "mpi"))]
        {
            eprintln!("rill-bench mpi: this rill-bench was built without MPI; build it with `cargo build --release -p rill-examples --features mpi` (needs openmpi-bin, libopenmpi-dev and libclang-dev)");
            return ExitCode::FAILURE;
        }
    }
    let ranks = job_ranks();
    if ranks > 1 {
        return across_ranks(ranks);
    }
    rill_examples::report::set_allocator(ALLOCATOR);
    let args = Cli::parse();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut progress = io::stderr();
    match cli::run(&args, &mut out, &mut progress) {
        Ok(summary) => {
            let _ = out.flush();
            if summary.failures > 0 {
                let _ = writeln!(
                    progress,
                    "rill-bench: {} of {} runs failed",
                    summary.failures, summary.runs
                );
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        // Same format and exit status (2) as clap's own argument errors.
        Err(CliError::Params(e)) => {
            let mut cmd = Cli::command();
            cmd.build();
            let name = args.command.name();
            match cmd.find_subcommand_mut(name) {
                Some(sub) => sub.error(ErrorKind::ValueValidation, e).exit(),
                None => cmd.error(ErrorKind::ValueValidation, e).exit(),
            }
        }
        // Usually a closed pipe (`rill-bench ... | head`): nothing more to say.
        Err(CliError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(1),
        Err(CliError::Io(e)) => {
            let _ = writeln!(progress, "rill-bench: writing the output failed: {e}");
            ExitCode::from(1)
        }
    }
}
