//! Where the daemon listens: a per-user socket, or the system one.
//!
//! - **Per user** (the default): `$XDG_RUNTIME_DIR/baton/baton.sock`, or
//!   `/tmp/baton-UID/baton.sock` when `XDG_RUNTIME_DIR` is unset. The directory is the user's
//!   own (mode 0700) and the socket mode 0600: only that user (and root) can connect.
//! - **System** (`baton daemon --system`): [`SYSTEM_SOCKET`], mode 0660, group-restricted.
//!
//! Agents and the CLI try an explicit `BATON_SOCKET` alone if it is set, otherwise the
//! per-user socket, then the system one ([`socket_candidates`]).

use std::path::{Path, PathBuf};

/// The system daemon's socket.
pub const SYSTEM_SOCKET: &str = "/run/baton/baton.sock";

/// The socket's file name inside its directory.
pub const SOCKET_NAME: &str = "baton.sock";

/// The per-user socket path for the effective user, from `XDG_RUNTIME_DIR` as `get` reads it.
pub fn user_socket_path_with(get: impl Fn(&str) -> Option<String>) -> PathBuf {
    let dir = match get("XDG_RUNTIME_DIR").filter(|d| Path::new(d).is_absolute()) {
        Some(runtime) => Path::new(&runtime).join("baton"),
        None => PathBuf::from(format!(
            "/tmp/baton-{}",
            rustix::process::geteuid().as_raw()
        )),
    };
    dir.join(SOCKET_NAME)
}

/// The per-user socket path of this process's effective user.
pub fn user_socket_path() -> PathBuf {
    user_socket_path_with(|n| std::env::var(n).ok())
}

/// The sockets to try, in order: `explicit` alone if given, else the per-user socket and the
/// system socket.
pub fn socket_candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    match explicit {
        Some(p) => vec![p.to_path_buf()],
        None => vec![user_socket_path(), PathBuf::from(SYSTEM_SOCKET)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_user_socket_under_the_runtime_dir_or_tmp() {
        let p = user_socket_path_with(|_| Some("/run/user/1000".into()));
        assert_eq!(p, Path::new("/run/user/1000/baton/baton.sock"));
        let p = user_socket_path_with(|_| None);
        let uid = rustix::process::geteuid().as_raw();
        assert_eq!(p, PathBuf::from(format!("/tmp/baton-{uid}/baton.sock")));
        // A relative runtime dir is not trusted.
        assert_eq!(user_socket_path_with(|_| Some("rel".into())), p);
    }

    #[test]
    fn explicit_socket_is_the_only_candidate() {
        assert_eq!(
            socket_candidates(Some(Path::new("/x/s"))),
            vec![PathBuf::from("/x/s")]
        );
        assert_eq!(socket_candidates(None).len(), 2);
    }
}
