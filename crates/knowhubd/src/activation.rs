//! Service-manager integration: a listening socket handed over by systemd (`LISTEN_FDS`) or
//! launchd (`launch_activate_socket`), and readiness reported to systemd (`sd_notify`).
//!
//! Both protocols are small and stable, so they are implemented here by hand rather than
//! through libsystemd: systemd's is a few environment variables and one datagram
//! (<https://www.freedesktop.org/software/systemd/man/latest/sd_listen_fds.html>,
//! <https://www.freedesktop.org/software/systemd/man/latest/sd_notify.html>).

use std::ffi::OsStr;
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;

use anyhow::{Context as _, bail};

/// The first file descriptor systemd passes (`SD_LISTEN_FDS_START`): after stdin, stdout, stderr.
const LISTEN_FDS_START: RawFd = 3;

/// The name of the socket in the launchd plist (`Sockets` → `Listeners`).
pub const LAUNCHD_SOCKET_NAME: &str = "Listeners";

/// One file descriptor described by `LISTEN_FDS` / `LISTEN_FDNAMES`, not yet taken over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassedFd {
    pub fd: RawFd,
    pub name: String,
}

/// Takes the listening socket a service manager passed to this process, if any.
///
/// `Ok(None)` means the daemon was started by hand (or by a manager without a socket for it)
/// and binds its own socket. An error means a socket was passed but cannot be used; the
/// daemon must not then bind a second socket behind the manager's back.
///
/// Call this once, early in `main`, while the process is still single-threaded: it removes
/// the `LISTEN_*` variables from the environment so that no child process takes them as its
/// own, as `sd_listen_fds(1)` does.
pub fn take_listener() -> anyhow::Result<Option<UnixListener>> {
    if let Some(listener) = take_systemd_listener()? {
        return Ok(Some(listener));
    }
    take_launchd_listener()
}

/// The systemd protocol: `LISTEN_PID` names this process, `LISTEN_FDS` counts the descriptors
/// starting at 3, and `LISTEN_FDNAMES` (optional) names them, colon-separated.
fn take_systemd_listener() -> anyhow::Result<Option<UnixListener>> {
    let listen_pid = std::env::var_os("LISTEN_PID");
    let listen_fds = std::env::var_os("LISTEN_FDS");
    let listen_fdnames = std::env::var_os("LISTEN_FDNAMES");
    if listen_pid.is_none() && listen_fds.is_none() {
        return Ok(None);
    }
    // SAFETY: `take_listener` is documented to be called before any other thread exists, so
    // nothing reads the environment concurrently.
    unsafe {
        std::env::remove_var("LISTEN_PID");
        std::env::remove_var("LISTEN_FDS");
        std::env::remove_var("LISTEN_FDNAMES");
    }
    let own_pid = rustix::process::getpid().as_raw_nonzero().get();
    let Some(passed) =
        parse_listen_env(listen_pid.as_deref(), listen_fds.as_deref(), listen_fdnames.as_deref(), own_pid)?
    else {
        // The variables were inherited from a parent that was activated itself: not ours.
        tracing::debug!("ignoring LISTEN_FDS meant for another process");
        return Ok(None);
    };
    // Take ownership of every passed descriptor, so the ones not used are closed, and mark
    // them close-on-exec (systemd passes them inheritable).
    let mut owned: Vec<(OwnedFd, String)> = Vec::with_capacity(passed.len());
    for PassedFd { fd, name } in passed {
        // SAFETY: the service manager passed these descriptors to this process for it to own;
        // the environment variables that describe them were removed above, so this happens
        // at most once.
        let fd_owned = unsafe { OwnedFd::from_raw_fd(fd) };
        rustix::io::fcntl_setfd(&fd_owned, rustix::io::FdFlags::CLOEXEC)
            .with_context(|| format!("file descriptor {fd} passed by the service manager is not open"))?;
        owned.push((fd_owned, name));
    }
    let mut chosen = None;
    let mut refused = Vec::new();
    for (fd_owned, name) in owned {
        if chosen.is_none() {
            match check_unix_stream_listener(&fd_owned) {
                Ok(()) => {
                    chosen = Some((fd_owned, name));
                    continue;
                }
                Err(reason) => refused.push(format!("{name} ({reason})")),
            }
        } else {
            refused.push(format!("{name} (only one socket is served)"));
        }
    }
    if !refused.is_empty() {
        tracing::warn!(ignored = %refused.join(", "), "ignoring sockets passed by the service manager");
    }
    let Some((fd_owned, name)) = chosen else {
        let passed = if refused.is_empty() { "none".to_owned() } else { refused.join(", ") };
        bail!(
            "the service manager passed no listening Unix stream socket (passed: {passed}); \
             check ListenStream= in knowhubd.socket"
        );
    };
    let listener = UnixListener::from(fd_owned);
    tracing::info!(name, socket = %describe(&listener), "serving the socket passed by systemd");
    Ok(Some(listener))
}

