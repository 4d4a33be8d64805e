//! The open connections: what each is doing (waiting, reading headers, busy), the timeouts
//! that follow from it, and the cap on how many are served at once.
//!
//! At the cap, a new connection takes the place of the one that has waited longest for a
//! request (as nginx reuses idle keep-alive connections): 1,000 clients that made one request
//! and kept their connections open used to hold every file descriptor and stall each new
//! client indefinitely (issue 14). With none waiting, it takes the place of the one slowest to
//! send its headers, then of the one that has been sending its body longest (that request is
//! answered 503): 128 clients dribbling bodies at a byte per two seconds used to make every
//! other client wait for as long as they kept going. Only when every connection's request is
//! running is a new one refused.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// What a connection is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// No request under way: new (`served` false) or between keep-alive requests.
    Waiting { since: Instant, served: bool },
    /// The first bytes of a request arrived at `since`; its headers are not complete yet.
    ReadingHead { since: Instant },
    /// A request's headers are in and its body has been arriving since `since`.
    ReadingBody { since: Instant },
    /// A request is being run or answered: it is never interrupted.
    Running,
    /// Evicted or timed out: the connection is being closed.
    Closing,
}

/// The timeouts that apply to every connection.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
}

/// One connection's state, shared by its task, its socket wrapper and the registry.
#[derive(Debug)]
pub struct Connection {
    phase: Mutex<Phase>,
    /// Woken on every change of phase, so the connection's task re-arms its timer.
    pub changed: Notify,
    /// Set when the connection was evicted while a body was arriving: it closes after
    /// answering that request.
    evicted: AtomicBool,
    /// Woken when the body being received must be given up (eviction).
    pub body_cancelled: Notify,
}

