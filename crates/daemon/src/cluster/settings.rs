//! What a daemon on a cluster's node is told: on Kubernetes its node, how to reach the API
//! server, and the operator's PriorityClass table; on Slurm where the step records are.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::DaemonError;

/// Where an in-cluster process finds its service account.
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A daemon that takes its processes' priorities from their pods (`--kubernetes`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KubernetesConfig {
    /// The node this daemon serves: only its pods are listed and watched.
    pub node: String,
    /// The API server's base URL (`https://HOST:PORT`; plain `http://` only in tests).
    pub api_server: String,
    /// The service account token, read again for every request (tokens are rotated).
    pub token_file: Option<PathBuf>,
    /// The CA that signs the API server's certificate.
    pub ca_file: Option<PathBuf>,
    /// PriorityClass name → Baton priority, overriding the class's value (`--kubernetes-class`).
    pub classes: BTreeMap<String, i32>,
    /// Where processes' `cgroup` files are read (`/proc`; a fixture in tests).
    pub proc_root: PathBuf,
}

impl KubernetesConfig {
    /// The settings of a daemon running in a pod on `node`: the API server from
    /// `KUBERNETES_SERVICE_HOST`/`_PORT`, the pod's service account token and CA.
    pub fn in_cluster(node: String) -> Result<KubernetesConfig, DaemonError> {
        if node.is_empty() {
            return Err(DaemonError::BadSetting(
                "--kubernetes needs the node's name: set NODE_NAME (the chart sets it from \
                 spec.nodeName) or give --kubernetes-node"
                    .into(),
            ));
        }
        let host = std::env::var("KUBERNETES_SERVICE_HOST").map_err(|_| {
            DaemonError::BadSetting(
                "--kubernetes: KUBERNETES_SERVICE_HOST is not set, so this is not a pod of a \
                 cluster; run the daemon from the Helm chart (deploy/helm/baton)"
                    .into(),
            )
        })?;
        let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let sa = PathBuf::from(SERVICE_ACCOUNT);
        Ok(KubernetesConfig {
            node,
            api_server: format!("https://{host}:{port}"),
            token_file: Some(sa.join("token")),
            ca_file: Some(sa.join("ca.crt")),
            classes: BTreeMap::new(),
            proc_root: PathBuf::from("/proc"),
        })
    }

    /// Checks the class table's priorities.
    pub(crate) fn check(&self) -> Result<(), DaemonError> {
        for (name, p) in &self.classes {
            if !(-100..=100).contains(p) {
                return Err(DaemonError::BadSetting(format!(
                    "--kubernetes-class {name}={p}: give a priority from -100 to 100"
                )));
            }
        }
        Ok(())
    }
}

/// A daemon on a Slurm node that takes its processes' priorities from their job steps
/// (`--slurm-steps`), as the SPANK plugin records them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmConfig {
    /// The plugin's records: one file per job step, the directory and files root's.
    pub records: PathBuf,
    /// Where processes' `cgroup` and `stat` files are read (`/proc`; a fixture in tests).
    pub proc_root: PathBuf,
}

impl SlurmConfig {
    /// Where the plugin writes its records unless plugstack.conf says otherwise.
    pub const DEFAULT_RECORDS: &'static str = "/run/baton/slurm";

    /// Records in `records`, processes in `/proc`.
    pub fn new(records: PathBuf) -> SlurmConfig {
        SlurmConfig {
            records,
            proc_root: PathBuf::from("/proc"),
        }
    }
}
