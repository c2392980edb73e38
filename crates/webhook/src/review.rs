//! AdmissionReview v1, the few fields read and written, and [`respond`].
//!
//! These types are Kubernetes' format (`admission.k8s.io/v1`), defined here rather than taken
//! from k8s-openapi, which would take minutes of every build; they are no part of Baton's own
//! wire (`baton-protocol`).

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::inject::{Injection, Pod, mutate};

const API_VERSION: &str = "admission.k8s.io/v1";

#[derive(Debug, Deserialize)]
struct ReviewRequest {
    request: AdmissionRequest,
}

#[derive(Debug, Deserialize)]
struct AdmissionRequest {
    kind: GroupVersionKind,
    #[serde(default)]
    namespace: String,
    operation: String,
    object: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct GroupVersionKind {
    #[serde(default)]
    group: String,
    version: String,
    kind: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewResponse<'a> {
    api_version: &'static str,
    kind: &'static str,
    response: AdmissionResponse<'a>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionResponse<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    /// The JSONPatch, base64 (standard alphabet, padded).
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// The answer to one AdmissionReview body: always allowed, with a patch for a selected pod
/// that lacks something. A body that is not a review of a pod's creation, or whose pod cannot
/// be read, is answered allowed and unchanged (with the request's `uid` where one can be
/// found; without one the API server counts the call as failed, and the webhook's
/// `failurePolicy: Ignore` creates the pod unchanged as well).
pub fn respond(body: &[u8], injection: &Injection) -> Vec<u8> {
    let value: Option<Value> = serde_json::from_slice(body).ok();
    let uid = value
        .as_ref()
        .and_then(|v| v.pointer("/request/uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut response = AdmissionResponse {
        uid: &uid,
        allowed: true,
        patch_type: None,
        patch: None,
        warnings: Vec::new(),
    };
    match value.map(read) {
        Some(Ok((namespace, pod))) => {
            let m = mutate(&pod, injection);
            if !m.patch.is_empty() {
                tracing::info!(
                    namespace,
                    pod = pod.display_name(),
                    operations = m.patch.len(),
                    "injected Baton"
                );
                let json = serde_json::to_vec(&m.patch).expect("a JSON value serializes");
                response.patch_type = Some("JSONPatch");
                response.patch = Some(base64::engine::general_purpose::STANDARD.encode(json));
            } else if pod.selected() {
                tracing::debug!(namespace, pod = pod.display_name(), "already injected");
            }
            response.warnings = m.warnings;
        }
        Some(Err(why)) => tracing::warn!(uid, %why, "left a request unchanged"),
        None => tracing::warn!("left a request unchanged: its body is not JSON"),
    }
    let review = ReviewResponse {
        api_version: API_VERSION,
        kind: "AdmissionReview",
        response,
    };
    serde_json::to_vec(&review).expect("the response serializes")
}

/// Why a request is left unchanged.
#[derive(Debug, thiserror::Error)]
enum Unreadable {
    #[error("not an AdmissionReview: {0}")]
    NotReview(serde_json::Error),
    #[error("not a Pod but {group}/{version} {kind}")]
    NotPod {
        group: String,
        version: String,
        kind: String,
    },
    #[error("operation {0}, not CREATE")]
    NotCreate(String),
    #[error("no object")]
    NoObject,
    #[error("the pod cannot be read: {0}")]
    Pod(serde_json::Error),
}

/// The namespace and pod of a review of a pod's creation.
fn read(value: Value) -> Result<(String, Pod), Unreadable> {
    let review: ReviewRequest = serde_json::from_value(value).map_err(Unreadable::NotReview)?;
    let r = review.request;
    let k = r.kind;
    if (k.group.as_str(), k.version.as_str(), k.kind.as_str()) != ("", "v1", "Pod") {
        return Err(Unreadable::NotPod {
            group: k.group,
            version: k.version,
            kind: k.kind,
        });
    }
    if r.operation != "CREATE" {
        return Err(Unreadable::NotCreate(r.operation));
    }
    let object = r.object.ok_or(Unreadable::NoObject)?;
    let pod = serde_json::from_value(object).map_err(Unreadable::Pod)?;
    Ok((r.namespace, pod))
}
