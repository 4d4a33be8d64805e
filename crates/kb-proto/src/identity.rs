//! The daemon's proof of identity, for clients that cannot read the peer's uid.
//!
//! `kbctl` checks the uid of the process that accepted its connection ([`crate::trust`]); the
//! OpenClaw plugin runs on Node, which cannot read `SO_PEERCRED`, and the file checks it can
//! make (the socket and its directory are the user's own) pass for a listener of another user
//! whose socket file was put there. So the daemon proves that it can read a secret only the
//! user can read:
//! - at each start it makes a random key of [`KEY_BYTES`] and writes it to [`key_file`]
//!   (`<socket>.key`, beside the socket in its private directory), mode 0600, replacing the
//!   file atomically and never writing through a symbolic link;
//! - `daemon.prove {nonce}` answers HMAC-SHA256(key, [`DOMAIN`] ‖ nonce), for a nonce of
//!   [`NONCE_BYTES`] random bytes, both in hex;
//! - a client sends a fresh nonce on each new connection, then reads the key file (a regular
//!   file of its own uid, closed to others, not a symbolic link: [`read_key_file`]) and compares
//!   the answer in constant time ([`verify`]). Nothing else is sent on a connection that failed.
//!
//! Another user's listener cannot read the key, a recorded answer is useless for a fresh
//! nonce, and relaying the nonce to the real daemon fails because the daemon refuses
//! connections from other uids. The key file is read after the answer, so that a daemon
//! started by the connection itself (socket activation) has written its new key by then.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The length of the daemon's key.
pub const KEY_BYTES: usize = 32;

/// The length of a client's nonce.
pub const NONCE_BYTES: usize = 32;

/// Prepended to the nonce before it is authenticated, so that the key proves nothing else.
pub const DOMAIN: &[u8] = b"knowhub daemon proof v1\0";

/// Appended to the socket's path to name the key file.
pub const KEY_FILE_SUFFIX: &str = ".key";

/// Where the daemon listening on `socket` keeps its key: `<socket>.key`.
pub fn key_file(socket: &Path) -> PathBuf {
    let mut name = socket.as_os_str().to_owned();
    name.push(KEY_FILE_SUFFIX);
    PathBuf::from(name)
}

/// The daemon's answer to `nonce`: HMAC-SHA256(key, DOMAIN ‖ nonce).
pub fn answer(key: &[u8], nonce: &[u8]) -> [u8; 32] {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut context = ring::hmac::Context::with_key(&key);
    context.update(DOMAIN);
    context.update(nonce);
    let tag = context.sign();
    let mut out = [0u8; 32];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Whether `proof` is the answer to `nonce` under `key`, compared in constant time.
pub fn verify(key: &[u8], nonce: &[u8], proof: &[u8]) -> bool {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key);
    let mut message = Vec::with_capacity(DOMAIN.len() + nonce.len());
    message.extend_from_slice(DOMAIN);
    message.extend_from_slice(nonce);
    ring::hmac::verify(&key, &message, proof).is_ok()
}

/// Reads the key at `path` after checking that it is a regular file (a symbolic link is not
/// followed), owned by this uid, closed to group and others, and of the right length. `Err`
/// says what is wrong.
pub fn read_key_file(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let uid = crate::trust::own_uid();
    let opened = std::fs::OpenOptions::new()
        .read(true)
        // O_NONBLOCK: a FIFO planted there must not hang the client.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let mut file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "its key file {} does not exist (a knowhubd older than this client, or one that could not write it: see `kbctl status`)",
                path.display()
            ));
        }
        Err(error) if is_symlink_refusal(&error) => {
            return Err(format!("its key file {} is a symbolic link", path.display()));
        }
        Err(error) => return Err(format!("cannot read its key file {}: {error}", path.display())),
    };
    let metadata =
        file.metadata().map_err(|error| format!("cannot inspect its key file {}: {error}", path.display()))?;
    if !metadata.is_file() {
        return Err(format!("its key file {} is not a regular file", path.display()));
    }
    if metadata.uid() != uid {
        return Err(format!(
            "its key file {} belongs to uid {}, not to you (uid {uid})",
            path.display(),
            metadata.uid()
        ));
    }
    let mode = metadata.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!("its key file {} is open to other users (mode {mode:04o}, must be 0600)", path.display()));
    }
    if metadata.len() != KEY_BYTES as u64 {
        return Err(format!("its key file {} holds {} bytes, not {KEY_BYTES}", path.display(), metadata.len()));
    }
    let mut key = Vec::with_capacity(KEY_BYTES);
    file.by_ref()
        .take(KEY_BYTES as u64 + 1)
        .read_to_end(&mut key)
        .map_err(|error| format!("cannot read its key file {}: {error}", path.display()))?;
    if key.len() != KEY_BYTES {
        return Err(format!("its key file {} holds {} bytes, not {KEY_BYTES}", path.display(), key.len()));
    }
    Ok(key)
}

