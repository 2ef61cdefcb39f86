//! Runs the built `rill-bench` binary as a user would.

use std::process::Command;

fn rill_bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rill-bench"))
        .args(args)
        .output()
        .expect("running rill-bench")
}

#[test]
fn pipe_threads_json() {
    let out = rill_bench(&[
        "pipe",
        "--engine",
        "threads",
        "--depth",
        "4",
        "--messages",
        "1000",
        "--json",
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["bench"], "pipe");
    assert_eq!(v["engine"], "threads");
    assert_eq!(v["depth"], 4);
    assert_eq!(v["messages"], 1000);
    assert_eq!(v["capacity"], 16);
    assert_eq!(v["placement"], "rr");
    assert_eq!(v["run"], 0);
    assert_eq!(v["ops"], 3000);
    assert_eq!(v["verified"], true);
    assert!(v["workers"].as_u64().unwrap() >= 1);
    let wall_ms = v["wall_ms"].as_f64().unwrap();
    let ns_per_op = v["ns_per_op"].as_f64().unwrap();
    assert!(wall_ms > 0.0 && ns_per_op > 0.0, "{v}");
    assert!((ns_per_op * 3000.0 / 1e6 - wall_ms).abs() < 1e-6 * wall_ms.max(1.0));
    assert!(stderr.contains("[pipe] threads run 1/1"), "{stderr}");
}

#[test]
fn table_with_unwired_rill_reports_and_carries_on() {
    let out = rill_bench(&["ring", "--size", "3", "--hops", "100", "--repeat", "2"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("rill      error: rill engine not wired yet"),
        "{stdout}"
    );
    for engine in ["threads", "tokio"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(engine) && l.contains("ns/op")),
            "no {engine} row in\n{stdout}"
        );
    }
}

#[test]
fn bad_values_exit_2_without_panic() {
    for args in [
        &["pipe", "--depth", "1"][..],
        &["pipe", "--engine", "erlang"],
        &["pipe", "--depth", "3", "--messages", "18446744073709551615"],
        &["ring", "--size", "0"],
    ] {
        let out = rill_bench(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("error:"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
