//! The real binary over TLS: a self-signed certificate made here, the server started on a
//! loopback port of its choosing, a review posted as the API server posts it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::Value;

/// The server process, killed when the test ends, however it ends.
struct Webhook(Child);

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("webhook-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts the binary; returns it and the address it listens on.
fn start(cert: &Path, key: &Path) -> (Webhook, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton-webhook"))
        .args(["--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .env("BATON_LOG", "off")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let webhook = Webhook(child);
    let line = lines
        .next()
        .expect("the server says where it listens")
        .unwrap();
    let addr = line
        .strip_prefix("baton-webhook: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line}"))
        .to_string();
    (webhook, addr)
}

/// A TLS stream to the server, trusting `cert` alone.
fn connect(addr: &str, cert: CertificateDer<'static>) -> StreamOwned<ClientConnection, TcpStream> {
    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let conn = ClientConnection::new(Arc::new(config), ServerName::try_from("localhost").unwrap())
        .unwrap();
    StreamOwned::new(conn, TcpStream::connect(addr).unwrap())
}

/// Whether a handshake trusting `cert` alone succeeds.
fn handshakes(addr: &str, cert: CertificateDer<'static>) -> bool {
    let mut s = connect(addr, cert);
    s.conn.complete_io(&mut s.sock).is_ok()
}

/// One HTTPS request; the status code and the body.
fn request(addr: &str, cert: CertificateDer<'static>, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = connect(addr, cert);
    write!(
        s,
        "{head}\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    s.flush().unwrap();
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).unwrap();
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let status_line = String::from_utf8_lossy(&answer[..split])
        .lines()
        .next()
        .unwrap()
        .to_string();
    let code = status_line.split(' ').nth(1).unwrap().parse().unwrap();
    (code, answer[split + 4..].to_vec())
}

#[test]
fn the_binary_answers_a_review_over_tls() {
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let d = dir("tls");
    let (cert_path, key_path) = (d.join("tls.crt"), d.join("tls.key"));
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, signing_key.serialize_pem()).unwrap();
    let der = cert.der().clone();
    let (_webhook, addr) = start(&cert_path, &key_path);

    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let body = std::fs::read(data.join("selected.request.json")).unwrap();
    // The API server adds the webhook's timeout to the path.
    let (code, answer) = request(
        &addr,
        der.clone(),
        "POST /mutate?timeout=5s HTTP/1.1\r\nContent-Type: application/json",
        &body,
    );
    assert_eq!(code, 200);
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    let golden: Value =
        serde_json::from_slice(&std::fs::read(data.join("selected.response.json")).unwrap())
            .unwrap();
    assert_eq!(answer, golden);

    let (code, answer) = request(&addr, der.clone(), "GET /healthz HTTP/1.1", b"");
    assert_eq!((code, answer.as_slice()), (200, &b"ok\n"[..]));
    assert_eq!(
        request(&addr, der.clone(), "GET /mutate HTTP/1.1", b"").0,
        405
    );
    assert_eq!(
        request(&addr, der.clone(), "POST /validate HTTP/1.1", b"{}").0,
        404
    );

    // The Secret renewed: the kubelet swaps the files, and the next handshake presents the new
    // certificate (one more name, so that even the length of the file differs).
    let rcgen::CertifiedKey { cert, signing_key } =
        rcgen::generate_simple_self_signed(vec!["localhost".into(), "renewed.test".into()])
            .unwrap();
    std::fs::write(d.join("new.crt"), cert.pem()).unwrap();
    std::fs::write(d.join("new.key"), signing_key.serialize_pem()).unwrap();
    std::fs::rename(d.join("new.crt"), &cert_path).unwrap();
    std::fs::rename(d.join("new.key"), &key_path).unwrap();
    let renewed = cert.der().clone();
    assert_eq!(request(&addr, renewed, "GET /healthz HTTP/1.1", b"").0, 200);
    assert!(
        !handshakes(&addr, der),
        "the old certificate is still served"
    );
}

#[test]
fn a_missing_key_is_reported_and_the_binary_exits() {
    let rcgen::CertifiedKey { cert, .. } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let d = dir("nokey");
    std::fs::write(d.join("tls.crt"), cert.pem()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_baton-webhook"))
        .args(["--listen", "127.0.0.1:0", "--tls-cert"])
        .arg(d.join("tls.crt"))
        .arg("--tls-key")
        .arg(d.join("tls.key"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot read") && stderr.contains("tls.key"),
        "{stderr}"
    );
}
