//! How much CPU an MPI rank burns while it waits for a message that comes
//! two seconds later: in a blocking receive, and polling with
//! `immediate_probe` with a 100 µs or a 1 ms sleep between looks. Also prints the
//! thread level the library gives when asked for `MPI_THREAD_MULTIPLE`.
use mpi::traits::*;
use std::time::{Duration, Instant};

/// CPU seconds this process has used (user and system).
fn cpu_s() -> f64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let (universe, provided) = mpi::initialize_with_threading(mpi::Threading::Multiple).unwrap();
    let world = universe.world();
    let rank = world.rank();
    let p = world.process_at_rank(1 - rank);
    if rank == 0 {
        println!("asked Multiple, provided {provided:?}");
    }
    // Rank 0 sends one byte two seconds after the barrier; rank 1 waits for
    // it with `nap` between probes (none: a blocking receive) and says what
    // the wait cost it in CPU.
    let naps = [
        None,
        Some(Duration::from_micros(100)),
        Some(Duration::from_millis(1)),
    ];
    for nap in naps {
        world.barrier();
        if rank == 0 {
            std::thread::sleep(Duration::from_secs(2));
            p.send(&[1u8][..]);
            continue;
        }
        let (c0, t0) = (cpu_s(), Instant::now());
        if let Some(nap) = nap {
            while p.immediate_probe().is_none() {
                std::thread::sleep(nap);
            }
        }
        let mut b = [0u8; 1];
        p.receive_into(&mut b[..]);
        let how = match nap {
            None => "blocking receive".to_string(),
            Some(nap) => format!("probe every {nap:?}"),
        };
        println!(
            "{how}: {:.1}% of a core over {:.1} s",
            (cpu_s() - c0) / t0.elapsed().as_secs_f64() * 100.0,
            t0.elapsed().as_secs_f64()
        );
    }
    world.barrier();
}
