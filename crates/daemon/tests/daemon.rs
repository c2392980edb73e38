//! The daemon with real processes: simulated clients (`baton-sim-client`) scheduled across
//! processes, killed clients, a killed daemon, another user's requests, and bad frames.

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Instant;

use baton_daemon::DaemonConfig;
use baton_protocol::{
    AgentMessage, DaemonMessage, ErrorKind, Hello, HelloReply, PROTOCOL_VERSION, RefusalReason,
    Reply, Request, Role, Target, WirePriority, encode_frame, read_frame, write_frame,
};
use support::*;

/// An entry point, not a test: the daemon process the kill tests start (this binary re-run
/// with `BATON_TEST_DAEMON_SOCKET` set). Without the variable it returns at once.
#[test]
#[ignore = "an entry point: this binary re-runs it with --ignored"]
fn daemon_process() {
    serve_daemon_if_asked();
}

/// An entry point, not a test: a CLI request made as another user (this binary re-run under
/// another uid with `BATON_TEST_CLI_SOCKET` and `BATON_TEST_CLI_REQUEST` set). Prints the
/// reply as JSON.
#[test]
#[ignore = "an entry point: this binary re-runs it with --ignored"]
fn cli_process() {
    let (Some(socket), Some(req)) = (
        std::env::var_os("BATON_TEST_CLI_SOCKET"),
        std::env::var("BATON_TEST_CLI_REQUEST").ok(),
    ) else {
        return;
    };
    let req: Request = serde_json::from_str(&req).unwrap();
    let reply = request(std::path::Path::new(&socket), &req);
    println!("REPLY {}", serde_json::to_string(&reply).unwrap());
}

fn daemon() -> InProcess {
    InProcess::start(DaemonConfig::new(temp_dir("sock").join("baton.sock")))
}

/// A service (priority 10) and a job (0) of one queue each, both registered with `d`.
fn service_and_job(d: &InProcess) -> (Sim, Sim) {
    let hp = Sim::start(&d.socket, 1, 10);
    let be = Sim::start(&d.socket, 1, 0);
    wait_until("both registered", || {
        registered(&d.socket, hp.pid(), 1) && registered(&d.socket, be.pid(), 1)
    });
    (hp, be)
}

#[test]
fn best_effort_waits_while_high_priority_is_ready() {
    let d = daemon();
    let (mut hp, mut be) = service_and_job(&d);
    be.send("ready 0");
    // Ready alone, BE runs: the daemon took that in and sent no suspension.
    assert!(!settled(&d.socket, be.pid(), 0, true));
    be.none_so_far("suspend");
    hp.send("ready 0");
    be.expect("suspend 0");
    // BE's next command waits while HP runs.
    be.send("ready 0");
    let s = be.status();
    assert_eq!(
        (s["submitted"].as_str(), s["launched"].as_str()),
        ("2", "1")
    );
    let l = list(&d.socket);
    let row = |pid| {
        l.processes
            .iter()
            .find(|p| p.pid == pid)
            .map(|p| p.queues[0].suspended)
    };
    assert_eq!((row(hp.pid()), row(be.pid())), (Some(false), Some(true)));
    hp.send("idle 0");
    be.expect("resume 0");
    let s = be.status();
    assert_eq!(s["launched"], "2", "the held command ran after the resume");
    // HP, the most urgent, was never suspended.
    assert!(!settled(&d.socket, hp.pid(), 0, false));
    hp.none_so_far("suspend");
}

