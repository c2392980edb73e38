//! The serving certificate, from the PEM files a `kubernetes.io/tls` Secret mounts, read again
//! when they change: the kubelet swaps a Secret volume's files when the Secret is updated
//! (cert-manager renewing it, say), and a handshake after that presents the new certificate.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::error::Error;

/// The chain and key in two PEM files, the key checked against the chain's first certificate.
pub fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, Error> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| Error::Read {
            path: path.into(),
            source,
        })
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&read(cert)?)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err(Error::NoCertificate { path: cert.into() });
    }
    let key = PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|source| Error::Key {
        path: key.into(),
        source,
    })?;
    Ok(CertifiedKey::from_der(chain, key, provider)?)
}

/// What tells a changed file: its modification time and length (of the file a Secret's
/// symbolic link points to).
type Stamp = [Option<(SystemTime, u64)>; 2];

fn stamp(paths: [&Path; 2]) -> Stamp {
    paths.map(|p| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    })
}

/// Serves the certificate last read, reading the files again on a handshake after they
/// changed; a pair that cannot be read (half written, or a key that does not match) is
/// reported once and the previous certificate kept.
#[derive(Debug)]
pub struct Reloading {
    cert: PathBuf,
    key: PathBuf,
    provider: Arc<CryptoProvider>,
    current: Mutex<(Stamp, Arc<CertifiedKey>)>,
}

impl Reloading {
    pub fn new(cert: &Path, key: &Path, provider: Arc<CryptoProvider>) -> Result<Self, Error> {
        let before = stamp([cert, key]);
        let certified = load(cert, key, &provider)?;
        Ok(Self {
            cert: cert.into(),
            key: key.into(),
            provider,
            current: Mutex::new((before, Arc::new(certified))),
        })
    }
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        let now = stamp([&self.cert, &self.key]);
        if now != current.0 {
            current.0 = now;
            match load(&self.cert, &self.key, &self.provider) {
                Ok(certified) => {
                    tracing::info!(cert = %self.cert.display(), "certificate read again");
                    current.1 = Arc::new(certified);
                }
                Err(e) => tracing::warn!(error = %e, "kept the previous certificate"),
            }
        }
        Some(Arc::clone(&current.1))
    }
}
