//! A JSON-RPC 2.0 client over HTTP on the daemon's Unix socket, for `kbctl`, tests and benchmarks.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ErrorCode;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket: the daemon is not running.
    #[error("cannot connect to knowhubd at {socket}: {source}")]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Something answers on the socket, but it is not this user's daemon (or the socket's
    /// directory lets others replace it): nothing was sent.
    #[error("refusing to talk to {socket} (nothing was sent): {reason}")]
    Untrusted { socket: PathBuf, reason: String },
    #[error("the connection to knowhubd failed: {0}")]
    Transport(String),
    #[error("knowhubd answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("{message}")]
    Rpc { code: i32, message: String, data: Option<serde_json::Value> },
    #[error("cannot read knowhubd's answer: {0}")]
    Decode(String),
}

impl ClientError {
    /// The protocol error code, when the daemon answered with an error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ClientError::Rpc { code, .. } => ErrorCode::from_code(*code),
            _ => None,
        }
    }

    /// Whether the daemon could not be reached at all (as opposed to answering with an error).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ClientError::Connect { .. })
    }
}

/// One keep-alive connection to the daemon. Calls on one client are sequential; open one
/// client per concurrent caller.
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    socket: PathBuf,
    next_id: AtomicU64,
}

impl Client {
    /// Connects to the daemon at `socket`, after checking that the socket and its directory
    /// are this user's and that the process accepting the connection runs as this user
    /// ([`crate::trust`]); anything else is [`ClientError::Untrusted`] and nothing is sent.
    pub async fn connect(socket: &Path) -> Result<Client, ClientError> {
        let untrusted = |reason| ClientError::Untrusted { socket: socket.to_owned(), reason };
        crate::trust::check_socket_path(socket).map_err(untrusted)?;
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect { socket: socket.to_owned(), source })?;
        crate::trust::check_peer(&stream, socket).map_err(untrusted)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|error| ClientError::Transport(error.to_string()))?;
        tokio::spawn(async move {
            // The connection ends when the client is dropped or the daemon goes away; either
            // is reported to the caller by the next call, not here.
            let _ = connection.await;
        });
        Ok(Client { sender, socket: socket.to_owned(), next_id: AtomicU64::new(1) })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Asks the daemon to prove that it can read the key only this user can read
    /// ([`crate::identity`]), as the OpenClaw plugin does on every connection. `connect` does not
    /// need it (it checks the peer's uid); `kbctl status` uses it to say whether the plugin will
    /// accept this daemon. [`ClientError::Untrusted`] says why not.
    pub async fn prove(&mut self) -> Result<(), ClientError> {
        use crate::identity;
        let socket = self.socket.clone();
        let untrusted = |reason: String| ClientError::Untrusted { socket: socket.clone(), reason };
        let mut nonce = [0u8; identity::NONCE_BYTES];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut nonce)
            .map_err(|_| ClientError::Transport("the system gave no random numbers for a nonce".to_owned()))?;
        let params = crate::wire::ProveParams { nonce: identity::to_hex(&nonce) };
        let answer: crate::wire::ProveResult = match self.call(crate::method::DAEMON_PROVE, &params).await {
            Ok(answer) => answer,
            Err(ClientError::Rpc { code, message, .. }) => {
                return Err(untrusted(format!("the daemon cannot prove itself (error {code}): {message}")));
            }
            Err(error) => return Err(error),
        };
        let proof =
            identity::from_hex(&answer.proof).ok_or_else(|| untrusted("the daemon's proof is not hex".to_owned()))?;
        let key_file = identity::key_file(&socket);
        let key = identity::read_key_file(&key_file).map_err(untrusted)?;
        if !identity::verify(&key, &nonce, &proof) {
            return Err(untrusted(format!("the daemon's proof does not match the key in {}", key_file.display())));
        }
        Ok(())
    }

    /// Calls `method` with named `params` and decodes the result.
    pub async fn call<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, ClientError> {
        let value = self
            .call_value(method, serde_json::to_value(params).map_err(|error| ClientError::Decode(error.to_string()))?)
            .await?;
        serde_json::from_value(value).map_err(|error| ClientError::Decode(format!("{method}: {error}")))
    }

    /// Calls `method` with raw JSON params and returns the raw JSON result.
    pub async fn call_value(
        &mut self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let body = self.post(serde_json::to_vec(&request).expect("a JSON value serializes")).await?;
        let mut response: serde_json::Value =
            serde_json::from_slice(&body).map_err(|error| ClientError::Decode(error.to_string()))?;
        if let Some(error) = response.get_mut("error") {
            let code = error.get("code").and_then(serde_json::Value::as_i64).unwrap_or(0) as i32;
            let message =
                error.get("message").and_then(serde_json::Value::as_str).unwrap_or("unknown error").to_owned();
            let data = error.get_mut("data").map(serde_json::Value::take);
            return Err(ClientError::Rpc { code, message, data });
        }
        response
            .get_mut("result")
            .map(serde_json::Value::take)
            .ok_or_else(|| ClientError::Decode("the answer has neither result nor error".to_owned()))
    }

    /// Posts a raw body (any bytes, for tests of malformed input) and returns the raw answer.
    pub async fn post(&mut self, body: Vec<u8>) -> Result<Bytes, ClientError> {
        self.sender.ready().await.map_err(|error| ClientError::Transport(error.to_string()))?;
        let request = hyper::Request::post("http://localhost/")
            .header(hyper::header::HOST, "localhost")
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|error| ClientError::Transport(error.to_string()))?;
        let response =
            self.sender.send_request(request).await.map_err(|error| ClientError::Transport(error.to_string()))?;
        let status = response.status();
        let body =
            response.into_body().collect().await.map_err(|error| ClientError::Transport(error.to_string()))?.to_bytes();
        if !status.is_success() {
            return Err(ClientError::Http {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&body).into_owned(),
            });
        }
        Ok(body)
    }
}
