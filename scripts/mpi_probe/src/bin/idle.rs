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
    let wait = Duration::from_secs(2);
    // 1. blocking receive on rank 1 while rank 0 sleeps
    world.barrier();
    if rank == 0 {
        std::thread::sleep(wait);
        p.send(&[1u8][..]);
    } else {
        let (c0, t0) = (cpu_s(), Instant::now());
        let mut b = [0u8; 1];
        p.receive_into(&mut b[..]);
        println!(
            "blocking receive: {:.0}% of a core over {:.1} s",
            (cpu_s() - c0) / t0.elapsed().as_secs_f64() * 100.0,
            t0.elapsed().as_secs_f64()
        );
    }
    // 2. probe, with a sleep between looks
    for nap in [Duration::from_micros(100), Duration::from_millis(1)] {
        world.barrier();
        if rank == 0 {
            std::thread::sleep(wait);
            p.send(&[1u8][..]);
        } else {
            let (c0, t0) = (cpu_s(), Instant::now());
            while p.immediate_probe().is_none() {
                std::thread::sleep(nap);
            }
            let mut b = [0u8; 1];
            p.receive_into(&mut b[..]);
            println!(
                "probe every {nap:?}: {:.1}% of a core over {:.1} s",
                (cpu_s() - c0) / t0.elapsed().as_secs_f64() * 100.0,
                t0.elapsed().as_secs_f64()
            );
        }
    }
    world.barrier();
}
