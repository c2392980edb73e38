//! `--kubernetes` end to end without a cluster: a real daemon, real agent processes
//! (`baton-sim-client`) identified by `SO_PEERCRED`, their cgroups as files under a proc root
//! of the test's own, and an API server played by a loopback HTTP server that answers the
//! recorded pod list (`tests/data/pods/list.json`). Both processes claim priority 100; each
//! is held to what its pod was given.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use baton_daemon::{DaemonConfig, KubernetesConfig};
use baton_protocol::{Reply, Request, Target, WirePriority};
use support::*;

/// serving/embedder-1 (PriorityClass 1 000 000, annotation 30) and
/// training/resnet-train-7c9f (PriorityClass −1000) in the recorded list.
const EMBEDDER: &str = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9";
const TRAINER: &str = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
const TOKEN: &str = "test-service-account-token";

/// A stand-in API server: answers the pod list once `release` says so, holds watches open,
/// and reports every request's head.
fn api_server(release: mpsc::Receiver<()>, heads: mpsc::Sender<String>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let list = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pods/list.json"),
    )
    .unwrap();
    std::thread::spawn(move || {
        let mut watches: Vec<TcpStream> = Vec::new();
        let mut released = false;
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let mut head = String::new();
            let mut r = BufReader::new(s.try_clone().unwrap());
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = heads.send(head.clone());
            if head.contains("watch=1") {
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n");
                watches.push(s);
                continue;
            }
            if !released {
                if release.recv().is_err() {
                    return;
                }
                released = true;
            }
            // The connection is closed after the list, and says so: a client that pooled it
            // for its next request (the watch) would find it gone and start over with a list.
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\
                 content-length: {}\r\n\r\n{list}",
                list.len()
            );
        }
    });
    format!("http://{addr}")
}

fn cgroup(root: &Path, pid: u32, pod: &str) {
    let d = root.join(pid.to_string());
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("cgroup"),
        format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/\
             cri-containerd-3b5e1c9d0f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e.scope\n",
            pod.replace('-', "_")
        ),
    )
    .unwrap();
}

#[test]
fn processes_are_held_to_their_pods_priorities() {
    let dir = temp_dir("k8s");
    let proc_root: PathBuf = dir.join("proc");
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let (release, released) = mpsc::channel();
    let (heads_tx, heads) = mpsc::channel();
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    cfg.kubernetes = Some(KubernetesConfig {
        node: "gpu-node-3".into(),
        api_server: api_server(released, heads_tx),
        token_file: Some(token),
        ca_file: None,
        classes: BTreeMap::new(),
        proc_root: proc_root.clone(),
    });
    let d = InProcess::start(cfg);
    // This test's own process (the CLI) is the node's: it sees every pod's processes.
    let me = proc_root.join(std::process::id().to_string());
    let on_the_node = || {
        std::fs::create_dir_all(&me).unwrap();
        std::fs::write(
            me.join("cgroup"),
            "0::/user.slice/user-0.slice/session-1.scope\n",
        )
        .unwrap();
    };
    on_the_node();
    // The list is held back: agents in pods are refused, and retry, until it comes.
    let hp = Sim::start_once_recorded(&d.socket, 1, 100, &proc_root);
    let be = Sim::start_once_recorded(&d.socket, 1, 100, &proc_root);
    cgroup(&proc_root, hp.pid(), EMBEDDER);
    cgroup(&proc_root, be.pid(), TRAINER);
    let head = heads.recv_timeout(LIMIT).expect("the daemon lists pods");
    assert!(
        head.starts_with("GET /api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-node-3 "),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase()
            .contains(&format!("authorization: bearer {TOKEN}\r\n")),
        "{head}"
    );
    assert!(
        list(&d.socket).processes.is_empty(),
        "no pod agent before the list"
    );
    release.send(()).unwrap();
    wait_until("both registered", || {
        registered(&d.socket, hp.pid(), 1) && registered(&d.socket, be.pid(), 1)
    });
    assert_eq!(priority_of(&d.socket, hp.pid()), Some(30), "embedder-1: 30");
    assert_eq!(
        priority_of(&d.socket, be.pid()),
        Some(-100),
        "resnet-train: -100"
    );
    let watch = heads.recv_timeout(LIMIT).expect("the daemon watches pods");
    assert!(watch.contains("&watch=1&"), "{watch}");
    assert!(watch.contains("resourceVersion=48121"), "{watch}");
    // From inside the embedder's pod (this test's own process, its cgroup moved there), the
    // list shows the embedder's process and only counts of the trainer's.
    cgroup(&proc_root, std::process::id(), EMBEDDER);
    let from_pod = list(&d.socket);
    let pids: Vec<u32> = from_pod.processes.iter().map(|p| p.pid).collect();
    assert_eq!(pids, [hp.pid()], "{from_pod:?}");
    assert_eq!(from_pod.others.len(), 1, "{from_pod:?}");
    assert_eq!(
        (from_pod.others[0].processes, from_pod.others[0].queues),
        (1, 1)
    );
    let json = serde_json::to_string(&from_pod).unwrap();
    assert!(!json.contains(&format!("\"pid\":{}", be.pid())), "{json}");
    // This test's own process is the node's again: its root decides, its other users may not
    // lift a pod above what the cluster gave it.
    on_the_node();
    let set = Request::SetPriority {
        target: Target::Process { pid: be.pid() },
        priority: WirePriority(60),
    };
    match request(&d.socket, &set) {
        Reply::Done => {
            assert!(rustix::process::geteuid().is_root());
            assert_eq!(priority_of(&d.socket, be.pid()), Some(60));
        }
        Reply::Error(e) => {
            assert!(!rustix::process::geteuid().is_root());
            assert!(e.message.contains("above it"), "{}", e.message);
        }
        r => panic!("{r:?}"),
    }
}
