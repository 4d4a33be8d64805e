//! `knowhubd`: the per-user KnowHub daemon. Reads the environment and config, handles
//! signals, and hands over to the library.

use anyhow::Context as _;
use knowhubd::{Config, Daemon, activation};

fn main() -> anyhow::Result<()> {
    kb_engine::memory::limit_malloc_arenas();
    let mut args = std::env::args().skip(1);
    if let Some(arg) = args.next() {
        match arg.as_str() {
            "--print-config" => {
                print!("{}", knowhubd::config::EXAMPLE_CONFIG);
                return Ok(());
            }
            "--version" | "-V" => {
                println!("knowhubd {} (protocol {})", env!("CARGO_PKG_VERSION"), kb_proto::PROTOCOL_VERSION);
                return Ok(());
            }
            "--help" | "-h" => {
                println!(
                    "knowhubd: the KnowHub daemon\n\nUsage: knowhubd [--print-config | --version]\n\nEnvironment: KNOWHUB_HOME, KNOWHUB_SOCKET, KNOWHUB_LOG (see the README).\n\nStarted by systemd or launchd (`kbctl service install`), it serves the socket they pass\n(LISTEN_FDS, launch_activate_socket) and reports readiness over NOTIFY_SOCKET."
                );
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?}; see knowhubd --help"),
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KNOWHUB_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        // Logged text may be a teammate's or an endpoint's: written out safe to show, and so
        // without colours (journald, launchd's log files and redirected stderr would keep
        // their escape codes anyway).
        .with_writer(|| knowhubd::log::SafeStderr)
        .with_ansi(false)
        .init();

    // Connections, the store and the index all take file descriptors; systemd's soft limit of
    // 1,024 ran out under a flood of idle connections (issue 14). The server sizes its
    // connection cap from what this leaves.
    let open_file_limit = knowhubd::server::raise_open_file_limit();
    tracing::debug!(?open_file_limit, "open-file limit");
    // Below this the store or the index fails to open with an error that hides the cause
    // ("unable to open database file"): say what is wrong instead.
    if let Some(limit) = open_file_limit.filter(|limit| *limit < knowhubd::server::MIN_OPEN_FILES) {
        anyhow::bail!(
            "the open-file limit is {limit} (ulimit -n), too low for knowhubd: its store, index and connections \
             need at least {} descriptors; raise it (`ulimit -n 1024`, or LimitNOFILE= in the service unit)",
            knowhubd::server::MIN_OPEN_FILES
        );
    }
    // Everything the daemon creates (database, index, logs of its own) is the user's alone.
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    // Before any thread starts: this takes the socket systemd or launchd passed, if any, and
    // clears the environment variables that describe it.
    let inherited = activation::take_listener().context("cannot use the socket passed by the service manager")?;
    let mut paths = kb_proto::Paths::from_env();
    // The manager's socket wins over the default path, so the lock file sits beside it.
    if let Some(address) = inherited.as_ref().and_then(|listener| listener.local_addr().ok())
        && let Some(path) = address.as_pathname()
    {
        paths.socket = path.to_owned();
    }
    let config = Config::load(&paths.config)?;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let daemon = match inherited {
            Some(listener) => Daemon::from_listener(paths, config, listener)?,
            None => Daemon::boot(paths, config)?,
        };
        let socket = daemon.socket().to_owned();
        let shutdown = async {
            shutdown_signal().await;
            activation::notify_stopping();
        };
        daemon.run_with_readiness(shutdown, || activation::notify_ready(&socket)).await
    })
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = match signal(SignalKind::terminate()) {
        Ok(signal) => signal,
        Err(error) => {
            tracing::error!("cannot listen for SIGTERM: {error}");
            return std::future::pending().await;
        }
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("received SIGTERM"),
        _ = tokio::signal::ctrl_c() => tracing::info!("received SIGINT"),
    }
}
