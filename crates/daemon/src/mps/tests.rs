//! The MPS server's life on a stand-in for NVIDIA's control program: a shell script that
//! keeps the control pipe and a process standing for the control daemon, and answers
//! `get_server_list` and `quit` as the real one's client mode does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;

const FAKE_CONTROL: &str = r#"#!/bin/sh
pipe="${CUDA_MPS_PIPE_DIRECTORY:?}"
if [ "$1" = "-d" ]; then
    if [ -e "$pipe/control" ]; then
        echo "An instance of this daemon is already running" >&2
        exit 1
    fi
    mkfifo "$pipe/control" || exit 1
    sleep 100000 </dev/null >/dev/null 2>&1 &
    echo $! >"$pipe/daemon.pid"
    echo started >>"${CUDA_MPS_LOG_DIRECTORY:?}/control.log"
    exit 0
fi
read -r cmd
pid=$(cat "$pipe/daemon.pid" 2>/dev/null)
# A killed stand-in nobody reaped yet is a zombie: gone, as a killed control daemon is.
state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
if [ -z "$pid" ] || [ -z "$state" ] || [ "$state" = Z ]; then
    echo "Cannot find MPS control daemon process"
    exit 1
fi
case "$cmd" in
quit) kill "$pid"; rm -f "$pipe/control" "$pipe/daemon.pid"; exit 0 ;;
get_server_list) if [ -e "$pipe/clients" ]; then echo 4242; fi; exit 0 ;;
"get_client_list 4242") cat "$pipe/clients"; exit 0 ;;
*) exit 1 ;;
esac
"#;

/// A scratch folder with the stand-in control program and a socket path beside it.
struct Scratch {
    dir: PathBuf,
    program: PathBuf,
}

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("baton-mps-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let program = dir.join(MPS_CONTROL);
        std::fs::write(&program, FAKE_CONTROL).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Scratch { dir, program }
    }

    fn dirs(&self) -> MpsDirs {
        MpsDirs::for_socket(&self.dir.join("baton.sock"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A test that failed half-way leaves its stand-in daemon: end it with the folder.
        if let Ok(pid) = std::fs::read_to_string(self.dirs().pipe.join("daemon.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn daemon_pid(dirs: &MpsDirs) -> Option<u32> {
    std::fs::read_to_string(dirs.pipe.join("daemon.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn runs(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
}

#[test]
fn its_folders_sit_beside_the_socket() {
    let d = MpsDirs::for_socket(Path::new("/run/user/1000/baton/baton.sock"));
    assert_eq!(d.root, Path::new("/run/user/1000/baton/baton.sock.mps"));
    assert_eq!(
        d.pipe,
        Path::new("/run/user/1000/baton/baton.sock.mps/pipe")
    );
    assert_eq!(d.log, Path::new("/run/user/1000/baton/baton.sock.mps/log"));
    assert_eq!(d.control(), d.pipe.join("control"));
}

#[test]
fn started_it_answers_and_stopped_it_leaves_nothing_behind() {
    let s = Scratch::new("life");
    let server = MpsServer::start(&s.program, s.dirs()).expect("starts");
    assert!(!server.adopted());
    assert!(server.alive() && s.dirs().control().exists());
    let pid = daemon_pid(&s.dirs()).expect("a control daemon");
    assert!(runs(pid));
    server.stop();
    assert!(!s.dirs().root.exists(), "its folders are removed");
    let deadline = Instant::now() + Duration::from_secs(5);
    while runs(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!runs(pid), "the control daemon is gone");
}

#[test]
fn one_left_by_a_killed_daemon_is_adopted_and_a_dead_one_replaced() {
    let s = Scratch::new("adopt");
    // The first daemon is killed: its control daemon keeps running.
    let first = MpsServer::start(&s.program, s.dirs()).unwrap();
    let pid = daemon_pid(&s.dirs()).unwrap();
    std::mem::forget(first);
    let second = MpsServer::start(&s.program, s.dirs()).unwrap();
    assert!(second.adopted(), "the running one is adopted");
    assert_eq!(daemon_pid(&s.dirs()), Some(pid), "not started twice");
    // Its control daemon dies too, leaving its pipe: the next start clears it and starts anew.
    std::mem::forget(second);
    Command::new("kill").arg(pid.to_string()).status().unwrap();
    while runs(pid) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(s.dirs().control().exists(), "a stale pipe is left");
    let third = MpsServer::start(&s.program, s.dirs()).unwrap();
    assert!(!third.adopted());
    assert_ne!(daemon_pid(&s.dirs()), Some(pid));
    assert!(third.alive());
    third.stop();
    assert!(!s.dirs().root.exists());
}

#[test]
fn one_serving_programs_is_left_running_for_them() {
    let s = Scratch::new("clients");
    let server = MpsServer::start(&s.program, s.dirs()).unwrap();
    let pid = daemon_pid(&s.dirs()).unwrap();
    std::fs::write(s.dirs().pipe.join("clients"), "5001\n5002\n").unwrap();
    server.stop();
    assert!(
        runs(pid) && s.dirs().control().exists(),
        "left for its clients"
    );
    // Its clients gone, the next daemon adopts it and stops it.
    std::fs::remove_file(s.dirs().pipe.join("clients")).unwrap();
    let next = MpsServer::start(&s.program, s.dirs()).unwrap();
    assert!(next.adopted());
    next.stop();
    assert!(!s.dirs().root.exists());
}

#[test]
fn the_health_check_starts_a_control_daemon_that_died_again() {
    let s = Scratch::new("health");
    let mut server = MpsServer::start(&s.program, s.dirs()).unwrap();
    server.watch(Duration::from_millis(100)).unwrap();
    let pid = daemon_pid(&s.dirs()).unwrap();
    Command::new("kill").arg(pid.to_string()).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(server.alive() && daemon_pid(&s.dirs()).is_some_and(|p| p != pid)) {
        assert!(Instant::now() < deadline, "not started again");
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(s.dirs().log.join("control.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "started twice: {log}");
    server.stop();
    assert!(!s.dirs().root.exists());
}

#[test]
fn a_missing_or_failing_control_program_is_a_clear_error() {
    let s = Scratch::new("missing");
    let e = MpsServer::start(&s.dir.join("no-such-program"), s.dirs()).unwrap_err();
    assert!(e.to_string().contains("cannot run"), "{e}");
    let e = find_control(None).map(|p| p.display().to_string());
    if let Err(e) = e {
        assert!(e.to_string().contains("--mps-control"), "{e}");
    }
    // One whose `-d` fails says what it printed.
    let failing = s.dir.join("failing");
    std::fs::write(&failing, "#!/bin/sh\necho no GPU >&2\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = MpsServer::start(&failing, s.dirs()).unwrap_err();
    assert!(e.to_string().contains("no GPU"), "{e}");
}
