//! From a process to its pod: the pod UID in the process's cgroup path.
//!
//! `/proc/PID/cgroup` has one line per hierarchy, `ID:CONTROLLERS:PATH`: one `0::PATH` line
//! on cgroup v2, one per controller on v1 (and both on a hybrid host). The kubelet puts every
//! container under a pod's cgroup, named after the pod's UID by its cgroup driver:
//!
//! | driver   | pod level                                            | container level                 |
//! |----------|------------------------------------------------------|---------------------------------|
//! | cgroupfs | `/kubepods/burstable/pod<UID>`                       | `/<ID>`                         |
//! | systemd  | `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID_>.slice` | `/cri-containerd-<ID>.scope`, `crio-<ID>.scope`, `docker-<ID>.scope` |
//!
//! (guaranteed pods have no QoS level; the systemd driver writes the UID's dashes as
//! underscores; kind and other nested set-ups prefix `kubelet.slice/kubelet-` or a container's
//! own path; a reader in a cgroup namespace of its own sees paths relative to it, starting
//! with `/..`). The pod is found by its segment wherever it sits in the path. A process under
//! a `kubepods` hierarchy whose pod cannot be told (the lines disagree, or no segment names a
//! pod) is an *unknown* pod, never a node process: it gets what an unknown pod gets.

use std::path::Path;

use super::place::{Container, Place, Runtime};
use super::pod::PodUid;

/// Where the process whose `/proc/PID/cgroup` reads `text` sits.
pub(crate) fn place(text: &str) -> Place {
    let mut found: Option<(PodUid, Option<Container>)> = None;
    let mut under_kubepods = false;
    for line in text.lines() {
        let Some(path) = line.splitn(3, ':').nth(2) else {
            continue;
        };
        if !path.contains("kubepods") {
            continue;
        }
        under_kubepods = true;
        let Some(uid) = path.split('/').find_map(pod_segment) else {
            return Place::UnknownPod;
        };
        match &found {
            Some((seen, _)) if *seen != uid => return Place::UnknownPod,
            Some(_) => {}
            None => found = Some((uid, path.rsplit('/').next().and_then(container))),
        }
    }
    match found {
        Some((uid, container)) => Place::Pod { uid, container },
        None if under_kubepods => Place::UnknownPod,
        None => Place::Node,
    }
}

/// Where process `pid` sits, read from `proc_root` (`/proc` on a node, a fixture in tests).
/// A process that is gone, or whose cgroup cannot be read, is an unknown pod: nothing it
/// claims is trusted beyond what an unknown pod gets.
pub(crate) fn place_of(proc_root: &Path, pid: u32) -> Place {
    match std::fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup")) {
        Ok(text) => place(&text),
        Err(e) => {
            tracing::warn!(pid, error = %e, "cannot read the process's cgroup; treated as an unknown pod");
            Place::UnknownPod
        }
    }
}

/// The pod UID a path segment names: `pod<UID>` (cgroupfs) or `…-pod<UID_>.slice` (systemd).
fn pod_segment(seg: &str) -> Option<PodUid> {
    let s = seg.strip_suffix(".slice").unwrap_or(seg);
    let uid = match s.strip_prefix("pod") {
        Some(rest) => rest,
        None => &s[s.rfind("-pod")? + 4..],
    };
    PodUid::parse(uid)
}

/// The container a path's last segment names, if it names one.
fn container(seg: &str) -> Option<Container> {
    let (runtime, id) = match seg.strip_suffix(".scope") {
        Some(unit) => {
            let (runtime, id) = [
                ("cri-containerd-", Runtime::Containerd),
                ("crio-", Runtime::CriO),
                ("docker-", Runtime::Docker),
            ]
            .into_iter()
            .find_map(|(prefix, r)| unit.strip_prefix(prefix).map(|id| (r, id)))?;
            (runtime, id)
        }
        None => (Runtime::Unnamed, seg),
    };
    let ok = id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then(|| Container {
        runtime,
        id: id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b";
    const CID: &str = "3b5e1c9d0f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e";

    fn fixture(name: &str) -> String {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/cgroup")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    fn pod(runtime: Runtime) -> Place {
        Place::Pod {
            uid: PodUid::parse(UID).unwrap(),
            container: Some(Container {
                runtime,
                id: CID.into(),
            }),
        }
    }

    #[test]
    fn every_driver_runtime_and_cgroup_version_names_the_pod() {
        for (file, runtime) in [
            ("v1-cgroupfs-docker", Runtime::Unnamed),
            ("v1-systemd-containerd", Runtime::Containerd),
            ("v2-cgroupfs-containerd", Runtime::Unnamed),
            ("v2-systemd-containerd", Runtime::Containerd),
            ("v2-systemd-crio-guaranteed", Runtime::CriO),
            ("v2-systemd-cri-dockerd", Runtime::Docker),
            ("v2-kind-nested", Runtime::Containerd),
            ("v2-seen-from-another-cgroup-namespace", Runtime::Containerd),
            ("hybrid-systemd-containerd", Runtime::Containerd),
        ] {
            assert_eq!(place(&fixture(file)), pod(runtime), "{file}");
        }
    }

    #[test]
    fn a_pods_own_cgroup_without_a_container_still_names_the_pod() {
        // A process the kubelet left in the pod's cgroup (the sandbox's pause, say).
        let text = format!("0::/kubepods/besteffort/pod{UID}\n");
        assert_eq!(
            place(&text),
            Place::Pod {
                uid: PodUid::parse(UID).unwrap(),
                container: None
            }
        );
    }

    #[test]
    fn node_processes_are_no_pod() {
        assert_eq!(place(&fixture("v2-node-processes")), Place::Node);
        for line in [
            "0::/user.slice/user-1000.slice/session-3.scope",
            "0::/system.slice/containerd.service",
            &format!("0::/system.slice/docker-{CID}.scope"),
            "12:memory:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-1.scope",
            "",
        ] {
            assert_eq!(place(line), Place::Node, "{line:?}");
        }
    }

    #[test]
    fn pods_that_cannot_be_told_are_unknown_never_the_node() {
        let other = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
        for text in [
            // The kubelet's pods, no pod named.
            "0::/kubepods.slice/kubepods-besteffort.slice\n".to_string(),
            // Two hierarchies naming two pods.
            format!("12:memory:/kubepods/pod{UID}/{CID}\n11:cpu:/kubepods/pod{other}/{CID}\n"),
            // A malformed UID.
            format!("0::/kubepods/besteffort/pod{}/{CID}\n", &UID[..30]),
        ] {
            assert_eq!(place(&text), Place::UnknownPod, "{text:?}");
        }
        assert_eq!(
            place_of(Path::new("/nonexistent-proc"), 1),
            Place::UnknownPod
        );
    }

    #[test]
    fn the_proc_tree_is_read_under_its_root() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proc");
        assert_eq!(
            place_of(&root, 4242),
            pod(Runtime::Containerd),
            "tests/data/proc/4242/cgroup"
        );
    }
}
