//! systemd: the socket and service units (rendered, quoted for systemd, read back), and the
//! `systemctl --user` steps that install them.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use super::template::fill;
use super::{Report, SERVICE_UNIT, SOCKET_UNIT, Setup, daemon, note_previous_binary, path_text, run_tool, write_file};

const SYSTEMD_SOCKET_TEMPLATE: &str = include_str!("../../../../systemd/knowhubd.socket.in");
const SYSTEMD_SERVICE_TEMPLATE: &str = include_str!("../../../../systemd/knowhubd.service.in");

impl Setup {
    /// `ListenStream=`: `%t/…` when the socket is the default one under `XDG_RUNTIME_DIR`, so
    /// the unit keeps working if the runtime directory moves; the absolute path otherwise.
    fn systemd_listen(&self) -> anyhow::Result<String> {
        if let Some(runtime_dir) = &self.runtime_dir
            && let Ok(relative) = self.socket.strip_prefix(runtime_dir)
            && relative == Path::new("knowhub").join(kb_proto::paths::SOCKET_FILE_NAME)
        {
            return Ok(format!("%t/knowhub/{}", kb_proto::paths::SOCKET_FILE_NAME));
        }
        Ok(escape_specifiers(path_text(&self.socket)?))
    }

    pub(super) fn render_systemd_socket(&self) -> anyhow::Result<String> {
        fill(SYSTEMD_SOCKET_TEMPLATE, &[("@SOCKET@", self.systemd_listen()?)])
    }

    pub(super) fn render_systemd_service(&self) -> anyhow::Result<String> {
        let mut environment = String::new();
        for (name, value) in &self.environment {
            let value = value.to_str().with_context(|| format!("{name} is not UTF-8"))?;
            environment.push_str(&format!("Environment={}\n", systemd_quote(&format!("{name}={value}"), true)?));
        }
        if environment.is_empty() {
            environment.push_str("# (none of KNOWHUB_HOME, KNOWHUB_MODEL_DIR, ORT_DYLIB_PATH, KNOWHUB_LOG was set)\n");
        }
        fill(
            SYSTEMD_SERVICE_TEMPLATE,
            &[("@KNOWHUBD@", systemd_quote(path_text(&self.knowhubd)?, false)?), ("@ENVIRONMENT@\n", environment)],
        )
    }
}

/// Writes the units, then makes systemd listen on the socket in place of any daemon still
/// running. Returns the units written.
pub(super) async fn install(setup: &Setup, report: &mut Report) -> anyhow::Result<[PathBuf; 2]> {
    let [socket_unit, service_unit] = setup.systemd_units();
    note_previous_binary(
        report,
        std::fs::read_to_string(&service_unit).ok().and_then(|unit| systemd_exec_start(&unit)),
        setup,
    )?;
    write_file(&socket_unit, &setup.render_systemd_socket()?)?;
    write_file(&service_unit, &setup.render_systemd_service()?)?;
    report.step(format!("wrote {} and {}", socket_unit.display(), service_unit.display()))?;
    systemctl(&["daemon-reload"])?;
    // A daemon still running (an older service, or one started by hand) holds the
    // socket's lock: stop it, so the first connection starts the new binary. The
    // socket unit stops first, so that no client starts the old service meanwhile;
    // both may not exist yet.
    let _ = systemctl(&["stop", SOCKET_UNIT, SERVICE_UNIT]);
    daemon::stop_answering_daemon(&setup.socket, report).await?;
    systemctl(&["enable", SOCKET_UNIT])?;
    systemctl(&["start", SOCKET_UNIT])?;
    report.step(format!("enabled and started {SOCKET_UNIT}: systemd listens on {}", setup.socket.display()))?;
    Ok([socket_unit, service_unit])
}

pub(super) fn systemctl(args: &[&str]) -> anyhow::Result<String> {
    let mut all = vec!["--user"];
    all.extend_from_slice(args);
    run_tool("systemctl", &all)
}

/// systemd expands `%` specifiers in most settings; a literal `%` is written `%%`.
fn escape_specifiers(text: &str) -> String {
    text.replace('%', "%%")
}

/// One word of a unit-file command line or `Environment=` assignment, quoted when needed.
/// `always` quotes even plain words (`Environment=` values may contain spaces later).
fn systemd_quote(text: &str, always: bool) -> anyhow::Result<String> {
    if text.contains('\n') {
        bail!("{text:?} contains a line break, which a unit file cannot hold");
    }
    // `$` starts a variable reference in ExecStart=; `$$` is a literal dollar.
    let text = escape_specifiers(text).replace('$', "$$");
    let plain = !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';'));
    if plain && !always {
        return Ok(text);
    }
    Ok(format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"")))
}

/// Reads back the first word of `ExecStart=` in a service file written by `install`.
pub(super) fn systemd_exec_start(unit: &str) -> Option<PathBuf> {
    let value = unit.lines().find_map(|line| line.trim().strip_prefix("ExecStart="))?.trim();
    let word = if let Some(quoted) = value.strip_prefix('"') {
        let mut word = String::new();
        let mut chars = quoted.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => word.extend(chars.next()),
                '"' => break,
                c => word.push(c),
            }
        }
        word
    } else {
        value.split_whitespace().next()?.to_owned()
    };
    Some(PathBuf::from(word.replace("$$", "$").replace("%%", "%")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::template::leftover_placeholder;
    use crate::service::test_setup as setup;

    #[test]
    fn the_default_socket_is_written_with_the_runtime_dir_specifier() {
        let default = setup("/run/user/1000/knowhub/knowhubd.sock", Some("/run/user/1000"), &[]);
        assert!(default.render_systemd_socket().unwrap().contains("\nListenStream=%t/knowhub/knowhubd.sock\n"));
        let custom = setup("/tmp/100%/kh.sock", Some("/run/user/1000"), &[]);
        assert!(custom.render_systemd_socket().unwrap().contains("\nListenStream=/tmp/100%%/kh.sock\n"));
    }

    #[test]
    fn the_service_runs_the_quoted_binary_with_the_captured_environment() {
        let with_env =
            setup("/run/user/1000/knowhub/knowhubd.sock", Some("/run/user/1000"), &[("KNOWHUB_HOME", "/data/k h")]);
        let unit = with_env.render_systemd_service().unwrap();
        assert!(unit.contains("\nExecStart=\"/opt/know hub/bin/knowhubd\"\n"), "{unit}");
        assert!(unit.contains("\nEnvironment=\"KNOWHUB_HOME=/data/k h\"\n"), "{unit}");
        assert_eq!(leftover_placeholder(&unit), None, "{unit}");
        assert_eq!(systemd_exec_start(&unit), Some(PathBuf::from("/opt/know hub/bin/knowhubd")));
    }

    #[test]
    fn unit_words_are_escaped_for_systemd() {
        assert_eq!(systemd_quote("/usr/bin/knowhubd", false).unwrap(), "/usr/bin/knowhubd");
        assert_eq!(systemd_quote("/a b/$x%y\"z", false).unwrap(), "\"/a b/$$x%%y\\\"z\"");
        assert!(systemd_quote("a\nb", false).is_err());
        let unit = format!("ExecStart={}\n", systemd_quote("/a b/$x%y\"z", false).unwrap());
        assert_eq!(systemd_exec_start(&unit), Some(PathBuf::from("/a b/$x%y\"z")));
    }
}
