//! Who is on the other end of a connection: `SO_PEERCRED`, and a pidfd to see it exit.

use std::io;
use std::os::fd::AsFd;

use rustix::process::{Pid, PidfdFlags, pidfd_open};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A peer's credentials, as the kernel gave them when it connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its process (0 if it lives in another pid namespace).
    pub(crate) pid: u32,
    /// Its effective user.
    pub(crate) uid: u32,
    /// Its effective group.
    pub(crate) gid: u32,
}

/// The credentials of the process that connected `sock`.
pub(crate) fn peer_of(sock: impl AsFd) -> io::Result<Peer> {
    let c = rustix::net::sockopt::socket_peercred(sock)?;
    Ok(Peer {
        pid: c.pid.as_raw_nonzero().get().unsigned_abs(),
        uid: c.uid.as_raw(),
        gid: c.gid.as_raw(),
    })
}

/// Resolves when process `pid` has exited. Fails at once if no pidfd can be had for it (the
/// process is already gone, or the kernel is too old); callers then rely on the connection
/// closing.
pub(crate) async fn exited(pid: u32) -> io::Result<()> {
    let raw = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let pid = Pid::from_raw(raw).ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let fd = pidfd_open(pid, PidfdFlags::NONBLOCK)?;
    // SAFETY: `fd` is an open pidfd that the AsyncFd owns (and so keeps open) until dropped.
    let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
        .map_err(|e| io::Error::other(e.to_string()))?;
    let _ready = fd.readable().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_pair_reports_this_process() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let p = peer_of(&a).unwrap();
        assert_eq!(p.pid, std::process::id());
        assert_eq!(p.uid, rustix::process::geteuid().as_raw());
    }

    #[tokio::test]
    async fn pidfd_resolves_when_a_child_exits() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), exited(pid));
        // The child is a zombie until reaped, and a pidfd is readable for zombies too.
        waited.await.expect("in time").expect("a pidfd");
        child.wait().unwrap();
    }
}
