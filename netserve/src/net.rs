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

/// A [`Connect`] as hyper-util's client takes a connector: `Client::builder(…).build(
/// Connector::new(net))` sends its requests over `net` (plain HTTP: the URI's host and port,
/// 80 by default).
#[derive(Debug, Clone)]
pub struct Connector<C> {
    net: C,
    timeout: Option<std::time::Duration>,
}

impl<C> Connector<C> {
    /// Connections over `net`, with no time limit of their own.
    pub fn new(net: C) -> Connector<C> {
        Connector { net, timeout: None }
    }

    /// The same, giving up on a connection not open within `timeout`.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: std::time::Duration) -> Connector<C> {
        self.timeout = Some(timeout);
        self
    }
}

impl<C: Connect> tower::Service<http::Uri> for Connector<C> {
    type Response = Conn<C::Io>;
    type Error = io::Error;
    type Future = std::pin::Pin<Box<dyn Future<Output = io::Result<Conn<C::Io>>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), io::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let (net, timeout) = (self.net.clone(), self.timeout);
        Box::pin(async move {
            if uri.scheme_str() != Some("http") {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{uri}: only http:// is supported"),
                ));
            }
            let host = uri
                .host()
                .ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("{uri}: no host"))
                })?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned();
            let port = uri.port_u16().unwrap_or(80);
            let io = match timeout {
                Some(limit) => tokio::time::timeout(limit, net.connect(&host, port))
                    .await
                    .map_err(|_| {
                        io::Error::new(io::ErrorKind::TimedOut, format!("{uri}: connect timed out"))
                    })??,
                None => net.connect(&host, port).await?,
            };
            Ok(Conn {
                io: hyper_util::rt::TokioIo::new(io),
            })
        })
    }
}

pin_project_lite::pin_project! {
    /// A connection a [`Connector`] opened, as hyper reads and writes it.
    #[derive(Debug)]
    pub struct Conn<T> {
        #[pin]
        io: hyper_util::rt::TokioIo<T>,
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> hyper::rt::Read for Conn<T> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> hyper::rt::Write for Conn<T> {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        self.project().io.poll_write(cx, buf)
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}

impl<T> hyper_util::client::legacy::connect::Connection for Conn<T> {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn hyper_clients_send_through_a_connect() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut tcp, _) = listener.accept().await.unwrap();
            let mut head = vec![0; 1024];
            let n = tcp.read(&mut head).await.unwrap();
            assert!(String::from_utf8_lossy(&head[..n]).starts_with("GET /ping HTTP/1.1"));
            tcp.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\npong")
                .await
                .unwrap();
        });
        let client = Client::builder(TokioExecutor::new())
            .build::<_, Empty<bytes::Bytes>>(Connector::new(Tokio));
        let uri: http::Uri = format!("http://127.0.0.1:{port}/ping").parse().unwrap();
        let response = client.get(uri).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"pong");
        let refused = client.get("https://127.0.0.1:1/".parse().unwrap()).await;
        assert!(refused.is_err(), "https is refused, not sent in clear");
    }
}
