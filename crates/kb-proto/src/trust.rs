//! Who is on the other end of the socket: a client checks that the daemon it is about to talk
//! to runs as the user's own uid before it sends anything.
//!
//! Another local user may create the socket's directory first (a temp dir is shared) and listen
//! there; without these checks `kbctl` and the plugin would hand that listener the user's
//! queries and unredacted submissions (redaction happens in the daemon) and trust its answers.
//! Two checks, both needed: the socket file and its directory must not be another user's (so
//! nobody else can swap the file), and the process that accepted the connection must run as
//! this uid (`SO_PEERCRED` on Linux, `getpeereid` on macOS and the BSDs), which no file-system
//! race can fake.

use std::os::fd::AsFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// The uid of this process.
pub fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Checks the socket file and its directory before connecting. `Err` says what is wrong.
pub fn check_socket_path(socket: &Path) -> Result<(), String> {
    let uid = own_uid();
    let metadata = match std::fs::symlink_metadata(socket) {
        Ok(metadata) => metadata,
        // Nothing there: connecting reports "not running", which is the truth.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(format!("cannot inspect {}: {error}", socket.display())),
    };
    if !metadata.file_type().is_socket() {
        return Err(format!("{} is not a socket", socket.display()));
    }
    if metadata.uid() != uid {
        return Err(format!(
            "{} belongs to uid {}, not to you (uid {uid}): another user may be posing as knowhubd",
            socket.display(),
            metadata.uid()
        ));
    }
    if let Some(dir) = socket.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        check_socket_dir(dir, uid)?;
    }
    Ok(())
}

/// The socket's directory must be this user's, or root's and not open to others' renames (a
/// sticky or closed directory such as `/tmp` or `/run/user`), so nobody else can replace the
/// socket between this check and the connect.
fn check_socket_dir(dir: &Path, uid: u32) -> Result<(), String> {
    let metadata = std::fs::metadata(dir).map_err(|error| format!("cannot inspect {}: {error}", dir.display()))?;
    let mode = metadata.mode();
    let owner = metadata.uid();
    if owner != uid && owner != 0 {
        return Err(format!(
            "the socket's directory {} belongs to uid {owner}, not to you (uid {uid}): another user may be posing as knowhubd",
            dir.display()
        ));
    }
    let writable_by_others = mode & 0o022 != 0;
    let sticky = mode & 0o1000 != 0;
    if writable_by_others && !sticky {
        return Err(format!(
            "the socket's directory {} is writable by other users (mode {:o}): make it private with `chmod 700 {}`",
            dir.display(),
            mode & 0o7777,
            dir.display()
        ));
    }
    Ok(())
}

/// Checks that the process on the other end of a connected Unix socket runs as this uid.
pub fn check_peer(stream: &impl AsFd, socket: &Path) -> Result<(), String> {
    let uid = own_uid();
    let peer =
        peer_uid(stream).map_err(|error| format!("cannot read the credentials of {}: {error}", socket.display()))?;
    if peer != uid {
        return Err(format!(
            "the process listening on {} runs as uid {peer}, not as you (uid {uid}): another user may be posing as knowhubd",
            socket.display()
        ));
    }
    Ok(())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer_uid(stream: &impl AsFd) -> std::io::Result<u32> {
    let credentials = rustix::net::sockopt::socket_peercred(stream)?;
    Ok(credentials.uid.as_raw())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer_uid(stream: &impl AsFd) -> std::io::Result<u32> {
    use std::os::fd::AsRawFd;
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: the descriptor is a live socket borrowed for the call; uid and gid are valid
    // out-pointers.
    let result = unsafe { libc::getpeereid(stream.as_fd().as_raw_fd(), &mut uid, &mut gid) };
    if result != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(uid)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_missing_socket_is_left_to_connect() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check_socket_path(&dir.path().join("none.sock")), Ok(()));
    }

    #[test]
    fn a_plain_file_is_not_a_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        std::fs::write(&path, b"").unwrap();
        let error = check_socket_path(&path).unwrap_err();
        assert!(error.contains("is not a socket"), "{error}");
    }

    #[test]
    fn own_socket_in_a_private_dir_passes_and_the_peer_is_us() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ok.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(check_socket_path(&path), Ok(()));
        let stream = std::os::unix::net::UnixStream::connect(&path).unwrap();
        assert_eq!(check_peer(&stream, &path), Ok(()));
        drop(listener);
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("open.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let error = check_socket_path(&path).unwrap_err();
        assert!(error.contains("writable by other users"), "{error}");
        // A sticky shared directory (like /tmp) cannot have the socket renamed by others.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(check_socket_path(&path), Ok(()));
    }
}
