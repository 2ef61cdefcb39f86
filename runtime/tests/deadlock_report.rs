//! What a deadlock report says about the holders of the ends the blocked
//! tasks wait on: each by task name and id, whether it has ended, and which
//! ends no live task holds (leaked).

mod common;

use common::with_timeout;
use rill::{RunError, Runtime};

/// A writer that a task forgot (`mem::forget`) outlives the task: the
/// report names that task, says it has ended, and lists its end as leaked.
#[test]
fn a_forgotten_writer_is_named_as_ended_and_its_end_as_leaked() {
    let (err, stream) = with_timeout("a forgotten writer", 60, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        let (w, r) = rill::stream::<u64>(1);
        let stream = w.id();
        rt.spawn_with("forgetter", w, std::mem::forget);
        rt.spawn_with("reader", r, |mut r| {
            r.read();
        });
        (rt.run().unwrap_err(), stream)
    });
    assert!(
        matches!(&err, RunError::Deadlock { ended, .. } if ended == &[(1, "forgetter".to_string())])
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "task 'reader' (id 2): reading empty stream {stream} (writer: task 'forgetter' \
             (id 1), which has ended; its end outlived it (leaked, or moved out of the task) \
             and nobody can use it now)"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "\n  leaked ends (held by no live task): the writer of stream {stream} (task \
             'forgetter' (id 1), ended)"
        )),
        "{text}"
    );
}

/// Holders that are still there are named by task name and id, on every
/// kind of wait (a read, a write, a poll), and no end is called leaked.
#[test]
fn live_holders_are_named_by_task_name_and_id() {
    let text = with_timeout("named holders", 60, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        // 'stage/a' writes to a full stream that 'stage/b' reads; 'stage/b'
        // waits on a stream that 'stage/a' writes: a cycle.
        let (full_w, full_r) = rill::named_stream::<u64>("a-to-b", 1);
        let (back_w, back_r) = rill::stream::<u64>(1);
        let back = back_w.id();
        rt.spawn_with("stage/a", (full_w, back_w), |(mut w, _back)| {
            let _ = w.write(1);
            let _ = w.write(2);
        });
        rt.spawn_with("stage/b", (back_r, full_r), |(mut r, _full)| {
            r.read();
        });
        // 'poller' polls two streams whose writers 'stage/c' holds, and
        // holds the writer of the stream 'stage/c' reads: another cycle.
        let (w1, r1) = rill::stream::<u64>(1);
        let (w2, r2) = rill::stream::<u64>(1);
        let (w3, r3) = rill::stream::<u64>(1);
        let (s1, s2) = (w1.id(), w2.id());
        rt.spawn_with("stage/c", (w1, w2, r3), |(_w1, _w2, mut r3)| {
            r3.read();
        });
        rt.spawn_with("poller", (r1, r2, w3), |(r1, r2, _w3)| {
            let _ = rill::poll(&mut [r1, r2]);
        });
        let text = rt.run().unwrap_err().to_string();
        (text, back, s1, s2)
    });
    let (text, back, s1, s2) = text;
    assert!(
        text.contains("task 'stage/a' (id 1): writing full stream 'a-to-b' (")
            && text.contains(") (reader: task 'stage/b' (id 2))"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "task 'stage/b' (id 2): reading empty stream {back} (writer: task 'stage/a' (id 1))"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "task 'poller' (id 4): polling streams {s1} (writer: task 'stage/c' (id 3)), \
             {s2} (writer: task 'stage/c' (id 3))"
        )),
        "{text}"
    );
    assert!(!text.contains("leaked ends"), "{text}");
}

/// A holder spawned in the run that has ended leaves only its id: the
/// report says it has ended, by id.
#[test]
fn a_holder_spawned_in_the_run_that_ended_is_named_by_id() {
    let text = with_timeout("an ended holder spawned in the run", 60, || {
        let mut rt = Runtime::builder().workers(1).build().unwrap();
        rt.spawn("parent", || {
            let (w, r) = rill::stream::<u64>(1);
            let forgetter = rill::spawn_with("forgetter", w, std::mem::forget);
            assert_eq!(forgetter, 2);
            rill::spawn_with("reader", r, |mut r| {
                r.read();
            });
        });
        rt.run().unwrap_err().to_string()
    });
    assert!(
        text.contains("(writer: task 2, which has ended; its end outlived it")
            && text.contains("(task 2, ended)"),
        "{text}"
    );
}
