//! The hub's connection: the URL, `sslmode` and `sslrootcert` with libpq's meanings, and TLS
//! through rustls (no OpenSSL).

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::{Error, Result};

/// libpq's `sslmode`. `prefer` (libpq's default) and `require` encrypt without checking who
/// answers unless a root certificate is given; `verify-full` is what a hub on a network wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Everything needed to open a connection to the hub.
#[derive(Clone)]
pub struct ConnectOptions {
    config: postgres::Config,
    pub ssl_mode: SslMode,
    /// PEM root certificates to verify the server with (`sslrootcert`); `None`: the file libpq
    /// would read (`~/.postgresql/root.crt`) when it exists, else the web's public roots.
    pub root_cert: Option<PathBuf>,
    /// `user@host:port/dbname`, for messages (never the password).
    pub target: String,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("target", &self.target)
            .field("ssl_mode", &self.ssl_mode)
            .field("root_cert", &self.root_cert)
            .finish_non_exhaustive()
    }
}

impl ConnectOptions {
    /// Parses a `postgres://` / `postgresql://` URL or a `key=value` connection string.
    /// `password` (from the daemon's `password_env` or `password_file`) wins over one in the URL.
    pub fn parse(url: &str, password: Option<&str>) -> Result<ConnectOptions> {
        let (rest, ssl_mode, root_cert) = take_tls_params(url.trim())?;
        let mut config = postgres::Config::from_str(&rest).map_err(|error| Error::Url(error.to_string()))?;
        if config.get_hosts().is_empty() {
            return Err(Error::Url("it names no host".to_owned()));
        }
        if let Some(password) = password {
            config.password(password);
        }
        config.ssl_mode(match ssl_mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            _ => postgres::config::SslMode::Require,
        });
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        config.keepalives_idle(Duration::from_secs(60));
        if config.get_application_name().is_none() {
            config.application_name("knowhubd");
        }
        let target = describe_target(&config);
        Ok(ConnectOptions { config, ssl_mode, root_cert, target })
    }

    /// Opens a connection.
    pub fn connect(&self) -> Result<postgres::Client> {
        let connected = if self.ssl_mode == SslMode::Disable {
            self.config.connect(postgres::NoTls)
        } else {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(self.tls_config()?);
            self.config.connect(tls)
        };
        connected.map_err(|error| Error::Connect { target: self.target.clone(), message: crate::describe(&error) })
    }

    fn tls_config(&self) -> Result<ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|error| Error::Tls(error.to_string()))?;
        let root_file = self.root_cert.clone().or_else(|| {
            let home = std::env::var_os("HOME")?;
            let libpq_default = Path::new(&home).join(".postgresql/root.crt");
            libpq_default.exists().then_some(libpq_default)
        });
        let verify = match self.ssl_mode {
            SslMode::Disable | SslMode::Prefer => false,
            // libpq: `require` with a root certificate file verifies like `verify-ca`.
            SslMode::Require => root_file.is_some(),
            SslMode::VerifyCa | SslMode::VerifyFull => true,
        };
        if !verify {
            let verifier = Arc::new(NoVerification(provider));
            return Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth());
        }
        let mut roots = RootCertStore::empty();
        match &root_file {
            Some(path) if path.as_os_str() != "system" => {
                let certificates = CertificateDer::pem_file_iter(path).map_err(|error| {
                    Error::Tls(format!("cannot read the root certificates in {}: {error}", path.display()))
                })?;
                for certificate in certificates {
                    let certificate = certificate.map_err(|error| {
                        Error::Tls(format!("a certificate in {} does not parse: {error}", path.display()))
                    })?;
                    roots.add(certificate).map_err(|error| {
                        Error::Tls(format!("a certificate in {} is refused: {error}", path.display()))
                    })?;
                }
            }
            _ => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|error| Error::Tls(error.to_string()))?;
        if self.ssl_mode == SslMode::VerifyFull {
            return Ok(builder.with_webpki_verifier(webpki).with_no_client_auth());
        }
        let verifier = Arc::new(ChainOnly(webpki));
        Ok(builder.dangerous().with_custom_certificate_verifier(verifier).with_no_client_auth())
    }
}

