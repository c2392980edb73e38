//! Bad input, tried against real daemons: every case gets a clear error, and a rejected input
//! changes nothing (the process list, the policy and the other clients' queues are the same
//! before and after).
//!
//! The table in `docs/RELIABILITY.md` is this file's output: run
//! `BATON_BAD_INPUT_TABLE=docs/reliability/bad-input.md cargo test -p baton-daemon --test
//! bad_input` to write it (rows in the order below).

mod support;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Mutex;

use baton_daemon::{Daemon, DaemonConfig, DaemonError};
use baton_protocol::{
    AgentMessage, DaemonMessage, ErrorKind, Hello, HelloReply, PROTOCOL_VERSION, QueueId, QueueRef,
    QueueStateChange, Reply, Request, Role, Target, WirePriority, encode_frame, read_frame,
    write_frame,
};
use support::*;

/// The rows found so far: (input, what the daemon answers).
static ROWS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn row(input: &str, answer: &str) {
    ROWS.lock().unwrap().push((input.to_string(), tidy(answer)));
}

/// An answer as the table shows it: temporary paths and pids shown as placeholders.
fn tidy(answer: &str) -> String {
    let mut a = answer.replace('|', "\\|");
    if let Some(i) = a.find(env!("CARGO_TARGET_TMPDIR")) {
        let end = a[i..]
            .find(|c: char| c.is_whitespace() || c == ':' || c == '`')
            .map_or(a.len(), |e| i + e);
        let path = a[i..end].to_string();
        a = a.replace(&path, "DIR/…");
    }
    a
}

/// Everything a rejected input must leave as it was.
fn state(socket: &Path) -> String {
    let mut l = list(socket);
    // The prober's own agent connections are not what is compared.
    l.processes.retain(|p| p.pid != std::process::id());
    for p in &mut l.processes {
        // Ages move on their own too.
        p.connected_ns = 0;
        for q in &mut p.queues {
            q.since_ns = 0;
            // Counters move on their own; what is compared is who is scheduled and how.
            q.commands_per_sec = 0.0;
            q.device_share = 0.0;
            q.in_flight = 0;
            q.launched = 0;
            q.completed = 0;
            q.buffered = 0;
        }
    }
    let policy = match request(socket, &Request::GetPolicy) {
        Reply::Policy(p) => p.current,
        r => panic!("{r:?}"),
    };
    format!("{policy} {}", serde_json::to_string(&l).unwrap())
}

fn raw(socket: &Path) -> UnixStream {
    let s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    s
}

fn agent(socket: &Path) -> UnixStream {
    let mut a = raw(socket);
    write_frame(&mut a, &Hello::new(Role::Agent, std::process::id(), "t")).unwrap();
    assert!(matches!(
        read_frame::<HelloReply, _>(&mut a).unwrap(),
        Some(HelloReply::Welcome(_))
    ));
    a
}

fn refusal(s: &mut UnixStream) -> String {
    match read_frame::<HelloReply, _>(s).unwrap() {
        Some(HelloReply::Refused(r)) => format!("refused ({:?}): {}", r.reason, r.message),
        r => panic!("{r:?}"),
    }
}

fn rejected(s: &mut UnixStream) -> (ErrorKind, String) {
    match read_frame::<DaemonMessage, _>(s).unwrap() {
        Some(DaemonMessage::Rejected { error, .. }) => (error.kind, error.message),
        r => panic!("{r:?}"),
    }
}

