//! Priorities from the cluster: a pod's priority is its processes' default and ceiling, root
//! in a pod included, through the core's real agent and request paths; the processes' cgroups
//! are files under a proc root of the test's own.

use super::*;
use crate::cluster::{Cluster, PodInfo, PodTable, PodUid, PodUpdate};

const POD_A: &str = "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b";
const POD_B: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const POD_UNLISTED: &str = "a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d";
const CID: &str = "3b5e1c9d0f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e";

/// Processes 100–102 in pod A, 200 in pod B, 400 in a pod the API server never listed; 99 and
/// 300 are the node's own.
fn proc_root() -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let root = std::env::temp_dir().join(format!(
        "baton-proc-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let systemd = |uid: &str| {
        format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CID}.scope\n",
            uid.replace('-', "_")
        )
    };
    for (pid, text) in [
        (100, systemd(POD_A)),
        (101, systemd(POD_A)),
        (102, format!("0::/kubepods/pod{POD_A}/{CID}\n")),
        (200, systemd(POD_B)),
        (400, systemd(POD_UNLISTED)),
        (99, "0::/user.slice/user-0.slice/session-1.scope\n".into()),
        (
            300,
            "0::/user.slice/user-1000.slice/session-2.scope\n".into(),
        ),
    ] {
        let d = root.join(pid.to_string());
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cgroup"), text).unwrap();
    }
    root
}

fn pod(uid: &str, name: &str, priority: i32) -> PodInfo {
    PodInfo {
        uid: PodUid::parse(uid).unwrap(),
        name: name.into(),
        priority,
    }
}

/// A core on a cluster node whose API server listed pod A at 50 and pod B at −50.
fn node() -> Rig {
    let mut c = core();
    c.set_cluster(Cluster::kubernetes(PodTable::new(proc_root())));
    c.handle(Event::Pods(PodUpdate::Reset(vec![
        pod(POD_A, "serving/a", 50),
        pod(POD_B, "batch/b", -50),
    ])));
    c
}

#[test]
fn a_process_cannot_raise_its_priority_above_its_pods_root_included() {
    let mut c = node();
    let a = connect(&mut c, 1, 100, 0, 90);
    assert_eq!(
        prio(&c, 100),
        Some(50),
        "BATON_PRIORITY=90 as root, pod at 50"
    );
    claim(&mut c, a.id, 100);
    assert_eq!(prio(&c, 100), Some(50), "nor later, from the C API");
    let _b = connect(&mut c, 2, 200, ME, -80);
    assert_eq!(prio(&c, 200), Some(-80), "lower than its pod: as asked");
    let _node = connect(&mut c, 3, 300, ME, 90);
    assert_eq!(
        prio(&c, 300),
        Some(90),
        "the node's own processes are not pods"
    );
    let _unlisted = connect(&mut c, 4, 400, 0, 90);
    assert_eq!(prio(&c, 400), Some(0), "a pod the API server never listed");
}

#[test]
fn a_process_that_claims_nothing_gets_its_pods_priority() {
    let mut c = node();
    assert!(matches!(hello(&mut c, 1, 102, ME), HelloReply::Welcome(_)));
    send(
        &mut c,
        ClientId(1),
        AgentMessage::ProcessStarted(ProcessStarted::new(102, "app", &["app"], vec![])),
    );
    c.end_round();
    assert_eq!(prio(&c, 102), Some(50));
}

#[test]
fn the_pods_priority_decides_between_pods() {
    let mut c = node();
    // Both claim 100; pod A's 50 runs, pod B's −50 waits.
    let mut hp = connect(&mut c, 1, 100, 0, 100);
    let mut be = connect(&mut c, 2, 200, 0, 100);
    state(&mut c, &be, true, 1);
    state(&mut c, &hp, true, 1);
    assert_eq!(ops(&mut be), vec![(vec![], vec![1])]);
    assert!(ops(&mut hp).is_empty());
}

#[test]
fn pod_agents_wait_for_the_first_list_of_pods() {
    let mut c = core();
    c.set_cluster(Cluster::kubernetes(PodTable::new(proc_root())));
    match hello(&mut c, 1, 100, 0) {
        HelloReply::Refused(r) => assert!(r.message.contains("not listed"), "{}", r.message),
        r => panic!("{r:?}"),
    }
    assert!(
        matches!(hello(&mut c, 2, 300, ME), HelloReply::Welcome(_)),
        "the node's own processes need no list"
    );
    c.handle(Event::Pods(PodUpdate::Reset(vec![pod(
        POD_A,
        "serving/a",
        50,
    )])));
    let _a = connect(&mut c, 3, 100, 0, 90);
    assert_eq!(prio(&c, 100), Some(50));
}

#[test]
fn the_watch_changes_what_new_processes_get() {
    let mut c = node();
    c.handle(Event::Pods(PodUpdate::Upsert(pod(POD_A, "serving/a", 20))));
    c.handle(Event::Pods(PodUpdate::Delete(
        PodUid::parse(POD_B).unwrap(),
    )));
    let _a = connect(&mut c, 1, 100, 0, 90);
    let _b = connect(&mut c, 2, 200, 0, 90);
    assert_eq!(prio(&c, 100), Some(20));
    assert_eq!(prio(&c, 200), Some(0), "a deleted pod is unknown");
}

#[test]
fn from_inside_a_pod_the_cli_changes_only_its_pod_within_its_priority() {
    let mut c = node();
    let _a = connect(&mut c, 1, 100, 0, 50);
    let _b = connect(&mut c, 2, 200, 0, -50);
    // Process 101 is in pod A, as root.
    refused(request_from(&mut c, 101, 0, set(100, 51)), "above it");
    assert_eq!(request_from(&mut c, 101, 0, set(100, 20)), Reply::Done);
    assert_eq!(prio(&c, 100), Some(20));
    refused(
        request_from(&mut c, 101, 0, set(200, -60)),
        "not in this pod",
    );
    refused(
        request_from(
            &mut c,
            101,
            0,
            Request::SetPolicy {
                name: "cfs".into(),
                params: vec![],
            },
        ),
        "administer",
    );
    refused(
        request_from(&mut c, 101, 0, Request::Shutdown),
        "administer",
    );
    refused(
        request_from(
            &mut c,
            101,
            0,
            Request::Hint {
                target: Target::All,
                hint: baton_protocol::Hint::Priority(WirePriority(0)),
            },
        ),
        "device-wide",
    );
    assert!(!c.stopping);
    assert!(matches!(
        request_from(&mut c, 101, 0, Request::List { pid: None }),
        Reply::List(_)
    ));
    // A pod that cannot be told may change nothing.
    refused(request_from(&mut c, 400, 0, set(100, 0)), "not in this pod");
}

#[test]
fn on_the_node_root_decides_and_users_stay_within_the_pods_priority() {
    let mut c = node();
    let _b = connect(&mut c, 2, 200, ME, -50);
    refused(request_from(&mut c, 300, ME, set(200, 0)), "above it");
    assert_eq!(request_from(&mut c, 300, ME, set(200, -70)), Reply::Done);
    assert_eq!(request_from(&mut c, 99, 0, set(200, 80)), Reply::Done);
    assert_eq!(prio(&c, 200), Some(80), "the node's root may");
}
