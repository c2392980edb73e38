//! Tenants see only their own: through the core's real request path, who lists what in full
//! and what the rest shows as (anonymous counts per device), on a system daemon, on a
//! Kubernetes node and on a Slurm node; and a request naming a process the asker may not see
//! is answered as an unknown pid would be.

use super::*;
use crate::cluster::slurm_fixtures::{data, records};
use crate::cluster::{Cluster, PodInfo, PodTable, PodUid, PodUpdate, SlurmSteps};
use baton_protocol::ProcessList;

const OTHER: u32 = 2000;

/// A system daemon, which users other than its own connect to.
fn system() -> Rig {
    let mut c = core();
    c.core.ident.auth.system = true;
    c
}

fn list_as(c: &mut Rig, pid: u32, uid: u32) -> ProcessList {
    match request_from(c, pid, uid, Request::List { pid: None }) {
        Reply::List(l) => l,
        r => panic!("{r:?}"),
    }
}

fn pids(l: &ProcessList) -> Vec<u32> {
    l.processes.iter().map(|p| p.pid).collect()
}

/// The processes folded on the device every agent of these tests uses, as (processes,
/// queues).
fn folded(l: &ProcessList) -> Option<(u32, u32)> {
    assert!(l.others.len() <= 1, "{:?}", l.others);
    l.others.first().map(|o| (o.processes, o.queues))
}

/// Nothing of a hidden process is in the reply: not its pid, name, command line or user.
fn nothing_of(l: &ProcessList, pid: u32, uid: u32) {
    let json = serde_json::to_string(l).unwrap();
    assert!(
        !l.processes.iter().any(|p| p.pid == pid || p.uid == uid),
        "{json}"
    );
    assert!(!json.contains(&format!("pid-{pid}")), "{json}");
}

#[test]
fn on_a_system_daemon_each_user_sees_its_own_and_counts_of_the_rest() {
    let mut c = system();
    let _root = connect(&mut c, 1, 100, 0, 10);
    let _mine = connect(&mut c, 2, 200, ME, 0);
    let _other = connect(&mut c, 3, 300, OTHER, 5);
    // Root sees everything, folded nothing.
    let all = list_as(&mut c, 99, 0);
    assert_eq!(pids(&all), [100, 200, 300]);
    assert!(all.others.is_empty());
    // A user sees its own process in full, and the two others as counts.
    let mine = list_as(&mut c, 99, ME);
    assert_eq!(pids(&mine), [200]);
    assert_eq!(folded(&mine), Some((2, 2)));
    let o = &mine.others[0];
    assert_eq!((o.priority_min, o.priority_max), (5, 10));
    nothing_of(&mine, 100, 0);
    nothing_of(&mine, 300, OTHER);
    // A user with no process of its own sees only counts.
    let none = list_as(&mut c, 99, 3000);
    assert!(none.processes.is_empty());
    assert_eq!(folded(&none), Some((3, 3)));
    // Asking for another user's pid shows nothing of it.
    match request_from(&mut c, 99, ME, Request::List { pid: Some(300) }) {
        Reply::List(l) => assert!(l.processes.is_empty(), "{l:?}"),
        r => panic!("{r:?}"),
    }
}

#[test]
fn a_request_naming_a_hidden_process_is_answered_as_an_unknown_pid() {
    let mut c = system();
    let _other = connect(&mut c, 3, 300, OTHER, 5);
    let hidden = request_from(&mut c, 99, ME, set(300, 1));
    let unknown = request_from(&mut c, 99, ME, set(301, 1));
    let text = |r: &Reply| match r {
        Reply::Error(e) => (e.kind, e.message.replace("301", "300")),
        r => panic!("{r:?}"),
    };
    assert_eq!(text(&hidden), text(&unknown), "indistinguishable");
    assert_eq!(text(&hidden).0, ErrorKind::UnknownProcess);
    assert!(!text(&hidden).1.contains(&OTHER.to_string()), "{hidden:?}");
    // Its owner and root may.
    assert_eq!(request_from(&mut c, 98, OTHER, set(300, 1)), Reply::Done);
    assert_eq!(request_from(&mut c, 97, 0, set(300, 2)), Reply::Done);
}

