//! The accept loop: JSON-RPC over HTTP on a Unix socket, one jsonrpsee service per connection.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::server::{ServerConfig, stop_channel};
use tokio::net::UnixListener;
use tokio::task::JoinSet;

use crate::config::Config;
use crate::engine::Engine;

/// How long shutdown waits for open requests to finish before closing connections anyway.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `engine` on `listener` until `shutdown` completes, then stops accepting, lets
/// requests in flight finish (up to `DRAIN_TIMEOUT`) and returns.
///
/// Every connection's peer uid is checked against the daemon's own: another user's process
/// is refused even if the socket's permissions were loosened.
pub async fn serve(listener: UnixListener, engine: Arc<Engine>, config: &Config, shutdown: impl Future<Output = ()>) {
    let socket_path =
        listener.local_addr().ok().and_then(|address| address.as_pathname().map(ToOwned::to_owned)).unwrap_or_default();
    let methods = crate::rpc::module(engine.clone(), socket_path);
    let server_config = ServerConfig::builder()
        .http_only()
        .max_connections(config.server.max_connections)
        .max_request_body_size(config.server.max_request_bytes)
        .max_response_body_size(u32::MAX)
        .build();
    let service_builder = jsonrpsee::server::Server::builder().set_config(server_config).to_service_builder();
    let (stop_handle, server_handle) = stop_channel();
    let own_uid = rustix::process::getuid().as_raw();
    let mut connections = JoinSet::new();

    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
            // Reap finished connection tasks so the set does not grow without bound.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        match stream.peer_cred() {
            Ok(credentials) if credentials.uid() == own_uid => {}
            Ok(credentials) => {
                tracing::warn!(peer_uid = credentials.uid(), own_uid, "refused a connection from another user");
                continue;
            }
            Err(error) => {
                tracing::warn!("refused a connection whose peer cannot be identified: {error}");
                continue;
            }
        }
        let service = service_builder.clone().build(methods.clone(), stop_handle.clone());
        let stopped = stop_handle.clone().shutdown();
        connections.spawn(async move {
            if let Err(error) = jsonrpsee::server::serve_with_graceful_shutdown(stream, service, stopped).await {
                tracing::debug!("connection ended: {error}");
            }
        });
    }

    tracing::info!(open_connections = connections.len(), "shutting down: draining connections");
    let _ = server_handle.stop();
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!("some connections did not finish in time and were closed");
        connections.abort_all();
    }
    // Requests that returned are stored; flush the statistics they produced.
    let engine_for_flush = engine.clone();
    let _ = tokio::task::spawn_blocking(move || engine_for_flush.flush_recalls()).await;
}
