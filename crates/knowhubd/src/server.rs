//! The accept loop: JSON-RPC over HTTP/1.1 on a Unix socket, one jsonrpsee service per
//! connection, behind the limits that keep clients, slow or many, from starving the daemon.
//!
//! jsonrpsee reads and answers the requests; hyper, driven here, handles the connections, so
//! that the daemon decides how long each may take and how much memory it may hold:
//! - a connection gets `header_timeout` for each request's headers (a new one for its first),
//!   `idle_timeout` between requests, and `body_timeout` for each body (then HTTP 408);
//! - at most `max_connections` are served; at the cap a new one takes the place of the one
//!   waiting longest for a request, and is refused (HTTP 503) only when all are busy
//!   (`connections`);
//! - bodies are read here, not by jsonrpsee: over `max_request_bytes` (declared or chunked)
//!   they get HTTP 413, and all bodies in flight together stay within `body_budget_bytes`
//!   (`body`);
//! - requests whose ids jsonrpsee would silently drop get an error naming the id (`ids`).
//!
//! Architecture Invariant: every refusal is an HTTP error with a JSON-RPC error body naming
//! the limit and its setting, or a closed connection; never a stall.

mod body;
mod connections;
mod ids;
mod responses;
pub(crate) mod throttle;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use jsonrpsee::server::{HttpBody, HttpResponse, ServerConfig, stop_channel};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use body::BODY_BYTES_SET_ASIDE_PER_CONNECTION;
pub use throttle::Throttle;

use crate::app::App;
use crate::config::Config;
use body::{BodyBudget, Refusal};
use connections::{Admitted, Connection, Registry, Timeouts, Watched};
use throttle::warn_throttled;

/// How long shutdown waits for open requests to finish before closing connections anyway.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// File descriptors kept for the store, the index and the model: connections get the rest of
/// the open-file limit. At the limit an index commit failed while submits were acknowledged
/// (issue 14).
const DESCRIPTORS_KEPT_FOR_THE_ENGINE: u64 = 128;

/// The fewest connections served, whatever the open-file limit says.
const MIN_CONNECTIONS: usize = 8;

/// Connections over the cap being told so (HTTP 503) at once; more are closed unanswered, so
/// that refusing cannot itself use up the descriptors.
const MAX_REFUSING: usize = 16;

/// How long a refused connection may take to send the request it is refused.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// hyper's read buffer per connection (its minimum is 8 KiB; the default ~400 KiB would let
/// 256 connections with half-sent headers hold 100 MiB outside the body budget).
const READ_BUFFER_BYTES: usize = 64 * 1024;

/// How often a repeated warning may be logged.
const WARNING_INTERVAL: Duration = Duration::from_secs(10);

static ACCEPT_FAILED: Throttle = Throttle::new(WARNING_INTERVAL);
static OTHER_USER: Throttle = Throttle::new(WARNING_INTERVAL);
static AT_CAPACITY: Throttle = Throttle::new(WARNING_INTERVAL);
static OVER_BUDGET: Throttle = Throttle::new(WARNING_INTERVAL);
static BODY_TIMED_OUT: Throttle = Throttle::new(WARNING_INTERVAL);
static TOO_LARGE: Throttle = Throttle::new(WARNING_INTERVAL);

/// The limits in force, from `[server]` and the open-file limit.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_request_bytes: u64,
    pub body_budget_bytes: u64,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Limits {
    /// The configured limits, with fewer connections if the open-file limit `nofile` (the soft
    /// one, `None` if unknown) cannot hold them beside the engine's files.
    pub fn new(config: &crate::config::ServerConfig, nofile: Option<u64>) -> Limits {
        let configured = config.max_connections as usize;
        let by_descriptors = nofile.map_or(usize::MAX, |nofile| {
            nofile.saturating_sub(DESCRIPTORS_KEPT_FOR_THE_ENGINE + MAX_REFUSING as u64) as usize
        });
        Limits {
            max_connections: configured.min(by_descriptors).max(MIN_CONNECTIONS),
            max_request_bytes: u64::from(config.max_request_bytes),
            body_budget_bytes: config.body_budget_bytes,
            header_timeout: Duration::from_secs(config.header_timeout_seconds),
            body_timeout: Duration::from_secs(config.body_timeout_seconds),
            idle_timeout: Duration::from_secs(config.idle_timeout_seconds),
        }
    }

    fn timeouts(&self) -> Timeouts {
        Timeouts { header: self.header_timeout, idle: self.idle_timeout }
    }
}