#[test]
fn a_trace_is_read_only_by_who_may_record_one() {
    let mut c = system();
    let _other = connect(&mut c, 3, 300, OTHER, 5);
    assert!(matches!(
        request_from(&mut c, 99, 0, Request::TraceStart { capacity: 16 }),
        Reply::Done
    ));
    let _ = request_from(&mut c, 99, 0, Request::TraceStop);
    refused(
        request_from(&mut c, 99, ME, Request::TraceRead { cursor: 0 }),
        "only root",
    );
    assert!(matches!(
        request_from(&mut c, 99, 0, Request::TraceRead { cursor: 0 }),
        Reply::Trace(_)
    ));
}

const POD_A: &str = "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b";
const POD_B: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";

/// Processes 100 and 101 in pod A, 200 in pod B; 99 and 300 are the node's own.
fn pod_node() -> Rig {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let root = std::env::temp_dir().join(format!(
        "baton-sight-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    for (pid, text) in [
        (100, format!("0::/kubepods/pod{POD_A}/c1\n")),
        (101, format!("0::/kubepods/pod{POD_A}/c2\n")),
        (200, format!("0::/kubepods/pod{POD_B}/c3\n")),
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
    let mut c = system();
    c.set_cluster(Cluster::kubernetes(PodTable::new(root)));
    let pod = |uid: &str, name: &str, priority| PodInfo {
        uid: PodUid::parse(uid).unwrap(),
        name: String::from(name),
        priority,
    };
    c.handle(Event::Pods(PodUpdate::Reset(vec![
        pod(POD_A, "tenant-a/serve", 50),
        pod(POD_B, "tenant-b/train", 0),
    ])));
    c
}

#[test]
fn a_pod_sees_its_own_pods_processes_and_counts_of_the_others_root_included() {
    let mut c = pod_node();
    let _a = connect(&mut c, 1, 100, 0, 50);
    let _b = connect(&mut c, 2, 200, 0, 0);
    let _node = connect(&mut c, 3, 300, ME, 5);
    // From pod A, as root: pod A's process in full, pod B's and the node's as counts.
    let from_a = list_as(&mut c, 101, 0);
    assert_eq!(pids(&from_a), [100]);
    assert_eq!(folded(&from_a), Some((2, 2)));
    nothing_of(&from_a, 200, u32::MAX);
    let json = serde_json::to_string(&from_a).unwrap();
    assert!(!json.contains("tenant-b"), "{json}");
    // Pod B's process is unknown from pod A, whatever is asked.
    refused(request_from(&mut c, 101, 0, set(200, 0)), "not in this pod");
    // The node's root sees all; the node's other users their own.
    assert_eq!(pids(&list_as(&mut c, 99, 0)), [100, 200, 300]);
    let user = list_as(&mut c, 300, ME);
    assert_eq!(pids(&user), [300]);
    assert_eq!(folded(&user), Some((2, 2)));
    // Root in a pod reads no trace.
    refused(
        request_from(&mut c, 101, 0, Request::TraceRead { cursor: 0 }),
        "administer",
    );
}

#[test]
fn a_job_step_sees_its_own_steps_processes_and_counts_of_the_others() {
    let mut c = system();
    let me = rustix::process::geteuid().as_raw();
    c.set_cluster(Cluster::slurm(SlurmSteps::new(
        records(),
        data().join("proc-linuxproc"),
        me,
    )));
    // Job 12 step 0: 1001 and 1002; job 13's batch step: 2001; the node: 3000.
    let _a = connect(&mut c, 1, 1001, 0, 10);
    let _b = connect(&mut c, 2, 2001, OTHER, -5);
    let _n = connect(&mut c, 3, 3000, ME, 0);
    let from_step = list_as(&mut c, 1002, 0);
    assert_eq!(pids(&from_step), [1001]);
    assert_eq!(folded(&from_step), Some((2, 2)));
    nothing_of(&from_step, 2001, OTHER);
    refused(
        request_from(&mut c, 1002, 0, set(2001, -10)),
        "not in this job step",
    );
    assert_eq!(pids(&list_as(&mut c, 3000, 0)), [1001, 2001, 3000]);
}

#[test]
fn the_metrics_endpoint_shows_every_process_and_its_command_only_when_allowed() {
    let mut c = system();
    let _other = connect(&mut c, 3, 300, OTHER, 5);
    let shown = c.snapshot().list;
    assert_eq!(pids(&shown), [300], "node-local: every process");
    assert!(!shown.processes[0].command.is_empty());
    c.core.ident.metrics_commands = false;
    let hidden = c.snapshot().list;
    assert_eq!(pids(&hidden), [300]);
    assert!(hidden.processes[0].command.is_empty() && hidden.processes[0].name.is_empty());
}