impl Connection {
    fn new() -> Connection {
        Connection {
            phase: Mutex::new(Phase::Waiting { since: Instant::now(), served: false }),
            changed: Notify::new(),
            evicted: AtomicBool::new(false),
            body_cancelled: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Phase> {
        self.phase.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn phase(&self) -> Phase {
        *self.lock()
    }

    /// Bytes arrived: a waiting connection starts reading a request's headers.
    fn on_bytes_read(&self) {
        let mut phase = self.lock();
        if matches!(*phase, Phase::Waiting { .. }) {
            *phase = Phase::ReadingHead { since: Instant::now() };
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// The headers of a request are in: the header and idle timeouts no longer apply (the body
    /// timeout does). The returned guard marks the connection waiting again when the request is
    /// answered.
    pub fn begin_request(self: &Arc<Self>) -> RequestGuard {
        {
            let mut phase = self.lock();
            if *phase != Phase::Closing {
                *phase = Phase::ReadingBody { since: Instant::now() };
            }
        }
        self.changed.notify_one();
        RequestGuard { connection: self.clone() }
    }

    /// The body is in: the request runs and is never interrupted.
    pub fn body_received(&self) {
        let mut phase = self.lock();
        if matches!(*phase, Phase::ReadingBody { .. }) {
            *phase = Phase::Running;
        }
    }

    /// Whether the connection was evicted while a body was arriving.
    pub fn evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// When the connection must be closed unless its phase changes: the header timeout while
    /// a request's first bytes are awaited or its headers are arriving, the idle timeout
    /// between requests, none while busy.
    pub fn deadline(&self, timeouts: Timeouts) -> Option<Instant> {
        match self.phase() {
            Phase::Waiting { since, served: false } | Phase::ReadingHead { since } => Some(since + timeouts.header),
            Phase::Waiting { since, served: true } => Some(since + timeouts.idle),
            Phase::ReadingBody { .. } | Phase::Running => None,
            Phase::Closing => Some(Instant::now()),
        }
    }

    /// Marks the connection closing if its deadline has passed; true if it must close now.
    pub fn close_if_expired(&self, timeouts: Timeouts) -> bool {
        let mut phase = self.lock();
        let expired = match *phase {
            Phase::Waiting { since, served: false } | Phase::ReadingHead { since } => {
                since + timeouts.header <= Instant::now()
            }
            Phase::Waiting { since, served: true } => since + timeouts.idle <= Instant::now(),
            Phase::ReadingBody { .. } | Phase::Running => false,
            Phase::Closing => true,
        };
        if expired {
            *phase = Phase::Closing;
        }
        expired
    }

    /// Closes the connection unless its request is running: at once when it waits or sends
    /// headers, after refusing the request (503) whose body is arriving. True if it will close.
    fn evict(&self) -> bool {
        let mut phase = self.lock();
        match *phase {
            Phase::Running => return false,
            Phase::ReadingBody { .. } => {
                self.evicted.store(true, Ordering::Release);
                drop(phase);
                self.body_cancelled.notify_one();
            }
            Phase::Waiting { .. } | Phase::ReadingHead { .. } | Phase::Closing => {
                *phase = Phase::Closing;
                drop(phase);
            }
        }
        self.changed.notify_one();
        true
    }
}

/// Held while a request is served; marks the connection waiting again when dropped.
pub struct RequestGuard {
    connection: Arc<Connection>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut phase = self.connection.lock();
        if matches!(*phase, Phase::ReadingBody { .. } | Phase::Running) {
            *phase = Phase::Waiting { since: Instant::now(), served: true };
        }
        drop(phase);
        self.connection.changed.notify_one();
    }
}

/// The connections served now, at most `limit`.
#[derive(Debug)]
pub struct Registry {
    limit: usize,
    open: Mutex<RegistryInner>,
}

#[derive(Debug, Default)]
struct RegistryInner {
    next_id: u64,
    connections: HashMap<u64, Arc<Connection>>,
}

impl Registry {
    pub fn new(limit: usize) -> Arc<Registry> {
        Arc::new(Registry { limit, open: Mutex::new(RegistryInner::default()) })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    fn lock(&self) -> MutexGuard<'_, RegistryInner> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn len(&self) -> usize {
        self.lock().connections.len()
    }

    /// A place for a new connection: a free one, or the place of another (see the module
    /// comment). `None` when every connection's request is running.
    pub fn admit(self: &Arc<Self>) -> Option<Admitted> {
        let mut open = self.lock();
        if open.connections.len() >= self.limit && !evict_longest_waiting(&mut open) {
            return None;
        }
        let id = open.next_id;
        open.next_id += 1;
        let connection = Arc::new(Connection::new());
        open.connections.insert(id, connection.clone());
        Some(Admitted { registry: self.clone(), id, connection })
    }

    /// Closes a connection (as [`Registry::admit`] would) to free its descriptor; false if
    /// every connection's request is running.
    pub fn evict_one(&self) -> bool {
        evict_longest_waiting(&mut self.lock())
    }
}

/// Evicts the connection waiting longest, else the one slowest to send its headers, else the
/// one sending its body longest; false if every connection's request is running.
fn evict_longest_waiting(open: &mut RegistryInner) -> bool {
    loop {
        let candidate = open
            .connections
            .iter()
            .filter_map(|(id, connection)| match connection.phase() {
                // Connections already closing cost nothing, then those waiting longest, then
                // those slowest to send their headers.
                Phase::Closing => Some(((0, Instant::now()), *id)),
                Phase::Waiting { since, .. } => Some(((1, since), *id)),
                Phase::ReadingHead { since } => Some(((2, since), *id)),
                Phase::ReadingBody { since } => Some(((3, since), *id)),
                Phase::Running => None,
            })
            .min_by_key(|(rank, _)| *rank)
            .map(|(_, id)| id);
        let Some(id) = candidate else { return false };
        let connection = open.connections.remove(&id).expect("the candidate is registered");
        // Its request may have started running meanwhile: it then finishes, and counts no more.
        if connection.evict() {
            return true;
        }
    }
}

/// A connection's place in the registry, freed when dropped.
#[derive(Debug)]
pub struct Admitted {
    registry: Arc<Registry>,
    id: u64,
    pub connection: Arc<Connection>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.registry.lock().connections.remove(&self.id);
    }
}

/// The socket, noting in its connection's state when a request's first bytes arrive.
pub struct Watched<S> {
    pub inner: S,
    pub connection: Arc<Connection>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && buffer.filled().len() > before {
            self.connection.on_bytes_read();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(mut self: Pin<&mut Self>, context: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(context, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffers: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(context, buffers)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_longest_waiting_connection_makes_room() {
        let registry = Registry::new(2);
        let first = registry.admit().unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let second = registry.admit().unwrap();
        let third = registry.admit().expect("the first, waiting longest, makes room");
        assert_eq!(first.connection.phase(), Phase::Closing);
        assert_eq!(registry.len(), 2);
        let _sending_second = second.connection.begin_request();
        tokio::time::advance(Duration::from_secs(1)).await;
        let _sending_third = third.connection.begin_request();
        let fourth = registry.admit().expect("the body arriving longest makes room");
        assert!(second.connection.evicted(), "its request is refused, then it closes");
        assert_eq!(registry.len(), 2);
        third.connection.body_received();
        let _running_fourth = fourth.connection.begin_request();
        fourth.connection.body_received();
        assert!(registry.admit().is_none(), "every request is running");
        assert!(!registry.evict_one());
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_phase() {
        let timeouts = Timeouts { header: Duration::from_secs(10), idle: Duration::from_secs(60) };
        let registry = Registry::new(4);
        let admitted = registry.admit().unwrap();
        let connection = admitted.connection.clone();
        let start = Instant::now();
        assert_eq!(connection.deadline(timeouts), Some(start + timeouts.header), "a new connection");
        let request = connection.begin_request();
        assert_eq!(connection.deadline(timeouts), None, "the body timeout applies");
        connection.body_received();
        assert_eq!(connection.deadline(timeouts), None, "running");
        tokio::time::advance(Duration::from_secs(100)).await;
        assert!(!connection.close_if_expired(timeouts));
        drop(request);
        let answered = Instant::now();
        assert_eq!(connection.deadline(timeouts), Some(answered + timeouts.idle), "idle keep-alive");
        connection.on_bytes_read();
        assert_eq!(connection.deadline(timeouts), Some(answered + timeouts.header), "headers arriving");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert!(connection.close_if_expired(timeouts));
    }
}
