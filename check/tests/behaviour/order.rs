//! The order of events across nodes: prompts after the readiness barrier, a stage ready after its
//! weights and edges, a run torn down after its stages stopped (with skewed clocks aligned).

use super::*;

// order.prompt_after_barrier

#[test]
fn a_prompt_before_the_readiness_barrier_is_found_with_both_events() {
    let mut run = base();
    run.node_mut("orchestrator")
        .move_after(tag("readiness_barrier_passed"), tag("run_completed"));
    let f = violates(run, "order.prompt_after_barrier");
    assert_eq!(
        f.len(),
        1,
        "only the first prompt of the run is the witness"
    );
    assert_eq!(
        witness_types(&f[0]),
        ["prompt_injected", "readiness_barrier_passed"]
    );
    assert!(
        f[0].message
            .contains("comes before the first `readiness_barrier_passed`"),
        "{}",
        f[0].message
    );
}

#[test]
fn a_prompt_without_any_barrier_is_found() {
    let mut run = base();
    run.node_mut("orchestrator")
        .remove_first(tag("readiness_barrier_passed"))
        .unwrap();
    let f = violates(run, "order.prompt_after_barrier");
    assert_eq!(witness_types(&f[0]), ["prompt_injected"]);
    assert!(f[0].message.contains("has no earlier"), "{}", f[0].message);
}

#[test]
fn prompts_after_the_barrier_keep_the_order() {
    passes(base(), "order.prompt_after_barrier");
}

// order.stage_ready_after_local_readiness

#[test]
fn a_stage_ready_before_its_weights_are_loaded_is_found() {
    let mut run = base();
    run.node_mut("stage-1")
        .remove_first(tag("weights_loaded"))
        .unwrap();
    let f = violates(run, "order.stage_ready_after_local_readiness");
    assert_eq!(f.len(), 1);
    assert_eq!(witness_types(&f[0]), ["stage_ready"]);
    assert!(
        f[0].message.contains("`weights_loaded`"),
        "{}",
        f[0].message
    );
    assert!(f[0].location.file.contains("/stage-1/events/"));
}

#[test]
fn a_stage_ready_before_an_edge_it_started_is_ready_is_found() {
    let mut run = base();
    let stage = run.node_mut("stage-0");
    let edge = match &stage.events[stage.find(tag("edge_ready")).unwrap()].event {
        Event::EdgeReady(e) => e.edge_id,
        _ => unreachable!(),
    };
    stage.move_after(tag("edge_ready"), tag("stage_ready"));
    let f = violates(run, "order.stage_ready_after_local_readiness");
    assert_eq!(f.len(), 1);
    assert_eq!(
        witness_types(&f[0]),
        ["stage_ready", "edge_provision_started", "edge_ready"]
    );
    assert!(
        f[0].message.contains(&format!("edge_id {edge} ")),
        "{}",
        f[0].message
    );
}

#[test]
fn stages_ready_after_weights_and_edges_keep_the_order() {
    passes(base(), "order.stage_ready_after_local_readiness");
}

// order.torn_down_after_teardown

#[test]
fn a_run_torn_down_before_its_stages_stopped_is_found() {
    let mut run = base();
    run.node_mut("orchestrator")
        .move_after(tag("run_torn_down"), tag("run_completed"));
    let f = violates(run, "order.torn_down_after_teardown");
    // One finding per node and kind of step, its last one: the orchestrator's last stop request
    // and each stage's stop.
    assert_eq!(f.len(), 3);
    for x in &f {
        assert_eq!(witness_types(x)[0], "run_torn_down");
    }
    let later: Vec<String> = f.iter().map(|x| witness_types(x)[1].clone()).collect();
    assert_eq!(later.iter().filter(|t| *t == "stop_run_sent").count(), 1);
    assert_eq!(later.iter().filter(|t| *t == "stage_stopped").count(), 2);
}

#[test]
fn teardown_across_skewed_clocks_is_ordered_by_the_clock_samples() {
    // Stage 2's wall clock runs 1.3 s ahead: its `stage_stopped` carries a wall time after the
    // orchestrator's `run_torn_down`, yet happened before it.
    let mut params = Params::small(3);
    params.stages = 3;
    let run = generate(&params);
    let report = passes(run.clone(), "order.torn_down_after_teardown");
    assert_eq!(
        report
            .rule("order.torn_down_after_teardown")
            .unwrap()
            .checked,
        1
    );
    // Without its clock samples the skew is not known, and the order looks broken.
    let mut run = run;
    run.node_mut("stage-2")
        .events
        .retain(|e| !is_clock_sample(e));
    let f = violates(run, "order.torn_down_after_teardown");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].location.file.contains("/stage-2/events/"),
        "{}",
        f[0].location
    );
    assert_eq!(witness_types(&f[0]), ["run_torn_down", "stage_stopped"]);
}
