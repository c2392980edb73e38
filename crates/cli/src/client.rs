//! Talking to the daemon from the command line: connect, handshake, one request at a time.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_protocol::{
    ErrorKind, Hello, ProtocolError, Reply, Request, Role, client_handshake, read_frame,
    write_frame,
};

/// A CLI connection to a daemon.
pub struct Client {
    sock: UnixStream,
    path: PathBuf,
}

/// Why no daemon could be reached, with what to do.
fn unreachable(tried: &[(PathBuf, String)]) -> anyhow::Error {
    let list = tried
        .iter()
        .map(|(p, e)| format!("{} ({e})", p.display()))
        .collect::<Vec<_>>()
        .join(", ");
    anyhow::anyhow!(
        "no Baton daemon answers (tried {list}): start one with `baton daemon` (`baton run` \
         starts one by itself), or point --socket or $BATON_SOCKET at the one you use"
    )
}

/// The socket named by `--socket`, else by `BATON_SOCKET`: then the only one tried.
pub fn explicit_socket(socket: Option<&Path>) -> Option<PathBuf> {
    socket
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_SOCKET").map(PathBuf::from))
}

impl Client {
    /// Connects to `socket`, or to the first of the usual sockets that answers.
    pub fn connect(socket: Option<&Path>) -> anyhow::Result<Client> {
        let explicit = explicit_socket(socket);
        let mut tried = Vec::new();
        for path in baton_agent::socket_candidates(explicit.as_deref()) {
            match Client::connect_to(&path) {
                Ok(c) => return Ok(c),
                Err(e) => {
                    if let Some(ProtocolError::Refused { message, .. }) = e.downcast_ref() {
                        bail!(
                            "the daemon at {} refused this connection: {message}",
                            path.display()
                        );
                    }
                    tried.push((path, format!("{e:#}")));
                }
            }
        }
        Err(unreachable(&tried))
    }

    /// Connects to the daemon at `path` and handshakes.
    pub fn connect_to(path: &Path) -> anyhow::Result<Client> {
        let mut sock = UnixStream::connect(path).map_err(anyhow::Error::from)?;
        sock.set_read_timeout(Some(Duration::from_secs(10)))?;
        sock.set_write_timeout(Some(Duration::from_secs(10)))?;
        let hello = Hello::new(
            Role::Cli,
            std::process::id(),
            &format!("baton {}", env!("CARGO_PKG_VERSION")),
        );
        client_handshake(&mut sock, &hello).map_err(anyhow::Error::from)?;
        Ok(Client {
            sock,
            path: path.to_path_buf(),
        })
    }

    /// The socket this client is connected to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Sends `req` and reads the reply; an error reply becomes an error carrying the daemon's
    /// message.
    pub fn request(&mut self, req: &Request) -> anyhow::Result<Reply> {
        write_frame(&mut self.sock, req).context("sending the request to the daemon")?;
        let reply = read_frame::<Reply, _>(&mut self.sock)
            .context("reading the daemon's answer")?
            .context("the daemon closed the connection without answering; see its log")?;
        match reply {
            Reply::Error(e) => Err(DaemonRefused(e.kind, e.message).into()),
            r => Ok(r),
        }
    }

    /// Sends `req`, expecting `Done`.
    pub fn done(&mut self, req: &Request) -> anyhow::Result<()> {
        match self.request(req)? {
            Reply::Done => Ok(()),
            r => bail!("unexpected answer from the daemon: {}", r.name()),
        }
    }
}

/// The daemon answered with an error; its message says what to do.
#[derive(Debug, thiserror::Error)]
#[error("{1}")]
pub struct DaemonRefused(pub ErrorKind, pub String);