/// Parses the systemd socket-passing variables. `Ok(None)` when they are not meant for
/// `own_pid`; an error when they are meant for it but malformed.
pub fn parse_listen_env(
    listen_pid: Option<&OsStr>,
    listen_fds: Option<&OsStr>,
    listen_fdnames: Option<&OsStr>,
    own_pid: i32,
) -> anyhow::Result<Option<Vec<PassedFd>>> {
    // sd_listen_fds ignores the descriptors unless LISTEN_PID names this very process.
    let Some(listen_pid) = listen_pid else { return Ok(None) };
    let listen_pid: i32 = parse_number(listen_pid).context("LISTEN_PID is not a process id")?;
    if listen_pid != own_pid {
        return Ok(None);
    }
    let listen_fds = listen_fds.context("LISTEN_PID names this process but LISTEN_FDS is not set")?;
    let n_fds: RawFd = parse_number(listen_fds).context("LISTEN_FDS is not a number")?;
    if n_fds <= 0 {
        return Ok(Some(Vec::new()));
    }
    let names: Vec<String> = match listen_fdnames {
        Some(names) => names.to_string_lossy().split(':').map(ToOwned::to_owned).collect(),
        None => Vec::new(),
    };
    if !names.is_empty() && names.len() != n_fds as usize {
        bail!("LISTEN_FDNAMES names {} sockets but LISTEN_FDS counts {n_fds}", names.len());
    }
    let passed = (0..n_fds)
        .map(|index| PassedFd {
            fd: LISTEN_FDS_START + index,
            // systemd's own default name when none is given.
            name: names.get(index as usize).cloned().unwrap_or_else(|| "unknown".to_owned()),
        })
        .collect();
    Ok(Some(passed))
}

fn parse_number<T: std::str::FromStr>(value: &OsStr) -> anyhow::Result<T> {
    let text = value.to_str().context("not UTF-8")?;
    text.parse().map_err(|_| anyhow::anyhow!("{text:?} is not a number"))
}

/// Whether `fd` is a Unix stream socket that is listening: anything else (a TCP socket, a
/// datagram socket, a regular file) would be a configuration mistake in the socket unit.
fn check_unix_stream_listener(fd: &OwnedFd) -> Result<(), String> {
    let address = rustix::net::getsockname(fd).map_err(|error| format!("not a socket: {error}"))?;
    if address.address_family() != rustix::net::AddressFamily::UNIX {
        return Err("not a Unix socket".to_owned());
    }
    let socket_type = rustix::net::sockopt::socket_type(fd).map_err(|error| error.to_string())?;
    if socket_type != rustix::net::SocketType::STREAM {
        return Err("not a stream socket".to_owned());
    }
    // Apple platforms do not implement SO_ACCEPTCONN; launchd's sockets are listening anyway.
    #[cfg(not(target_vendor = "apple"))]
    if !rustix::net::sockopt::socket_acceptconn(fd).map_err(|error| error.to_string())? {
        return Err("not listening".to_owned());
    }
    Ok(())
}

fn describe(listener: &UnixListener) -> String {
    match listener.local_addr() {
        Ok(address) => match address.as_pathname() {
            Some(path) => path.display().to_string(),
            None => "an unnamed socket".to_owned(),
        },
        Err(error) => format!("an unknown address ({error})"),
    }
}