/// The fewest file descriptors the daemon starts with: the store's connections (a writer and
/// four readers, with their WAL and shared-memory files), the index's files, the socket and the
/// runtime take about 30 (measured: it cannot open its store at 16 or its index at 24), and a
/// few connections must fit beside them.
pub const MIN_OPEN_FILES: u64 = 64;

/// The current soft open-file limit, if it can be read.
pub fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Raises the soft open-file limit to the hard one, so that connections and the store's files
/// fit (systemd starts services with a soft limit of 1,024). Returns the soft limit now.
pub fn raise_open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        let mut wanted = Rlimit { current: limit.maximum, maximum: limit.maximum };
        // macOS refuses a soft limit above OPEN_MAX even when the hard one is unlimited.
        if cfg!(target_os = "macos") {
            wanted.current = Some(wanted.current.map_or(10_240, |hard| hard.min(10_240)));
        }
        if let Err(error) = setrlimit(Resource::Nofile, wanted) {
            tracing::warn!(soft = ?limit.current, hard = ?limit.maximum, "cannot raise the open-file limit: {error}");
        }
    }
    open_file_limit()
}

/// What every connection task shares.
struct Shared {
    limits: Limits,
    budget: Arc<BodyBudget>,
}

/// Serves `app` on `listener` until `shutdown` completes, then stops accepting, lets
/// requests in flight finish (up to `DRAIN_TIMEOUT`) and returns.
///
/// Every connection's peer uid is checked against the daemon's own: another user's process
/// is refused even if the socket's permissions were loosened.
pub async fn serve(listener: UnixListener, app: Arc<App>, config: &Config, shutdown: impl Future<Output = ()>) {
    let limits = Limits::new(&config.server, open_file_limit());
    serve_with_limits(listener, app, limits, shutdown).await;
}

/// Whether a client is waiting in the listener's queue to be accepted (a listening socket is
/// readable exactly then).
fn client_waiting(listener: &UnixListener) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut fds = [PollFd::new(listener, PollFlags::IN)];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    matches!(poll(&mut fds, Some(&now)), Ok(ready) if ready > 0) && fds[0].revents().contains(PollFlags::IN)
}

