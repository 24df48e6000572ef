//! HTTPS served by Coffer itself: the certificate chain and key from two PEM files, TLS 1.2 and
//! 1.3 only (rustls with the ring provider), reloaded from the same files on request (the
//! binary does it on `SIGHUP`) without dropping a connection: each new handshake asks the
//! resolver for the current key, open connections keep theirs.

use rustls::crypto::ring as provider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::InconsistentKeys;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Why a certificate and key could not be used; the message names the file at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading the TLS certificate {path}: {reason}")]
    Certificate { path: PathBuf, reason: String },
    #[error("reading the TLS key {path}: {reason}")]
    Key { path: PathBuf, reason: String },
    #[error("the TLS key {key} does not belong to the certificate {cert}")]
    Mismatch { cert: PathBuf, key: PathBuf },
}

/// The certificate and key files, and the pair in use.
#[derive(Debug)]
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl Tls {
    /// Loads the pair; an error names what is wrong, so that the server does not start with it.
    pub fn load(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Arc<Tls>, TlsError> {
        let (cert, key) = (cert.into(), key.into());
        let current = RwLock::new(read_pair(&cert, &key)?);
        Ok(Arc::new(Tls { cert, key, current }))
    }

    /// Reads the files again. A pair that does not load leaves the one in use in place (the
    /// error says why); new connections get the new pair, open ones keep theirs.
    pub fn reload(&self) -> Result<(), TlsError> {
        let pair = read_pair(&self.cert, &self.key)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = pair;
        Ok(())
    }

    /// The rustls configuration of the server: TLS 1.2 and 1.3, no client certificates, the
    /// pair from this resolver. actix adds the ALPN protocols it serves.
    pub fn server_config(self: &Arc<Self>) -> rustls::ServerConfig {
        rustls::ServerConfig::builder_with_provider(Arc::new(provider::default_provider()))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .expect("the ring provider supports TLS 1.2 and 1.3")
            .with_no_client_auth()
            .with_cert_resolver(self.clone())
    }
}

impl ResolvesServerCert for Tls {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
}

fn read_pair(cert_path: &Path, key_path: &Path) -> Result<Arc<CertifiedKey>, TlsError> {
    let cert_err = |reason: String| TlsError::Certificate {
        path: cert_path.to_path_buf(),
        reason,
    };
    let key_err = |reason: String| TlsError::Key {
        path: key_path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| cert_err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_err(e.to_string()))?;
    if chain.is_empty() {
        return Err(cert_err("no CERTIFICATE block in the file".into()));
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| key_err(e.to_string()))?;
    let signing = provider::sign::any_supported_type(&key)
        .map_err(|e| key_err(format!("not a usable private key ({e})")))?;
    let pair = CertifiedKey::new(chain, signing);
    match pair.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(InconsistentKeys::Unknown)) => {
            Ok(Arc::new(pair))
        }
        Err(rustls::Error::InconsistentKeys(_)) => Err(TlsError::Mismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
        }),
        Err(e) => Err(cert_err(format!("not a usable certificate ({e})"))),
    }
}