/// What the PostgreSQL client library takes besides the TLS parameters read here.
const KNOWN_PARAMETERS: &[&str] = &[
    "user",
    "password",
    "dbname",
    "options",
    "application_name",
    "sslnegotiation",
    "host",
    "hostaddr",
    "port",
    "connect_timeout",
    "tcp_user_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
    "replication",
];

/// Removes `sslmode` and `sslrootcert` from a URL's query or a key=value string: the client
/// library knows only three modes and no root file, so they are applied here instead.
fn take_tls_params(url: &str) -> Result<(String, SslMode, Option<PathBuf>)> {
    let mut ssl_mode = None;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<bool> {
        match key {
            "sslmode" => {
                ssl_mode = Some(SslMode::parse(value).ok_or_else(|| {
                    Error::Url(format!(
                        "sslmode={value} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                    ))
                })?);
                Ok(true)
            }
            "sslrootcert" => {
                root_cert = Some(PathBuf::from(percent_decode(value)));
                Ok(true)
            }
            known if KNOWN_PARAMETERS.contains(&known) => Ok(false),
            unknown => Err(Error::Url(format!(
                "{unknown:?} is not a connection parameter this client knows (see libpq's list; sslmode and sslrootcert are read here)"
            ))),
        }
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_owned(),
            Some((base, query)) => {
                let mut kept = Vec::new();
                for pair in query.split('&').filter(|pair| !pair.is_empty()) {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(key, value)? {
                        kept.push(pair);
                    }
                }
                if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
            }
        }
    } else {
        let mut kept = Vec::new();
        for pair in url.split_whitespace() {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !take(key.trim(), value.trim_matches('\''))? {
                kept.push(pair);
            }
        }
        kept.join(" ")
    };
    Ok((rest, ssl_mode.unwrap_or(SslMode::Prefer), root_cert))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(Ok(byte)) = text.get(i + 1..i + 3).map(|hex| u8::from_str_radix(hex, 16))
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn describe_target(config: &postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => host.clone(),
        Some(postgres::config::Host::Unix(path)) => path.display().to_string(),
        None => String::new(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("");
    let dbname = config.get_dbname().unwrap_or(user);
    format!("{user}@{host}:{port}/{dbname}")
}

/// `prefer` and `require` without a root certificate, as libpq: encrypted, not authenticated.
/// Signatures are still checked, so the session key belongs to the certificate shown.
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must lead to a trusted root; the host name is not checked.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_from_urls_and_key_value_strings() {
        let options =
            ConnectOptions::parse("postgresql://alice@db.example:6543/team?sslmode=verify-full&sslrootcert=/etc/ca%20x.pem&application_name=kb", None)
                .unwrap();
        assert_eq!(options.ssl_mode, SslMode::VerifyFull);
        assert_eq!(options.root_cert.as_deref(), Some(Path::new("/etc/ca x.pem")));
        assert_eq!(options.target, "alice@db.example:6543/team");

        let options =
            ConnectOptions::parse("host=127.0.0.1 port=5433 user=bob dbname=kb sslmode=disable", None).unwrap();
        assert_eq!(options.ssl_mode, SslMode::Disable);
        assert_eq!(options.target, "bob@127.0.0.1:5433/kb");

        // libpq's default.
        assert_eq!(ConnectOptions::parse("postgres://carol@h/kb", None).unwrap().ssl_mode, SslMode::Prefer);
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let error = ConnectOptions::parse("postgres://a@h/kb?sslmode=sometimes", None).unwrap_err().to_string();
        assert!(error.contains("sslmode=sometimes"), "{error}");
        let error = ConnectOptions::parse("postgres://a@h/kb?bogus=1", None).unwrap_err().to_string();
        assert!(error.contains("bogus"), "{error}");
    }

    #[test]
    fn the_password_never_shows_in_debug_output() {
        let options = ConnectOptions::parse("postgres://alice:hunter2@h/kb", Some("s3cret-pw")).unwrap();
        let shown = format!("{options:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("s3cret-pw"), "{shown}");
    }
}
