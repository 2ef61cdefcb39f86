//! Runs the built `rill-bench` binary as a user would: `--help`, argument
//! errors (assert_cmd: exit status 2, clap's one error, no panic), and runs
//! checked on what they print.

use std::process::Command;

use assert_cmd::assert::Assert;
use predicates::prelude::*;

/// A run whose output a test reads field by field (std's `Command`: the
/// test parses stdout and stderr itself, which assert_cmd would not shorten).
fn rill_bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rill-bench"))
        .args(args)
        .output()
        .expect("running rill-bench")
}

/// `rill-bench args`, run.
fn bench(args: &[&str]) -> Assert {
    assert_cmd::cargo::cargo_bin_cmd!("rill-bench")
        .args(args)
        .assert()
}

/// An argument error as rill-bench reports it (clap's format, for the
/// values clap parses and for those rill-bench checks itself): exit status
/// 2, nothing on stdout, and on stderr the error (`error: ...` up to the
/// first blank line: one line, or the line and the missing arguments under
/// it) holding `says`, then only clap's hints (the usage, `--help`), no
/// panic.
fn usage_error(args: &[&str], says: &str) {
    let says = says.to_owned();
    bench(args)
        .code(2)
        .stdout("")
        .stderr(predicate::function(move |e: &str| {
            let (error, rest) = e.split_once("\n\n").unwrap_or((e, ""));
            error.starts_with("error: ")
                && error.contains(says.as_str())
                && !rest.contains("error")
                && rest.contains("--help")
        }))
        .stderr(predicate::str::contains("panicked").not());
}

/// `--help` exits 0 and lists every command, each of whose own `--help`
/// has its usage line; `-V` names the version.
#[test]
fn help_names_every_command() {
    let a = bench(&["--help"]).success().stderr("");
    let help = String::from_utf8(a.get_output().stdout.clone()).unwrap();
    assert!(help.contains("Usage: rill-bench <COMMAND>"), "{help}");
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    for cmd in [
        "pipe",
        "ring",
        "micro",
        "wordcount",
        "des",
        "mc",
        "all",
        "ab",
    ] {
        assert!(commands.contains(&cmd), "--help lacks {cmd}: {commands:?}");
    }
    for cmd in &commands {
        bench(&[cmd, "--help"])
            .success()
            .stdout(predicate::str::contains(format!("Usage: rill-bench {cmd}")));
    }
    bench(&["-V"])
        .success()
        .stdout(predicate::str::starts_with("rill-bench "));
}

