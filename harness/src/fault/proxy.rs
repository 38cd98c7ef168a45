//! A TCP fault proxy: clients connect to [`FaultProxy::addr`] instead of the target, and the
//! proxy relays bytes both ways according to its [`Mode`], which a test switches at any time.
//! Open connections follow a switch at once:
//!
//! | mode | open connections | new connections |
//! |---|---|---|
//! | [`Mode::Pass`] | relayed both ways | relayed |
//! | [`Mode::Delay`] | each chunk held that long before it is written | same |
//! | [`Mode::Cut`] | both sides closed (FIN) | accepted, closed at once (FIN) |
//! | [`Mode::Reset`] | both sides reset (RST: `SO_LINGER` 0) | accepted, reset at once |
//! | [`Mode::Blackhole`] | kept open, nothing forwarded either way | accepted, kept open silent |
//! | [`Mode::Sever`] | dead for good: kept open, nothing forwarded either way, ever | relayed |
//!
//! A blackhole is a silent partition (half-open: the TCP connection is up, nothing answers).
//! The proxy stops *reading*: bytes sent meanwhile wait in the kernel's buffers, as a real
//! partition's retransmissions would, and [`FaultProxy::heal`] **resumes** the connection —
//! what was sent during the partition is then delivered, late. A client that gave up on the
//! silence and closed its side is seen as closed after the heal (its FIN is read in order).
//! A connection accepted during a blackhole connects to the target only once forwarding
//! resumes, so the target sees nothing of it until then.
//!
//! A sever is a dead stream (a NAT or conntrack entry lost, a middlebox that forgot the flow):
//! the connections open at that moment (those the proxy has accepted) stay open and silent
//! forever, even after a heal, and nobody is told; the mode itself becomes [`Mode::Pass`], so
//! a client that notices the silence and connects again gets through.
//!
//! Closing (cut) drops both sockets; the kernel sends FIN, or RST when bytes the proxy never
//! read are still pending on a socket. A new connection under `cut` is accepted and closed
//! (the client sees the peer close, not `ECONNREFUSED`). A target that cannot be reached
//! closes the client's connection.
//!
//! Dropping the proxy stops it: the listener and every connection are closed.

use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// What the proxy does with the bytes of its connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Relay both ways.
    Pass,
    /// Relay both ways, each chunk written this long after it was read (per direction, in
    /// order: chunks are not pipelined, so a burst is delayed more).
    Delay(Duration),
    /// Close open connections (FIN) and close new ones on accept.
    Cut,
    /// Reset open connections (RST) and reset new ones on accept.
    Reset,
    /// Keep connections open but forward nothing either way (a silent partition); see the
    /// module docs for what happens on heal.
    Blackhole,
    /// Kill the open connections silently and for good (kept open, nothing forwarded, never
    /// resumed), then relay new ones as [`Mode::Pass`]: a dead stream. See the module docs.
    Sever,
}

impl Mode {
    /// Whether bytes flow in this mode.
    fn forwards(self) -> bool {
        matches!(self, Mode::Pass | Mode::Delay(_))
    }
}

/// A running fault proxy in front of one target address. See the module docs.
#[derive(Debug)]
pub(crate) struct FaultProxy {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    /// Connections whose number is below this are severed (dead for good).
    severed: watch::Sender<u64>,
    /// How many connections were accepted so far (each one's number is its rank).
    accepted: Arc<AtomicU64>,
    /// The accept loop; it owns every connection's task, so aborting it closes them all.
    task: JoinHandle<()>,
}

