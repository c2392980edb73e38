//! `baton-sim-client`: a process of simulated queues scheduled by the daemon through
//! `baton_agent::DaemonClient`, for the daemon's integration tests and the decision-latency
//! benchmark (`cargo bench -p baton-lab --bench decision_latency`).
//!
//! ```text
//! baton-sim-client --socket PATH [--queues N] [--priority P] [--device ID]
//!                  [--churn-ms MS --seed S]
//! ```
//! Each queue is an XQueue over a hand-driven hardware queue. Standard input takes one
//! command per line: `ready I` submits a command on queue I (it becomes ready), `idle I`
//! completes everything launched on queue I (it becomes idle unless commands wait),
//! `status` prints `status connected=B connections=N suspended=N submitted=N launched=N
//! hw_launched=N order_errors=N` (`launched` as the XQueues count, `hw_launched` as the hardware
//! queues received them; `order_errors`: commands a hardware queue received out of submission
//! order), `yielding US` tells the daemon the process yields by a time slice of `US` µs
//! (`Hint::Yielding`), `readiness I READY WAITING` tells it how queue I's program used it, in
//! ‰ (`Hint::Readiness`, as the interposer measures it), `drain` stops the churn and
//! completes everything launched, `exit` ends the process. Standard output gets `suspend I T` / `resume I T` each time the
//! daemon suspends or resumes queue I (T: `CLOCK_MONOTONIC` nanoseconds), and `ok` after each
//! command. With `--churn-ms`, a thread also flips random queues between ready and idle,
//! every `MS` milliseconds on average, until `exit`.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_agent::{ClientConfig, DaemonClient, QueueInfo};
use baton_core::{
    CommandKind, Drive, HwCommand, HwError, HwQueue, LaunchConfig, Level, MonotonicClock,
    QueueControl, ResumeFlags, SuspendFlags, XQueue, XQueueError, XQueueId, XQueueStatus,
};
use baton_protocol::{AgentTarget, Backend, DeviceRef, Hint, WirePriority};

/// One simulated command: its queue's submission number.
#[derive(Clone, Copy, Debug)]
struct Cmd(u64);

impl HwCommand for Cmd {
    fn kind(&self) -> CommandKind {
        CommandKind::Kernel
    }
}

/// A hardware queue that completes commands only when told to: (launched, completed), and
/// the commands it received out of submission order.
#[derive(Clone, Default)]
struct ManualHw(Arc<Mutex<(u64, u64)>>, Arc<AtomicU64>);

impl ManualHw {
    fn complete_all(&self) {
        let mut g = baton_core::locks::lock(&self.0);
        g.1 = g.0;
    }
}

impl HwQueue for ManualHw {
    type Command = Cmd;
    type SyncPoint = u64;