#[test]
fn a_yielding_job_is_held_only_for_a_service_measured_keeping_the_device_busy() {
    // Through the daemon's real path: hints from the processes' agents, decisions back.
    let d = daemon();
    let (mut hp, mut be) = service_and_job(&d);
    be.send("yielding 100");
    wait_until("the job's claim to yield", || {
        list(&d.socket).processes.iter().any(|p| {
            p.pid == be.pid()
                && p.hints
                    .iter()
                    .any(|h| matches!(h, baton_protocol::Hint::Yielding { .. }))
        })
    });
    be.send("ready 0");
    hp.send("ready 0");
    // The service not measured yet: the job keeps running, only its slice short.
    assert!(!settled(&d.socket, hp.pid(), 0, true));
    assert!(!settled(&d.socket, be.pid(), 0, true));
    be.none_so_far("suspend");
    // Measured waiting for its work (a graph replayed per request): the job is held.
    hp.send("readiness 0 300 280");
    be.expect("suspend 0");
    // Measured bound by its own launching: the job runs again, the service still ready.
    hp.send("readiness 0 990 50");
    be.expect("resume 0");
    assert!(!settled(&d.socket, be.pid(), 0, true));
    // Busy again, then idle: held, and let go after the daemon's linger.
    hp.send("readiness 0 300 280");
    be.expect("suspend 0");
    hp.send("idle 0");
    be.expect("resume 0");
    hp.none_so_far("suspend");
}

#[test]
fn killing_a_client_frees_its_queues() {
    let d = daemon();
    let mut hp = Sim::start(&d.socket, 2, 10);
    let mut be = Sim::start(&d.socket, 1, 0);
    wait_until("both registered", || {
        registered(&d.socket, hp.pid(), 2) && registered(&d.socket, be.pid(), 1)
    });
    be.send("ready 0");
    hp.send("ready 0");
    be.expect("suspend 0");
    be.send("ready 0");
    let pid = hp.pid();
    let t0 = Instant::now();
    hp.child.kill().unwrap();
    wait_until("the killed client's queues to go", || {
        !list(&d.socket).processes.iter().any(|p| p.pid == pid)
    });
    // Freed on the connection's end, not by a timer: how soon is measured by the chaos tests'
    // report (`baton.chaos-client-kills/1`), not bounded here.
    eprintln!("freed {:?} after the kill", t0.elapsed());
    let _ = hp.child.wait();
    // The other client is unaffected: resumed, and its held work runs.
    be.expect("resume 0");
    let s = be.status();
    assert_eq!(
        (s["submitted"].as_str(), s["launched"].as_str()),
        ("2", "2")
    );
    let st = match request(&d.socket, &Request::Status) {
        Reply::Status(s) => s,
        r => panic!("{r:?}"),
    };
    assert_eq!((st.processes, st.queues, st.suspended_queues), (1, 1, 0));
}

#[test]
fn killing_the_daemon_fails_open_and_clients_register_again() {
    let socket = temp_dir("kill-daemon").join("baton.sock");
    let mut d = Separate::start(&socket);
    let mut hp = Sim::start(&socket, 1, 10);
    let mut be = Sim::start(&socket, 2, 0);
    wait_until("both registered", || {
        registered(&socket, hp.pid(), 1) && registered(&socket, be.pid(), 2)
    });
    hp.send("ready 0");
    be.expect("suspend ");
    be.expect("suspend ");
    be.send("ready 0");
    be.send("ready 1");
    be.send("ready 0");
    let s = be.status();
    assert_eq!(
        (s["submitted"].as_str(), s["launched"].as_str()),
        ("3", "0")
    );
    d.kill();
    // Fail-open: every held queue runs at once, and no command is lost.
    be.expect("resume ");
    be.expect("resume ");
    wait_until("BE to run everything", || {
        let s = be.status();
        s["launched"] == "3" && s["connected"] == "false"
    });
    // A new daemon: both clients come back with their current state, and HP, still ready,
    // holds BE back again.
    let _d2 = Separate::start(&socket);
    wait_until("both registered again", || {
        registered(&socket, hp.pid(), 1) && registered(&socket, be.pid(), 2)
    });
    be.expect("suspend ");
    assert_eq!(hp.status()["connections"], "2");
    assert_eq!(be.status()["connections"], "2");
}