impl FaultProxy {
    /// A proxy on `127.0.0.1:0` (a free port) relaying to `target`, in [`Mode::Pass`].
    pub(crate) async fn start(target: SocketAddr) -> io::Result<FaultProxy> {
        FaultProxy::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), target).await
    }

    /// A proxy listening on `listen` (a fixed port, so a component can be configured with
    /// it before the proxy starts) relaying to `target`, in [`Mode::Pass`].
    pub(crate) async fn start_on(listen: SocketAddr, target: SocketAddr) -> io::Result<FaultProxy> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let (mode, modes) = watch::channel(Mode::Pass);
        let (severed, severs) = watch::channel(0);
        let accepted = Arc::new(AtomicU64::new(0));
        let links = Links {
            target,
            modes,
            severs,
        };
        let task = tokio::spawn(accept_loop(listener, links, accepted.clone()));
        Ok(FaultProxy {
            addr,
            mode,
            severed,
            accepted,
            task,
        })
    }

    /// Where clients connect.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Switches the mode; open connections follow at once. [`Mode::Sever`] kills the open
    /// connections and leaves the proxy in [`Mode::Pass`].
    pub(crate) fn set(&self, mode: Mode) {
        if mode == Mode::Sever {
            self.severed
                .send_replace(self.accepted.load(Ordering::SeqCst));
            self.mode.send_replace(Mode::Pass);
            return;
        }
        self.mode.send_replace(mode);
    }

    /// Back to [`Mode::Pass`]: blackholed connections resume; cut or reset ones stay closed.
    pub(crate) fn heal(&self) {
        self.set(Mode::Pass);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What every connection follows: its target, the mode, and the sever mark.
#[derive(Debug, Clone)]
struct Links {
    target: SocketAddr,
    modes: watch::Receiver<Mode>,
    /// Connections numbered below it are dead.
    severs: watch::Receiver<u64>,
}

/// Accepts connections until aborted; each one is relayed by its own task in `connections`,
/// numbered in order by `accepted`.
async fn accept_loop(listener: TcpListener, links: Links, accepted: Arc<AtomicU64>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted_now = listener.accept() => match accepted_now {
                Ok((client, _)) => {
                    let number = accepted.fetch_add(1, Ordering::SeqCst);
                    connections.spawn(connection(client, number, links.clone()));
                }
                Err(e) => tracing::warn!(error = %e, "fault proxy: accept failed"),
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// How one direction (or a whole connection) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The source sent EOF; it was passed on as a write shutdown.
    Eof,
    /// Close the connection (cut, a broken socket, or the proxy is gone).
    Close,
    /// Reset the connection.
    Reset,
    /// Severed: hold both sockets open, silent, until the proxy goes.
    Dead,
}

/// One client connection (the `number`th accepted): wait until bytes may flow, connect to the
/// target, relay.
async fn connection(mut client: TcpStream, number: u64, links: Links) {
    let Links {
        target,
        mut modes,
        severs,
    } = links;
    let dead = Dead { number, severs };
    match forwarding(&mut modes).await {
        Err(End::Reset) => return abort(&client),
        Err(_) => return,
        Ok(()) => {}
    }
    if dead.now() {
        return dead.hold().await;
    }
    let Ok(mut server) = TcpStream::connect(target).await else {
        return;
    };
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let mut up = pin!(pump(client_read, server_write, modes.clone(), dead.clone()));
        let mut down = pin!(pump(server_read, client_write, modes, dead.clone()));
        let (mut up_done, mut down_done) = (false, false);
        loop {
            let end = tokio::select! {
                end = &mut up, if !up_done => { up_done = true; end }
                end = &mut down, if !down_done => { down_done = true; end }
            };
            if end != End::Eof || (up_done && down_done) {
                break end;
            }
        }
    };
    match end {
        End::Reset => {
            abort(&client);
            abort(&server);
        }
        // Both sockets stay open (this task owns them) and silent.
        End::Dead => dead.hold().await,
        End::Eof | End::Close => {}
    }
}

/// Whether a connection is severed.
#[derive(Debug, Clone)]
struct Dead {
    /// The connection's number.
    number: u64,
    /// Connections numbered below it are dead.
    severs: watch::Receiver<u64>,
}

impl Dead {
    /// Whether the connection is severed now.
    fn now(&self) -> bool {
        *self.severs.borrow() > self.number
    }

    /// Completes once the connection is severed.
    async fn comes(&mut self) {
        let number = self.number;
        if self.severs.wait_for(|below| *below > number).await.is_err() {
            // The proxy is gone, and its tasks with it.
            std::future::pending::<()>().await;
        }
    }

    /// Never returns: the caller keeps its sockets open until the proxy is dropped.
    async fn hold(&self) {
        std::future::pending::<()>().await;
    }
}

/// Sets `SO_LINGER` 0 so that dropping `stream` sends RST.
fn abort(stream: &TcpStream) {
    if let Err(e) = stream.set_zero_linger() {
        tracing::warn!(error = %e, "fault proxy: cannot set SO_LINGER 0");
    }
}

/// Waits until the mode forwards; `Err`: how the connection must end instead.
async fn forwarding(modes: &mut watch::Receiver<Mode>) -> Result<(), End> {
    loop {
        match *modes.borrow_and_update() {
            Mode::Cut => return Err(End::Close),
            Mode::Reset => return Err(End::Reset),
            mode if mode.forwards() => return Ok(()),
            _ => {}
        }
        if modes.changed().await.is_err() {
            return Err(End::Close);
        }
    }
}

/// Relays one direction until EOF or a mode that ends the connection.
async fn pump(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    mut modes: watch::Receiver<Mode>,
    mut dead: Dead,
) -> End {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if let Err(end) = forwarding(&mut modes).await {
            return end;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(n) => n,
                Err(_) => return End::Close,
            },
            // Re-evaluate the mode (a blackhole stops reading at once).
            changed = modes.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return End::Close,
            },
            () = dead.comes() => return End::Dead,
        };
        let mode = *modes.borrow();
        if let Mode::Delay(latency) = mode {
            let wait = tokio::time::sleep(latency);
            tokio::select! {
                () = wait => {}
                // Cut or reset while the chunk is held: the chunk is lost with the connection.
                end = ended(&mut modes) => return end,
                () = dead.comes() => return End::Dead,
            }
        }
        // Read just before a switch to a blackhole: held until the heal.
        if let Err(end) = forwarding(&mut modes).await {
            return end;
        }
        // Read just before a sever: lost.
        if dead.now() {
            return End::Dead;
        }
        if n == 0 {
            let _ = to.shutdown().await;
            return End::Eof;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return End::Close;
        }
    }
}

