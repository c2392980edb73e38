//! From a pod to its Baton priority: the documented table.
//!
//! | what the pod says                                   | its Baton priority                    |
//! |-----------------------------------------------------|---------------------------------------|
//! | `priorityClassName` named in the daemon's table (`--kubernetes-class NAME=P`) | `P`        |
//! | otherwise its `spec.priority` (the PriorityClass's value; 0 without one)     | clamped to −100..=100 (system classes, 2 000 000 000 and up, give 100) |
//! | the annotation `baton.dev/priority: "N"`, −100..=100 | `min(N, the above)`: it can lower the pod, never raise it |
//!
//! The result is both the default of the pod's processes (what they get when they say
//! nothing) and their ceiling (what `BATON_PRIORITY`, the C API or `baton priority` from
//! inside the pod cannot exceed). A PriorityClass is cluster-wide and made by the cluster's
//! administrators, who decide who may use it (quota scopes, admission); the annotation is the
//! pod author's, so it only lowers. A pod the daemon does not know gets [`UNKNOWN_POD`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::pod::{PodInfo, PodUid};

/// The annotation a pod may lower its priority with.
pub(crate) const ANNOTATION: &str = "baton.dev/priority";

/// The priority of a process in a pod the daemon has not (yet) seen: Baton's default.
pub(crate) const UNKNOWN_POD: i32 = 0;

/// The fields of a Pod the daemon reads; the API server's JSON has many more.
#[derive(Debug, Deserialize)]
pub(crate) struct Pod {
    pub(crate) metadata: Metadata,
    #[serde(default)]
    pub(crate) spec: Spec,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Metadata {
    pub(crate) uid: String,
    #[serde(default)]
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) namespace: String,
    #[serde(default)]
    pub(crate) annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Spec {
    pub(crate) priority: Option<i64>,
    pub(crate) priority_class_name: Option<String>,
}

/// The Baton priority of `pod` by the table above, with `classes` the daemon's own
/// PriorityClass → Baton priority entries.
pub(crate) fn baton_priority(pod: &Pod, classes: &BTreeMap<String, i32>) -> i32 {
    let from_class = pod
        .spec
        .priority_class_name
        .as_ref()
        .and_then(|c| classes.get(c).copied())
        .unwrap_or_else(|| {
            let p = pod.spec.priority.unwrap_or(0).clamp(-100, 100);
            i32::try_from(p).unwrap_or(0)
        });
    match pod.metadata.annotations.get(ANNOTATION) {
        None => from_class,
        Some(v) => match v.trim().parse::<i32>() {
            Ok(n) if (-100..=100).contains(&n) => n.min(from_class),
            _ => {
                tracing::warn!(
                    pod = %format!("{}/{}", pod.metadata.namespace, pod.metadata.name),
                    value = %v,
                    "the {ANNOTATION} annotation is no integer from -100 to 100: ignored"
                );
                from_class
            }
        },
    }
}

/// What the daemon keeps of `pod`; `None` for a pod without a valid UID.
pub(crate) fn info(pod: &Pod, classes: &BTreeMap<String, i32>) -> Option<PodInfo> {
    Some(PodInfo {
        uid: PodUid::parse(&pod.metadata.uid)?,
        name: format!("{}/{}", pod.metadata.namespace, pod.metadata.name),
        priority: baton_priority(pod, classes),
    })
}

/// A pod list's items, as the API server answers `GET /api/v1/pods`.
#[derive(Debug, Deserialize)]
pub(crate) struct PodList {
    pub(crate) metadata: ListMetadata,
    pub(crate) items: Vec<Pod>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListMetadata {
    #[serde(default)]
    pub(crate) resource_version: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(priority: Option<i64>, class: Option<&str>, annotation: Option<&str>) -> Pod {
        Pod {
            metadata: Metadata {
                uid: "8f4a6c2e-1b3d-4e5f-9a7b-0c1d2e3f4a5b".into(),
                name: "p".into(),
                namespace: "ns".into(),
                annotations: annotation
                    .map(|a| BTreeMap::from([(ANNOTATION.to_string(), a.to_string())]))
                    .unwrap_or_default(),
            },
            spec: Spec {
                priority,
                priority_class_name: class.map(String::from),
            },
        }
    }

    #[test]
    fn the_table() {
        let classes = BTreeMap::from([("inference".to_string(), 80), ("batch".to_string(), -50)]);
        let p = |prio, class, ann| baton_priority(&pod(prio, class, ann), &classes);
        // spec.priority, clamped.
        assert_eq!(p(None, None, None), 0);
        assert_eq!(p(Some(0), None, None), 0);
        assert_eq!(p(Some(40), Some("mid"), None), 40);
        assert_eq!(p(Some(1_000_000), Some("high"), None), 100);
        assert_eq!(
            p(Some(2_000_001_000), Some("system-node-critical"), None),
            100
        );
        assert_eq!(p(Some(-5_000), Some("preemptible"), None), -100);
        // The daemon's table wins over the class's value.
        assert_eq!(p(Some(1_000_000), Some("inference"), None), 80);
        assert_eq!(p(Some(1_000_000), Some("batch"), None), -50);
        // The annotation lowers, never raises.
        assert_eq!(p(Some(1_000_000), Some("inference"), Some("20")), 20);
        assert_eq!(p(Some(0), None, Some("100")), 0);
        assert_eq!(p(Some(0), None, Some(" -30 ")), -30);
        // A bad annotation is ignored.
        assert_eq!(p(Some(50), None, Some("high")), 50);
        assert_eq!(p(Some(50), None, Some("-101")), 50);
    }

    #[test]
    fn a_recorded_pod_list_reads_as_the_nodes_pods() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pods/list.json"),
        )
        .unwrap();
        let list: PodList = serde_json::from_str(&text).unwrap();
        assert_eq!(list.metadata.resource_version, "48121");
        let classes = BTreeMap::new();
        let got: Vec<(String, i32)> = list
            .items
            .iter()
            .filter_map(|p| info(p, &classes))
            .map(|i| (i.name, i.priority))
            .collect();
        assert_eq!(
            got,
            vec![
                ("serving/llm-decoder-0".to_string(), 100),
                ("training/resnet-train-7c9f".to_string(), -100),
                ("research/notebook-ana".to_string(), 0),
                ("serving/embedder-1".to_string(), 30),
                ("kube-system/nvidia-device-plugin-x2k4p".to_string(), 100),
            ]
        );
    }
}