/// [`serve`] with the limits given.
pub async fn serve_with_limits(
    listener: UnixListener,
    app: Arc<App>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let socket_path =
        listener.local_addr().ok().and_then(|address| address.as_pathname().map(ToOwned::to_owned)).unwrap_or_default();
    let methods = crate::rpc::module(app.clone(), socket_path);
    let max_request_bytes = u32::try_from(limits.max_request_bytes).unwrap_or(u32::MAX);
    let server_config = ServerConfig::builder()
        .http_only()
        // jsonrpsee counts requests in flight against this; the connection cap here is the real
        // limit (one request at a time per connection), with room for evicted connections
        // finishing their last request.
        .max_connections(u32::try_from(limits.max_connections.saturating_mul(2)).unwrap_or(u32::MAX))
        .max_request_body_size(max_request_bytes)
        .max_response_body_size(u32::MAX)
        .build();
    let service_builder = jsonrpsee::server::Server::builder().set_config(server_config).to_service_builder();
    let (stop_handle, server_handle) = stop_channel();
    let own_uid = rustix::process::getuid().as_raw();
    let registry = Registry::new(limits.max_connections);
    let budget = Arc::new(BodyBudget::new(limits.body_budget_bytes, limits.max_connections));
    tracing::info!(
        max_connections = limits.max_connections,
        open_file_limit = ?open_file_limit(),
        max_request_bytes = limits.max_request_bytes,
        body_budget_bytes = limits.body_budget_bytes,
        "limits"
    );
    let shared = Arc::new(Shared { limits, budget });
    let (stopping_sender, stopping) = watch::channel(false);
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut connections = JoinSet::new();

    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors: close the connection idle the longest to free one
                    // for a client that is waiting; otherwise back off instead of spinning.
                    // Linux fails `accept` with EMFILE before it looks for a waiting client, so
                    // the failure alone says nothing about one: evicting on it closed idle
                    // clients' connections with nobody to take their place.
                    let freed = client_waiting(&listener) && registry.evict_one();
                    warn_throttled!(ACCEPT_FAILED, "cannot accept a connection: {error}{}",
                        if freed { "; closed the connection idle the longest" } else { "" });
                    if freed {
                        // Until the evicted connection's task has closed its descriptor, accept
                        // fails again, and evicting on each failure would close one idle
                        // client after another for this one.
                        let _ = tokio::time::timeout(Duration::from_millis(50), connections.join_next()).await;
                    } else {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
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
                warn_throttled!(
                    OTHER_USER,
                    "refused a connection from another user (uid {}, the daemon's is {own_uid})",
                    credentials.uid()
                );
                continue;
            }
            Err(error) => {
                warn_throttled!(OTHER_USER, "refused a connection whose peer cannot be identified: {error}");
                continue;
            }
        }
        let Some(admitted) = registry.admit() else {
            warn_throttled!(
                AT_CAPACITY,
                "all {} connections are busy (server.max_connections): refusing new ones with HTTP 503",
                registry.limit()
            );
            refuse(stream, registry.limit(), &refusing, &mut connections);
            continue;
        };
        let rpc = service_builder.clone().build(methods.clone(), stop_handle.clone());
        connections.spawn(serve_connection(stream, admitted, rpc, shared.clone(), stopping.clone()));
    }

    tracing::info!(open_connections = registry.len(), "shutting down: draining connections");
    app.begin_stopping();
    let _ = stopping_sender.send(true);
    let _ = server_handle.stop();
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async { while connections.join_next().await.is_some() {} }).await;
    if drained.is_err() {
        tracing::warn!("some connections did not finish in time and were closed");
        connections.abort_all();
    }
    // Requests that returned are stored; flush the statistics they produced.
    let _ = tokio::task::spawn_blocking(move || {
        if let Err(error) = app.flush() {
            tracing::warn!("{error:#}");
        }
    })
    .await;
}

/// The jsonrpsee service for one connection.
type RpcService = jsonrpsee::server::TowerService<tower::layer::util::Identity, tower::layer::util::Identity>;