#[test]
fn requests_from_another_user_are_refused() {
    // A system daemon lets `nobody`'s group in; only root or the owner may change things.
    let Some(group) = as_other_users("daemon: requests from another user are refused") else {
        return;
    };
    let dir = temp_dir("uid");
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    cfg.system = true;
    cfg.group = Some(group);
    let d = InProcess::start(cfg);
    let mut root_client = Sim::start(&d.socket, 1, 0);
    wait_until("registered", || registered(&d.socket, root_client.pid(), 1));
    let as_nobody = |req: &Request| -> Reply {
        let req = serde_json::to_string(req).unwrap();
        let env = [
            ("BATON_TEST_CLI_SOCKET", d.socket.as_os_str()),
            ("BATON_TEST_CLI_REQUEST", req.as_ref()),
        ];
        serde_json::from_str(&rerun_as_nobody("cli_process", &env, "REPLY ")).unwrap()
    };
    let set = Request::SetPriority {
        target: Target::Process {
            pid: root_client.pid(),
        },
        priority: WirePriority(100),
    };
    // Another user's process is, to nobody, no process at all: nothing of its owner shows.
    match as_nobody(&set) {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::UnknownProcess);
            assert_eq!(
                e.message,
                format!(
                    "no scheduled process has pid {}: see `baton list`",
                    root_client.pid()
                )
            );
        }
        r => panic!("{r:?}"),
    }
    let policy = Request::SetPolicy {
        name: "hpf".into(),
        params: vec![],
    };
    match as_nobody(&policy) {
        Reply::Error(e) => {
            assert_eq!(e.kind, ErrorKind::Unauthorized);
            assert!(e.message.contains("only root"), "{}", e.message);
        }
        r => panic!("{r:?}"),
    }
    // Reading shows nobody only counts of root's process: no pid, name, command or user.
    match as_nobody(&Request::List { pid: None }) {
        Reply::List(l) => {
            assert!(l.processes.is_empty(), "{l:?}");
            assert_eq!(l.others.len(), 1, "{l:?}");
            assert_eq!((l.others[0].processes, l.others[0].queues), (1, 1));
            let json = serde_json::to_string(&l).unwrap();
            assert!(
                !json.contains("baton-sim") && !json.contains("\"uid\""),
                "{json}"
            );
        }
        r => panic!("{r:?}"),
    }
    // Nor a trace of it.
    match as_nobody(&Request::TraceRead { cursor: 0 }) {
        Reply::Error(e) => assert_eq!(e.kind, ErrorKind::Unauthorized),
        r => panic!("{r:?}"),
    }
    // Root sees it whole, unchanged, and may change it.
    let mine = list(&d.socket);
    assert_eq!(mine.processes.len(), 1);
    assert!(mine.others.is_empty());
    assert!(
        mine.processes[0]
            .hints
            .iter()
            .all(|h| { !matches!(h, baton_protocol::Hint::Priority(WirePriority(100))) })
    );
    assert_eq!(request(&d.socket, &set), Reply::Done);
    root_client.send("status");
}