/// Input a user gets wrong: exit status 2 with the one error, no panic.
#[test]
fn bad_input_exits_2_with_one_error() {
    usage_error(&["frobnicate"], "unrecognized subcommand 'frobnicate'");
    usage_error(&["pipe", "--depth", "x"], "invalid value 'x' for '--depth");
    usage_error(&["pipe", "--frob"], "unexpected argument '--frob'");
    for app in ["pipe", "ring", "mc", "des", "wordcount"] {
        usage_error(
            &[app, "--mapping", "/nonexistent.map"],
            "no such mapping file",
        );
    }
    usage_error(&["pipe", "--monitor", "loud"], "unknown monitoring flag");
    usage_error(&["des", "--key"], "a value is required for '--key");
    // No command: the usage on stderr, status 2.
    bench(&[])
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("Usage: rill-bench <COMMAND>"));
    // Under mpirun with several ranks, a command that does not run across
    // ranks is refused once, in one line.
    assert_cmd::cargo::cargo_bin_cmd!("rill-bench")
        .args(["micro"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .env("OMPI_COMM_WORLD_RANK", "0")
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains("ranks"))
        .stderr(predicate::function(|e: &str| {
            e.trim_end().lines().count() == 1
        }));
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
fn table_has_every_engine() {
    let out = rill_bench(&["ring", "--size", "3", "--hops", "100", "--repeat", "2"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for engine in ["rill", "threads", "tokio"] {
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
    for (args, says) in [
        (&["pipe", "--depth", "1"][..], "1 is not in 2.."),
        (&["pipe", "--engine", "erlang"], "invalid value 'erlang'"),
        (
            &["pipe", "--depth", "3", "--messages", "18446744073709551615"],
            "more channel hops than fit",
        ),
        (&["ring", "--size", "0"], "0 is not in 2.."),
    ] {
        usage_error(args, says);
    }
}

/// The allocator this build of rill-bench reports.
fn allocator() -> &'static str {
    if cfg!(feature = "system-alloc") {
        "system"
    } else {
        "mimalloc"
    }
}

#[test]
fn wordcount_verifies_on_every_engine() {
    let out = rill_bench(&[
        "wordcount",
        "--bytes",
        "200000",
        "--workers",
        "2",
        "--batch",
        "100",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = json_lines(&out.stdout);
    let engines: Vec<&str> = lines
        .iter()
        .map(|v| v["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["rill", "threads", "tokio", "sequential"]);
    for v in &lines {
        assert_eq!(v["bench"], "wordcount");
        assert_eq!(v["verified"], true, "{v}");
        assert_eq!(v["allocator"], allocator());
        assert_eq!(v["bytes"], 200_000);
        assert_eq!(v["input"], "generated");
        assert_eq!(v["batch"], 100);
        assert_eq!(v["counters"], 4);
        assert_eq!(v["workers"], 2);
        assert_eq!(v["mapping"], "adaptive");
        assert!(v["wall_ms"].as_f64().unwrap() > 0.0, "{v}");
        // Every engine counted the same words.
        assert_eq!(v["words"], lines[0]["words"]);
        assert_eq!(v["distinct"], lines[0]["distinct"]);
        assert_eq!(v["ops"], v["words"]);
    }
    assert!(lines[0]["words"].as_u64().unwrap() > 20_000, "{}", lines[0]);
    assert!(
        stderr.contains("[wordcount] sequential run 1/1"),
        "{stderr}"
    );
}

#[test]
fn wordcount_of_a_file_as_a_table() {
    let dir = std::env::temp_dir().join(format!("rill-cli-wc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("text.txt");
    std::fs::write(
        &text,
        "It was the best of times, it was the worst of times,\n\
         it was the age of wisdom, it was the age of foolishness\n\tça  va\n",
    )
    .unwrap();
    let out = rill_bench(&[
        "wordcount",
        "--input",
        text.to_str().unwrap(),
        "--batch",
        "1",
        "--counters",
        "3",
        "--chunk",
        "8",
        "--mapping",
        "manual",
        "--workers",
        "2",
        "--repeat",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.starts_with(&format!("wordcount  input={}", text.display())),
        "{stdout}"
    );
    assert!(stdout.contains("mapping=manual"), "{stdout}");
    assert!(stdout.contains("(2 runs per engine, allocator"), "{stdout}");
    for engine in ["rill", "threads", "tokio", "sequential"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(engine) && l.contains(" ms ")),
            "no {engine} row in\n{stdout}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wordcount_argument_errors_exit_2() {
    let dir = std::env::temp_dir().join(format!("rill-cli-wc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join("binary.dat");
    std::fs::write(&binary, b"caf\xe9 au lait").unwrap();
    for (args, says) in [
        (&["wordcount", "--batch", "0"][..], "0 is not in 1.."),
        (&["wordcount", "--counters", "0"], "0 is not in 1.."),
        (&["wordcount", "--bytes", "lots"], "invalid digit"),
        (
            &["wordcount", "--input", "/no/such/words.txt"],
            "cannot read the input file /no/such/words.txt",
        ),
        (
            &["wordcount", "--input", binary.to_str().unwrap()],
            "is not UTF-8 text",
        ),
        (
            &["wordcount", "--input", "x.txt", "--bytes", "100"],
            "cannot be used with",
        ),
        (
            &["wordcount", "--mapping", "sideways"],
            "no such mapping file",
        ),
        (&["wordcount", "--engine", "python"], "invalid value"),
        (
            &["pipe", "--engine", "sequential"],
            "pipe has no sequential engine",
        ),
    ] {
        usage_error(args, says);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

fn json_lines(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn apps_json_have_their_fields() {
    for (args, fields) in [
        (
            &["des", "--size", "2000", "--batch", "16"][..],
            &["bytes", "output_fnv"][..],
        ),
        (
            &["mc", "--paths", "2000", "--steps", "4"],
            &[
                "call_price",
                "put_price",
                "std_err",
                "closed_form_call",
                "closed_form_put",
            ],
        ),
        (
            &["rt", "--scenes", "3", "--width", "16", "--height", "12"],
            &["checksum"],
        ),
        (
            &["ant", "--jobs", "20", "--ants", "3", "--iterations", "2"],
            &["best_cost", "edd_cost"],
        ),
    ] {
        let mut all = args.to_vec();
        all.extend([
            "--workers",
            "2",
            "--mapping",
            "manual",
            "--json",
            "--repeat",
            "2",
        ]);
        let out = rill_bench(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let lines = json_lines(&out.stdout);
        assert_eq!(lines.len(), 2, "{args:?}");
        for v in &lines {
            assert_eq!(v["bench"], args[0]);
            assert_eq!(v["workers"], 2);
            assert_eq!(v["mapping"], "manual");
            assert_eq!(v["monitor"], "off");
            assert_eq!(v["verified"], true, "{v}");
            assert!(v["wall_ms"].as_f64().unwrap() > 0.0);
            for f in fields {
                assert!(v.get(*f).is_some(), "{args:?} lacks {f}: {v}");
            }
        }
        // Same result on both runs.
        for f in fields {
            assert_eq!(lines[0][*f], lines[1][*f], "{args:?} {f}");
        }
    }
}

#[test]
fn app_table_output_and_mapping_file() {
    let map = concat!(env!("CARGO_MANIFEST_DIR"), "/mappings/rt.map");
    let out = rill_bench(&[
        "rt",
        "--scenes",
        "2",
        "--width",
        "8",
        "--height",
        "8",
        "--workers",
        "2",
        "--mapping",
        map,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("verified"), "{stdout}");
    assert!(stdout.contains(&format!("mapping={map}")), "{stdout}");
}

#[test]
fn apps_take_every_monitor_mode() {
    let dir = std::env::temp_dir().join(format!("rill-cli-app-mon-{}", std::process::id()));
    for (mode, shown) in [("all", "all"), ("sched,msg", "scheduler,message")] {
        let out = rill_bench(&[
            "rt",
            "--scenes",
            "1",
            "--width",
            "8",
            "--height",
            "8",
            "--workers",
            "2",
            "--monitor",
            mode,
            "--logs",
            dir.to_str().unwrap(),
            "--json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        let lines = json_lines(&out.stdout);
        assert_eq!(lines[0]["monitor"], shown, "{}", lines[0]);
        assert!(dir.join("worker-0.rlog").exists(), "{mode}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn monitored_runs_write_a_report_in_every_mode() {
    let base = std::env::temp_dir().join(format!("rill-cli-report-{}", std::process::id()));
    for (mode, lacks) in [
        ("full", None),
        (
            "map,worker,task,stream",
            Some("per-input latency and jitter: they need the order"),
        ),
        (
            "sample",
            Some("single dispatches: sample mode records none"),
        ),
    ] {
        let dir = base.join(mode.replace(',', "-"));
        let out = rill_bench(&[
            "mc",
            "--paths",
            "4000",
            "--workers",
            "2",
            "--monitor",
            mode,
            "--logs",
            dir.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stderr}");
        let page = std::fs::read_to_string(dir.join("report.html"))
            .unwrap_or_else(|e| panic!("{mode}: no report.html: {e}"));
        for id in [
            "findings",
            "summary",
            "utilisation",
            "timeline",
            "evolution",
            "waits",
            "groups",
            "mapping",
            "logs",
        ] {
            assert!(
                page.contains(&format!("<section id=\"{id}\">")),
                "{mode}: no {id}"
            );
        }
        assert!(page.contains("class=\"verdict\""), "{mode}");
        assert!(page.contains("mc/star/*/step/*"), "{mode}: groups");
        assert!(
            page.contains("rill-bench mc --workers 2 --mapping proposed-2.map"),
            "{mode}: the command"
        );
        assert!(
            !page.contains("<script") && !page.contains("src="),
            "{mode}"
        );
        match lacks {
            None => assert!(!page.contains("Not shown"), "{mode}"),
            Some(line) => assert!(page.contains(line), "{mode}: {line:?}"),
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn des_files_round_trip_and_wrong_key_exits_1() {
    let dir = std::env::temp_dir().join(format!("rill-cli-des-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plain = dir.join("plain.bin");
    let cipher = dir.join("cipher.bin");
    let back = dir.join("back.bin");
    std::fs::write(&plain, b"attack at dawn, bring coffee").unwrap();
    let p = |x: &std::path::Path| x.to_str().unwrap().to_string();
    let key = "0E329232EA6D0D73";
    let out = rill_bench(&[
        "des",
        "--input",
        &p(&plain),
        "--output",
        &p(&cipher),
        "--key",
        key,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = rill_bench(&[
        "des",
        "--decrypt",
        "--input",
        &p(&cipher),
        "--output",
        &p(&back),
        "--key",
        key,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&plain).unwrap()
    );
    // The wrong key gives bad padding: a run that does not verify.
    let out = rill_bench(&["des", "--decrypt", "--input", &p(&cipher)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("NOT VERIFIED"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn app_argument_errors_exit_2() {
    for (args, says) in [
        (&["des", "--key", "12345"][..], "16 hex digits"),
        (&["des", "--key", "0123456789abcdeg"], "non-hex"),
        (
            &["des", "--input", "/no/such/input/file"],
            "/no/such/input/file",
        ),
        (&["mc", "--paths", "0"], "0 is not in 1.."),
        (&["mc", "--vol", "-0.2"], "vol must be positive"),
        (&["rt", "--scenes", "0"], "0 is not in 1.."),
        (&["ant", "--iterations", "0"], "0 is not in 1.."),
        (&["mc", "--mapping", "nowhere.map"], "no such mapping file"),
        (&["mc", "--pilot", "0"], "0 is not in 1..=1000"),
        (
            &["des", "--monitor", "tasks"],
            "unknown monitoring flag `tasks`",
        ),
        (&["compare", "mc", "--mapping", "rr"], "leave out --mapping"),
        (&["all", "--repeat", "0"], "0 is not in 1.."),
    ] {
        usage_error(args, says);
    }
}

#[test]
fn compare_json_ends_with_speedup() {
    let out = rill_bench(&[
        "compare",
        "mc",
        "--paths",
        "500",
        "--steps",
        "3",
        "--workers",
        "2",
        "--repeat",
        "2",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 5);
    let maps: Vec<&str> = lines[..4]
        .iter()
        .map(|v| v["mapping"].as_str().unwrap())
        .collect();
    assert_eq!(maps, ["rr", "manual", "rr", "manual"]);
    assert!(lines[4]["speedup"].as_f64().unwrap() > 0.0, "{}", lines[4]);
    // The table form.
    let out = rill_bench(&[
        "compare",
        "ant",
        "--jobs",
        "10",
        "--ants",
        "2",
        "--iterations",
        "1",
        "--repeat",
        "1",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("speedup (rr median / manual median)"),
        "{stdout}"
    );
}

#[test]
fn all_quick_writes_its_report() {
    let dir = std::env::temp_dir().join(format!("rill-cli-all-{}", std::process::id()));
    let out = rill_bench(&["all", "--quick", "--out", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for bench in [
        "des",
        "mc",
        "rt",
        "ant",
        "pipe",
        "ring",
        "wordcount",
        "sieve",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(bench)),
            "no {bench} in {stdout}"
        );
    }
    assert!(stderr.contains("[all 1/39]"), "{stderr}");
    assert!(
        stdout.contains(&format!("allocator {}", allocator())),
        "{stdout}"
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let rows = results["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 39);
    assert_eq!(results["failures"], 0);
    assert_eq!(results["allocator"], allocator());
    let wc: Vec<&str> = rows
        .iter()
        .filter(|r| r["bench"] == "wordcount")
        .map(|r| r["engine"].as_str().unwrap())
        .collect();
    // Words as owned strings, then as slices of shared chunks.
    assert_eq!(
        wc,
        [
            "rill",
            "threads",
            "tokio",
            "sequential",
            "rill",
            "threads",
            "tokio",
            "sequential"
        ]
    );
    let words: Vec<&str> = rows
        .iter()
        .filter(|r| r["bench"] == "wordcount" && r["engine"] == "rill")
        .map(|r| r["placement"].as_str().unwrap())
        .collect();
    assert_eq!(words, ["owned", "slices"]);
    // The rows where every hand-off crosses workers stand beside tokio.
    for bench in ["pipe", "ring"] {
        let rr: Vec<&str> = rows
            .iter()
            .filter(|r| r["bench"] == bench && r["placement"] == "rr")
            .map(|r| r["engine"].as_str().unwrap())
            .collect();
        assert!(
            rr.contains(&"rill") && rr.contains(&"tokio"),
            "{bench} rr rows: {rr:?}"
        );
    }
    assert!(rows
        .iter()
        .filter(|r| r["bench"] == "wordcount")
        .all(|r| r["verified"] == true));
    // The sieve on rill under the default (adaptive), under rr beside its
    // peers, then on rill under parts and manual.
    let sieve: Vec<(&str, &str, bool)> = rows
        .iter()
        .filter(|r| r["bench"] == "sieve")
        .map(|r| {
            (
                r["engine"].as_str().unwrap(),
                r["placement"].as_str().unwrap(),
                r["verified"] == true,
            )
        })
        .collect();
    assert_eq!(
        sieve,
        [
            ("rill", "adaptive", true),
            ("rill", "rr", true),
            ("threads", "rr", true),
            ("tokio", "rr", true),
            ("rill", "parts", true),
            ("rill", "manual", true),
        ]
    );
    let runs = results["runs"].as_array().unwrap();
    let sieve_runs: Vec<&serde_json::Value> =
        runs.iter().filter(|r| r["bench"] == "sieve").collect();
    assert_eq!(sieve_runs.len(), 6);
    for r in sieve_runs {
        assert!(r["mapping"].is_string() && r["wall_ms"].is_f64(), "{r}");
        assert_eq!(
            (&r["verified"], &r["primes"]),
            (&true.into(), &100.into()),
            "{r}"
        );
    }
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.contains("<table>"), "{html}");
    assert!(
        html.contains("<td>wordcount owned</td><td>sequential</td>")
            && html.contains("<td>wordcount slices</td><td>sequential</td>"),
        "{html}"
    );
    // Monitored rows link their rill-mon report, summary and timeline,
    // which exist.
    assert!(
        html.contains("timeline.svg") && html.contains("summary.txt"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"logs/mc-rr/report.html\">report</a>"),
        "{html}"
    );
    for app in ["des", "mc", "rt", "ant"] {
        for m in ["rr", "manual"] {
            let logs = dir.join("logs").join(format!("{app}-{m}"));
            for f in [
                "summary.txt",
                "summary.json",
                "timeline.svg",
                "report.html",
                "worker-0.rlog",
            ] {
                assert!(logs.join(f).exists(), "missing {}", logs.join(f).display());
            }
            let page = std::fs::read_to_string(logs.join("report.html")).unwrap();
            assert!(
                page.contains("<section id=\"mapping\">") && page.contains("class=\"verdict\""),
                "{app}-{m}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sieve_json_on_every_engine() {
    let out = rill_bench(&[
        "sieve",
        "--primes",
        "100",
        "--workers",
        "2",
        "--mapping",
        "manual",
        "--json",
    ]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let lines = json_lines(stdout.as_bytes());
    let engines: Vec<&str> = lines
        .iter()
        .map(|v| v["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["rill", "threads", "tokio"]);
    for v in &lines {
        assert_eq!(v["bench"], "sieve");
        assert_eq!(v["verified"], true, "{v}");
        assert_eq!(v["primes"], 100);
        assert_eq!(v["capacity"], 16);
        assert_eq!(v["workers"], 2);
        assert_eq!(v["mapping"], "manual");
        assert_eq!(v["ops"], 100);
        assert_eq!(v["largest"], 541);
        assert!(v["wall_ms"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["ns_per_op"].as_f64().unwrap() > 0.0, "{v}");
    }
    // A filter per prime, the generator and the sink.
    assert_eq!(lines[0]["tasks"], 102);
    assert_eq!(lines[1]["threads"], 102);
    assert_eq!(lines[2]["tasks"], 102);
    usage_error(&["sieve", "--primes", "0"], "--primes");
}

#[test]
fn micro_rows_take_monitor_and_logs() {
    use rill_log::{read_log, EndReason, Record};
    let dir = std::env::temp_dir().join(format!("rill-cli-micro-{}", std::process::id()));
    let out = rill_bench(&[
        "micro",
        "--engine",
        "rill",
        "--rows",
        "cross_worker_roundtrip,idle_cpu",
        "--monitor",
        "full",
        "--logs",
        dir.to_str().unwrap(),
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 2, "{rows:?}");
    for v in &rows {
        assert_eq!(v["monitor"], "full", "{v}");
        assert!(v["log_bytes"].as_u64().unwrap() > 0, "{v}");
    }
    // The round trip's ping task read every pong in its recorded periods.
    let mut ping = None;
    let mut reads = 0u64;
    for w in 0..2 {
        let log = read_log(
            dir.join("cross_worker_roundtrip")
                .join(format!("worker-{w}.rlog")),
        )
        .unwrap();
        assert_eq!(log.end, EndReason::Clean);
        for r in &log.records {
            match r {
                Record::TaskAssign { task, name, .. } if name == "micro/ping" => ping = Some(*task),
                Record::Period { task, io, .. } if Some(*task) == ping => {
                    reads += io.iter().map(|s| u64::from(s.reads)).sum::<u64>()
                }
                _ => {}
            }
        }
    }
    assert!(ping.is_some(), "no micro/ping in the logs");
    assert_eq!(reads, 100_000, "messages read by micro/ping in its periods");
    assert!(dir.join("idle_cpu").join("worker-1.rlog").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `ab` with two copies of one build: a Markdown table of every row and
/// build, the second build's change against the first.
#[test]
fn ab_compares_builds_in_markdown() {
    let exe = env!("CARGO_BIN_EXE_rill-bench");
    let (a, b) = (format!("a={exe}"), format!("b={exe}"));
    let out = rill_bench(&[
        "ab",
        "--build",
        &a,
        "--build",
        &b,
        "--rows",
        "yield,handoff",
        "--rounds",
        "2",
        "--",
        "--ops",
        "1000",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("Machine: "), "{stdout}");
    assert!(stdout.contains("cores available"), "{stdout}");
    let table: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert_eq!(table.len(), 2 + 4, "{stdout}");
    assert_eq!(
        table[0][..6],
        ["row", "unit", "build", "monitor", "median", "min-max"]
    );
    assert!(table[0].contains(&"vs a"), "{stdout}");
    let rows: Vec<(&str, &str)> = table[2..].iter().map(|r| (r[0], r[2])).collect();
    assert_eq!(
        rows,
        [
            ("yield", "a"),
            ("yield", "b"),
            ("handoff", "a"),
            ("handoff", "b")
        ]
    );
    for r in &table[2..] {
        assert_eq!(r[1], "ns/op");
        assert!(r[4].parse::<f64>().unwrap() > 0.0, "{r:?}");
        let (lo, hi) = r[5].split_once('-').unwrap();
        assert!(
            lo.parse::<f64>().unwrap() <= hi.parse::<f64>().unwrap(),
            "{r:?}"
        );
    }
    assert_eq!(table[2][6], "-");
    assert!(table[3][6].ends_with("%)"), "{:?}", table[3]);
    // Round by round, the order of the builds reverses.
    assert!(stderr.contains("round 2/2"), "{stderr}");
}

/// `ab --json` in two monitoring modes: one JSON object whose cells hold
/// every round's figure and the ratios.
#[test]
fn ab_json_in_monitoring_modes() {
    let out = rill_bench(&[
        "ab",
        "--monitor",
        "off,full",
        "--rows",
        "yield",
        "--rounds",
        "2",
        "--json",
        "--",
        "--ops",
        "1000",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = json_lines(&out.stdout);
    assert_eq!(lines.len(), 1);
    let doc = &lines[0];
    assert!(doc["machine"].as_str().unwrap().contains("cores"), "{doc}");
    assert_eq!(doc["rounds"], 2);
    assert_eq!(doc["failures"], 0);
    assert_eq!(doc["builds"][0]["name"], "this");
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{doc}");
    for (cell, mode) in cells.iter().zip(["off", "full"]) {
        assert_eq!(cell["row"], "yield");
        assert_eq!(cell["monitor"], mode);
        assert_eq!(cell["values"].as_array().unwrap().len(), 2);
        assert!(cell["stats"]["median"].as_f64().unwrap() > 0.0, "{cell}");
        assert!(cell["vs_first_mode"]["median"].as_f64().unwrap() > 0.0);
        assert!(cell["vs_first_build"].is_null());
    }
    assert!(cells[0]["log_bytes"].is_null());
    assert!(
        cells[1]["log_bytes"].as_f64().unwrap() > 0.0,
        "{}",
        cells[1]
    );
}

#[test]
fn ab_argument_errors_and_failed_runs() {
    let exe = env!("CARGO_BIN_EXE_rill-bench");
    let a = format!("a={exe}");
    for (args, says) in [
        (&["ab", "--build", "old"][..], "want NAME=PATH"),
        (
            &["ab", "--build", "x=/no/such/rill-bench"],
            "not an executable",
        ),
        (&["ab", "--build", &a, "--build", &a], "two builds"),
        (&["ab", "--rows", "nope"], "invalid value 'nope'"),
        (&["ab", "--monitor", "loud"], "unknown monitoring flag"),
        (&["ab", "--rounds", "0"], "0 is not in 1.."),
    ] {
        usage_error(args, says);
    }
    // A run that fails is reported, and the exit status is 1.
    let out = rill_bench(&[
        "ab",
        "--rows",
        "yield",
        "--rounds",
        "1",
        "--",
        "--no-such-flag",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("failed: exit status: 2"), "{stderr}");
    assert!(stdout.contains("| failed"), "{stdout}");
}

/// A planted bottleneck: every relay works, relay 1 more; every engine
/// verifies and reports the work; bad values exit 2 with their reason.
#[test]
fn pipe_work_and_slow_relays() {
    let out = rill_bench(&[
        "pipe",
        "--depth",
        "5",
        "--messages",
        "300",
        "--workers",
        "2",
        "--work",
        "100",
        "--slow",
        "1=2000",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = json_lines(&out.stdout);
    let engines: Vec<&str> = lines
        .iter()
        .map(|v| v["engine"].as_str().unwrap())
        .collect();
    assert_eq!(engines, ["rill", "threads", "tokio"]);
    for v in &lines {
        assert_eq!(v["verified"], true, "{v}");
        assert_eq!(v["work_ns"], 100, "{v}");
        assert_eq!(v["slow"]["1"], 2000, "{v}");
        assert!(v["work_steps_per_us"].as_f64().unwrap() > 0.0, "{v}");
        // Relay 1 alone: 300 messages x 2 us (at the calibrated speed).
        assert!(v["wall_ms"].as_f64().unwrap() > 0.3, "{v}");
    }
    // The table's title names the work.
    let out = rill_bench(&[
        "pipe",
        "--engine",
        "rill",
        "--depth",
        "4",
        "--messages",
        "50",
        "--work",
        "10",
        "--slow",
        "0=20",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("work=10ns slow=0=20ns"), "{stdout}");
    for (args, says) in [
        (
            &["pipe", "--depth", "5", "--slow", "3=10"][..],
            "relays 0 to 2",
        ),
        (&["pipe", "--depth", "2", "--slow", "0=10"], "no relays"),
        (&["pipe", "--slow", "1=5", "--slow", "1=6"], "relay 1 twice"),
        (&["pipe", "--slow", "1=2000000"], "1 ms"),
        (&["pipe", "--slow", "1"], "is not K=NS"),
        (&["pipe", "--slow", "a=1"], "not a relay number"),
        (&["pipe", "--work", "5000000"], "0..=1000000"),
        (&["pipe", "--mapping", "manual"], "no table of their own"),
        (&["ring", "--mapping", "auto"], "rill-mon map"),
    ] {
        usage_error(args, says);
    }
}

/// The workers the TaskAssign records of the logs in `dir` give each named
/// task.
fn assigned_workers(dir: &std::path::Path, workers: u32) -> Vec<(String, u32)> {
    use rill_log::{read_log, Record};
    let mut v = Vec::new();
    for w in 0..workers {
        let log = read_log(dir.join(format!("worker-{w}.rlog"))).unwrap();
        for r in &log.records {
            if let Record::TaskAssign { name, worker, .. } = r {
                v.push((name.clone(), *worker));
            }
        }
    }
    v.sort();
    v
}

/// `--mapping FILE` on the pipe and the ring: every task runs where the
/// file says (by the mapping records of the run's logs), the tasks the
/// file leaves out round-robin, whatever --placement says.
#[test]
fn pipe_and_ring_follow_a_mapping_file() {
    let dir = std::env::temp_dir().join(format!("rill-cli-pipemap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let map = dir.join("pipe.map");
    // Against --placement const (everything on worker 0).
    std::fs::write(
        &map,
        "# a hand-made mapping\n\"pipe/source\" = 1\n\"pipe/relay/0\" = 1\n\"pipe/relay/1\" = 0\n\"pipe/relay/2\" = 1\n\"pipe/sink\" = 0\n",
    )
    .unwrap();
    let logs = dir.join("logs");
    let out = rill_bench(&[
        "pipe",
        "--engine",
        "rill",
        "--depth",
        "5",
        "--messages",
        "500",
        "--workers",
        "2",
        "--placement",
        "const",
        "--mapping",
        map.to_str().unwrap(),
        "--monitor",
        "map",
        "--logs",
        logs.to_str().unwrap(),
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["mapping"], map.to_str().unwrap(), "{v}");
    let want: Vec<(String, u32)> = [
        ("pipe/relay/0", 1),
        ("pipe/relay/1", 0),
        ("pipe/relay/2", 1),
        ("pipe/sink", 0),
        ("pipe/source", 1),
    ]
    .iter()
    .map(|&(n, w)| (n.to_string(), w))
    .collect();
    assert_eq!(assigned_workers(&logs, 2), want);

    // The ring: ring/1 listed, the others round-robin in creation order.
    std::fs::write(&map, "\"ring/1\" = 0\n").unwrap();
    std::fs::remove_dir_all(&logs).unwrap();
    let out = rill_bench(&[
        "ring",
        "--engine",
        "rill",
        "--size",
        "4",
        "--hops",
        "40",
        "--workers",
        "2",
        "--mapping",
        map.to_str().unwrap(),
        "--monitor",
        "map",
        "--logs",
        logs.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = assigned_workers(&logs, 2);
    let worker = |n: &str| got.iter().find(|(m, _)| m == n).unwrap().1;
    assert_eq!(worker("ring/1"), 0, "{got:?}");
    // ring/0, ring/2, ring/3 take the round-robin turns 0, 1, 0.
    assert_eq!(
        (worker("ring/0"), worker("ring/2"), worker("ring/3")),
        (0, 1, 0),
        "{got:?}"
    );
    // A file naming a worker the run lacks is an argument error.
    std::fs::write(&map, "\"pipe/sink\" = 5\n").unwrap();
    usage_error(
        &["pipe", "--mapping", map.to_str().unwrap(), "--workers", "2"],
        "--workers 2",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `mc --mapping auto`: a pilot, a planned file (named in the output, and
/// `ManualTable::load` reads it), the run under it; the JSON has the pilot's
/// and the total time.
#[test]
fn mc_mapping_auto_plans_and_runs() {
    let dir = std::env::temp_dir().join(format!("rill-cli-auto-{}", std::process::id()));
    let logs = dir.join("mc");
    let out = rill_bench(&[
        "mc",
        "--paths",
        "3000",
        "--steps",
        "3",
        "--workers",
        "2",
        "--mapping",
        "auto",
        "--logs",
        logs.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("mapping=auto"), "{stdout}");
    assert!(stdout.contains("verified"), "{stdout}");
    let file = logs.join("auto.map");
    assert!(
        stdout.contains(&format!("mapping file {}", file.display())),
        "{stdout}"
    );
    assert!(stdout.contains("2000 of 3000 paths"), "{stdout}");
    let table = rill::ManualTable::load(&file).unwrap();
    table.validate(2).unwrap();
    for name in [
        "mc/dispatch",
        "mc/collect",
        "mc/star/0/step/0",
        "mc/star/1/step/2",
    ] {
        assert!(
            table.entries().iter().any(|(p, _)| p == name),
            "{name} not in {table:?}"
        );
    }
    assert!(logs.join("pilot").join("worker-0.rlog").exists());

    // JSON: pilot_ms and total_ms beside wall_ms.
    let out = rill_bench(&[
        "mc",
        "--paths",
        "3000",
        "--steps",
        "3",
        "--workers",
        "2",
        "--mapping",
        "auto",
        "--pilot",
        "30",
        "--logs",
        logs.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["mapping"], "auto", "{v}");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["mapping_file"], file.to_str().unwrap(), "{v}");
    let (wall, pilot, total) = (
        v["wall_ms"].as_f64().unwrap(),
        v["pilot_ms"].as_f64().unwrap(),
        v["total_ms"].as_f64().unwrap(),
    );
    assert!(
        pilot > 0.0 && (wall + pilot - total).abs() < 1e-6 * total,
        "{v}"
    );
    assert!(v["pilot_run_ms"].as_f64().unwrap() <= pilot, "{v}");
    // --pilot 30: 100 paths, raised to the floor of 2000.
    assert_eq!(v["pilot_size"], "2000 of 3000 paths", "{v}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `compare --auto` alternates rr, manual and auto and sums up all three;
/// the word count takes `--mapping auto` on rill.
#[test]
fn compare_auto_and_wordcount_auto() {
    let dir = std::env::temp_dir().join(format!("rill-cli-cmpauto-{}", std::process::id()));
    let out = rill_bench(&[
        "compare",
        "ant",
        "--jobs",
        "12",
        "--ants",
        "3",
        "--iterations",
        "2",
        "--workers",
        "2",
        "--repeat",
        "1",
        "--auto",
        "--logs",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out.stdout);
    let maps: Vec<&str> = lines[..3]
        .iter()
        .map(|v| v["mapping"].as_str().unwrap())
        .collect();
    assert_eq!(maps, ["rr", "manual", "auto"]);
    assert!(lines[2]["pilot_ms"].as_f64().unwrap() > 0.0, "{}", lines[2]);
    let sum = &lines[3];
    assert!(sum["auto_total_median_ms"].as_f64().unwrap() > 0.0, "{sum}");
    assert!(sum["speedup_auto_total"].as_f64().unwrap() > 0.0, "{sum}");

    let logs = dir.join("wc");
    let out = rill_bench(&[
        "wordcount",
        "--engine",
        "rill",
        "--bytes",
        "100000",
        "--workers",
        "2",
        "--mapping",
        "auto",
        "--logs",
        logs.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let file = logs.join("auto.map");
    assert!(
        stdout.contains(&format!("mapping file {}", file.display())),
        "{stdout}"
    );
    rill::ManualTable::load(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One MC run of 20,000 paths on 2 workers, monitored `full`, and
/// `rill-mon bottleneck` on its logs.
fn mc_bottleneck(dir: &std::path::Path, mapping: &str) -> rill_monitor::Bottlenecks {
    let logs = dir.join(mapping);
    let _ = std::fs::remove_dir_all(&logs);
    let o = rill_bench(&[
        "mc",
        "--paths",
        "20000",
        "--workers",
        "2",
        "--mapping",
        mapping,
        "--monitor",
        "full",
        "--logs",
        logs.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = rill_monitor::load_run(&logs).unwrap();
    rill_monitor::bottleneck(&log, &rill_monitor::BottleneckOptions::default())
}

/// The position of `b`'s placement finding.
fn placement(b: &rill_monitor::Bottlenecks) -> Option<usize> {
    b.bottlenecks
        .iter()
        .position(|f| f.predicted_speedup.is_some())
}

/// Under MC's manual table (a chain per worker) the crossing streams carry
/// 6% of the messages, under the placement rule's 25%: no placement
/// finding, whatever the times.
#[test]
fn bottleneck_has_no_placement_finding_on_mc_manual() {
    let dir = tempfile::tempdir().unwrap();
    let b = mc_bottleneck(dir.path(), "manual");
    assert_eq!(placement(&b), None, "{}", b.to_text());
}

/// Under round-robin most of MC's chain links cross workers, which costs
/// busy time no window rule sees, and the placement finding names them
/// first. It compares times, and only an optimised build has them: in a
/// debug build the runtime's own code outweighs the crossings (MC of
/// 20,000 paths unmonitored: rr and manual both 124-135 ms), so the model
/// rightly predicts no gain (1.00-1.07x). Run it alone on a release
/// build: `cargo test --release -p rill-examples --test cli -- --ignored
/// mc_rr`.
#[test]
#[ignore = "timing: needs a release build (see the doc comment)"]
fn bottleneck_names_crossing_streams_on_mc_rr() {
    let dir = tempfile::tempdir().unwrap();
    let named = (0..3).any(|_| {
        let b = mc_bottleneck(dir.path(), "rr");
        let ok = placement(&b) == Some(0)
            && b.bottlenecks[0].name == "mc/star/*/step/* -> mc/star/*/step/*"
            && b.bottlenecks[0]
                .evidence
                .contains("rill-mon map proposes a mapping for 2 workers")
            && b.verdict.starts_with("Placement holds the run back");
        if !ok {
            eprintln!("rr: expected a placement finding first\n{}", b.to_text());
        }
        ok
    });
    assert!(named, "no placement finding on MC rr in three tries");
}