fn closed(s: &mut UnixStream) -> bool {
    let mut rest = Vec::new();
    // End of file, or a reset (the daemon closed with our bytes unread); not a timeout.
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

fn cli_error(socket: &Path, r: &Request) -> (ErrorKind, String) {
    match request(socket, r) {
        Reply::Error(e) => (e.kind, e.message),
        r => panic!("{r:?}"),
    }
}

/// The wire bytes of a request whose last field, a priority encoded as 100, is replaced by
/// `p` (the encoder itself refuses out-of-range values).
fn forged_priority(r: &Request, p: i32) -> Vec<u8> {
    let mut framed = Vec::new();
    encode_frame(r, &mut framed).unwrap();
    let zig = |v: i32| u32::try_from((v << 1) ^ (v >> 31)).unwrap();
    let varint = |mut v: u32| {
        let mut out = Vec::new();
        loop {
            let b = u8::try_from(v & 0x7f).unwrap();
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    };
    let old = varint(zig(100));
    let new = varint(zig(p));
    assert_eq!(
        old.len(),
        new.len(),
        "same length, so the header stays right"
    );
    let n = framed.len();
    assert_eq!(&framed[n - old.len()..], &old[..]);
    framed.truncate(n - old.len());
    framed.extend_from_slice(&new);
    framed
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let d = InProcess::start(DaemonConfig::new(temp_dir("bad").join("baton.sock")));
    let s = &d.socket;
    let hp = Sim::start(s, 1, 10);
    let mut be = Sim::start(s, 1, 0);
    wait_until("both registered", || {
        registered(s, hp.pid(), 1) && registered(s, be.pid(), 1)
    });
    be.send("ready 0");
    let mut hp = hp;
    hp.send("ready 0");
    be.expect("suspend 0");
    let before = state(s);
    let same = |what: &str| assert_eq!(state(s), before, "{what} changed the daemon's state");

    // Handshakes.
    let mut c = raw(s);
    c.write_all(&[3, 0, 0, 0, 0xff, 0xff, 0xff]).unwrap();
    row("garbage instead of a hello", &refusal(&mut c));
    same("a garbage hello");

    let mut c = raw(s);
    let mut hello = Hello::new(Role::Agent, 1, "old");
    hello.version = PROTOCOL_VERSION;
    let mut framed = Vec::new();
    encode_frame(&hello, &mut framed).unwrap();
    framed[4] = u8::try_from(PROTOCOL_VERSION + 1).unwrap();
    c.write_all(&framed).unwrap();
    row("a hello of another protocol version", &refusal(&mut c));
    same("a hello of another version");

    let mut c = raw(s);
    c.write_all(&u32::MAX.to_le_bytes()).unwrap();
    assert!(closed(&mut c));
    row(
        "a hello announcing a 4 GiB frame",
        "connection closed before reading the body (frames are at most 64 KiB)",
    );
    same("an oversized hello");

    // An agent's frames.
    let mut a = agent(s);
    a.write_all(&[2, 0, 0, 0, 0xee, 0xee]).unwrap();
    let (k, m) = rejected(&mut a);
    assert_eq!(k, ErrorKind::InvalidArgument);
    row(
        "an agent's malformed frame",
        &format!("Rejected {k:?}: {m}; the connection goes on"),
    );
    write_frame(&mut a, &AgentMessage::QueueDestroyed { queue: QueueId(5) }).unwrap();
    let (k, m) = rejected(&mut a);
    assert_eq!(k, ErrorKind::UnknownQueue);
    row(
        "an agent destroying a queue it never announced",
        &format!("Rejected {k:?}: {m}"),
    );
    write_frame(
        &mut a,
        &AgentMessage::QueueState(QueueStateChange {
            queue: QueueId(9),
            ready: true,
            transition: 1,
            at_ns: 0,
        }),
    )
    .unwrap();
    let (k, m) = rejected(&mut a);
    assert_eq!(k, ErrorKind::UnknownQueue);
    row(
        "an agent reporting the state of an unknown queue",
        &format!("Rejected {k:?}: {m}"),
    );
    same("an agent's bad frames");
    let mut big = (u32::try_from(baton_protocol::MAX_FRAME_LEN).unwrap() + 1)
        .to_le_bytes()
        .to_vec();
    big.extend(std::iter::repeat_n(0u8, 1024));
    a.write_all(&big).unwrap();
    assert!(closed(&mut a));
    row(
        "an agent's frame of 64 KiB + 1",
        "connection closed (its queues, none here, freed); other clients unaffected",
    );
    same("an oversized agent frame");

    // The CLI's requests.
    let mut c = cli(s).unwrap();
    let mut junk = Vec::new();
    encode_frame(&Request::Status, &mut junk).unwrap();
    let n = junk.len();
    junk[n - 1] = 0xff;
    c.write_all(&junk).unwrap();
    match read_frame::<Reply, _>(&mut c).unwrap() {
        Some(Reply::Error(e)) => {
            assert_eq!(e.kind, ErrorKind::InvalidArgument);
            row(
                "a CLI's malformed request",
                &format!("Error {:?}: {}", e.kind, e.message),
            );
        }
        r => panic!("{r:?}"),
    }
    let mut c = cli(s).unwrap();
    c.write_all(&u32::MAX.to_le_bytes()).unwrap();
    assert!(closed(&mut c));
    row(
        "a CLI's request announcing a 4 GiB frame",
        "connection closed",
    );
    same("bad CLI frames");

    let cases: Vec<(&str, Request, ErrorKind)> = vec![
        (
            "a priority for an unknown process",
            Request::SetPriority {
                target: Target::Process { pid: 4_000_000 },
                priority: WirePriority(5),
            },
            ErrorKind::UnknownProcess,
        ),
        (
            "a hint for an unknown queue of a known process",
            Request::SetPriority {
                target: Target::Queue(QueueRef {
                    pid: hp.pid(),
                    queue: QueueId(42),
                }),
                priority: WirePriority(5),
            },
            ErrorKind::UnknownQueue,
        ),
        (
            "a device-wide hint for an unknown device",
            Request::Hint {
                target: Target::Device {
                    id: "GPU-nope".into(),
                },
                hint: baton_protocol::Hint::KEdf { k: 2 },
            },
            ErrorKind::UnknownDevice,
        ),
        (
            "an unknown policy",
            Request::SetPolicy {
                name: "fastest-please".into(),
                params: vec![],
            },
            ErrorKind::UnknownPolicy,
        ),
        (
            "a policy parameter the policy does not take",
            Request::SetPolicy {
                name: "hpf".into(),
                params: vec![baton_protocol::PolicyParam {
                    key: "x".into(),
                    value: "1".into(),
                }],
            },
            ErrorKind::InvalidArgument,
        ),
        (
            "a trace stop with no trace recording",
            Request::TraceStop,
            ErrorKind::Conflict,
        ),
    ];
    for (what, r, kind) in cases {
        let (k, m) = cli_error(s, &r);
        assert_eq!(k, kind, "{what}: {m}");
        row(what, &format!("Error {k:?}: {m}"));
        same(what);
    }
    for p in [101, -101, 8000] {
        let r = Request::SetPriority {
            target: Target::Process { pid: hp.pid() },
            priority: WirePriority(100),
        };
        let mut c = cli(s).unwrap();
        c.write_all(&forged_priority(&r, p)).unwrap();
        match read_frame::<Reply, _>(&mut c).unwrap() {
            Some(Reply::Error(e)) => {
                assert_eq!(e.kind, ErrorKind::InvalidArgument);
                row(
                    &format!("an out-of-range priority ({p}) on the wire"),
                    &format!("Error {:?}: {}", e.kind, e.message),
                );
            }
            r => panic!("{r:?}"),
        }
        same("an out-of-range priority");
    }

    // The real clients never noticed.
    hp.send("idle 0");
    be.expect("resume 0");
    write_table();
}

#[test]
fn bad_settings_stop_a_daemon_before_it_starts() {
    let dir = temp_dir("settings");
    let mut cfg = DaemonConfig::new(dir.join("a.sock"));
    cfg.policy = "fastest-please".into();
    let e = Daemon::bind(cfg).err().expect("refused");
    assert!(matches!(e, DaemonError::UnknownPolicy(_)), "{e}");
    row_startup("`baton daemon --policy fastest-please`", &e);
    assert!(!dir.join("a.sock").exists(), "nothing was created");

    let mut cfg = DaemonConfig::new(dir.join("b.sock"));
    cfg.metrics = Some("0.0.0.0:0".parse().unwrap());
    let e = Daemon::bind(cfg).err().expect("refused");
    assert!(matches!(e, DaemonError::MetricsNotLoopback { .. }), "{e}");
    row_startup("`baton daemon --metrics 0.0.0.0:9464` (not loopback)", &e);

    let mut cfg = DaemonConfig::new(dir.join("c.sock"));
    cfg.max_priority = Some(1000);
    let e = Daemon::bind(cfg).err().expect("refused");
    assert!(matches!(e, DaemonError::BadSetting(_)), "{e}");
    row_startup("`baton daemon --max-priority 1000`", &e);

    let mut cfg = DaemonConfig::new(dir.join("e.sock"));
    cfg.short_command = Some(std::time::Duration::from_secs(5));
    let e = Daemon::bind(cfg).err().expect("refused");
    assert!(matches!(e, DaemonError::BadSetting(_)), "{e}");
    row_startup("`baton daemon --short-command-us 5000000`", &e);

    // A second daemon on the same socket: refused; the first goes on serving.
    let first = InProcess::start(DaemonConfig::new(dir.join("d.sock")));
    let e = Daemon::bind(DaemonConfig::new(dir.join("d.sock")))
        .err()
        .expect("refused");
    assert!(matches!(e, DaemonError::AlreadyRunning { .. }), "{e}");
    row_startup("a second daemon on the same socket", &e);
    assert!(matches!(
        request(&first.socket, &Request::Status),
        Reply::Status(_)
    ));

    // A socket directory that other users may write (and not sticky): refused.
    let open = dir.join("open");
    std::fs::create_dir(&open).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Daemon::bind(DaemonConfig::new(open.join("baton.sock")))
        .err()
        .expect("refused");
    assert!(matches!(e, DaemonError::UnsafeDirectory { .. }), "{e}");
    row_startup("a socket directory other users may write (mode 0777)", &e);

    // A directory the daemon's user may not write: as another user, when this runs as root.
    if rustix::process::geteuid().is_root() {
        let locked = dir.join("locked");
        std::fs::create_dir(&locked).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        let socket = locked.join("baton.sock");
        let env = [("BATON_TEST_BIND_SOCKET", socket.as_os_str())];
        let line = rerun_as_nobody("bind_process", &env, "BIND ");
        assert!(line.starts_with("cannot listen on"), "{line}");
        row(
            "a socket directory the daemon's user cannot write (run as uid 65534)",
            &line,
        );
    } else {
        skip(
            "bad input: a socket directory the daemon's user cannot write",
            "needs root",
        );
    }
    write_table();
}

/// An entry point, not a test: binds a daemon as another user (this binary re-run with
/// `BATON_TEST_BIND_SOCKET` set) and prints the error.
#[test]
#[ignore = "an entry point: this binary re-runs it with --ignored"]
fn bind_process() {
    let Some(socket) = std::env::var_os("BATON_TEST_BIND_SOCKET") else {
        return;
    };
    match Daemon::bind(DaemonConfig::new(socket.into())) {
        Ok(_) => println!("BIND ok"),
        Err(e) => println!("BIND {e}"),
    }
}

fn row_startup(input: &str, e: &DaemonError) {
    row(input, &format!("does not start: {e}"));
}

/// Writes the rows found so far, when asked to (both tests call it; the last one writes all).
fn write_table() {
    let Some(path) = std::env::var_os("BATON_BAD_INPUT_TABLE") else {
        return;
    };
    let rows = ROWS.lock().unwrap();
    let mut out =
        String::from("| input | what it gets (the daemon's own words) |\n| --- | --- |\n");
    let mut sorted: Vec<&(String, String)> = rows.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, a) in sorted {
        out.push_str(&format!("| {i} | {a} |\n"));
    }
    std::fs::write(path, out).unwrap();
}
