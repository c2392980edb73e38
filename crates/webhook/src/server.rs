//! The HTTPS endpoint: `POST /mutate` answers an AdmissionReview ([`crate::review::respond`]),
//! `GET /healthz` answers `ok` (the Deployment's probes).
//!
//! Blocking and small: a thread per connection (at most [`MAX_CONNECTIONS`] at once, more are
//! closed unanswered), one request per connection, its head parsed by `httparse` and its body
//! read by `Content-Length` (at most [`MAX_BODY`]), each read and write within [`IO_TIMEOUT`],
//! then `Connection: close`. The API server sends a few small requests per pod creation; when
//! one fails, the webhook's `failurePolicy: Ignore` creates the pod unchanged.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustls::{ServerConfig, ServerConnection, StreamOwned};

use crate::certificate::Reloading;
pub use crate::error::Error;
use crate::inject::Injection;
use crate::review::respond;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;
/// An AdmissionReview's largest body: the API server's own request limit is 3 MiB, and a
/// review holds the object once for a creation.
pub const MAX_BODY: usize = 8 << 20;
const MAX_HEAD: usize = 16 << 10;
/// Each read or write on a connection.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS settings from a certificate chain and its key, both PEM files, read again when
/// they change ([`Reloading`]).
pub fn tls_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let resolver = Reloading::new(cert, key, Arc::clone(&provider))?;
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A bound endpoint, served by [`Server::serve`].
pub struct Server {
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    injection: Arc<Injection>,
}

impl Server {
    pub fn bind(addr: &str, tls: Arc<ServerConfig>, injection: Injection) -> Result<Self, Error> {
        let listener = TcpListener::bind(addr).map_err(|source| Error::Listen {
            addr: addr.into(),
            source,
        })?;
        Ok(Self {
            listener,
            tls,
            injection: Arc::new(injection),
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves connections for ever.
    pub fn serve(self) -> ! {
        let active = Arc::new(AtomicUsize::new(0));
        loop {
            let tcp = match self.listener.accept() {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    // Out of file descriptors, say: give the open connections time to end.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            if active.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
                active.fetch_sub(1, Ordering::AcqRel);
                tracing::warn!("{MAX_CONNECTIONS} connections open; closed a new one");
                continue;
            }
            let (tls, injection, active) = (
                Arc::clone(&self.tls),
                Arc::clone(&self.injection),
                Arc::clone(&active),
            );
            std::thread::spawn(move || {
                if let Err(e) = connection(tcp, tls, &injection) {
                    tracing::debug!(error = %e, "connection ended early");
                }
                active.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

/// One request on one connection.
fn connection(tcp: TcpStream, tls: Arc<ServerConfig>, injection: &Injection) -> io::Result<()> {
    tcp.set_read_timeout(Some(IO_TIMEOUT))?;
    tcp.set_write_timeout(Some(IO_TIMEOUT))?;
    let conn = ServerConnection::new(tls).map_err(io::Error::other)?;
    let mut s = StreamOwned::new(conn, tcp);
    let (status, content_type, body) = match request(&mut s)? {
        Request::Review(body) => ("200 OK", "application/json", respond(&body, injection)),
        Request::Health => ("200 OK", "text/plain", b"ok\n".to_vec()),
        Request::Refused(status) => (status, "text/plain", format!("{status}\n").into_bytes()),
    };
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    s.write_all(&body)?;
    s.conn.send_close_notify();
    s.flush()
}

enum Request {
    Review(Vec<u8>),
    Health,
    /// Answered with this status line's code and reason.
    Refused(&'static str),
}

fn request(s: &mut impl Read) -> io::Result<Request> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let (head, method, path, length) = loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf) {
            Ok(httparse::Status::Complete(head)) => {
                let header = |name: &str| {
                    req.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
                };
                if header("transfer-encoding").is_some() {
                    return Ok(Request::Refused("411 Length Required"));
                }
                let length = match header("content-length").map(|v| v.parse::<usize>()) {
                    None => 0,
                    Some(Ok(n)) => n,
                    Some(Err(_)) => return Ok(Request::Refused("400 Bad Request")),
                };
                let method = req.method.unwrap_or("").to_string();
                let path = req.path.unwrap_or("");
                // The API server adds `?timeout=…` to the webhook's path.
                let path = path.split('?').next().unwrap_or(path).to_string();
                break (head, method, path, length);
            }
            Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
            Ok(httparse::Status::Partial) => {
                return Ok(Request::Refused("431 Request Header Fields Too Large"));
            }
            Err(_) => return Ok(Request::Refused("400 Bad Request")),
        }
    };
    match (method.as_str(), path.as_str()) {
        ("GET", "/healthz") => Ok(Request::Health),
        ("POST", "/mutate") if length > MAX_BODY => Ok(Request::Refused("413 Content Too Large")),
        ("POST", "/mutate") => {
            let mut body = buf.split_off(head);
            body.truncate(length);
            let have = body.len();
            body.resize(length, 0);
            s.read_exact(&mut body[have..])?;
            Ok(Request::Review(body))
        }
        (_, "/mutate" | "/healthz") => Ok(Request::Refused("405 Method Not Allowed")),
        _ => Ok(Request::Refused("404 Not Found")),
    }
}