/// Completes when the mode becomes one that ends connections.
async fn ended(modes: &mut watch::Receiver<Mode>) -> End {
    loop {
        if modes.changed().await.is_err() {
            return End::Close;
        }
        match *modes.borrow_and_update() {
            Mode::Cut => return End::Close,
            Mode::Reset => return End::Reset,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    /// How long any wait for an effect may take.
    const DEADLINE: Duration = Duration::from_secs(10);
    /// How long a test watches a connection to show that *nothing* arrives on it.
    const SILENCE: Duration = Duration::from_millis(300);

    /// An echo server on a free port: every connection gets its bytes back.
    async fn echo() -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = stream.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    async fn connect(proxy: &FaultProxy) -> TcpStream {
        tokio::time::timeout(DEADLINE, TcpStream::connect(proxy.addr()))
            .await
            .expect("connects in time")
            .unwrap()
    }

    /// Sends `msg` and reads its echo.
    async fn round_trip(stream: &mut TcpStream, msg: &[u8]) {
        stream.write_all(msg).await.unwrap();
        assert_eq!(read_exact(stream, msg.len()).await, msg);
    }

    async fn read_exact(stream: &mut TcpStream, len: usize) -> Vec<u8> {
        let mut got = vec![0; len];
        tokio::time::timeout(DEADLINE, stream.read_exact(&mut got))
            .await
            .expect("answer in time")
            .unwrap();
        got
    }

    /// The next read's result, within the deadline.
    async fn read_result(stream: &mut TcpStream) -> io::Result<usize> {
        let mut buf = [0; 64];
        tokio::time::timeout(DEADLINE, stream.read(&mut buf))
            .await
            .expect("the connection ends in time")
    }

    /// Proves nothing arrives (and the connection is not closed) within [`SILENCE`].
    async fn assert_silent(stream: &mut TcpStream) {
        let mut buf = [0; 64];
        let read = tokio::time::timeout(SILENCE, stream.read(&mut buf)).await;
        assert!(read.is_err(), "expected silence, got {read:?}");
    }

    #[tokio::test]
    async fn pass_relays_both_ways() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        assert_eq!(*proxy.mode.borrow(), Mode::Pass);
        let mut stream = connect(&proxy).await;
        round_trip(&mut stream, b"hello").await;
        let big = vec![7u8; 200_000];
        round_trip(&mut stream, &big).await;
    }

    #[tokio::test]
    async fn start_on_a_given_port() {
        let target = echo().await;
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        let proxy = FaultProxy::start_on(port, target).await.unwrap();
        assert_eq!(proxy.addr(), port);
        round_trip(&mut connect(&proxy).await, b"fixed").await;
    }

    #[tokio::test]
    async fn cut_closes_open_and_new_connections() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        proxy.set(Mode::Cut);
        assert_eq!(read_result(&mut open).await.unwrap(), 0, "FIN");
        let mut new = connect(&proxy).await;
        assert_eq!(read_result(&mut new).await.unwrap(), 0, "closed on accept");
        proxy.heal();
        round_trip(&mut connect(&proxy).await, b"after").await;
    }

    #[tokio::test]
    async fn reset_resets_open_and_new_connections() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        proxy.set(Mode::Reset);
        let err = read_result(&mut open).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        let mut new = connect(&proxy).await;
        let err = read_result(&mut new).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        proxy.heal();
        round_trip(&mut connect(&proxy).await, b"after").await;
    }

    #[tokio::test]
    async fn blackhole_is_silent_and_heal_resumes() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        proxy.set(Mode::Blackhole);
        open.write_all(b"during").await.unwrap();
        assert_silent(&mut open).await;
        let mut new = connect(&proxy).await;
        new.write_all(b"new").await.unwrap();
        assert_silent(&mut new).await;
        proxy.heal();
        assert_eq!(
            read_exact(&mut open, 6).await,
            b"during",
            "held bytes arrive"
        );
        assert_eq!(read_exact(&mut new, 3).await, b"new");
        round_trip(&mut open, b"after").await;
    }

    #[tokio::test]
    async fn cut_during_a_blackhole_closes() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        proxy.set(Mode::Blackhole);
        proxy.set(Mode::Cut);
        assert_eq!(read_result(&mut open).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn sever_kills_open_connections_for_good_and_passes_new_ones() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        proxy.set(Mode::Blackhole);
        let mut held = connect(&proxy).await;
        // Severed are the connections the proxy has accepted: wait until it took this one.
        let deadline = Instant::now() + DEADLINE;
        while proxy.accepted.load(Ordering::SeqCst) < 2 {
            assert!(Instant::now() < deadline, "the proxy never accepted it");
            tokio::task::yield_now().await;
        }
        proxy.set(Mode::Sever);
        assert_eq!(*proxy.mode.borrow(), Mode::Pass);
        open.write_all(b"during").await.unwrap();
        assert_silent(&mut open).await;
        held.write_all(b"held").await.unwrap();
        assert_silent(&mut held).await;
        round_trip(&mut connect(&proxy).await, b"new").await;
        proxy.heal();
        open.write_all(b"after").await.unwrap();
        assert_silent(&mut open).await;
        assert_silent(&mut held).await;
    }

    #[tokio::test]
    async fn delay_adds_latency_each_way() {
        let latency = Duration::from_millis(150);
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        round_trip(&mut stream, b"warm").await;
        proxy.set(Mode::Delay(latency));
        let started = Instant::now();
        round_trip(&mut stream, b"slow").await;
        assert!(started.elapsed() >= 2 * latency, "{:?}", started.elapsed());
        proxy.heal();
        round_trip(&mut stream, b"fast").await;
    }

    #[tokio::test]
    async fn dropping_the_proxy_closes_its_connections() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        drop(proxy);
        assert_eq!(read_result(&mut open).await.unwrap(), 0);
    }
}
