//! The simulator's network behind the admin's and the gateway's network seam
//! ([`netserve::Listener`], [`netserve::Connect`]): turmoil's TCP, addressed by host name.

use std::io;
use std::net::SocketAddr;

/// A turmoil listening socket, as the admin and the gateway accept on.
pub(crate) struct SimListener(turmoil::net::TcpListener);

impl std::fmt::Debug for SimListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SimListener")
            .field(&self.0.local_addr())
            .finish()
    }
}

impl SimListener {
    /// Binds `port` on every address of the current host.
    pub(crate) async fn bind(port: u16) -> io::Result<SimListener> {
        Ok(SimListener(
            turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?,
        ))
    }
}

impl netserve::Listener for SimListener {
    type Io = turmoil::net::TcpStream;

    async fn accept(&self) -> io::Result<(turmoil::net::TcpStream, SocketAddr)> {
        self.0.accept().await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// Opens turmoil TCP connections (a host name resolves through the simulator's DNS).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SimNet;

impl netserve::Connect for SimNet {
    type Io = turmoil::net::TcpStream;

    async fn connect(&self, host: &str, port: u16) -> io::Result<turmoil::net::TcpStream> {
        turmoil::net::TcpStream::connect((host, port)).await
    }
}
