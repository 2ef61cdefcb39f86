//! Raw MPI point-to-point between two ranks: the 8-byte round trip and
//! one-way throughput by message size, the peer figures a cross-rank rill
//! stream will be compared with.
use mpi::traits::*;
use std::time::Instant;

fn main() {
    let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Funneled).unwrap();
    let world = universe.world();
    let rank = world.rank();
    let peer = 1 - rank;
    let p = world.process_at_rank(peer);
    if rank == 0 {
        println!("threading: {threading:?}, size {}", world.size());
    }
    // Round trip of 8 bytes.
    let n = 20_000;
    let mut buf = [0u64; 1];
    world.barrier();
    let t0 = Instant::now();
    for i in 0..n {
        if rank == 0 {
            p.send(&[i as u64][..]);
            p.receive_into(&mut buf[..]);
            assert_eq!(buf[0], i as u64);
        } else {
            p.receive_into(&mut buf[..]);
            p.send(&buf[..]);
        }
    }
    if rank == 0 {
        println!(
            "round_trip 8 B: {:.0} ns",
            t0.elapsed().as_nanos() as f64 / n as f64
        );
    }
    // Throughput, one way, rank 0 -> 1, with a final ack.
    for &bytes in &[8usize, 64, 1024, 65536, 1 << 20] {
        let msgs = ((64usize << 20) / bytes).clamp(16, 200_000);
        let data = vec![7u8; bytes];
        let mut into = vec![0u8; bytes];
        world.barrier();
        let t0 = Instant::now();
        if rank == 0 {
            for _ in 0..msgs {
                p.send(&data[..]);
            }
            let mut ack = [0u8; 1];
            p.receive_into(&mut ack[..]);
            let s = t0.elapsed().as_secs_f64();
            println!(
                "throughput {bytes} B: {:.1} MB/s ({msgs} messages)",
                (bytes * msgs) as f64 / s / 1e6
            );
        } else {
            for _ in 0..msgs {
                p.receive_into(&mut into[..]);
            }
            assert!(into.iter().all(|&b| b == 7));
            p.send(&[1u8][..]);
        }
    }
}
