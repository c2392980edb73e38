//! An MPS server of the daemon's own (`baton daemon --mps-server`): one hardware context for
//! every program `baton run` starts against this daemon, so that a request never waits for a
//! context switch.
//!
//! The daemon starts NVIDIA's control daemon (`nvidia-cuda-mps-control -d`) with pipe and log
//! directories of its own beside its socket ([`MpsDirs`]), checks it is alive every
//! [`HEALTH_EVERY`] and starts it again if it died, and at exit asks it to quit and removes
//! both directories. A control daemon left by a daemon that was killed is adopted, not
//! started twice: its directories are the daemon's own, so whatever answers there is its.
//! `baton run` points a program at it (`CUDA_MPS_PIPE_DIRECTORY`, `CUDA_MPS_LOG_DIRECTORY`)
//! when its control pipe exists and the program names no MPS of its own.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why the MPS control daemon could not be started, asked or found.
#[derive(Debug, thiserror::Error)]
pub enum MpsError {
    /// The control program could not be run.
    #[error("cannot run {program}: {source}")]
    Run {
        /// The control program.
        program: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// A folder could not be made or cleared.
    #[error("cannot make or clear {dir}: {source}")]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// `-d` failed.
    #[error("{program} -d failed ({status}): {stderr}")]
    Start {
        /// The control program.
        program: PathBuf,
        /// How it ended.
        status: std::process::ExitStatus,
        /// What it printed.
        stderr: String,
    },
    /// `-d` returned but nothing answered.
    #[error("{program} -d started but did not answer within {within:?} (its log: {log})")]
    NoAnswer {
        /// The control program.
        program: PathBuf,
        /// How long it was given.
        within: Duration,
        /// The control daemon's log.
        log: PathBuf,
    },
    /// A control command had no answer in time.
    #[error("`{command}` had no answer within {within:?}")]
    Timeout {
        /// The command.
        command: String,
        /// How long it was given.
        within: Duration,
    },
    /// A control command was refused (no control daemon answers, or it refused the command).
    #[error("`{command}` failed ({status}): {output}")]
    Refused {
        /// The command.
        command: String,
        /// How the control program ended.
        status: std::process::ExitStatus,
        /// What it printed.
        output: String,
    },
    /// Waiting for a control command failed.
    #[error("`{command}`: {source}")]
    Wait {
        /// The command.
        command: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// The health check's thread could not be started.
    #[error("cannot start the MPS health check: {0}")]
    Thread(std::io::Error),
    /// No control program was given and none is on `PATH`.
    #[error(
        "{MPS_CONTROL} is not on PATH: install NVIDIA's driver utilities, or give --mps-control PATH"
    )]
    NotFound,
}

/// How often the daemon asks its control daemon whether it is alive.
pub const HEALTH_EVERY: Duration = Duration::from_secs(5);

/// How long a control command may take before the control daemon counts as not answering.
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// How long a control daemon may take to come up, or to go away once asked to quit.
const SETTLE_WITHIN: Duration = Duration::from_secs(10);

/// The control program NVIDIA's driver package installs.
pub const MPS_CONTROL: &str = "nvidia-cuda-mps-control";

/// Where a daemon's MPS server keeps its pipes and logs: beside its socket, in a folder of
/// its own (`baton.sock` → `baton.sock.mps/pipe`, `baton.sock.mps/log`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpsDirs {
    /// The folder of both.
    pub root: PathBuf,
    /// `CUDA_MPS_PIPE_DIRECTORY`: the control pipe and the servers' sockets.
    pub pipe: PathBuf,
    /// `CUDA_MPS_LOG_DIRECTORY`: the control daemon's and the servers' logs.
    pub log: PathBuf,
}

impl MpsDirs {
    /// The folders of the daemon listening on `socket`.
    pub fn for_socket(socket: &Path) -> MpsDirs {
        let mut name = socket.file_name().unwrap_or_default().to_os_string();
        name.push(".mps");
        let root = socket.with_file_name(name);
        MpsDirs {
            pipe: root.join("pipe"),
            log: root.join("log"),
            root,
        }
    }