/// launchd hands sockets over on request, by the name under `Sockets` in the plist.
#[cfg(target_os = "macos")]
fn take_launchd_listener() -> anyhow::Result<Option<UnixListener>> {
    use std::ffi::{CString, c_char, c_int, c_void};

    unsafe extern "C" {
        /// `<launch.h>`: returns 0 and a malloc'ed array of descriptors, or an errno value.
        fn launch_activate_socket(name: *const c_char, fds: *mut *mut c_int, count: *mut usize) -> c_int;
        fn free(pointer: *mut c_void);
    }
    const ENOENT: c_int = 2;
    const ESRCH: c_int = 3;

    let name = CString::new(LAUNCHD_SOCKET_NAME).expect("the socket name has no NUL");
    let mut fds: *mut c_int = std::ptr::null_mut();
    let mut count: usize = 0;
    // SAFETY: `name` is a valid C string and both out-pointers point to live locals.
    let status = unsafe { launch_activate_socket(name.as_ptr(), &mut fds, &mut count) };
    match status {
        0 => {}
        // ESRCH: not started by launchd. ENOENT: started by launchd without this socket.
        ESRCH | ENOENT => return Ok(None),
        errno => {
            return Err(std::io::Error::from_raw_os_error(errno)).context("launch_activate_socket failed");
        }
    }
    // SAFETY: on success launchd returns `count` descriptors in a malloc'ed array, which this
    // process now owns (descriptors and array both).
    let owned: Vec<OwnedFd> = unsafe {
        let taken = (0..count).map(|index| OwnedFd::from_raw_fd(*fds.add(index))).collect();
        free(fds.cast());
        taken
    };
    // A `SockPathName` socket is one descriptor; more would come from a plist edited by hand.
    let Some(fd_owned) = owned.into_iter().next() else {
        bail!("launchd passed no descriptor for the socket {LAUNCHD_SOCKET_NAME:?}");
    };
    rustix::io::fcntl_setfd(&fd_owned, rustix::io::FdFlags::CLOEXEC).context("cannot use the socket from launchd")?;
    check_unix_stream_listener(&fd_owned)
        .map_err(|reason| anyhow::anyhow!("the socket launchd passed is unusable: {reason}"))?;
    let listener = UnixListener::from(fd_owned);
    tracing::info!(socket = %describe(&listener), "serving the socket passed by launchd");
    Ok(Some(listener))
}

#[cfg(not(target_os = "macos"))]
fn take_launchd_listener() -> anyhow::Result<Option<UnixListener>> {
    Ok(None)
}

/// Tells systemd the daemon is serving (`READY=1`), for `Type=notify`: until then systemd
/// holds the unit in "activating". Does nothing when not started by systemd.
pub fn notify_ready(socket: &Path) {
    let state = format!("READY=1\nSTATUS=serving on {}", socket.display());
    if let Err(error) = sd_notify(&state) {
        tracing::warn!("cannot tell the service manager that knowhubd is ready: {error:#}");
    }
}

/// Tells systemd the daemon is shutting down (`STOPPING=1`), so that `systemctl status` says
/// so while connections drain.
pub fn notify_stopping() {
    if let Err(error) = sd_notify("STOPPING=1\nSTATUS=draining connections") {
        tracing::warn!("cannot tell the service manager that knowhubd is stopping: {error:#}");
    }
}

/// Sends one notification datagram to `$NOTIFY_SOCKET`. Returns whether one was sent:
/// `false` when the variable is not set (not started by systemd, or not `Type=notify`).
pub fn sd_notify(state: &str) -> anyhow::Result<bool> {
    let Some(address) = std::env::var_os("NOTIFY_SOCKET").filter(|address| !address.is_empty()) else {
        return Ok(false);
    };
    let socket = UnixDatagram::unbound().context("cannot create a datagram socket")?;
    let bytes = address.as_bytes();
    if let Some(abstract_name) = bytes.strip_prefix(b"@") {
        send_to_abstract(&socket, abstract_name, state.as_bytes())
    } else if bytes.starts_with(b"/") {
        socket.send_to(state.as_bytes(), Path::new(&address)).map(drop)
    } else {
        // `vsock:` addresses are for virtual machines talking to their host: not our case.
        bail!("unsupported NOTIFY_SOCKET address {address:?}");
    }
    .with_context(|| format!("cannot send to NOTIFY_SOCKET {address:?}"))?;
    Ok(true)
}

