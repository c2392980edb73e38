//! `--slurm-steps` end to end without Slurm: a real daemon reading the real `/proc`, a
//! directory of step records as the SPANK plugin writes them, and real agent processes
//! (`baton-sim-client`) identified by `SO_PEERCRED`. This test's process plays the step's
//! slurmstepd: its pid and start time are the record's, so the agents it starts are the
//! step's tasks by their ancestry (as they are under Slurm without cgroup plugins). Each asks
//! for more than its step was given, and is held to it, root included.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use baton_daemon::{DaemonConfig, SlurmConfig};
use support::*;

/// Process `pid`'s start time, field 22 of its stat line.
fn start_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

fn my_start() -> u64 {
    start_of(std::process::id())
}

/// A records directory as the plugin makes it, holding job 77 step 0's record at `priority`
/// with `stepd_pid`/`stepd_start`.
fn records(dir: &Path, priority: i32, stepd_pid: u32, stepd_start: u64) -> PathBuf {
    let records = dir.join("records");
    std::fs::create_dir_all(&records).unwrap();
    std::fs::set_permissions(&records, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = records.join("job_77.step_0");
    std::fs::write(
        &file,
        format!(
            "job=77\nstep=0\npriority={priority}\nstepd_pid={stepd_pid}\nstepd_start={stepd_start}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    records
}

fn daemon(dir: &Path, records: PathBuf) -> InProcess {
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    // A system daemon, so that `nobody`'s agents may connect (see tests/security.rs).
    cfg.system = true;
    cfg.group = nobody_group();
    cfg.slurm = Some(SlurmConfig::new(records));
    InProcess::start(cfg)
}

fn settled(socket: &Path, pid: u32) -> i32 {
    wait_until("the agent registered", || registered(socket, pid, 1));
    priority_of(socket, pid).expect("a priority")
}

#[test]
fn a_steps_processes_cannot_claim_more_than_slurm_gave_it() {
    let dir = temp_dir("slurm");
    let d = daemon(&dir, records(&dir, 15, std::process::id(), my_start()));
    // BATON_PRIORITY=100, as this test's user (root where the tests run as root).
    let over = Sim::start(&d.socket, 1, 100);
    assert_eq!(
        settled(&d.socket, over.pid()),
        15,
        "lowered to the step's 15"
    );
    let under = Sim::start(&d.socket, 1, -20);
    assert_eq!(settled(&d.socket, under.pid()), -20, "below it: as asked");
    // A task's child is the step's too.
    let mut shell = Killed(
        Command::new("sh")
            .args([
                "-c",
                // An asynchronous command's stdin is /dev/null unless redirected: the client
                // reads its commands from the shell's.
                "exec 3<&0; \"$0\" --socket \"$1\" --queues 1 --priority 90 <&3 >/dev/null & \
                 echo $!; wait",
            ])
            .arg(sim_client())
            .arg(&d.socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(shell.0.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    let grandchild: u32 = line.trim().parse().unwrap();
    assert_eq!(settled(&d.socket, grandchild), 15, "a child of a task");
    // Another user's task: held to the same, as by --max-priority, but from Slurm.
    if as_other_users("slurm: another user's task in a step").is_some() {
        let nobody = Killed(
            Command::new(sim_client())
                .arg("--socket")
                .arg(&d.socket)
                .args(["--queues", "1", "--priority", "99"])
                .uid(NOBODY)
                .gid(NOBODY)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        assert_eq!(settled(&d.socket, nobody.0.id()), 15, "nobody, in the step");
    }
}

#[test]
fn processes_of_no_step_and_untrusted_or_stale_records_are_unaffected() {
    // A record whose slurmstepd is this process, but started at another time: the pid of a
    // step daemon that is gone, now this process's.
    let dir = temp_dir("slurm-stale");
    let d = daemon(&dir, records(&dir, 15, std::process::id(), my_start() + 1));
    let p = Sim::start(&d.socket, 1, 100);
    assert_eq!(
        settled(&d.socket, p.pid()),
        100,
        "a stale record applies to nothing"
    );
    drop(d);
    // The step's record is others' to write: not trusted.
    let dir = temp_dir("slurm-writable");
    let recorded = records(&dir, 15, std::process::id(), my_start());
    std::fs::set_permissions(
        recorded.join("job_77.step_0"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    let d = daemon(&dir, recorded.clone());
    let p = Sim::start(&d.socket, 1, 100);
    assert_eq!(
        settled(&d.socket, p.pid()),
        100,
        "an untrusted record is not read"
    );
    // Made safe again, it holds for processes that connect afterwards.
    std::fs::set_permissions(
        recorded.join("job_77.step_0"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let q = Sim::start(&d.socket, 1, 100);
    assert_eq!(settled(&d.socket, q.pid()), 15);
    drop(d);
    // A step whose slurmstepd lives but is no ancestor (a sibling): not this process's step.
    let dir = temp_dir("slurm-other");
    let stepd = Killed(
        Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stepd_pid = stepd.0.id();
    let d = daemon(&dir, records(&dir, 15, stepd_pid, start_of(stepd_pid)));
    let p = Sim::start(&d.socket, 1, 100);
    assert_eq!(settled(&d.socket, p.pid()), 100, "the node's own process");
}

#[test]
fn a_node_takes_its_priorities_from_one_cluster_engine() {
    let dir = temp_dir("slurm-and-k8s");
    let mut cfg = DaemonConfig::new(dir.join("baton.sock"));
    cfg.slurm = Some(SlurmConfig::new(dir.join("records")));
    cfg.kubernetes = Some(baton_daemon::KubernetesConfig {
        node: "n".into(),
        api_server: "http://127.0.0.1:1".into(),
        token_file: None,
        ca_file: None,
        classes: Default::default(),
        proc_root: "/proc".into(),
    });
    let err = baton_daemon::Daemon::bind(cfg).err().expect("refused");
    assert!(err.to_string().contains("one cluster"), "{err}");
}
