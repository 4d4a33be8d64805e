//! Boot and lifetime of the daemon: paths, the single-instance lock, the socket, the engine.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use kb_proto::Paths;
use tokio::net::UnixListener;

use crate::app::App;
use crate::config::Config;
use crate::identity::Identity;
use crate::supervisor::Supervisor;
use kb_engine::engine::{Engine, create_private_dir};

/// The longest socket path the kernel accepts (`sun_path` less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// A daemon that has bound its socket and opened its store, ready to `run`.
pub struct Daemon {
    pub engine: Arc<Engine>,
    /// The whole configuration; the engine holds its own part, the services theirs.
    pub config: Config,
    listener: UnixListener,
    socket: PathBuf,
    /// Held for the daemon's life: while it is locked, no other daemon may take the socket.
    _lock: File,
    /// Whether the daemon created the socket file (and so removes it on exit).
    owns_socket_file: bool,
    /// The key that proves this daemon to clients, written beside the socket.
    identity: Identity,
}

impl Daemon {
    /// Opens the engine and binds the socket at `paths.socket`.
    pub fn boot(paths: Paths, config: Config) -> anyhow::Result<Daemon> {
        let socket = paths.socket.clone();
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            bail!(
                "the socket path {} is longer than {MAX_SOCKET_PATH} bytes; set KNOWHUB_SOCKET to a shorter path",
                socket.display()
            );
        }
        let socket_dir = socket.parent().context("the socket path has no directory")?.to_owned();
        prepare_socket_dir(&socket_dir, &paths.home)?;
        let lock = acquire_lock(&paths.lock_file())?;
        // The lock is ours, so a socket file still there belongs to a daemon that died.
        match std::fs::remove_file(&socket) {
            Ok(()) => tracing::info!(socket = %socket.display(), "removed a stale socket"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                return Err(error).with_context(|| format!("cannot remove the stale socket {}", socket.display()));
            }
        }
        // Before the socket exists, so no client can connect before the key is there.
        let identity = Identity::create(&socket)?;
        let engine = Engine::open(paths, config.engine())?;
        let listener = bind_private(&socket)?;
        Ok(Daemon { engine, config, listener, socket, _lock: lock, owns_socket_file: true, identity })
    }

    /// Opens the engine and serves on a listening socket handed over by a service manager.
    pub fn from_listener(
        paths: Paths,
        config: Config,
        listener: std::os::unix::net::UnixListener,
    ) -> anyhow::Result<Daemon> {
        let socket = listener
            .local_addr()
            .ok()
            .and_then(|address| address.as_pathname().map(Path::to_owned))
            .unwrap_or_else(|| paths.socket.clone());
        let lock = acquire_lock(&paths.lock_file())?;
        // Before the first connection is accepted: a client reads the key once answered.
        let identity = Identity::create(&socket)?;
        let engine = Engine::open(paths, config.engine())?;
        listener.set_nonblocking(true).context("cannot make the inherited socket non-blocking")?;
        let listener = UnixListener::from_std(listener).context("cannot use the inherited socket")?;
        Ok(Daemon { engine, config, listener, socket, _lock: lock, owns_socket_file: false, identity })
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Serves until `shutdown` completes. The index is brought up to date in the background,
    /// so `status` answers at once; searches wait for it.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
        self.run_with_readiness(shutdown, || {}).await
    }

    /// Like [`Daemon::run`], and calls `ready` once the accept loop is running, so that a
    /// service manager is told the daemon is ready only when it answers (`sd_notify`).
    pub async fn run_with_readiness(
        self,
        shutdown: impl std::future::Future<Output = ()>,
        ready: impl FnOnce(),
    ) -> anyhow::Result<()> {
        let Daemon { engine, config, listener, socket, _lock, owns_socket_file, identity } = self;
        // Loading the Chinese dictionary takes a moment: do it now, not in the first request.
        let warming = std::thread::spawn(|| {
            kb_index::warm_up();
            kb_core::warm_up();
        });
        let preparing = {
            let engine = engine.clone();
            tokio::task::spawn_blocking(move || engine.prepare_index())
        };
        // Every background service runs supervised, on a thread of its own: searches are
        // answered by BM25 while the model loads, and the hub and extraction never hold up a
        // request.
        let app = App::new(engine.clone(), config, identity);
        let mut supervisor = Supervisor::new(app.health.clone());
        crate::services::start(&app, &mut supervisor)?;
        tracing::info!(socket = %socket.display(), pid = std::process::id(), "knowhubd is serving");
        let serving = crate::server::serve(listener, app.clone(), &app.config, shutdown);
        tokio::pin!(serving);
        // The first poll builds the service and enters the accept loop (accepting any
        // connection already queued); only then is the daemon ready.
        let mut ready = Some(ready);
        std::future::poll_fn(|context| {
            let polled = serving.as_mut().poll(context);
            if let Some(ready) = ready.take() {
                ready();
            }
            polled
        })
        .await;
        supervisor.stop();
        let _ = preparing.await;
        {
            let engine = engine.clone();
            let _ = tokio::task::spawn_blocking(move || engine.persist_index()).await;
        }
        // A job in the middle of a call is not waited for: it is queued still, and runs again
        // at the next start (its result is written in one transaction, so never twice). A push
        // in flight is not waited for either: its outbox rows stay until the hub acknowledged
        // them, so the next start pushes them again (upserts are idempotent). A model still
        // loading (a download, say) is not waited for: the process is ending.
        supervisor.join_finished();
        let _ = warming.join();
        if owns_socket_file {
            let _ = std::fs::remove_file(&socket);
        }
        // Under socket activation the socket stays: the next daemon writes a new key before
        // it accepts a connection, and a client reads the key only once answered.
        app.identity.remove_key_file();
        tracing::info!("knowhubd stopped");
        Ok(())
    }
}

/// Makes the socket's directory private (0700) when it is KnowHub's own: new, the home
/// directory, or named `knowhub…`. A shared directory a user chose with `KNOWHUB_SOCKET`
/// (say `/tmp`) is left alone; the socket file's mode and the peer-uid check still guard it.
fn prepare_socket_dir(dir: &Path, home: &Path) -> anyhow::Result<()> {
    let is_own_dir = !dir.exists()
        || dir == home
        || dir.file_name().is_some_and(|name| name.to_string_lossy().starts_with("knowhub"));
    if is_own_dir {
        return create_private_dir(dir);
    }
    tracing::warn!(dir = %dir.display(), "the socket's directory is shared; relying on the socket's mode and the peer-uid check");
    Ok(())
}

fn acquire_lock(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            bail!(
                "another knowhubd is already running (it holds {}); stop it first, or use another KNOWHUB_SOCKET",
                path.display()
            )
        }
        Err(error) => Err(error).with_context(|| format!("cannot lock {}", path.display())),
    }
}

/// Binds the socket with mode 0600 from the start (no window where others may connect).
fn bind_private(socket: &Path) -> anyhow::Result<UnixListener> {
    let previous = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o177));
    let bound = UnixListener::bind(socket);
    rustix::process::umask(previous);
    let listener = bound.with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot set the permissions of {}", socket.display()))?;
    Ok(listener)
}
