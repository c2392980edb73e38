//! A pod as the daemon knows it: its UID, its name, the priority the cluster gave it.

use std::fmt;

/// A pod's UID, as Kubernetes writes it (`8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b`, lower case).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PodUid(String);

impl PodUid {
    /// `s` as a pod UID: 8-4-4-4-12 hexadecimal digits, with dashes or, as the systemd
    /// cgroup driver writes them into unit names, underscores.
    pub(crate) fn parse(s: &str) -> Option<PodUid> {
        let s = s.replace('_', "-").to_ascii_lowercase();
        let groups: Vec<&str> = s.split('-').collect();
        let lengths = [8, 4, 4, 4, 12];
        let ok = groups.len() == lengths.len()
            && groups
                .iter()
                .zip(lengths)
                .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
        ok.then_some(PodUid(s))
    }
}

impl fmt::Display for PodUid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the daemon keeps of one pod on its node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodInfo {
    pub(crate) uid: PodUid,
    /// `namespace/name`, for logs.
    pub(crate) name: String,
    /// The Baton priority the cluster gives its processes: their default and their ceiling.
    pub(crate) priority: i32,
}

/// A change to the daemon's table of pods, from the API server's list and watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PodUpdate {
    /// A fresh list: the node's pods are exactly these.
    Reset(Vec<PodInfo>),
    /// A pod appeared or changed.
    Upsert(PodInfo),
    /// A pod is gone.
    Delete(PodUid),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_parse_with_dashes_or_underscores_and_nothing_else() {
        let a = PodUid::parse("8F4A6C2E-1b3d-4e5f-9a7b-0c1d2e3f4a5b").unwrap();
        let b = PodUid::parse("8f4a6c2e_1b3d_4e5f_9a7b_0c1d2e3f4a5b").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b");
        for bad in [
            "",
            "8f4a6c2e-1b3d-4e5f-9a7b",
            "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5bb",
            "zf4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b",
            "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b/x",
        ] {
            assert_eq!(PodUid::parse(bad), None, "{bad:?}");
        }
    }
}
