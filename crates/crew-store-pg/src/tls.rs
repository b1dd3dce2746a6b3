//! TLS to the store, as libpq does it: taken whenever the server offers it (the URL's
//! `sslmode`: `prefer` by default, `require` to refuse a server without it, `disable`). The
//! server's certificate is verified, chain and host name, against the roots in
//! `PGSSLROOTCERT` or else `~/.postgresql/root.crt` when one is there; without either the
//! connection is encrypted but the server unproven (libpq's `prefer` and `require`), since a
//! team's own server usually has a certificate no public root signs.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::PgStoreError;

/// The connector every connection of a store uses, and the file of roots it verifies the
/// server against (`None`: the server is not verified).
pub(crate) fn connector() -> Result<(MakeRustlsConnect, Option<PathBuf>), PgStoreError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| PgStoreError::Tls(e.to_string()))?;
    let roots_file = root_file();
    let config = match &roots_file {
        Some(file) => {
            let mut roots = RootCertStore::empty();
            let certs = CertificateDer::pem_file_iter(file)
                .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                .map_err(|e| PgStoreError::Tls(format!("{}: {e}", file.display())))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(PgStoreError::Tls(format!(
                    "{}: no certificate in it",
                    file.display()
                )));
            }
            builder.with_root_certificates(roots)
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unproven {
                algorithms: provider.signature_verification_algorithms,
            })),
    };
    Ok((
        MakeRustlsConnect::new(config.with_no_client_auth()),
        roots_file,
    ))
}

/// The roots to verify the server against: `PGSSLROOTCERT`, else libpq's default file.
fn root_file() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("PGSSLROOTCERT").filter(|f| !f.is_empty()) {
        return Some(PathBuf::from(file));
    }
    let default = PathBuf::from(std::env::var_os("HOME")?).join(".postgresql/root.crt");
    default.is_file().then_some(default)
}

/// Takes any server certificate but still checks the handshake is signed by its key: the
/// channel is private from eavesdroppers; who is at the other end is not proven.
#[derive(Debug)]
struct Unproven {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unproven {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
