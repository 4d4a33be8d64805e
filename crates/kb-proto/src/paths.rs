//! Where KnowHub keeps its database, index, config and socket, agreed on by every client.
//!
//! Resolution order: `KNOWHUB_HOME` puts everything in one directory (tests, and users who
//! want it elsewhere); otherwise the platform's directories from the `directories` crate.
//! `KNOWHUB_SOCKET` overrides the socket path in both cases.

use std::path::{Path, PathBuf};

/// Every path the daemon and its clients use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The data directory: database, index and models live here.
    pub home: PathBuf,
    pub database: PathBuf,
    pub index: PathBuf,
    pub models: PathBuf,
    pub config: PathBuf,
    /// The Unix socket the daemon listens on.
    pub socket: PathBuf,
}

/// The environment variables that relocate paths.
pub const ENV_HOME: &str = "KNOWHUB_HOME";
pub const ENV_SOCKET: &str = "KNOWHUB_SOCKET";

/// The socket's file name inside its directory.
pub const SOCKET_FILE_NAME: &str = "knowhubd.sock";

impl Paths {
    /// Resolves the paths from the environment of this process.
    pub fn from_env() -> Paths {
        Paths::resolve(
            std::env::var_os(ENV_HOME).filter(|value| !value.is_empty()).map(PathBuf::from),
            std::env::var_os(ENV_SOCKET).filter(|value| !value.is_empty()).map(PathBuf::from),
        )
    }

    /// Resolves the paths from explicit overrides (what `from_env` reads), for tests.
    pub fn resolve(home: Option<PathBuf>, socket: Option<PathBuf>) -> Paths {
        let mut paths = match home {
            Some(home) => Paths::under_home(&home),
            None => Paths::platform(),
        };
        if let Some(socket) = socket {
            paths.socket = socket;
        }
        paths
    }

    /// Everything in one directory.
    pub fn under_home(home: &Path) -> Paths {
        Paths {
            home: home.to_owned(),
            database: home.join("knowhub.db"),
            index: home.join("index"),
            models: home.join("models"),
            config: home.join("config.toml"),
            socket: home.join(SOCKET_FILE_NAME),
        }
    }

    fn platform() -> Paths {
        let dirs = directories::ProjectDirs::from("", "", "knowhub");
        let home =
            dirs.as_ref().map(|dirs| dirs.data_dir().to_owned()).unwrap_or_else(|| fallback_runtime_dir().join("data"));
        let config =
            dirs.as_ref().map(|dirs| dirs.config_dir().join("config.toml")).unwrap_or_else(|| home.join("config.toml"));
        // systemd's knowhubd.socket listens on %t/knowhub/knowhubd.sock, the same path. Without
        // a runtime dir (macOS, a shell without a user session) the socket lives in the data
        // directory: a shared temp dir would let another user create `knowhub-<uid>` first and
        // listen there, and on macOS the per-user temp dir is emptied at reboot while launchd
        // does not create a missing parent for the socket it listens on.
        let runtime_dir = dirs.as_ref().and_then(|dirs| dirs.runtime_dir().map(Path::to_owned));
        let socket_dir = match runtime_dir {
            Some(runtime_dir) if !cfg!(target_os = "macos") => runtime_dir,
            _ => home.clone(),
        };
        Paths {
            database: home.join("knowhub.db"),
            index: home.join("index"),
            models: home.join("models"),
            config,
            socket: socket_dir.join(SOCKET_FILE_NAME),
            home,
        }
    }

    /// The lock file that keeps a second daemon from taking over a live socket.
    pub fn lock_file(&self) -> PathBuf {
        let mut name = self.socket.file_name().map(|name| name.to_os_string()).unwrap_or_default();
        name.push(".lock");
        self.socket.with_file_name(name)
    }
}

/// Where the data goes when the platform names no home directory at all (no `HOME`): a
/// per-user directory in the temp dir, which the daemon refuses if another user owns it.
fn fallback_runtime_dir() -> PathBuf {
    let uid = rustix::process::getuid().as_raw();
    std::env::temp_dir().join(format!("knowhub-{uid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_holds_everything_and_socket_overrides() {
        let paths = Paths::resolve(Some("/tmp/kh".into()), None);
        assert_eq!(paths.database, PathBuf::from("/tmp/kh/knowhub.db"));
        assert_eq!(paths.socket, PathBuf::from("/tmp/kh/knowhubd.sock"));
        assert_eq!(paths.lock_file(), PathBuf::from("/tmp/kh/knowhubd.sock.lock"));
        let paths = Paths::resolve(Some("/tmp/kh".into()), Some("/run/x.sock".into()));
        assert_eq!(paths.socket, PathBuf::from("/run/x.sock"));
        assert_eq!(paths.index, PathBuf::from("/tmp/kh/index"));
    }

    #[test]
    fn platform_socket_is_in_a_knowhub_directory() {
        let paths = Paths::resolve(None, None);
        assert!(paths.socket.ends_with("knowhub/knowhubd.sock"), "{paths:?}");
        // Never in a shared temp dir, where another user could create the directory first.
        assert!(!paths.socket.starts_with(std::env::temp_dir()), "{paths:?}");
    }
}
