//! The workload's story: subprocesses and their buckets, the run's lifecycle, messages through
//! the pipeline and the inference answers.

use diagwire::v1::{CustomPayload, Event, InferenceSendOutcome, SubprocessStatus};

use crate::support::*;

#[test]
fn a_subprocess_spawns_and_exits_and_snapshots_show_it_running_then_exited() {
    let p = parsed();
    let mut seen = 0;
    let mut shown_running = 0;
    let stages = p.stages();
    for stage in &stages {
        let events = p.events_of(stage);
        for r in events {
            let Event::SubprocessExited(exit) = &r.event else {
                continue;
            };
            seen += 1;
            assert!(events.iter().any(|e| matches!(&e.event,
                Event::SubprocessSpawned(s) if s.pid == exit.pid && e.wall_ms < r.wall_ms)));
            let states: Vec<SubprocessStatus> = p
                .snapshots_of(stage)
                .iter()
                .filter_map(|s| s.body.subprocess.as_ref())
                .flat_map(|b| &b.subprocesses)
                .filter(|s| s.pid == exit.pid)
                .map(|s| s.status.clone())
                .collect();
            let first_exited = states
                .iter()
                .position(|s| *s == SubprocessStatus::Exited)
                .unwrap_or_else(|| panic!("{stage}: never shown exited: {states:?}"));
            // A worker killed 1 s after its spawn exits between two snapshots.
            shown_running += usize::from(first_exited > 0);
            assert!(
                states[..first_exited]
                    .iter()
                    .all(|s| *s == SubprocessStatus::Running)
            );
            assert!(
                states[first_exited..]
                    .iter()
                    .all(|s| *s == SubprocessStatus::Exited)
            );
        }
    }
    assert_eq!(seen, 3, "subprocesses exited");
    assert_eq!(
        shown_running, 2,
        "exited subprocesses a snapshot showed running"
    );
}

#[test]
fn the_stages_cover_every_subprocess_bucket() {
    let p = parsed();
    let spawned = |label: &str| -> Vec<(String, u32)> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::SubprocessSpawned(s) => Some((s.label.clone(), s.pid)),
                _ => None,
            })
            .collect()
    };
    let exits = |label: &str| -> Vec<(Option<i32>, Option<i32>)> {
        p.events_of(label)
            .iter()
            .filter_map(|r| match &r.event {
                Event::SubprocessExited(s) => Some((s.exit_code, s.exit_signal)),
                _ => None,
            })
            .collect()
    };
    let ready = |label: &str| {
        p.events_of(label).iter().any(|r| {
            matches!(&r.event, Event::Custom(c) if matches!(c.payload, CustomPayload::WorkerReady(_)))
        })
    };
    // stage-0 spawns nothing and lists nothing.
    assert!(spawned("stage-0").is_empty());
    assert!(
        p.snapshots_of("stage-0")
            .iter()
            .filter_map(|s| s.body.subprocess.as_ref())
            .all(|b| b.subprocesses.is_empty())
    );
    // stage-1: the fetch exits with 0, the first worker is killed by signal 9, the second is ready.
    assert_eq!(spawned("stage-1").len(), 3);
    assert_eq!(exits("stage-1"), [(Some(0), None), (None, Some(9))]);
    assert!(ready("stage-1"));
    // stage-2: the fetch exits with 0; the GPU probe never exits, never reports ready, and its
    // CPU time climbs while its memory stays put.
    assert_eq!(exits("stage-2"), [(Some(0), None)]);
    assert!(!ready("stage-2"));
    let probe: Vec<(u64, u64)> = p
        .snapshots_of("stage-2")
        .iter()
        .filter_map(|s| s.body.subprocess.as_ref())
        .flat_map(|b| &b.subprocesses)
        .filter(|s| s.label == "gpu-probe")
        .map(|s| (s.rss_bytes.expect("rss"), s.cpu_ms.expect("cpu")))
        .collect();
    assert!(probe.len() >= 5, "{probe:?}");
    let (first, last) = (probe[0], probe[probe.len() - 1]);
    assert!(last.1 > first.1 * 10, "{probe:?}");
    assert!(last.0 - first.0 < 100_000, "{probe:?}");
}

#[test]
fn the_run_lifecycle_is_complete_and_in_order_on_each_node() {
    let p = parsed();
    let tags =
        |label: &str| -> Vec<&str> { p.events_of(label).iter().map(|r| r.event.tag()).collect() };
    let pos = |tags: &[&str], tag: &str| {
        tags.iter()
            .position(|t| *t == tag)
            .unwrap_or_else(|| panic!("no {tag}"))
    };
    let orch = tags("orchestrator");
    for (a, b) in [
        ("pool_ready", "run_planned"),
        ("run_planned", "readiness_barrier_passed"),
        ("readiness_barrier_passed", "prompt_injected"),
        ("prompt_injected", "run_completed"),
        ("run_completed", "stop_run_sent"),
        ("stop_run_sent", "run_torn_down"),
    ] {
        assert!(pos(&orch, a) < pos(&orch, b), "{a} before {b}");
    }
    assert_eq!(orch.iter().filter(|t| **t == "run_completed").count(), 1);
    for stage in p.stages() {
        let t = tags(&stage);
        assert!(
            pos(&t, "weights_loaded") < pos(&t, "stage_ready"),
            "{stage}"
        );
        assert!(pos(&t, "edge_ready") < pos(&t, "stage_ready"), "{stage}");
        assert!(pos(&t, "stage_ready") < pos(&t, "object_loaded"), "{stage}");
        assert!(
            pos(&t, "step_completed") < pos(&t, "stage_stopped"),
            "{stage}"
        );
    }
    let faults: Vec<String> = p
        .events
        .values()
        .flatten()
        .filter_map(|r| match &r.event {
            Event::FaultDetected(f) => {
                Some(format!("{}/{}", f.reason.as_ref(), f.component.as_ref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        faults,
        ["out_of_memory/gpu_worker_ctl", "timeout/transport"]
    );
}

#[test]
fn messages_flow_through_the_pipeline() {
    let p = parsed();
    for label in p.members() {
        let sent = p
            .events_of(&label)
            .iter()
            .filter(|r| matches!(r.event, Event::MessageSent(_)))
            .count();
        let received = p
            .events_of(&label)
            .iter()
            .filter(|r| matches!(r.event, Event::MessageReceived(_)))
            .count();
        let last_stage = label == "stage-2";
        assert_eq!(sent == 0, last_stage, "{label}: {sent} sent");
        assert!(received > 0, "{label}");
    }
}

#[test]
fn only_the_last_stage_answers_and_one_answer_fails() {
    let p = parsed();
    let mut failed = Vec::new();
    for (label, records) in &p.events {
        for r in records {
            if let Event::InferenceResponseSent(i) = &r.event {
                assert_eq!(label, "stage-2");
                assert_eq!(p.label(&i.target_peer), "orchestrator");
                if i.send_outcome != InferenceSendOutcome::Success {
                    failed.push(i.request_id.clone());
                }
            }
        }
    }
    assert_eq!(failed.len(), 1, "{failed:?}");
}