    /// The control daemon's pipe: it exists while a control daemon serves these folders (or
    /// after one was killed, until the next start clears it).
    pub fn control(&self) -> PathBuf {
        self.pipe.join("control")
    }
}

/// The daemon's MPS control daemon.
#[derive(Debug)]
pub struct MpsServer {
    program: PathBuf,
    dirs: MpsDirs,
    /// Whether it was found running at start (left by a daemon that did not stop cleanly).
    adopted: bool,
    /// Set to stop the health checks.
    stopping: Arc<AtomicBool>,
    health: Option<std::thread::JoinHandle<()>>,
}

impl MpsServer {
    /// Adopts the control daemon that answers in `dirs`, or starts one with `program`.
    pub fn start(program: &Path, dirs: MpsDirs) -> Result<MpsServer, MpsError> {
        let adopted = answers(program, &dirs);
        if adopted {
            tracing::info!(pipe = %dirs.pipe.display(), "adopted the MPS control daemon left running here");
        } else {
            launch(program, &dirs)?;
            tracing::info!(pipe = %dirs.pipe.display(), "MPS control daemon started");
        }
        Ok(MpsServer {
            program: program.to_path_buf(),
            dirs,
            adopted,
            stopping: Arc::new(AtomicBool::new(false)),
            health: None,
        })
    }

    /// Its folders.
    pub fn dirs(&self) -> &MpsDirs {
        &self.dirs
    }

    /// Whether it was running already when the daemon started.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// Whether it answers a control command now.
    pub fn alive(&self) -> bool {
        answers(&self.program, &self.dirs)
    }

    /// Checks it every `every` on a thread of its own, starting it again when it stopped
    /// answering (a crash, or someone told it to quit), until [`MpsServer::stop`].
    pub fn watch(&mut self, every: Duration) -> Result<(), MpsError> {
        let (program, dirs, stopping) = (
            self.program.clone(),
            self.dirs.clone(),
            Arc::clone(&self.stopping),
        );
        let t = std::thread::Builder::new()
            .name("baton-mps".into())
            .spawn(move || {
                let mut next = Instant::now() + every;
                while !stopping.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(50));
                    if Instant::now() < next {
                        continue;
                    }
                    next = Instant::now() + every;
                    if stopping.load(Ordering::Acquire) || answers(&program, &dirs) {
                        continue;
                    }
                    tracing::warn!(pipe = %dirs.pipe.display(), "the MPS control daemon stopped answering; starting it again");
                    if let Err(e) = launch(&program, &dirs) {
                        tracing::error!("the MPS control daemon could not be started again: {e}");
                    }
                }
            })
            .map_err(MpsError::Thread)?;
        self.health = Some(t);
        Ok(())
    }

    /// Asks it to quit, waits until its pipe is gone, and removes its folders (as dropping
    /// it does).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if self.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(t) = self.health.take() {
            let _ = t.join();
        }
        // `quit` ends the servers under their clients: programs still running on it (the
        // daemon released them, they run on unscheduled) would lose their GPU work. Left
        // running, it is adopted by the next daemon.
        match clients(&self.program, &self.dirs) {
            Ok(0) => {}
            Ok(n) => {
                tracing::warn!(pipe = %self.dirs.pipe.display(), "{n} programs still run on the MPS server: it is left running for them (the next daemon on this socket adopts it)");
                return;
            }
            Err(e) => tracing::warn!("the MPS server's clients could not be listed: {e}"),
        }
        if let Err(e) = control(&self.program, &self.dirs, "quit") {
            tracing::warn!("the MPS control daemon did not take `quit`: {e}");
        }
        let deadline = Instant::now() + SETTLE_WITHIN;
        while answers(&self.program, &self.dirs) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if answers(&self.program, &self.dirs) {
            tracing::warn!(pipe = %self.dirs.pipe.display(), "the MPS control daemon is still running; its folders are left");
            return;
        }
        match std::fs::remove_dir_all(&self.dirs.root) {
            Ok(()) => tracing::info!("MPS control daemon stopped, its folders removed"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                tracing::warn!(root = %self.dirs.root.display(), "MPS folders not removed: {e}")
            }
        }
    }
}

