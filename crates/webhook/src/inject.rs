//! What a selected pod gets: the pod's fields read ([`Pod`]) and the JSONPatch that adds what
//! is missing ([`mutate`]).
//!
//! Each item is added only when absent, which makes the webhook idempotent: the volume when no
//! volume already mounts the directory from the host, the mount when a container has nothing
//! mounted at the directory's path, each variable when a container does not set it.
//! `LD_PRELOAD` is the exception: a container's own list is kept and the interposer appended to
//! it with `:` (unless it is already there); one that comes from `valueFrom` cannot be appended
//! to and is left alone, with a warning.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

/// The pod label that opts a pod in; only the value `"true"` does.
pub const LABEL: &str = "baton.dev/inject";

/// The volume's name when the pod has no volume of that name already.
const VOLUME: &str = "baton";

/// Where Baton lives on the node, and so in the pod (the Helm chart's `hostDir`).
#[derive(Clone, Debug)]
pub struct Injection {
    host_dir: String,
}

impl Injection {
    /// The directory the chart's DaemonSet installs into: `bin/baton`,
    /// `lib/libbaton_interposer.so`, `run/baton.sock`.
    pub fn new(host_dir: &str) -> Self {
        let trimmed = host_dir.trim_end_matches('/');
        Self {
            host_dir: if trimmed.is_empty() {
                "/".into()
            } else {
                trimmed.into()
            },
        }
    }

    pub fn host_dir(&self) -> &str {
        &self.host_dir
    }

    /// `LD_PRELOAD`'s entry.
    pub fn interposer(&self) -> String {
        format!("{}/lib/libbaton_interposer.so", self.host_dir)
    }

    /// `BATON_SOCKET`.
    pub fn socket(&self) -> String {
        format!("{}/run/baton.sock", self.host_dir)
    }

