//! The node's pods from the API server: list them, then watch for changes, on a thread of its
//! own (blocking HTTP, so the daemon's single-threaded runtime never waits on the network).
//!
//! `GET /api/v1/pods?fieldSelector=spec.nodeName=NODE` gives the node's pods and a resource
//! version; `…&watch=1&resourceVersion=RV` then streams one JSON event per line (`ADDED`,
//! `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`) until the server's timeout, after which the
//! watch resumes from the last version seen. An expired version (410) or a broken connection
//! starts over with a fresh list; failures back off from 1 s to 30 s. Every list becomes a
//! [`PodUpdate::Reset`], every event an upsert or a delete: the core's table only ever holds
//! what the API server said last. The only permissions needed are `list` and `watch` on pods.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::pod::{PodUid, PodUpdate};
use super::priority::{self, Pod, PodList};
use super::settings::KubernetesConfig;

/// How long the API server keeps one watch open before the daemon renews it.
const WATCH_SECONDS: u32 = 300;

/// The largest pod list read (a node runs at most a few hundred pods).
const MAX_LIST: u64 = 64 << 20;

/// Why one list-and-watch pass ended.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WatchError {
    /// The request could not be made or its answer read.
    #[error("the API server at {url} could not be reached or read: {source}")]
    Http {
        url: String,
        #[source]
        source: Box<ureq::Error>,
    },
    /// The API server refused the request.
    #[error(
        "the API server answered {status} to {url}: {body}; check the daemon's service \
         account may list and watch pods (the chart's ClusterRole)"
    )]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// The answer was not what the API server sends.
    #[error("unexpected answer from the API server: {0}")]
    Format(String),
    /// A file of the service account could not be read.
    #[error("cannot read {path}: {source}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One line of a watch stream.
#[derive(Debug, Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    kind: String,
    object: serde_json::Value,
}

/// What one watch line means for the daemon.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A change to the table, and the resource version it brings.
    Update(PodUpdate, Option<String>),
    /// Only a newer resource version (a bookmark, or a pod without a valid UID).
    Version(String),
    /// The version the watch started from is too old: list again.
    Expired,
}

/// The meaning of one watch line.
pub(crate) fn step(line: &str, classes: &BTreeMap<String, i32>) -> Result<Step, WatchError> {
    let ev: WatchEvent = serde_json::from_str(line)
        .map_err(|e| WatchError::Format(format!("a watch event: {e}")))?;
    let version = ev
        .object
        .pointer("/metadata/resourceVersion")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    let pod = || -> Result<Pod, WatchError> {
        serde_json::from_value(ev.object.clone())
            .map_err(|e| WatchError::Format(format!("a pod in a {} event: {e}", ev.kind)))
    };
    match ev.kind.as_str() {
        "ADDED" | "MODIFIED" => Ok(match priority::info(&pod()?, classes) {
            Some(info) => Step::Update(PodUpdate::Upsert(info), version),
            None => Step::Version(version.unwrap_or_default()),
        }),
        "DELETED" => Ok(match PodUid::parse(&pod()?.metadata.uid) {
            Some(uid) => Step::Update(PodUpdate::Delete(uid), version),
            None => Step::Version(version.unwrap_or_default()),
        }),
        "BOOKMARK" => Ok(Step::Version(version.unwrap_or_default())),
        "ERROR" if ev.object.get("code").and_then(|c| c.as_u64()) == Some(410) => Ok(Step::Expired),
        other => Err(WatchError::Format(format!(
            "a watch event of type {other}: {}",
            ev.object
        ))),
    }
}

/// The API server, as the daemon's service account reaches it.
pub(crate) struct ApiServer {
    cfg: KubernetesConfig,
    agent: ureq::Agent,
}

