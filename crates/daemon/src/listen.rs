//! The daemon's socket: its directory, its mode, and the lock that makes it one daemon's.
//!
//! - A per-user daemon's socket directory is created with mode 0700 and must belong to the
//!   user and be writable by nobody else; the socket gets mode 0600.
//! - A system daemon's socket gets mode 0660 and the daemon's group (`--group`, else `baton`
//!   if it exists, else the daemon's own group).
//! - `SOCKET.lock` is held with `flock` for the daemon's life: a second daemon on the same
//!   socket fails at once, and a socket file left by a killed daemon is known to be stale and
//!   replaced.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, flock};

use crate::{DaemonConfig, DaemonError};

/// A bound socket; the file is removed when this is dropped.
pub(crate) struct Bound {
    pub(crate) listener: UnixListener,
    pub(crate) path: PathBuf,
    _lock: File,
}

impl Drop for Bound {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DaemonError + '_ {
    move |source| DaemonError::Socket {
        path: path.to_path_buf(),
        source,
    }
}

/// Binds the socket `cfg` names.
pub(crate) fn bind(cfg: &DaemonConfig) -> Result<Bound, DaemonError> {
    let path = &cfg.socket;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    prepare_dir(dir, cfg.system)?;
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock_path = PathBuf::from(lock_name);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock_path)
        .map_err(io_err(&lock_path))?;
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Err(DaemonError::AlreadyRunning {
            socket: path.clone(),
        });
    }
    // We hold the lock: a socket file here belongs to a daemon that is gone.
    match std::fs::remove_file(path) {
        Ok(()) => tracing::info!(socket = %path.display(), "replaced a stale socket"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path)(e)),
    }
    // No window where the socket is more open than it will be. The umask is process-wide:
    // the daemon binds before it starts any thread.
    let old = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(path);
    rustix::process::umask(old);
    let listener = bound.map_err(io_err(path))?;
    let bound = Bound {
        listener,
        path: path.clone(),
        _lock: lock,
    };
    if cfg.system {
        let gid = group_id(cfg.group.as_deref())?;
        rustix::fs::chown(path, None, Some(rustix::fs::Gid::from_raw(gid)))
            .map_err(|e| io_err(path)(e.into()))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
            .map_err(io_err(path))?;
    } else {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_err(path))?;
    }
    Ok(bound)
}

/// Creates `dir` if needed; a per-user daemon's must be private to its user.
fn prepare_dir(dir: &Path, system: bool) -> Result<(), DaemonError> {
    if !dir.exists() {
        let mode = if system { 0o755 } else { 0o700 };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(dir)
            .map_err(io_err(dir))?;
    }
    if system {
        return Ok(());
    }
    let meta = std::fs::metadata(dir).map_err(io_err(dir))?;
    let me = rustix::process::geteuid().as_raw();
    let unsafe_dir = |why: String| DaemonError::UnsafeDirectory {
        dir: dir.to_path_buf(),
        why,
    };
    if meta.mode() & 0o1000 != 0 {
        // A sticky directory (/tmp): others cannot remove or replace our socket.
        return Ok(());
    }
    if meta.uid() != me && meta.uid() != 0 {
        return Err(unsafe_dir(format!(
            "it belongs to uid {}, not to uid {me}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "other users can write to it (mode {:o})",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// The gid a system socket is given.
fn group_id(name: Option<&str>) -> Result<u32, DaemonError> {
    let lookup = |n: &str| gid_of(n);
    match name {
        Some(n) => lookup(n).ok_or_else(|| DaemonError::UnknownGroup(n.to_string())),
        None => Ok(lookup("baton").unwrap_or_else(|| rustix::process::getegid().as_raw())),
    }
}

/// The gid of group `name`, looked up with `getgrnam_r` into a buffer of this call's own (the
/// daemon is multi-threaded, and `getgrnam`'s record is shared by every thread); `None` when
/// there is no such group or the lookup fails.
fn gid_of(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        // SAFETY: an all-zero `group` is a valid value of the plain C struct (null pointers,
        // zero gid); getgrnam_r only writes it.
        let mut group: libc::group = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::group = std::ptr::null_mut();
        // SAFETY: `c` is a valid C string; `group`, `buf` (of the length given) and `found` are
        // valid for writes for the duration of the call.
        let rc = unsafe {
            libc::getgrnam_r(
                c.as_ptr(),
                &mut group,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        return (rc == 0 && !found.is_null()).then_some(group.gr_gid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_looked_up_by_name() {
        // Group 0 is "root" on every Linux system the daemon runs on.
        assert_eq!(gid_of("root"), Some(0));
        assert_eq!(gid_of("no-such-group-baton-test"), None);
        assert_eq!(gid_of("bad\0name"), None);
    }

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("baton-listen-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn private_dir_and_socket_and_one_daemon_per_socket() {
        let dir = temp("one");
        let cfg = DaemonConfig::new(dir.join("sub/baton.sock"));
        let b = bind(&cfg).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().mode() & 0o777;
        assert_eq!(mode(&dir.join("sub")), 0o700);
        assert_eq!(mode(&cfg.socket), 0o600);
        let again = bind(&cfg).err().expect("a second daemon is refused");
        assert!(again.to_string().contains("already running"), "{again}");
        drop(b);
        assert!(!cfg.socket.exists(), "socket removed on drop");
        // A stale socket file (a killed daemon left it) is replaced.
        std::os::unix::net::UnixListener::bind(&cfg.socket).unwrap();
        let b = bind(&cfg).unwrap();
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_world_writable_dir_is_refused() {
        let dir = temp("open");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = bind(&DaemonConfig::new(dir.join("s"))).err().unwrap();
        assert!(e.to_string().contains("other users can write"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn system_socket_is_group_restricted() {
        let dir = temp("sys");
        let mut cfg = DaemonConfig::new(dir.join("s"));
        cfg.system = true;
        let _b = bind(&cfg).unwrap();
        assert_eq!(
            std::fs::metadata(&cfg.socket).unwrap().mode() & 0o777,
            0o660
        );
        cfg.group = Some("no-such-group-for-baton".into());
        cfg.socket = dir.join("t");
        assert!(matches!(bind(&cfg), Err(DaemonError::UnknownGroup(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