    /// The variables set in each container, in order: the interposer, the daemon as the
    /// scheduler (the agent's default is a scheduler inside the process), its socket.
    fn variables(&self) -> [(&'static str, String); 3] {
        [
            ("LD_PRELOAD", self.interposer()),
            ("BATON_SCHEDULER", "global".into()),
            ("BATON_SOCKET", self.socket()),
        ]
    }
}

impl Default for Injection {
    fn default() -> Self {
        Self::new("/var/lib/baton")
    }
}

/// A Pod, as far as the webhook reads it; any other field is ignored and kept.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Pod {
    pub metadata: ObjectMeta,
    pub spec: Option<PodSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ObjectMeta {
    pub name: Option<String>,
    #[serde(rename = "generateName")]
    pub generate_name: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PodSpec {
    /// `None` when absent (the patch then creates the list).
    pub volumes: Option<Vec<Volume>>,
    pub containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Volume {
    pub name: String,
    #[serde(rename = "hostPath")]
    pub host_path: Option<HostPath>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct HostPath {
    pub path: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Container {
    pub name: String,
    pub env: Option<Vec<EnvVar>>,
    #[serde(rename = "volumeMounts")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct EnvVar {
    pub name: String,
    pub value: Option<String>,
    #[serde(rename = "valueFrom")]
    pub value_from: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct VolumeMount {
    pub name: String,
    #[serde(rename = "mountPath")]
    pub mount_path: String,
}

impl Pod {
    /// Whether the pod opted in.
    pub fn selected(&self) -> bool {
        self.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL))
            .is_some_and(|v| v == "true")
    }

    /// The pod's name for logs: its name, else its `generateName` prefix.
    pub fn display_name(&self) -> &str {
        self.metadata
            .name
            .as_deref()
            .or(self.metadata.generate_name.as_deref())
            .unwrap_or("")
    }
}

/// What [`mutate`] decided: JSONPatch operations (none: the pod is left as it is) and
/// warnings for the user who creates the pod.
#[derive(Debug, Default, PartialEq)]
pub struct Mutation {
    pub patch: Vec<Value>,
    pub warnings: Vec<String>,
}

/// The patch that gives a selected pod what it lacks of the injection; nothing for a pod that
/// did not opt in.
pub fn mutate(pod: &Pod, injection: &Injection) -> Mutation {
    let mut m = Mutation::default();
    let Some(spec) = pod.spec.as_ref().filter(|_| pod.selected()) else {
        return m;
    };
    let dir = injection.host_dir();
    let same_dir = |p: &str| p.trim_end_matches('/') == dir || (dir == "/" && p == "/");

    // The volume: one that already mounts the directory from the host, else ours.
    let volumes = spec.volumes.as_deref().unwrap_or_default();
    let existing = volumes
        .iter()
        .find(|v| v.host_path.as_ref().is_some_and(|h| same_dir(&h.path)));
    let volume = match existing {
        Some(v) => v.name.clone(),
        None => {
            let name = free_name(volumes.iter().map(|v| v.name.as_str()));
            let value = json!({"name": name, "hostPath": {"path": dir}});
            push(&mut m.patch, "/spec/volumes", spec.volumes.is_some(), value);
            name
        }
    };

    for (i, c) in spec.containers.iter().enumerate() {
        let base = format!("/spec/containers/{i}");
        let mounts = c.volume_mounts.as_deref().unwrap_or_default();
        if !mounts.iter().any(|vm| same_dir(&vm.mount_path)) {
            let value = json!({"name": volume, "mountPath": dir, "readOnly": true});
            push(
                &mut m.patch,
                &format!("{base}/volumeMounts"),
                c.volume_mounts.is_some(),
                value,
            );
        }

        let env = c.env.as_deref().unwrap_or_default();
        let mut added = Vec::new();
        for (name, value) in injection.variables() {
            // Kubernetes takes the last of two entries with one name.
            let Some((j, var)) = env.iter().enumerate().rfind(|(_, e)| e.name == name) else {
                added.push(json!({"name": name, "value": value}));
                continue;
            };
            if name != "LD_PRELOAD" {
                continue; // the container's own setting is kept
            }
            if var.value_from.is_some() {
                m.warnings.push(format!(
                    "baton: container {:?} takes LD_PRELOAD from valueFrom; Baton's interposer was not added to it",
                    c.name
                ));
                continue;
            }
            let current = var.value.as_deref().unwrap_or("");
            let listed = current
                .split([':', ' '])
                .any(|entry| entry == value.as_str());
            if !listed {
                let joined = if current.trim().is_empty() {
                    value
                } else {
                    format!("{current}:{value}")
                };
                m.patch.push(json!({
                    "op": "replace",
                    "path": format!("{base}/env/{j}/value"),
                    "value": joined,
                }));
            }
        }
        if c.env.is_none() && !added.is_empty() {
            m.patch
                .push(json!({"op": "add", "path": format!("{base}/env"), "value": added}));
        } else {
            for value in added {
                m.patch
                    .push(json!({"op": "add", "path": format!("{base}/env/-"), "value": value}));
            }
        }
    }
    m
}

/// `baton`, or `baton-1`, `baton-2`… when the pod already has a volume of that name.
fn free_name<'a>(taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut name = VOLUME.to_string();
    let mut n = 0;
    while taken.clone().any(|t| t == name) {
        n += 1;
        name = format!("{VOLUME}-{n}");
    }
    name
}

/// Appends `value` to the list at `path`, creating the list when it does not exist.
fn push(patch: &mut Vec<Value>, path: &str, exists: bool, value: Value) {
    if exists {
        patch.push(json!({"op": "add", "path": format!("{path}/-"), "value": value}));
    } else {
        patch.push(json!({"op": "add", "path": path, "value": [value]}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn only_the_label_set_to_true_selects() {
        let inj = Injection::default();
        let spec = json!({"containers": [{"name": "a"}]});
        for labels in [
            json!(null),
            json!({}),
            json!({LABEL: "false"}),
            json!({"other": "true"}),
        ] {
            let p = pod(json!({"metadata": {"labels": labels}, "spec": spec}));
            assert_eq!(mutate(&p, &inj), Mutation::default(), "{labels}");
        }
        let p = pod(json!({"metadata": {"labels": {LABEL: "true"}}, "spec": spec}));
        assert!(!mutate(&p, &inj).patch.is_empty());
    }

    #[test]
    fn the_volume_name_avoids_the_pods_own() {
        let inj = Injection::default();
        let p = pod(json!({
            "metadata": {"labels": {LABEL: "true"}},
            "spec": {
                "volumes": [{"name": "baton", "emptyDir": {}}, {"name": "baton-1", "emptyDir": {}}],
                "containers": [{"name": "a", "volumeMounts": [{"name": "baton", "mountPath": "/data"}]}],
            },
        }));
        let m = mutate(&p, &inj);
        assert_eq!(m.patch[0]["value"]["name"], "baton-2");
        assert_eq!(m.patch[1]["value"]["name"], "baton-2");
    }

    #[test]
    fn ld_preload_from_value_from_is_left_alone_with_a_warning() {
        let inj = Injection::default();
        let p = pod(json!({
            "metadata": {"labels": {LABEL: "true"}},
            "spec": {"containers": [{"name": "a", "env": [
                {"name": "LD_PRELOAD", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
            ]}]},
        }));
        let m = mutate(&p, &inj);
        assert_eq!(m.warnings.len(), 1);
        assert!(m.patch.iter().all(|op| op["value"]["name"] != "LD_PRELOAD"));
        assert!(m.patch.iter().all(|op| op["op"] == "add"));
    }

    #[test]
    fn an_empty_ld_preload_is_set_and_a_listed_interposer_kept() {
        let inj = Injection::new("/opt/baton/");
        assert_eq!(inj.interposer(), "/opt/baton/lib/libbaton_interposer.so");
        let with = |v: &str| {
            pod(json!({
                "metadata": {"labels": {LABEL: "true"}},
                "spec": {"containers": [{"name": "a", "env": [{"name": "LD_PRELOAD", "value": v}]}]},
            }))
        };
        let m = mutate(&with(""), &inj);
        assert!(m.patch.contains(&json!({
            "op": "replace", "path": "/spec/containers/0/env/0/value",
            "value": "/opt/baton/lib/libbaton_interposer.so",
        })));
        let m = mutate(&with("/x.so /opt/baton/lib/libbaton_interposer.so"), &inj);
        assert!(m.patch.iter().all(|op| op["op"] == "add"));
    }
}
