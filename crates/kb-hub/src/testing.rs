//! A real PostgreSQL server for the hub's tests and benchmarks: Debian's `postgresql` package,
//! a cluster made by `initdb` in a temp directory, on a free port, with TLS from a certificate
//! authority made with `openssl`. Run as the `postgres` user when the caller is root (initdb
//! refuses root). Stopped (immediately) on drop. Panics when something cannot be set up: it is
//! for tests and benchmarks only.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The superuser's password (scram over TCP; trust over the cluster's own Unix socket).
pub const ADMIN_PASSWORD: &str = "admin-secret-pw";

pub struct TestPostgres {
    pub dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// The root certificate the server's certificate chains to.
    pub ca: PathBuf,
    as_postgres: bool,
}

/// The directory holding `initdb`, `pg_ctl` and `psql` of the newest installed PostgreSQL.
fn pg_bin() -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|entries| {
            entries.flatten().map(|entry| entry.path().join("bin")).filter(|bin| bin.join("initdb").exists()).collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.pop().expect("PostgreSQL is installed (Debian: apt-get install postgresql; tests/run does)")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("address").port()
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?} cannot run: {error}"));
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Makes a certificate authority in `dir` (`NAME.pem`, `NAME.key`); returns the certificate.
pub fn make_ca(dir: &Path, name: &str) -> PathBuf {
    let (pem, key) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    run(Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
        ])
        .arg(format!("/CN={name}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&pem));
    pem
}

impl TestPostgres {
    pub fn start() -> TestPostgres {
        let bin = pg_bin();
        let dir = tempfile::Builder::new().prefix("kh-pg-").tempdir().expect("temp dir");
        let as_postgres = rustix::process::getuid().is_root();
        let data = dir.path().join("data");
        let tls = dir.path().join("tls");
        std::fs::create_dir(&tls).expect("tls dir");
        let ca = make_ca(&tls, "test-ca");
        let (server_key, server_csr, server_pem) =
            (tls.join("server.key"), tls.join("server.csr"), tls.join("server.pem"));
        run(Command::new("openssl")
            .args([
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-subj",
                "/CN=localhost",
                "-keyout",
            ])
            .arg(&server_key)
            .arg("-out")
            .arg(&server_csr));
        let extensions = tls.join("server.ext");
        std::fs::write(
            &extensions,
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .expect("extensions");
        run(Command::new("openssl")
            .args(["x509", "-req", "-days", "2", "-in"])
            .arg(&server_csr)
            .arg("-CA")
            .arg(&ca)
            .arg("-CAkey")
            .arg(tls.join("test-ca.key"))
            .arg("-CAcreateserial")
            .arg("-out")
            .arg(&server_pem)
            .arg("-extfile")
            .arg(&extensions));
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, ADMIN_PASSWORD).expect("pwfile");
        if as_postgres {
            run(Command::new("chown").arg("-R").arg("postgres:postgres").arg(dir.path()));
        }
        let postgres = TestPostgres { dir, bin, port: free_port(), ca, as_postgres };
        run(postgres
            .owner_command("initdb")
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .arg(format!("--pwfile={}", pwfile.display())));
        let mut conf = std::fs::OpenOptions::new().append(true).open(data.join("postgresql.conf")).expect("conf");
        use std::io::Write;
        write!(
            conf,
            "\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nfsync = off\nmax_connections = 50\n",
            postgres.port,
            postgres.dir.path().display(),
            server_pem.display(),
            server_key.display(),
        )
        .expect("conf written");
        std::fs::write(data.join("pg_hba.conf"), "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
            .expect("hba");
        if postgres.as_postgres {
            run(Command::new("chown").arg("postgres:postgres").arg(data.join("pg_hba.conf")));
        }
        std::fs::set_permissions(&server_key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("key mode");
        postgres.start_server();
        postgres
    }

    /// A command run as the cluster's owner.
    fn owner_command(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(program);
            command
        } else {
            Command::new(program)
        }
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn start_server(&self) {
        run(self
            .owner_command("pg_ctl")
            .args(["-w", "-t", "60", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .arg("start"));
    }

    /// Stops the server at once (connections are cut).
    pub fn stop_server(&self) {
        run(self
            .owner_command("pg_ctl")
            .args(["-w", "-m", "immediate", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("stop"));
    }

    /// A URL for `user` over TCP with TLS verified against the test's authority.
    pub fn url(&self, user: &str) -> String {
        format!(
            "postgresql://{user}@127.0.0.1:{}/postgres?sslmode=verify-full&sslrootcert={}",
            self.port,
            self.ca.display()
        )
    }

    /// Runs SQL as the superuser over the cluster's Unix socket; the rows, `|`-separated.
    pub fn sql(&self, sql: &str) -> String {
        let output = run(Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-d", "postgres", "-h"])
            .arg(self.dir.path())
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-c")
            .arg(sql));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// A `psql` logging in as `user` (with `password`) over TCP and TLS, running `sql`: to
    /// spawn, for a session held open while something else is measured.
    pub fn psql_as(&self, user: &str, password: &str, sql: &str) -> Command {
        let mut command = Command::new(self.bin.join("psql"));
        command
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .arg(format!("host=127.0.0.1 port={} user={user} dbname=postgres sslmode=require", self.port))
            .env("PGPASSWORD", password);
        command
    }

    /// Runs SQL as `user` (with `password`) over TCP and TLS; the output or the error text.
    pub fn sql_as(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        let output = self.psql_as(user, password, sql).output().expect("psql runs");
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
        }
    }

    /// The postmaster's process id.
    pub fn pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.dir.path().join("data/postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for TestPostgres {
    fn drop(&mut self) {
        let _ = self
            .owner_command("pg_ctl")
            .args(["-m", "immediate", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("stop")
            .output();
    }
}
