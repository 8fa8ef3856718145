//! A real PostgreSQL server for the tests: one per test process, started on first use in a
//! temporary directory and reached through a Unix socket there, each test with a database of
//! its own. PostgreSQL refuses to run as root, so under root (as CI runs) the server runs as
//! the `postgres` user the Debian package creates. It stops when the test process ends.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::Storage;

struct Server {
    dir: PathBuf,
    port: u16,
}

static SERVER: OnceLock<Server> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// A `Storage` on a new, empty database.
pub async fn storage() -> Storage {
    Storage::connect(&database().await).await.expect("connecting to the test PostgreSQL")
}

/// The connection string of a new, empty database.
pub async fn database() -> String {
    let server = SERVER.get_or_init(start);
    let name = format!("pome_test_{}", DATABASES.fetch_add(1, Ordering::Relaxed));
    let (client, connection) = tokio_postgres::connect(&server.url("postgres"), tokio_postgres::NoTls).await.expect("connecting to the test PostgreSQL");
    let connection = tokio::spawn(connection);
    client.batch_execute(&format!("CREATE DATABASE {name}")).await.expect("creating a test database");
    drop(client);
    let _ = connection.await;
    server.url(&name)
}

impl Server {
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

fn start() -> Server {
    let dir = std::env::temp_dir().join(format!("pome-pg-{}-{}", std::process::id(), std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()));
    std::fs::create_dir_all(&dir).unwrap();
    if unsafe { libc::geteuid() } == 0 {
        let out = Command::new("chown").args(["postgres:postgres"]).arg(&dir).output().expect("chown");
        assert!(out.status.success(), "the tests run as root, and PostgreSQL refuses to: its directory must belong to the `postgres` user ({})", String::from_utf8_lossy(&out.stderr));
    }
    let data = dir.join("data");
    let out = as_server_user(&program("initdb"))
        .arg("-D")
        .arg(&data)
        .args(["-U", "pome", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"])
        .output()
        .expect("running initdb");
    assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // Sockets only (no TCP), no fsync (a test's database need not survive a power cut), and
    // stopped when this process ends: a shell waits for it to go, then stops the server.
    let postgres = program("postgres");
    let script = format!(
        "{pg} -D {data} -k {dir} -p {port} -c listen_addresses= -c fsync=off -c full_page_writes=off -c max_connections=300 >{dir}/log 2>&1 & pg=$!; \
         while [ -d /proc/{me} ]; do sleep 0.5; done; kill -INT $pg; wait $pg; rm -rf {dir}",
        pg = postgres.display(),
        data = data.display(),
        dir = dir.display(),
        me = std::process::id(),
    );
    let mut sh = as_server_user(Path::new("/bin/sh"));
    sh.args(["-c", &script]).stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    sh.spawn().expect("starting PostgreSQL");
    let server = Server { dir, port };
    let socket = server.dir.join(format!(".s.PGSQL.{port}"));
    let started = std::time::Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "PostgreSQL did not start: {}", std::fs::read_to_string(server.dir.join("log")).unwrap_or_default());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The socket appears before the server accepts connections; `database()` connects, and
    // retries are the server's own start-up wait.
    let ready = program("pg_isready");
    while !Command::new(&ready).args(["-q", "-h"]).arg(&server.dir).args(["-p", &port.to_string()]).status().is_ok_and(|s| s.success()) {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "PostgreSQL did not become ready");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server
}
