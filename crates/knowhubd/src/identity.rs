//! The key that proves this daemon to its clients (`kb_proto::identity`): made at each start,
//! written beside the socket where only the user can read it, used to answer `daemon.prove`,
//! and removed at a clean stop.
//!
//! A key that cannot be written does not stop the daemon (kbctl and the peer-uid check still
//! work), but it is said loudly: an error in the log, and `status.identity` with
//! `healthy: false`, because the OpenClaw plugin refuses a daemon it cannot verify.

use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kb_proto::identity::{KEY_BYTES, key_file};
use kb_proto::wire::IdentityStatus;

pub struct Identity {
    key: [u8; KEY_BYTES],
    key_file: PathBuf,
    /// The file written (device and inode, to remove only that one), or why it could not be.
    written: Result<(u64, u64), String>,
}

impl Identity {
    /// Makes a new key for the daemon on `socket` and writes it to `<socket>.key`. Fails only
    /// when the system gives no random numbers; a key file that cannot be written is reported
    /// by [`Identity::status`] and refused by [`Identity::prove`].
    pub fn create(socket: &Path) -> anyhow::Result<Identity> {
        let mut key = [0u8; KEY_BYTES];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
            .map_err(|_| anyhow::anyhow!("the system gave no random numbers for the daemon's key"))?;
        let key_file = key_file(socket);
        let written = write_key_file(&key_file, &key).map_err(|error| format!("{error:#}"));
        match &written {
            Ok(_) => {
                tracing::info!(key_file = %key_file.display(), "wrote the key that proves this daemon to its clients")
            }
            Err(error) => tracing::error!(
                "cannot write the key that proves this daemon to its clients: {error}; the OpenClaw plugin \
                 refuses this daemon until it can (restart knowhubd once the cause is fixed)"
            ),
        }
        Ok(Identity { key, key_file, written })
    }

    /// The answer to `nonce`, or why the daemon cannot prove itself.
    pub fn prove(&self, nonce: &[u8]) -> Result<[u8; 32], String> {
        match &self.written {
            Ok(_) => Ok(kb_proto::identity::answer(&self.key, nonce)),
            Err(error) => Err(format!("this daemon cannot prove itself: {error}")),
        }
    }

    pub fn is_ready(&self) -> bool {
        self.written.is_ok()
    }

    pub fn status(&self) -> IdentityStatus {
        IdentityStatus {
            key_file: self.key_file.display().to_string(),
            ready: self.written.is_ok(),
            error: self.written.as_ref().err().cloned(),
        }
    }

    /// Removes the key file at a clean stop, if it is still the one this daemon wrote.
    pub fn remove_key_file(&self) {
        let Ok((device, inode)) = self.written else { return };
        if let Ok(metadata) = std::fs::symlink_metadata(&self.key_file)
            && metadata.dev() == device
            && metadata.ino() == inode
        {
            let _ = std::fs::remove_file(&self.key_file);
        }
    }
}

/// Writes `key` to `path` atomically: a new file (`O_EXCL`, so never through a symbolic link)
/// of mode 0600 beside it, renamed over `path` (which replaces a symbolic link there rather
/// than following it). Returns the new file's device and inode.
fn write_key_file(path: &Path, key: &[u8]) -> anyhow::Result<(u64, u64)> {
    use std::io::Write as _;
    let mut name = path.file_name().context("the key file has no name")?.to_owned();
    name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(name);
    // Left by a daemon of the same pid that died while writing; unlinking never follows a link.
    let _ = std::fs::remove_file(&temporary);
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)
            .with_context(|| format!("cannot create {}", temporary.display()))?;
        // The mode given to open is narrowed by the umask, never widened: set it exactly.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot set the permissions of {}", temporary.display()))?;
        file.write_all(key).with_context(|| format!("cannot write {}", temporary.display()))?;
        let metadata = file.metadata().with_context(|| format!("cannot inspect {}", temporary.display()))?;
        std::fs::rename(&temporary, path)
            .with_context(|| format!("cannot move {} to {}", temporary.display(), path.display()))?;
        Ok((metadata.dev(), metadata.ino()))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_written_private_and_proves_the_daemon() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("knowhubd.sock");
        let identity = Identity::create(&socket).unwrap();
        assert!(identity.is_ready());
        let key = kb_proto::identity::read_key_file(&key_file(&socket)).unwrap();
        let nonce = [3u8; 32];
        let proof = identity.prove(&nonce).unwrap();
        assert!(kb_proto::identity::verify(&key, &nonce, &proof));
        // A new start makes a new key, replacing the file.
        let again = Identity::create(&socket).unwrap();
        let new_key = kb_proto::identity::read_key_file(&key_file(&socket)).unwrap();
        assert_ne!(key, new_key);
        assert!(!kb_proto::identity::verify(&new_key, &nonce, &proof));
        // Only the file this daemon wrote is removed.
        identity.remove_key_file();
        assert!(key_file(&socket).exists(), "the first daemon's file was replaced: not its own to remove");
        again.remove_key_file();
        assert!(!key_file(&socket).exists());
    }

    #[test]
    fn a_symbolic_link_at_the_key_path_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("knowhubd.sock");
        let target = dir.path().join("victim");
        std::fs::write(&target, b"keep me").unwrap();
        std::os::unix::fs::symlink(&target, key_file(&socket)).unwrap();
        let identity = Identity::create(&socket).unwrap();
        assert!(identity.is_ready());
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        let metadata = std::fs::symlink_metadata(key_file(&socket)).unwrap();
        assert!(metadata.file_type().is_file());
        assert_eq!(metadata.mode() & 0o777, 0o600);
    }

    #[test]
    fn a_key_that_cannot_be_written_is_reported_and_proves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("knowhubd.sock");
        // A directory where the key file should be: the rename cannot replace it.
        std::fs::create_dir(key_file(&socket)).unwrap();
        std::fs::write(key_file(&socket).join("x"), b"").unwrap();
        let identity = Identity::create(&socket).unwrap();
        assert!(!identity.is_ready());
        let status = identity.status();
        assert!(!status.ready);
        assert!(status.error.as_deref().unwrap().contains("cannot move"), "{status:?}");
        let error = identity.prove(&[0u8; 32]).unwrap_err();
        assert!(error.contains("cannot prove itself"), "{error}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().all(|entry| !entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp")),
            "the temporary file is cleaned up"
        );
    }
}