impl ApiServer {
    /// A client for `cfg`'s API server, trusting only its CA.
    pub(crate) fn new(cfg: KubernetesConfig) -> Result<ApiServer, WatchError> {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)));
        if let Some(ca) = &cfg.ca_file {
            let pem = read(ca)?;
            let certs = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect::<Vec<_>>();
            if certs.is_empty() {
                return Err(WatchError::Format(format!(
                    "{} holds no certificate",
                    ca.display()
                )));
            }
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)))
                    .build(),
            );
        }
        Ok(ApiServer {
            agent: config.build().new_agent(),
            cfg,
        })
    }

    fn url(&self, extra: &str) -> String {
        format!(
            "{}/api/v1/pods?fieldSelector=spec.nodeName%3D{}{extra}",
            self.cfg.api_server.trim_end_matches('/'),
            self.cfg.node
        )
    }

    fn get(&self, url: &str) -> Result<ureq::Body, WatchError> {
        let mut req = self.agent.get(url);
        if let Some(t) = &self.cfg.token_file {
            let token = String::from_utf8_lossy(&read(t)?).trim().to_string();
            req = req.header("Authorization", &format!("Bearer {token}"));
        }
        let http = |source| WatchError::Http {
            url: url.to_string(),
            source: Box::new(source),
        };
        let resp = req.call().map_err(http)?;
        let status = resp.status().as_u16();
        let mut body = resp.into_body();
        if status != 200 {
            let text = body
                .with_config()
                .limit(4096)
                .read_to_string()
                .unwrap_or_default();
            return Err(WatchError::Status {
                url: url.to_string(),
                status,
                body: text,
            });
        }
        Ok(body)
    }

    /// Lists the node's pods: the table's reset and the version to watch from.
    pub(crate) fn list(&self) -> Result<(PodUpdate, String), WatchError> {
        let url = self.url("");
        let text = self
            .get(&url)?
            .with_config()
            .limit(MAX_LIST)
            .read_to_string()
            .map_err(|source| WatchError::Http {
                url: url.clone(),
                source: Box::new(source),
            })?;
        let list: PodList = serde_json::from_str(&text)
            .map_err(|e| WatchError::Format(format!("a pod list: {e}")))?;
        let pods = list
            .items
            .iter()
            .filter_map(|p| priority::info(p, &self.cfg.classes))
            .collect();
        Ok((PodUpdate::Reset(pods), list.metadata.resource_version))
    }

    /// Watches from `version`, handing each change to `send` (false: stop) and moving
    /// `version` along; returns whether to go on watching (`Ok(true)`), list again
    /// (`Ok(false)`), or stop (`send` refused).
    fn watch(
        &self,
        version: &mut String,
        send: &mut dyn FnMut(PodUpdate) -> bool,
    ) -> Result<Option<bool>, WatchError> {
        let url = self.url(&format!(
            "&watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={version}"
        ));
        let reader = BufReader::new(self.get(&url)?.into_reader());
        for line in reader.lines() {
            let line = line.map_err(|e| WatchError::Format(format!("a watch stream: {e}")))?;
            if line.trim().is_empty() {
                continue;
            }
            match step(&line, &self.cfg.classes)? {
                Step::Update(u, v) => {
                    if !send(u) {
                        return Ok(None);
                    }
                    if let Some(v) = v {
                        *version = v;
                    }
                }
                Step::Version(v) if !v.is_empty() => *version = v,
                Step::Version(_) => {}
                Step::Expired => return Ok(Some(false)),
            }
        }
        Ok(Some(true))
    }

    /// Lists and watches until `send` refuses an update (the daemon stopped), starting over
    /// after any failure.
    pub(crate) fn run(&self, send: &mut dyn FnMut(PodUpdate) -> bool) {
        let mut backoff = Duration::from_secs(1);
        loop {
            match self.list() {
                Ok((reset, mut version)) => {
                    tracing::info!(node = %self.cfg.node, version = %version, "listed the node's pods");
                    if !send(reset) {
                        return;
                    }
                    backoff = Duration::from_secs(1);
                    loop {
                        match self.watch(&mut version, send) {
                            Ok(None) => return,
                            Ok(Some(true)) => continue,
                            Ok(Some(false)) => break,
                            Err(e) => {
                                tracing::warn!(error = %e, "the pod watch broke; listing again");
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_s = backoff.as_secs(), "cannot list the node's pods");
                    // A retry's pause, not a wait for a condition.
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        }
    }
}

fn read(path: &std::path::Path) -> Result<Vec<u8>, WatchError> {
    std::fs::read(path).map_err(|source| WatchError::File {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::pod::PodInfo;

    #[test]
    fn a_recorded_watch_stream_reads_as_changes() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pods/watch.jsonl"),
        )
        .unwrap();
        let classes = BTreeMap::new();
        let steps: Vec<Step> = text.lines().map(|l| step(l, &classes).unwrap()).collect();
        let uid = |s: &str| PodUid::parse(s).unwrap();
        assert_eq!(
            steps,
            vec![
                Step::Update(
                    PodUpdate::Upsert(PodInfo {
                        uid: uid("0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"),
                        name: "training/finetune-0".into(),
                        priority: -20,
                    }),
                    Some("48200".into())
                ),
                Step::Update(
                    PodUpdate::Upsert(PodInfo {
                        uid: uid("5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"),
                        name: "serving/embedder-1".into(),
                        priority: 10,
                    }),
                    Some("48210".into())
                ),
                Step::Version("48250".into()),
                Step::Update(
                    PodUpdate::Delete(uid("1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f")),
                    Some("48300".into())
                ),
                Step::Expired,
            ]
        );
        assert!(step("{\"type\":\"ERROR\",\"object\":{\"code\":500}}", &classes).is_err());
        assert!(step("not json", &classes).is_err());
    }
}