    fn max_level(&self) -> Level {
        Level::L1
    }
    fn launch(&self, cmd: Cmd) -> Result<(), HwError> {
        let mut g = baton_core::locks::lock(&self.0);
        // Commands are numbered from 0 as submitted: each must arrive exactly once, in order.
        if cmd.0 != g.0 {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
        g.0 += 1;
        Ok(())
    }
    fn sync_point(&self) -> Result<u64, HwError> {
        Ok(baton_core::locks::lock(&self.0).0)
    }
    fn is_reached(&self, sp: &u64) -> Result<bool, HwError> {
        Ok(baton_core::locks::lock(&self.0).1 >= *sp)
    }
    fn query_idle(&self) -> Result<bool, HwError> {
        let g = baton_core::locks::lock(&self.0);
        Ok(g.1 >= g.0)
    }
    fn wait(&self, sp: &u64) -> Result<(), HwError> {
        if self.is_reached(sp)? {
            Ok(())
        } else {
            Err(HwError::WouldBlock)
        }
    }
    fn synchronize(&self) -> Result<(), HwError> {
        let sp = self.sync_point()?;
        self.wait(&sp)
    }
}

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A queue whose suspensions and resumptions are printed.
struct Logged {
    index: usize,
    xq: Arc<XQueue<ManualHw>>,
}

impl QueueControl for Logged {
    fn id(&self) -> XQueueId {
        self.xq.id()
    }
    fn status(&self) -> XQueueStatus {
        self.xq.status()
    }
    fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError> {
        // Said once in effect, so a command sent after the line is held.
        let r = self.xq.suspend(flags);
        say(&format!("suspend {} {}", self.index, now_ns()));
        r
    }
    fn resume(&self, flags: ResumeFlags) -> Result<(), XQueueError> {
        let r = self.xq.resume(flags);
        say(&format!("resume {} {}", self.index, now_ns()));
        r
    }
    fn set_level(&self, level: Level) -> Result<(), XQueueError> {
        self.xq.set_level(level)
    }
    fn set_launch_config(&self, config: LaunchConfig) {
        self.xq.set_launch_config(config);
    }
    fn set_attention(&self, attention: baton_core::Attention) {
        self.xq.set_attention(attention);
    }
}

struct Args {
    socket: PathBuf,
    queues: usize,
    priority: i32,
    device: String,
    churn_ms: Option<u64>,
    seed: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        socket: PathBuf::new(),
        queues: 1,
        priority: 0,
        device: "sim-0".into(),
        churn_ms: None,
        seed: 1,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--socket" => a.socket = PathBuf::from(val()?),
            "--queues" => a.queues = val()?.parse().map_err(|e| format!("--queues: {e}"))?,
            "--priority" => a.priority = val()?.parse().map_err(|e| format!("--priority: {e}"))?,
            "--device" => a.device = val()?,
            "--churn-ms" => a.churn_ms = Some(val()?.parse().map_err(|e| format!("{e}"))?),
            "--seed" => a.seed = val()?.parse().map_err(|e| format!("--seed: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.socket.as_os_str().is_empty() {
        return Err("--socket PATH is required".into());
    }
    Ok(a)
}

/// A small xorshift generator (no dependency needed for churn).
fn next_rand(s: &AtomicU64) -> u64 {
    let mut x = s.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s.store(x, Ordering::Relaxed);
    x
}

fn main() -> std::process::ExitCode {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("baton-sim-client: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut cfg = ClientConfig::new(vec![a.socket.clone()], Arc::new(MonotonicClock::new()));
    cfg.hints = vec![Hint::Priority(WirePriority(a.priority))];
    cfg.name = "sim-client".into();
    let client = match DaemonClient::start(cfg) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("baton-sim-client: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let mut hws = Vec::new();
    let mut xqs = Vec::new();
    for i in 0..a.queues {
        let hw = ManualHw::default();
        let xq = XQueue::builder(hw.clone())
            .drive(Drive::External)
            .sink(client.sink())
            .build()
            .map(Arc::new);
        let Ok(xq) = xq else {
            eprintln!("baton-sim-client: cannot build queue {i}");
            return std::process::ExitCode::FAILURE;
        };
        client.register(
            Arc::new(Logged {
                index: i,
                xq: Arc::clone(&xq),
            }),
            QueueInfo {
                label: format!("sim queue {i}"),
                device: DeviceRef {
                    backend: Backend::Sim,
                    id: a.device.clone(),
                    ordinal: 0,
                },
                hints: vec![],
            },
        );
        hws.push(hw);
        xqs.push(xq);
    }
    let numbers: Arc<Vec<Mutex<u64>>> = Arc::new((0..a.queues).map(|_| Mutex::new(0)).collect());
    let (hws, xqs) = (Arc::new(hws), Arc::new(xqs));
    // Numbered under the queue's own lock, so the churn thread and standard input never
    // interleave a number and its submission.
    let ready = |numbers: &[Mutex<u64>], xqs: &[Arc<XQueue<ManualHw>>], i: usize| {
        let mut n = baton_core::locks::lock(&numbers[i]);
        if xqs[i].submit(Cmd(*n)).is_ok() {
            *n += 1;
        }
    };
    let idle = |hws: &[ManualHw], xqs: &[Arc<XQueue<ManualHw>>], i: usize| {
        hws[i].complete_all();
        xqs[i].poll();
    };
    let churning = Arc::new(std::sync::atomic::AtomicBool::new(a.churn_ms.is_some()));
    if let Some(ms) = a.churn_ms {
        let (h, x, n) = (Arc::clone(&hws), Arc::clone(&xqs), Arc::clone(&numbers));
        let on = Arc::clone(&churning);
        let seed = AtomicU64::new(a.seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        std::thread::spawn(move || {
            while on.load(Ordering::Acquire) {
                let i = usize::try_from(next_rand(&seed) % x.len() as u64).unwrap_or(0);
                if x[i].status().state == baton_core::QueueState::Ready {
                    idle(&h, &x, i);
                } else {
                    ready(&n, &x, i);
                }
                let sleep = 1 + next_rand(&seed) % (2 * ms.max(1));
                std::thread::sleep(Duration::from_millis(sleep));
            }
        });
    }
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut w = line.split_whitespace();
        let cmd = w.next().unwrap_or("");
        let idx = w.next().and_then(|v| v.parse::<usize>().ok());
        let hinted = |target: AgentTarget, hint: Hint| {
            client
                .hint(target, hint)
                .map_err(|e| format!("error hint refused: {e}"))
        };
        let told = match (cmd, idx) {
            ("yielding", Some(us)) => Some(hinted(
                AgentTarget::Process,
                Hint::Yielding {
                    slice_ns: us as u64 * 1_000,
                },
            )),
            ("readiness", Some(i)) if i < xqs.len() => {
                let mut permille = w.by_ref().map(|v| v.parse::<u16>().ok());
                match (permille.next().flatten(), permille.next().flatten()) {
                    (Some(ready_permille), Some(waiting_permille)) => Some(hinted(
                        AgentTarget::Queue(xqs[i].id().into()),
                        Hint::Readiness {
                            ready_permille,
                            waiting_permille,
                        },
                    )),
                    _ => Some(Err(format!("error readiness wants two ‰ in {line:?}"))),
                }
            }
            _ => None,
        };
        if let Some(told) = told {
            match told {
                Ok(()) => say("ok"),
                Err(e) => say(&e),
            }
            continue;
        }
        match (cmd, idx) {
            ("ready", Some(i)) if i < xqs.len() => ready(&numbers, &xqs, i),
            ("idle", Some(i)) if i < xqs.len() => idle(&hws, &xqs, i),
            ("drain", _) => {
                churning.store(false, Ordering::Release);
                for i in 0..xqs.len() {
                    // Under the numbering lock: a churn step under way finishes first.
                    let _n = baton_core::locks::lock(&numbers[i]);
                    idle(&hws, &xqs, i);
                }
            }
            ("status", _) => {
                let (mut sub, mut launched, mut hw, mut disorder) = (0, 0, 0, 0);
                for (q, h) in xqs.iter().zip(hws.iter()) {
                    let s = q.status();
                    sub += s.submitted;
                    launched += s.submitted - s.pending;
                    hw += baton_core::locks::lock(&h.0).0;
                    disorder += h.1.load(Ordering::Relaxed);
                }
                say(&format!(
                    "status connected={} connections={} suspended={} submitted={sub} \
                     launched={launched} hw_launched={hw} order_errors={disorder}",
                    client.is_connected(),
                    client.connections(),
                    client.suspended()
                ));
            }
            ("exit", _) => break,
            _ => {
                say(&format!("error unknown command {line:?}"));
                continue;
            }
        }
        say("ok");
    }
    std::process::ExitCode::SUCCESS
}
