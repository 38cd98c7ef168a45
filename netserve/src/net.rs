//! The network seam: how the admin and the gateway accept connections ([`Listener`]) and open
//! them ([`Connect`]). The binaries use the operating system's sockets ([`TcpListener`],
//! [`Tokio`]); `gantry sim` passes the simulator's, so one build runs both ways. Both are
//! generic parameters, resolved at compile time: the real path costs nothing for the seam.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};

/// A bound listening socket.
pub trait Listener: Send + 'static {
    /// An accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and its peer's address.
    fn accept(&self) -> impl Future<Output = io::Result<(Self::Io, SocketAddr)>> + Send;
    /// The address it listens on.
    fn local_addr(&self) -> io::Result<SocketAddr>;
}

impl Listener for TcpListener {
    type Io = TcpStream;

    async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        let (tcp, peer) = TcpListener::accept(self).await?;
        Ok((nodelay(tcp), peer))
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        TcpListener::local_addr(self)
    }
}

/// TCP_NODELAY: an answer written in pieces (a head, then a streamed body) must not wait for
/// the client's delayed ACK (~40 ms).
fn nodelay(tcp: TcpStream) -> TcpStream {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::warn!(error = %e, "cannot set TCP_NODELAY on a connection");
    }
    tcp
}

/// A way to open connections to `host:port`.
pub trait Connect: Clone + Send + Sync + std::fmt::Debug + 'static {
    /// An opened connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Opens a connection to `host:port` (a name or an address).
    fn connect(&self, host: &str, port: u16) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

/// The operating system's network.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokio;

impl Connect for Tokio {
    type Io = TcpStream;

    async fn connect(&self, host: &str, port: u16) -> io::Result<TcpStream> {
        let tcp = TcpStream::connect((host, port)).await?;
        Ok(nodelay(tcp))
    }
}
