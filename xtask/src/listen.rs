//! Starting a test server on a free loopback port, and knowing that the port it listens on
//! is its own.
//!
//! A port found free by binding port 0 is free only until the listener is dropped: another
//! server started at the same moment may be handed the same number. Waiting until the
//! port accepts connections then proves nothing, since the other server may be the one
//! listening. So [`Listening::start`] starts one server at a time, waits until a listening
//! socket on the port belongs to the child it spawned (the socket's inode in
//! `/proc/net/tcp`, found among the child's open files), and chooses a new port and starts
//! again when the child exited before listening or the port is held by someone else.
use anyhow::{bail, Context, Result};
use std::net::TcpListener;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How many ports a server is tried on before its start fails.
const ATTEMPTS: usize = 5;

/// How long one attempt waits for the server to listen.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server; killed when dropped.
pub struct Listening {
    /// The server's process.
    pub child: Child,
    /// The loopback port it listens on.
    pub port: u16,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Why one attempt did not give a listening server.
enum Attempt {
    /// Worth another port: the child exited early (its port was taken), or another
    /// process holds the port.
    Retry(String),
    /// The child is alive and silent past the deadline: another port would not help.
    Fail(anyhow::Error),
}

impl Listening {
    /// Starts `what` with the command `command(port)` builds, on a free loopback port, and
    /// returns once the child itself listens there. Fails naming the server, the port and
    /// what happened when no attempt succeeded.
    pub fn start(what: &str, command: impl Fn(u16) -> Command) -> Result<Listening> {
        Self::start_on(what, std::iter::repeat_with(free_port), command)
    }

    /// [`Listening::start`] on the ports `ports` yields, one an attempt.
    fn start_on(
        what: &str,
        ports: impl Iterator<Item = Result<u16>>,
        command: impl Fn(u16) -> Command,
    ) -> Result<Listening> {
        let mut tried = Vec::new();
        for port in ports.take(ATTEMPTS) {
            let port = port?;
            let child = command(port)
                .spawn()
                .with_context(|| format!("cannot start {what}"))?;
            let mut server = Listening { child, port };
            match server.wait_owned(what) {
                Ok(()) => return Ok(server),
                Err(Attempt::Retry(why)) => {
                    eprintln!("{what}: {why}; trying another port");
                    tried.push(why);
                }
                Err(Attempt::Fail(e)) => return Err(e),
            }
        }
        bail!(
            "{what} did not start on any of {ATTEMPTS} ports: {}",
            tried.join("; ")
        )
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn wait_owned(&mut self, what: &str) -> std::result::Result<(), Attempt> {
        let port = self.port;
        let deadline = Instant::now() + LISTEN_TIMEOUT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    return Err(Attempt::Retry(format!(
                        "{what} exited ({status}) before listening on 127.0.0.1:{port}"
                    )))
                }
                Ok(None) => {}
                Err(e) => return Err(Attempt::Fail(e.into())),
            }
            let inodes = listening_inodes(port).map_err(Attempt::Fail)?;
            if !inodes.is_empty() {
                if owns_any(self.child.id(), &inodes) {
                    return Ok(());
                }
                // The socket may be open before the child's file table shows it only
                // for an instant; a foreign listener stays foreign.
                std::thread::sleep(Duration::from_millis(100));
                let inodes = listening_inodes(port).map_err(Attempt::Fail)?;
                if !inodes.is_empty() && !owns_any(self.child.id(), &inodes) {
                    return Err(Attempt::Retry(format!(
                        "127.0.0.1:{port} is held by another process, not by {what}"
                    )));
                }
            }
            if Instant::now() > deadline {
                return Err(Attempt::Fail(anyhow::anyhow!(
                    "{what} did not listen on 127.0.0.1:{port} within {} s",
                    LISTEN_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The socket inodes of listening TCP sockets on `port` (any local address, IPv4 or IPv6).
fn listening_inodes(port: u16) -> Result<Vec<u64>> {
    let mut found = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = match std::fs::read_to_string(table) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {table}")),
        };
        found.extend(parse_listening(&text, port));
    }
    Ok(found)
}

/// The inodes of the rows of a `/proc/net/tcp` table that listen (state `0A`) on `port`.
fn parse_listening(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit_once(':')?.1;
            let listening = *fields.get(3)? == "0A";
            (listening && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| fields.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

/// Whether process `pid` or one of its descendants has one of `inodes` open.
fn owns_any(pid: u32, inodes: &[u64]) -> bool {
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut pending = vec![pid];
    while let Some(pid) = pending.pop() {
        if let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            for fd in fds.flatten() {
                if let Ok(target) = std::fs::read_link(fd.path()) {
                    if wanted.iter().any(|w| target.as_os_str() == w.as_str()) {
                        return true;
                    }
                }
            }
        }
        pending.extend(children(pid));
    }
    false
}

fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{free_port, listening_inodes, owns_any, parse_listening, Listening};
    use std::process::Command;

    #[test]
    fn finds_listening_rows_of_a_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
            0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n\
            1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 4243 1 0000000000000000 20 4 30 10 -1\n\
            2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4244 1 0000000000000000 100 0 0 10 0\n";
        assert_eq!(parse_listening(table, 0x1F90), vec![4242]);
        assert_eq!(parse_listening(table, 0x1F91), vec![4244]);
        assert!(parse_listening(table, 80).is_empty());
    }

    /// A port held by another process is never taken for the server's own: the attempt
    /// moves on to another port, where the server listens.
    #[test]
    fn a_port_held_by_another_process_is_not_taken_for_the_server() {
        let foreign = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = foreign.local_addr().unwrap().port();
        let ports = [Ok(taken)]
            .into_iter()
            .chain(std::iter::repeat_with(free_port));
        let server = Listening::start_on("a test server", ports, |port| {
            let mut c;
            if port == taken {
                // Never listens: only the foreign listener makes this port look open.
                c = Command::new("sleep");
                c.arg("60");
            } else {
                c = Command::new("python3");
                c.args([
                    "-m",
                    "http.server",
                    "--bind",
                    "127.0.0.1",
                    &port.to_string(),
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            }
            c
        })
        .unwrap();
        assert_ne!(server.port, taken);
        assert!(owns_any(
            server.child.id(),
            &listening_inodes(server.port).unwrap()
        ));
        assert!(!owns_any(
            server.child.id(),
            &listening_inodes(taken).unwrap()
        ));
    }

    /// A server that exits before it listens is reported as exited, on every port tried.
    #[test]
    fn a_server_that_exits_early_is_reported_as_exited() {
        let err = Listening::start("a server that exits", |_| {
            let mut c = Command::new("sh");
            c.args(["-c", "exit 3"]);
            c
        })
        .err()
        .expect("an exiting server cannot start");
        let text = format!("{err:#}");
        assert!(text.contains("a server that exits exited"), "{text}");
        assert!(text.contains("5 ports"), "{text}");
    }
}
