//! Who may change what. Identity is the peer's credentials (`SO_PEERCRED`), never a message.
//!
//! - Anyone who can connect may read the status and the policy in force; a list shows each
//!   reader what it may change, and the rest as counts (`core/sight.rs`).
//! - Root, or the user owning a process, may change that process's queues: priorities,
//!   hints, launch configuration.
//! - Device-wide and machine-wide hints, policy changes, traces and shutdown need root, or
//!   for a per-user daemon its own user (the socket is that user's alone anyway).
//! - A per-user daemon refuses agents and CLIs of other users (defence in depth behind the
//!   socket's 0600 mode); a system daemon accepts whoever its socket's group lets in.

/// The uid of root.
pub(crate) const ROOT: u32 = 0;

/// The rules for one daemon.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Authority {
    /// The daemon's own effective uid.
    pub(crate) daemon_uid: u32,
    /// Whether it is a system daemon.
    pub(crate) system: bool,
}

impl Authority {
    /// Whether `uid` may connect at all.
    pub(crate) fn may_connect(&self, uid: u32) -> bool {
        self.system || uid == ROOT || uid == self.daemon_uid
    }

    /// Whether `uid` may change a process owned by `owner`.
    pub(crate) fn may_change(&self, uid: u32, owner: u32) -> bool {
        uid == ROOT || uid == owner
    }

    /// Whether `uid` may change the daemon itself (policy, device-wide hints, traces, stop).
    pub(crate) fn may_administer(&self, uid: u32) -> bool {
        uid == ROOT || (!self.system && uid == self.daemon_uid)
    }

    /// Who may administer, in words, for error messages.
    pub(crate) fn administrators(&self) -> &'static str {
        if self.system {
            "only root may do this on a system daemon"
        } else {
            "only root or the daemon's own user may do this"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_root_change_processes() {
        let a = Authority {
            daemon_uid: 1000,
            system: true,
        };
        assert!(a.may_change(ROOT, 1001));
        assert!(a.may_change(1001, 1001));
        assert!(!a.may_change(1002, 1001));
        assert!(!a.may_change(1000, 1001), "not even the daemon's user");
    }

    #[test]
    fn only_root_administers_a_system_daemon() {
        let sys = Authority {
            daemon_uid: 1000,
            system: true,
        };
        assert!(sys.may_administer(ROOT));
        assert!(!sys.may_administer(1000));
        assert!(sys.may_connect(1234));
        let user = Authority {
            daemon_uid: 1000,
            system: false,
        };
        assert!(user.may_administer(1000));
        assert!(!user.may_administer(1001));
        assert!(!user.may_connect(1001));
        assert!(user.may_connect(ROOT));
    }
}