/// Serves one admitted connection until the client closes it, a timeout expires, it is
/// evicted to make room, or the daemon stops.
async fn serve_connection(
    stream: UnixStream,
    admitted: Admitted,
    rpc: RpcService,
    shared: Arc<Shared>,
    mut stopping: watch::Receiver<bool>,
) {
    let connection = admitted.connection.clone();
    let timeouts = shared.limits.timeouts();
    let io = TokioIo::new(Watched { inner: stream, connection: connection.clone() });
    let service = ConnectionService { rpc, shared, connection: connection.clone() };
    let mut builder = http1::Builder::new();
    // Timeouts are kept here, by phase (hyper's header timeout would also end idle keep-alive).
    builder.header_read_timeout(None).max_buf_size(READ_BUFFER_BYTES).keep_alive(true);
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    let mut draining = false;
    loop {
        let deadline = connection.deadline(timeouts);
        tokio::select! {
            finished = &mut served => {
                if let Err(error) = finished {
                    tracing::debug!("connection ended: {error}");
                }
                break;
            }
            () = sleep_until(deadline) => {
                if connection.close_if_expired(timeouts) {
                    tracing::debug!("closing a connection: its header or idle timeout expired");
                    break;
                }
            }
            // A change of phase moves the deadline; an eviction sets it to now, or asks that
            // the request whose body is arriving be refused and the connection closed.
            () = connection.changed.notified() => {
                if connection.evicted() && !draining {
                    served.as_mut().graceful_shutdown();
                    draining = true;
                }
            }
            Ok(()) = stopping.changed(), if !draining => {
                // Requests under way finish; idle connections close at once.
                served.as_mut().graceful_shutdown();
                draining = true;
            }
        }
    }
    drop(admitted);
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Answers the first request of a connection over the cap with HTTP 503, then closes it; more
/// than `MAX_REFUSING` at once are closed unanswered.
fn refuse(stream: UnixStream, limit: usize, refusing: &Arc<AtomicUsize>, tasks: &mut JoinSet<()>) {
    if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let refusing = refusing.clone();
    tasks.spawn(async move {
        let service = hyper::service::service_fn(move |_request: hyper::Request<Incoming>| async move {
            Ok::<_, std::convert::Infallible>(responses::too_many_connections(limit))
        });
        let mut builder = http1::Builder::new();
        builder.header_read_timeout(None).max_buf_size(8 * 1024).keep_alive(false);
        let served = builder.serve_connection(TokioIo::new(stream), service);
        let _ = tokio::time::timeout(REFUSAL_TIMEOUT, served).await;
        refusing.fetch_sub(1, Ordering::AcqRel);
    });
}

/// One connection's HTTP service: reads each body under the limits, checks the ids, and hands
/// the request to jsonrpsee.
struct ConnectionService {
    rpc: RpcService,
    shared: Arc<Shared>,
    connection: Arc<Connection>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for ConnectionService {
    type Response = HttpResponse;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, std::convert::Infallible>> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let busy = self.connection.begin_request();
        let rpc = self.rpc.clone();
        let shared = self.shared.clone();
        let connection = self.connection.clone();
        Box::pin(async move {
            let response = handle(request, rpc, &shared, &connection).await;
            drop(busy);
            Ok(response)
        })
    }
}

async fn handle(
    request: hyper::Request<Incoming>,
    mut rpc: RpcService,
    shared: &Shared,
    connection: &Connection,
) -> HttpResponse {
    let limits = &shared.limits;
    let (parts, incoming) = request.into_parts();
    // hyper has checked that a Content-Length is a number; it may still be any u64.
    let declared = parts
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.trim().parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > limits.max_request_bytes
    {
        warn_throttled!(TOO_LARGE, "refused a request of {declared} bytes (server.max_request_bytes)");
        return responses::too_large(limits.max_request_bytes, Some(declared));
    }
    let received_bytes = AtomicU64::new(0);
    let reading = body::read(incoming, declared, limits.max_request_bytes, &shared.budget, &received_bytes);
    let reading = tokio::time::timeout(limits.body_timeout, reading);
    let outcome = tokio::select! {
        outcome = reading => outcome,
        () = connection.body_cancelled.notified() => {
            warn_throttled!(
                AT_CAPACITY,
                "all {} connections are in use (server.max_connections): refused the request whose body \
                 had been arriving longest, to make room",
                limits.max_connections
            );
            return responses::evicted(limits.max_connections);
        }
    };
    let received = match outcome {
        Ok(Ok(received)) => received,
        Ok(Err(Refusal::TooLarge)) => {
            warn_throttled!(
                TOO_LARGE,
                "refused a request body over {} bytes (server.max_request_bytes)",
                limits.max_request_bytes
            );
            return responses::too_large(limits.max_request_bytes, None);
        }
        Ok(Err(Refusal::OverBudget)) => {
            warn_throttled!(
                OVER_BUDGET,
                "refused a request body: bodies being received fill the budget of {} bytes (server.body_budget_bytes)",
                shared.budget.total()
            );
            return responses::over_budget(shared.budget.total());
        }
        Ok(Err(Refusal::Broken(reason))) => return responses::unreadable_body(&reason),
        Err(_elapsed) => {
            let received = received_bytes.load(Ordering::Relaxed);
            warn_throttled!(
                BODY_TIMED_OUT,
                "a request body did not arrive within {} s (server.body_timeout_seconds); {received} bytes did",
                limits.body_timeout.as_secs()
            );
            return responses::body_timeout(limits.body_timeout.as_secs(), received);
        }
    };
    connection.body_received();
    if let Err(problem) = ids::check(&received.bytes) {
        return responses::bad_id(&problem);
    }
    let request = hyper::Request::from_parts(parts, HttpBody::from(received.bytes));
    let response = match tower::Service::call(&mut rpc, request).await {
        Ok(response) => response,
        Err(error) => {
            tracing::error!("jsonrpsee failed: {error}");
            HttpResponse::builder()
                .status(hyper::StatusCode::INTERNAL_SERVER_ERROR)
                .body(HttpBody::from(format!("internal error: {error}")))
                .expect("a status and a string body make a response")
        }
    };
    // The body's share of the budget is held until its answer exists.
    drop(received.reservation);
    response
}
