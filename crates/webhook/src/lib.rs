//! Baton's opt-in mutating admission webhook.
//!
//! The Kubernetes API server sends an `AdmissionReview` for each pod being created; a pod that
//! opts in with the label [`LABEL`]` = "true"` gets, as a JSONPatch, what running under the
//! node's Baton daemon takes and nothing else: the node's Baton directory as a read-only
//! `hostPath` volume mounted in each container at the same path, and the environment that
//! preloads the interposer and points it at the daemon's socket (see [`Injection`]).
//!
//! - [`review`]: the few AdmissionReview v1 fields read and written (Kubernetes' format, not
//!   Baton's wire), and [`review::respond`], body in, response body out: every answer allows
//!   the pod, so a pod the webhook cannot read is created unchanged.
//! - [`inject`]: the pod's fields that matter and [`inject::mutate`], which patches only what is
//!   missing, so an injected pod gets nothing twice.
//! - [`server`]: HTTPS (rustls), `POST /mutate` and `GET /healthz`, one request per connection;
//!   [`certificate`]: its certificate, read again when the Secret's files change.

pub mod certificate;
mod error;
pub mod inject;
pub mod review;
pub mod server;

pub use inject::{Injection, LABEL};