/// `open(O_NOFOLLOW)` on a symbolic link fails with ELOOP (EMLINK on FreeBSD).
fn is_symlink_refusal(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(code) if code == libc::ELOOP || code == libc::EMLINK)
}

/// Lowercase hex, as the nonce and the proof travel.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    text
}

/// Decodes hex (either case); `None` when `text` is not an even number of hex digits.
pub fn from_hex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    let value = |digit: u8| (digit as char).to_digit(16).map(|value| value as u8);
    digits.chunks(2).map(|pair| Some(value(pair[0])? << 4 | value(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_proof_is_hmac_sha256_of_the_domain_and_the_nonce() {
        // Computed independently: python3 -c "import hmac,hashlib;
        // print(hmac.new(bytes(range(32)), b'knowhub daemon proof v1\0' + bytes([7]*32), hashlib.sha256).hexdigest())"
        let key: Vec<u8> = (0..32).collect();
        let nonce = [7u8; 32];
        let proof = answer(&key, &nonce);
        assert_eq!(to_hex(&proof), "234a08f1ea513b727092c1059966970a903a2b951917104aa9787fb08fd54775");
        assert!(verify(&key, &nonce, &proof));
        assert!(!verify(&key, &[8u8; 32], &proof), "another nonce");
        assert!(!verify(&[1u8; 32], &nonce, &proof), "another key");
        assert!(!verify(&key, &nonce, &proof[..31]), "a truncated proof");
    }

    #[test]
    fn hex_round_trips_and_refuses_what_is_not_hex() {
        assert_eq!(to_hex(&[0x00, 0xab, 0xff]), "00abff");
        assert_eq!(from_hex("00ABff"), Some(vec![0x00, 0xab, 0xff]));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_eq!(from_hex("+1"), None);
    }

    #[test]
    fn the_key_file_is_beside_the_socket() {
        assert_eq!(
            key_file(Path::new("/run/user/1/knowhub/knowhubd.sock")),
            Path::new("/run/user/1/knowhub/knowhubd.sock.key")
        );
    }

    #[test]
    fn a_key_file_is_read_only_when_it_is_private_regular_and_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("knowhubd.sock.key");
        std::fs::write(&path, [9u8; KEY_BYTES]).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_key_file(&path), Ok(vec![9u8; KEY_BYTES]));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = read_key_file(&path).unwrap_err();
        assert!(error.contains("open to other users (mode 0644, must be 0600)"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();

        let link = dir.path().join("link.key");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let error = read_key_file(&link).unwrap_err();
        assert!(error.contains("is a symbolic link"), "{error}");

        let short = dir.path().join("short.key");
        std::fs::write(&short, [1u8; 5]).unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = read_key_file(&short).unwrap_err();
        assert!(error.contains("holds 5 bytes, not 32"), "{error}");

        let error = read_key_file(&dir.path().join("none.key")).unwrap_err();
        assert!(error.contains("does not exist"), "{error}");

        if own_uid_is_root() {
            rustix::fs::chown(&path, Some(rustix::fs::Uid::from_raw(65534)), None).unwrap();
            let error = read_key_file(&path).unwrap_err();
            assert!(error.contains("belongs to uid 65534, not to you (uid 0)"), "{error}");
        }
    }

    fn own_uid_is_root() -> bool {
        crate::trust::own_uid() == 0
    }
}