impl Drop for MpsServer {
    /// A daemon that stops on an error stops its server too.
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The control program: `explicit`, else [`MPS_CONTROL`] on `PATH`.
pub fn find_control(explicit: Option<&Path>) -> Result<PathBuf, MpsError> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(MPS_CONTROL))
        .find(|p| p.is_file())
        .ok_or(MpsError::NotFound)
}

/// Starts a control daemon in `dirs`, clearing what a dead one left, and waits until it
/// answers.
fn launch(program: &Path, dirs: &MpsDirs) -> Result<(), MpsError> {
    let folder = |dir: &Path| {
        let dir = dir.to_path_buf();
        move |source| MpsError::Folder { dir, source }
    };
    // Whatever is here belongs to a control daemon of these folders that no longer answers.
    match std::fs::remove_dir_all(&dirs.pipe) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(folder(&dirs.pipe)(e)),
    }
    for d in [&dirs.pipe, &dirs.log] {
        std::fs::create_dir_all(d).map_err(folder(d))?;
    }
    let out = command(program, dirs)
        .arg("-d")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| MpsError::Run {
            program: program.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(MpsError::Start {
            program: program.to_path_buf(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let deadline = Instant::now() + SETTLE_WITHIN;
    while Instant::now() < deadline {
        if answers(program, dirs) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(MpsError::NoAnswer {
        program: program.to_path_buf(),
        within: SETTLE_WITHIN,
        log: dirs.log.join("control.log"),
    })
}

/// How many client processes the control daemon's servers have.
fn clients(program: &Path, dirs: &MpsDirs) -> Result<usize, MpsError> {
    let servers = control(program, dirs, "get_server_list")?;
    let mut n = 0;
    for pid in servers.split_whitespace() {
        let list = control(program, dirs, &format!("get_client_list {pid}"))?;
        n += list.split_whitespace().count();
    }
    Ok(n)
}

/// Whether a control daemon answers in `dirs`.
fn answers(program: &Path, dirs: &MpsDirs) -> bool {
    dirs.control().exists() && control(program, dirs, "get_server_list").is_ok()
}

/// Sends one command to the control daemon of `dirs` (the control program's client mode
/// reads it on its standard input), within [`ANSWER_WITHIN`].
fn control(program: &Path, dirs: &MpsDirs, what: &str) -> Result<String, MpsError> {
    let wait = |source| MpsError::Wait {
        command: what.to_string(),
        source,
    };
    let mut child = command(program, dirs)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| MpsError::Run {
            program: program.to_path_buf(),
            source,
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        // A control daemon that is gone may close the pipe first: the status says.
        let _ = writeln!(stdin, "{what}");
    }
    let deadline = Instant::now() + ANSWER_WITHIN;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(MpsError::Timeout {
                    command: what.to_string(),
                    within: ANSWER_WITHIN,
                });
            }
            Err(e) => return Err(wait(e)),
        }
    }
    let out = child.wait_with_output().map_err(wait)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(MpsError::Refused {
            command: what.to_string(),
            status: out.status,
            output: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        })
    }
}

/// The control program with the folders' environment.
fn command(program: &Path, dirs: &MpsDirs) -> Command {
    let mut c = Command::new(program);
    c.env("CUDA_MPS_PIPE_DIRECTORY", &dirs.pipe)
        .env("CUDA_MPS_LOG_DIRECTORY", &dirs.log);
    c
}

#[cfg(test)]
mod tests;
