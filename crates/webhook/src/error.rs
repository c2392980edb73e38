//! Why the webhook could not start: what the server and its certificate share.

use std::io;
use std::path::PathBuf;

/// Why the webhook could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate or key file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// The certificate file holds no PEM certificate.
    #[error("{} holds no PEM certificate (expected a `tls.crt` as a kubernetes.io/tls Secret has it)", path.display())]
    NoCertificate { path: PathBuf },
    /// The key file holds no PEM private key.
    #[error("{} holds no PEM private key (expected a `tls.key` as a kubernetes.io/tls Secret has it): {source}", path.display())]
    Key {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refused the certificate and key (a key that does not match, say).
    #[error("the certificate and key cannot serve TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The listening address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: io::Error },
}
