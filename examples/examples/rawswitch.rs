//! Calibration: a raw corosensei switch pair on this machine.
use corosensei::{Coroutine, CoroutineResult};
fn main() {
    let n = 10_000_000u64;
    let mut c = Coroutine::new(move |y, ()| {
        for _ in 0..n {
            y.suspend(());
        }
    });
    let t0 = std::time::Instant::now();
    loop {
        if let CoroutineResult::Return(()) = c.resume(()) {
            break;
        }
    }
    println!(
        "raw corosensei resume+suspend: {:.2} ns",
        t0.elapsed().as_nanos() as f64 / n as f64
    );
    let mut v = std::collections::VecDeque::new();
    let t0 = std::time::Instant::now();
    let mut s = 0u64;
    for i in 0..n {
        v.push_back(i);
        s = s.wrapping_add(v.pop_front().unwrap());
    }
    println!(
        "vecdeque push+pop: {:.2} ns ({s})",
        t0.elapsed().as_nanos() as f64 / n as f64
    );
}