#[test]
fn two_users_of_a_system_daemon_see_their_own_processes_and_counts_of_the_others() {
    let Some(group) = as_other_users("daemon: two users of a system daemon") else {
        return;
    };
    const SECOND: u32 = 65533;
    let dir = temp_dir("two-users");
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    cfg.system = true;
    cfg.group = Some(group);
    let d = InProcess::start(cfg);
    let spawn_as = |uid: u32| {
        use std::os::unix::process::CommandExt;
        Killed(
            std::process::Command::new(sim_client())
                .arg("--socket")
                .arg(&d.socket)
                .args(["--queues", "1", "--priority", "0"])
                .uid(uid)
                .gid(NOBODY)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap(),
        )
    };
    let first = spawn_as(NOBODY);
    let second = spawn_as(SECOND);
    let root = Sim::start(&d.socket, 2, 0);
    // Each with its queues: a process is listed as soon as it connects, before its queues,
    // and the others' counts are per device, so a process without queues yet is not in them.
    wait_until("all three registered with their 4 queues", || {
        let l = list(&d.socket);
        l.processes.len() == 3 && l.processes.iter().map(|p| p.queues.len()).sum::<usize>() == 4
    });
    let list_as = |uid: u32| -> baton_protocol::ProcessList {
        let req = serde_json::to_string(&Request::List { pid: None }).unwrap();
        let env = [
            ("BATON_TEST_CLI_SOCKET", d.socket.as_os_str()),
            ("BATON_TEST_CLI_REQUEST", req.as_ref()),
        ];
        match serde_json::from_str(&rerun_as(uid, "cli_process", &env, "REPLY ")).unwrap() {
            Reply::List(l) => l,
            r => panic!("{r:?}"),
        }
    };
    for (uid, own, other) in [(NOBODY, &first, &second), (SECOND, &second, &first)] {
        let l = list_as(uid);
        let pids: Vec<u32> = l.processes.iter().map(|p| p.pid).collect();
        assert_eq!(pids, [own.0.id()], "uid {uid}: {l:?}");
        // The other user's process and root's, folded: 2 processes, 3 queues.
        assert_eq!(l.others.len(), 1, "{l:?}");
        assert_eq!((l.others[0].processes, l.others[0].queues), (2, 3), "{l:?}");
        let json = serde_json::to_string(&l).unwrap();
        for hidden in [other.0.id(), root.pid()] {
            assert!(!json.contains(&format!("\"pid\":{hidden}")), "{json}");
        }
    }
}

fn raw(socket: &std::path::Path) -> UnixStream {
    let s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s
}

#[test]
fn bad_frames_are_refused_and_other_clients_carry_on() {
    let d = daemon();
    let hp = Sim::start(&d.socket, 1, 10);
    let mut be = Sim::start(&d.socket, 1, 0);
    wait_until("both registered", || {
        registered(&d.socket, hp.pid(), 1) && registered(&d.socket, be.pid(), 1)
    });
    // A hello of another protocol version: refused, saying so.
    let mut s = raw(&d.socket);
    let mut hello = Hello::new(Role::Agent, 1, "old");
    hello.version = PROTOCOL_VERSION + 1;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&[0; 4]);
    let payload = postcard_hello(&hello);
    bytes.truncate(0);
    bytes.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(&payload);
    s.write_all(&bytes).unwrap();
    match read_frame::<HelloReply, _>(&mut s).unwrap() {
        Some(HelloReply::Refused(r)) => assert_eq!(r.reason, RefusalReason::VersionMismatch),
        r => panic!("{r:?}"),
    }
    // Garbage instead of a hello.
    let mut s = raw(&d.socket);
    s.write_all(&[3, 0, 0, 0, 0xff, 0xff, 0xff]).unwrap();
    match read_frame::<HelloReply, _>(&mut s).unwrap() {
        Some(HelloReply::Refused(r)) => assert_eq!(r.reason, RefusalReason::BadHello),
        r => panic!("{r:?}"),
    }
    // An agent sending a malformed frame is told, and its connection goes on.
    let mut a = raw(&d.socket);
    write_frame(&mut a, &Hello::new(Role::Agent, std::process::id(), "t")).unwrap();
    assert!(matches!(
        read_frame::<HelloReply, _>(&mut a).unwrap(),
        Some(HelloReply::Welcome(_))
    ));
    a.write_all(&[2, 0, 0, 0, 0xee, 0xee]).unwrap();
    match read_frame::<DaemonMessage, _>(&mut a).unwrap() {
        Some(DaemonMessage::Rejected { error, .. }) => {
            assert_eq!(error.kind, ErrorKind::InvalidArgument);
        }
        r => panic!("{r:?}"),
    }
    write_frame(
        &mut a,
        &AgentMessage::QueueDestroyed {
            queue: baton_protocol::QueueId(5),
        },
    )
    .unwrap();
    match read_frame::<DaemonMessage, _>(&mut a).unwrap() {
        Some(DaemonMessage::Rejected { error, .. }) => {
            assert_eq!(error.kind, ErrorKind::UnknownQueue)
        }
        r => panic!("{r:?}"),
    }
    // An oversized frame ends that connection only.
    a.write_all(&u32::MAX.to_le_bytes()).unwrap();
    let mut rest = Vec::new();
    let _ = a.read_to_end(&mut rest);
    // A CLI sending nonsense gets an error reply.
    let mut c = cli(&d.socket).unwrap();
    let mut junk = Vec::new();
    encode_frame(&Request::Status, &mut junk).unwrap();
    let n = junk.len();
    junk[n - 1] = 0xff;
    c.write_all(&junk).unwrap();
    match read_frame::<Reply, _>(&mut c).unwrap() {
        Some(Reply::Error(e)) => assert_eq!(e.kind, ErrorKind::InvalidArgument),
        r => panic!("{r:?}"),
    }
    // The real clients were never disturbed.
    let mut hp = hp;
    be.send("ready 0");
    hp.send("ready 0");
    be.expect("suspend 0");
    hp.send("idle 0");
    be.expect("resume 0");
}

