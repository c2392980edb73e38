//! Priorities from Slurm: a job step's recorded priority is its processes' default and
//! ceiling, root in the job included, through the core's real agent and request paths; the
//! processes are those of the recorded node without Slurm's cgroups
//! (`tests/data/slurm/proc-linuxproc`, found by their ancestry).

use super::*;
use crate::cluster::slurm_fixtures::{data, records};
use crate::cluster::{Cluster, SlurmSteps};

/// Job 12 step 0 (recorded at 10): tasks 1001 and 1002; job 13's batch step (at −5): 2001;
/// the node: 3000.
fn node() -> Rig {
    let mut c = core();
    let me = rustix::process::geteuid().as_raw();
    c.set_cluster(Cluster::slurm(SlurmSteps::new(
        records(),
        data().join("proc-linuxproc"),
        me,
    )));
    c
}

#[test]
fn a_process_cannot_raise_its_priority_above_its_steps_root_included() {
    let mut c = node();
    let a = connect(&mut c, 1, 1001, 0, 99);
    assert_eq!(
        prio(&c, 1001),
        Some(10),
        "BATON_PRIORITY=99 as root, step at 10"
    );
    claim(&mut c, a.id, 100);
    assert_eq!(prio(&c, 1001), Some(10), "nor later, from the C API");
    let _b = connect(&mut c, 2, 2001, ME, 50);
    assert_eq!(prio(&c, 2001), Some(-5), "another user's batch step");
    let _n = connect(&mut c, 3, 3000, ME, 90);
    assert_eq!(
        prio(&c, 3000),
        Some(90),
        "the node's own processes are in no step"
    );
}

#[test]
fn a_process_that_claims_nothing_gets_its_steps_priority() {
    let mut c = node();
    assert!(matches!(hello(&mut c, 1, 1002, ME), HelloReply::Welcome(_)));
    send(
        &mut c,
        ClientId(1),
        AgentMessage::ProcessStarted(ProcessStarted::new(1002, "app", &["app"], vec![])),
    );
    c.end_round();
    assert_eq!(prio(&c, 1002), Some(10));
}

#[test]
fn from_inside_a_step_the_cli_changes_only_its_step_within_its_priority() {
    let mut c = node();
    let _a = connect(&mut c, 1, 1001, 0, 10);
    let _b = connect(&mut c, 2, 2001, ME, -5);
    // Process 1002 is in job 12's step, as root.
    refused(request_from(&mut c, 1002, 0, set(1001, 11)), "above it");
    assert_eq!(request_from(&mut c, 1002, 0, set(1001, 5)), Reply::Done);
    assert_eq!(prio(&c, 1001), Some(5));
    refused(
        request_from(&mut c, 1002, 0, set(2001, -10)),
        "not in this job step",
    );
    refused(
        request_from(&mut c, 1002, 0, Request::Shutdown),
        "administer",
    );
    assert!(!c.stopping);
    // On the node: other users are held to the target's step, root is not.
    refused(request_from(&mut c, 3000, ME, set(2001, 0)), "above it");
    assert_eq!(request_from(&mut c, 3000, 0, set(2001, 80)), Reply::Done);
    assert_eq!(prio(&c, 2001), Some(80), "the node's root may");
}
