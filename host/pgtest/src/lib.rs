//! Real PostgreSQL servers for tests and benchmarks. One is shared by a whole process, started
//! on first use, each caller with a database of its own in it ([`database`]); a test that
//! stops and starts its server has one of its own ([`Server::start`]). Each lives in a
//! temporary directory and is reached through a Unix socket there. PostgreSQL refuses to
//! run as root, so under root (as CI runs) the server runs as the `postgres` user the Debian
//! package creates. Servers stop when the test process ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Server {
    dir: PathBuf,
    port: u16,
}

static SHARED: OnceLock<Server> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The connection string of a new, empty database on the shared server.
pub async fn database() -> String {
    SHARED.get_or_init(Server::start).database().await
}

impl Server {
    /// A server of its own, running.
    pub fn start() -> Server {
        let dir = std::env::temp_dir().join(format!("pome-pg-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
        std::fs::create_dir_all(&dir).unwrap();
        if unsafe { libc::geteuid() } == 0 {
            let out = Command::new("chown").args(["postgres:postgres"]).arg(&dir).output().expect("chown");
            assert!(out.status.success(), "the tests run as root, and PostgreSQL refuses to: its directory must belong to the `postgres` user ({})", String::from_utf8_lossy(&out.stderr));
        }
        let out = as_server_user(&program("initdb"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", "pome", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
            .output()
            .expect("running initdb");
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = Server { dir, port };
        // Sockets only (no TCP) and no fsync (a test's database need not survive a power
        // cut). A shell waits for this process to end, then stops the server and removes
        // its directory.
        let script = format!(
            "while [ -d /proc/{me} ]; do sleep 0.5; done; {pg_ctl} stop -D {data} -m immediate >/dev/null 2>&1; rm -rf {dir}",
            me = std::process::id(),
            pg_ctl = program("pg_ctl").display(),
            data = server.dir.join("data").display(),
            dir = server.dir.display(),
        );
        as_server_user(Path::new("/bin/sh"))
            .args(["-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting the PostgreSQL watchdog");
        server.up();
        server
    }

    /// Start the stopped server again, on the same port and files.
    pub fn up(&self) {
        let options = format!("-k {} -p {} -c listen_addresses= -c fsync=off -c full_page_writes=off -c max_connections=300", self.dir.display(), self.port);
        let out = as_server_user(&program("pg_ctl"))
            .arg("start")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-o", &options, "-w", "-t", "60"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running pg_ctl start");
        assert!(out.status.success(), "PostgreSQL did not start: {}{}", String::from_utf8_lossy(&out.stderr), std::fs::read_to_string(self.dir.join("log")).unwrap_or_default());
    }

    /// Stop the server at once (`immediate`: as a crash would, connections cut).
    pub fn down(&self) {
        let out = as_server_user(&program("pg_ctl")).arg("stop").arg("-D").arg(self.dir.join("data")).args(["-m", "immediate", "-w"]).output().expect("running pg_ctl stop");
        assert!(out.status.success(), "PostgreSQL did not stop: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// The connection string of a new, empty database.
    pub async fn database(&self) -> String {
        let name = format!("pome_test_{}", DATABASES.fetch_add(1, Ordering::Relaxed));
        let started = Instant::now();
        let (client, connection) = loop {
            match tokio_postgres::connect(&self.url("postgres"), tokio_postgres::NoTls).await {
                Ok(c) => break c,
                Err(e) => assert!(started.elapsed() < Duration::from_secs(60), "connecting to the test PostgreSQL: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let connection = tokio::spawn(connection);
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("creating a test database");
        drop(client);
        let _ = connection.await;
        self.url(&name)
    }

    fn url(&self, db: &str) -> String {
        format!("host={} port={} user=pome dbname={db}", self.dir.display(), self.port)
    }
}

/// Where Debian keeps the server's programs (not on PATH), or PATH.
fn program(name: &str) -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql").into_iter().flatten().flatten().map(|e| e.path().join("bin").join(name)).filter(|p| p.exists()).collect();
    versions.sort();
    if let Some(newest) = versions.pop() {
        return newest;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.exists()));
    on_path.unwrap_or_else(|| panic!("PostgreSQL's `{name}` is not installed: `make test` installs Debian's postgresql package"))
}

/// `program` as the user the server runs as.
fn as_server_user(program: &Path) -> Command {
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}