/// Linux abstract socket names (`@name`): no file, the name lives in the kernel.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn send_to_abstract(socket: &UnixDatagram, name: &[u8], message: &[u8]) -> std::io::Result<()> {
    #[cfg(target_os = "android")]
    use std::os::android::net::SocketAddrExt as _;
    #[cfg(target_os = "linux")]
    use std::os::linux::net::SocketAddrExt as _;
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    socket.send_to_addr(message, &address).map(drop)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn send_to_abstract(_socket: &UnixDatagram, _name: &[u8], _message: &[u8]) -> std::io::Result<()> {
    Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "abstract socket names exist only on Linux"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(text: &str) -> Option<&OsStr> {
        Some(OsStr::new(text))
    }

    #[test]
    fn listen_fds_for_this_process_are_numbered_from_three() {
        let passed = parse_listen_env(os("42"), os("2"), os("knowhubd.socket:extra"), 42).unwrap().unwrap();
        assert_eq!(
            passed,
            vec![PassedFd { fd: 3, name: "knowhubd.socket".to_owned() }, PassedFd { fd: 4, name: "extra".to_owned() }]
        );
        let unnamed = parse_listen_env(os("42"), os("1"), None, 42).unwrap().unwrap();
        assert_eq!(unnamed, vec![PassedFd { fd: 3, name: "unknown".to_owned() }]);
    }

    #[test]
    fn listen_fds_for_another_process_or_absent_are_ignored() {
        assert_eq!(parse_listen_env(os("41"), os("1"), None, 42).unwrap(), None);
        assert_eq!(parse_listen_env(None, os("1"), None, 42).unwrap(), None);
        assert_eq!(parse_listen_env(None, None, None, 42).unwrap(), None);
    }

    #[test]
    fn malformed_listen_fds_for_this_process_are_errors() {
        assert!(parse_listen_env(os("abc"), os("1"), None, 42).is_err());
        assert!(parse_listen_env(os("42"), None, None, 42).is_err());
        assert!(parse_listen_env(os("42"), os("x"), None, 42).is_err());
        assert!(parse_listen_env(os("42"), os("2"), os("only-one"), 42).is_err());
        assert_eq!(parse_listen_env(os("42"), os("0"), None, 42).unwrap(), Some(Vec::new()));
    }

    #[test]
    fn a_socket_that_is_not_listening_is_refused() {
        let (one, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        let fd = OwnedFd::from(one);
        assert!(check_unix_stream_listener(&fd).is_err());
        let dir = tempfile::tempdir().unwrap();
        let listener = UnixListener::bind(dir.path().join("s")).unwrap();
        assert_eq!(check_unix_stream_listener(&OwnedFd::from(listener)), Ok(()));
    }

    /// sd_notify's two address forms: a path, and a Linux abstract name written `@name`.
    #[cfg(target_os = "linux")]
    #[test]
    fn notifications_reach_path_and_abstract_sockets() {
        use std::os::linux::net::SocketAddrExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let by_path = UnixDatagram::bind(&path).unwrap();
        let name = format!("knowhubd-test-{}", std::process::id());
        let by_name =
            UnixDatagram::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        let mut buffer = [0u8; 256];
        // SAFETY: std serializes its own environment accesses, and no other test of this crate
        // (nor any C code it calls) reads NOTIFY_SOCKET.
        unsafe { std::env::set_var("NOTIFY_SOCKET", &path) };
        assert!(sd_notify("READY=1").unwrap());
        let n = by_path.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"READY=1");
        unsafe { std::env::set_var("NOTIFY_SOCKET", format!("@{name}")) };
        assert!(sd_notify("STOPPING=1").unwrap());
        let n = by_name.recv(&mut buffer).unwrap();
        assert_eq!(&buffer[..n], b"STOPPING=1");
        unsafe { std::env::set_var("NOTIFY_SOCKET", "vsock:2:1") };
        assert!(sd_notify("READY=1").is_err());
        unsafe { std::env::remove_var("NOTIFY_SOCKET") };
        assert!(!sd_notify("READY=1").unwrap());
    }
}