/// A hello's payload, built with the protocol's own encoder but a forged version (which the
/// encoder's validation would refuse).
fn postcard_hello(h: &Hello) -> Vec<u8> {
    let mut ok = h.clone();
    ok.version = PROTOCOL_VERSION;
    let mut framed = Vec::new();
    encode_frame(&ok, &mut framed).unwrap();
    let mut payload = framed[4..].to_vec();
    // The version is the first field: a varint; versions below 128 take one byte.
    const { assert!(PROTOCOL_VERSION < 127) };
    payload[0] = u8::try_from(h.version).unwrap();
    payload
}

#[test]
fn metrics_endpoint_serves_prometheus_and_json_on_loopback() {
    let mut cfg = DaemonConfig::new(temp_dir("metrics").join("baton.sock"));
    cfg.metrics = Some("127.0.0.1:0".parse().unwrap());
    // Guard reports figures of its own (baton_policy_state).
    cfg.policy = "guard".into();
    let d = InProcess::start(cfg);
    // A queue reports its transitions only when they can change a decision: under guard (as
    // under HPF), when it outranks another queue or may be suspended. So HP shares the device
    // with a lower queue.
    let be = Sim::start(&d.socket, 1, 0);
    wait_until("BE registered", || registered(&d.socket, be.pid(), 1));
    let mut hp = Sim::start(&d.socket, 1, 10);
    wait_until("registered", || registered(&d.socket, hp.pid(), 1));
    hp.send("ready 0");
    let addr = d.metrics.unwrap();
    assert!(addr.ip().is_loopback());
    let get = |path: &str| -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    wait_until("the ready queue in the metrics", || {
        get("/metrics").contains("baton_queues_ready 1")
    });
    let m = get("/metrics");
    assert!(m.starts_with("HTTP/1.1 200 OK"), "{m}");
    for needle in [
        "baton_queues 2",
        "baton_decision_latency_seconds_bucket",
        "baton_queue_suspended_seconds_total",
        "baton_queue_commands_launched_total",
        "baton_policy_state{policy=\"guard\",name=\"probes\"}",
    ] {
        assert!(m.contains(needle), "{needle} missing in {m}");
    }
    let j = get("/status");
    let body = j.split("\r\n\r\n").nth(1).unwrap();
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["schema"], "baton.daemon-status/1");
    assert_eq!(v["status"]["queues"], 2);
    let pids: Vec<&serde_json::Value> = v["processes"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["pid"])
        .collect();
    assert!(pids.contains(&&serde_json::json!(hp.pid())), "{pids:?}");
    // Any local user can reach the endpoint: names and command lines stay out by default.
    for p in v["processes"]["processes"].as_array().unwrap() {
        assert!(
            p["name"].as_str().is_some_and(str::is_empty)
                && p["command"].as_str().is_some_and(str::is_empty),
            "a command line in /status by default: {p}"
        );
    }
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
}
