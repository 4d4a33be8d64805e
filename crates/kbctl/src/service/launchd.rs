//! launchd: the agent's plist (rendered, read back), and the `launchctl` steps that load it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::template::fill;
use super::{LAUNCHD_LABEL, Report, Setup, daemon, note_previous_binary, path_text, run_tool, write_file};

const LAUNCHD_TEMPLATE: &str = include_str!("../../../../launchd/dev.knowhub.knowhubd.plist.in");

impl Setup {
    pub(super) fn render_launchd_plist(&self) -> anyhow::Result<String> {
        let mut environment = String::new();
        for (name, value) in &self.environment {
            let value = value.to_str().with_context(|| format!("{name} is not UTF-8"))?;
            environment.push_str(&format!(
                "\t\t<key>{}</key>\n\t\t<string>{}</string>\n",
                xml_escape(name),
                xml_escape(value)
            ));
        }
        fill(
            LAUNCHD_TEMPLATE,
            &[
                ("@LABEL@", LAUNCHD_LABEL.to_owned()),
                ("@KNOWHUBD@", xml_escape(path_text(&self.knowhubd)?)),
                ("@SOCKET@", xml_escape(path_text(&self.socket)?)),
                ("@LOG@", xml_escape(path_text(&self.launchd_log())?)),
                ("@ENVIRONMENT@", environment),
            ],
        )
    }
}

/// Writes the plist, then makes launchd listen on the socket in place of any daemon still
/// running. Returns the plist written.
pub(super) async fn install(setup: &Setup, report: &mut Report) -> anyhow::Result<PathBuf> {
    let plist = setup.launchd_plist();
    note_previous_binary(report, std::fs::read_to_string(&plist).ok().and_then(|text| launchd_program(&text)), setup)?;
    write_file(&plist, &setup.render_launchd_plist()?)?;
    report.step(format!("wrote {}", plist.display()))?;
    let domain = format!("gui/{}", rustix::process::getuid().as_raw());
    let target = format!("{domain}/{LAUNCHD_LABEL}");
    let _ = run_tool("launchctl", &["bootout", &target]);
    daemon::stop_answering_daemon(&setup.socket, report).await?;
    prepare_launchd_socket_path(&setup.socket)?;
    bootstrap_launchd(&domain, &plist)?;
    let _ = run_tool("launchctl", &["enable", &target]);
    report.step(format!("loaded {LAUNCHD_LABEL} into {domain}: launchd listens on {}", setup.socket.display()))?;
    Ok(plist)
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&apos;")
}

fn xml_unescape(text: &str) -> String {
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// Reads back the program (first of `ProgramArguments`) of a plist written by `install`.
pub(super) fn launchd_program(plist: &str) -> Option<PathBuf> {
    let after = &plist[plist.find("<key>ProgramArguments</key>")?..];
    let start = after.find("<string>")? + "<string>".len();
    let end = start + after[start..].find("</string>")?;
    Some(PathBuf::from(xml_unescape(&after[start..end])))
}

/// launchd binds the socket path itself: its directory must exist (private), and a file left
/// by a daemon that crashed must go. Only called once nothing answers on the socket.
fn prepare_launchd_socket_path(socket: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    if let Some(dir) = socket.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    match std::fs::remove_file(socket) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(error).with_context(|| format!("cannot remove the stale socket {}", socket.display()))
        }
        _ => Ok(()),
    }
}

/// `launchctl bootout` returns before the job is gone; a `bootstrap` right after it can fail
/// with an I/O error until it is, so it is retried for a short while.
fn bootstrap_launchd(domain: &str, plist: &Path) -> anyhow::Result<()> {
    let plist = path_text(plist)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match run_tool("launchctl", &["bootstrap", domain, plist]) {
            Ok(_) => return Ok(()),
            Err(error) if Instant::now() >= deadline => return Err(error),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::test_setup as setup;

    #[test]
    fn the_plist_names_the_binary_socket_and_log() {
        let plist = setup("/tmp/knowhub-501/knowhubd.sock", None, &[("ORT_DYLIB_PATH", "/x/<lib>.dylib")])
            .render_launchd_plist()
            .unwrap();
        assert!(plist.contains("<string>/opt/know hub/bin/knowhubd</string>"), "{plist}");
        assert!(plist.contains("<string>/tmp/knowhub-501/knowhubd.sock</string>"), "{plist}");
        assert!(plist.contains("<string>/home/ada/Library/Logs/knowhubd.log</string>"), "{plist}");
        assert!(plist.contains("<key>ORT_DYLIB_PATH</key>\n\t\t<string>/x/&lt;lib&gt;.dylib</string>"), "{plist}");
        assert!(!plist.contains("@LABEL@") && !plist.contains("@ENVIRONMENT@"), "{plist}");
        assert_eq!(launchd_program(&plist), Some(PathBuf::from("/opt/know hub/bin/knowhubd")));
    }
}
