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
//!
//! Besides its mode, the proxy holds [`Toxics`] (set with [`FaultProxy::set_toxics`]): per
//! direction latency, bandwidth, slicing, a slow close, a data limit or a one-way blackhole,
//! and a loss of new connections; see [`super::toxic`]. They act together with the mode (a
//! `Delay` adds to a latency); a heal clears them.

use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::toxic::{Direction, Pace, Toxics};

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
    /// The toxics every connection follows.
    toxics: watch::Sender<Toxics>,
    /// The toxics a heal goes back to (the `slice` run mode's).
    baseline: Toxics,
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
        let (toxics, toxic_sets) = watch::channel(Toxics::default());
        let accepted = Arc::new(AtomicU64::new(0));
        let links = Links {
            target,
            modes,
            toxics: toxic_sets,
            severs,
        };
        let task = tokio::spawn(accept_loop(listener, links, accepted.clone()));
        Ok(FaultProxy {
            addr,
            mode,
            toxics,
            baseline: Toxics::default(),
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

    /// Replaces the toxics; open connections follow from their next chunk (a blackholed
    /// direction stops reading at once).
    pub(crate) fn set_toxics(&self, toxics: Toxics) {
        self.toxics.send_replace(toxics);
    }

    /// Sets `toxics` for good: a heal goes back to them.
    pub(crate) fn keep(&mut self, toxics: Toxics) {
        self.baseline = toxics.clone();
        self.set_toxics(toxics);
    }

    /// The toxics set now.
    pub(crate) fn toxics(&self) -> Toxics {
        self.toxics.borrow().clone()
    }

    /// Back to [`Mode::Pass`] and the toxics kept ([`FaultProxy::keep`]; none by default):
    /// blackholed connections resume; cut or reset ones stay closed.
    pub(crate) fn heal(&self) {
        self.toxics.send_replace(self.baseline.clone());
        self.set(Mode::Pass);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What every connection follows: its target, the mode, the toxics, and the sever mark.
#[derive(Debug, Clone)]
struct Links {
    target: SocketAddr,
    modes: watch::Receiver<Mode>,
    toxics: watch::Receiver<Toxics>,
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
        toxics,
        severs,
    } = links;
    if toxics.borrow().loses(number) {
        return;
    }
    let dead = Dead { number, severs };
    match forwarding(&mut modes).await {
        Err(End::Reset) => return abort(&client),
        Err(_) => return,
        Ok(()) => {}
    }
    if dead.now() {
        return dead.hold().await;
    }
    let Ok(mut server) = connect_as(&client, target).await else {
        return;
    };
    // Each write leaves as its own segment: a slicer's pieces are not coalesced again by
    // Nagle's algorithm, and a relayed chunk waits for no ACK.
    for stream in [&client, &server] {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::warn!(error = %e, "fault proxy: cannot set TCP_NODELAY");
        }
    }
    let end = {
        let (client_read, client_write) = client.split();
        let (server_read, server_write) = server.split();
        let follows = |direction| Follows {
            direction,
            modes: modes.clone(),
            toxics: toxics.clone(),
            dead: dead.clone(),
        };
        let mut up = pin!(pump(client_read, server_write, follows(Direction::Request)));
        let mut down = pin!(pump(server_read, client_write, follows(Direction::Answer)));
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

/// A connection to `target` for `client`: on loopback, from the client's own address (any
/// 127.0.0.0/8 address can be bound), so the target sees the peer it would see without the
/// proxy (the harness's clients send from addresses of their own, which the gateway's hash
/// balancer and `ip` conditions read); elsewhere from any address.
async fn connect_as(client: &TcpStream, target: SocketAddr) -> io::Result<TcpStream> {
    let socket = match target {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if let Ok(peer) = client.peer_addr()
        && peer.ip().is_loopback()
        && target.ip().is_loopback()
        && peer.is_ipv4() == target.is_ipv4()
    {
        socket.bind(SocketAddr::new(peer.ip(), 0))?;
    }
    socket.connect(target).await
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

/// What one direction of a connection follows.
struct Follows {
    direction: Direction,
    modes: watch::Receiver<Mode>,
    toxics: watch::Receiver<Toxics>,
    dead: Dead,
}

impl Follows {
    /// Waits until the mode forwards and the direction is not blackholed; `Err`: how the
    /// connection must end instead.
    async fn flowing(&mut self) -> Result<(), End> {
        loop {
            forwarding(&mut self.modes).await?;
            if !self.toxics.borrow_and_update().blackholed(self.direction) {
                return Ok(());
            }
            let changed = tokio::select! {
                changed = self.modes.changed() => changed,
                changed = self.toxics.changed() => changed,
            };
            if changed.is_err() {
                return Err(End::Close);
            }
        }
    }

    /// Waits `hold`; `Err` if the connection is cut, reset or severed meanwhile (what it
    /// held is lost with it).
    async fn hold(&mut self, hold: Duration) -> Result<(), End> {
        if hold.is_zero() {
            return Ok(());
        }
        self.hold_until(Instant::now() + hold).await
    }

    /// Waits until `due` (at once if it has passed); `Err` as [`Follows::hold`].
    async fn hold_until(&mut self, due: Instant) -> Result<(), End> {
        tokio::select! {
            () = tokio::time::sleep_until(due) => Ok(()),
            end = ended(&mut self.modes) => Err(end),
            () = self.dead.comes() => Err(End::Dead),
        }
    }

    /// Writes `chunk` to `to`, paced as `pace` says. The pauses keep a schedule from the
    /// chunk's first piece: the timer wakes a millisecond late at best, so a piece that is
    /// late goes at once and the chunk as a whole keeps the pace (1000 one-byte pieces 1 ms
    /// apart take 1 s, not the 2 s of a sleep after each).
    async fn write(
        &mut self,
        to: &mut WriteHalf<'_>,
        chunk: &[u8],
        pace: Option<Pace>,
    ) -> Result<(), End> {
        let Some(pace) = pace else {
            return to.write_all(chunk).await.map_err(|_| End::Close);
        };
        let mut due = Instant::now();
        for piece in chunk.chunks(pace.piece) {
            to.write_all(piece).await.map_err(|_| End::Close)?;
            match pace.gap(piece.len()) {
                // Unpaced pieces: let the other side read between them.
                Duration::ZERO => tokio::task::yield_now().await,
                gap => {
                    due += gap;
                    self.hold_until(due).await?;
                }
            }
        }
        Ok(())
    }
}

/// Relays one direction until EOF or a mode (or a data limit) that ends the connection.
async fn pump(mut from: ReadHalf<'_>, mut to: WriteHalf<'_>, mut follows: Follows) -> End {
    let mut buf = vec![0u8; 16 * 1024];
    let mut rng = StdRng::seed_from_u64(follows.dead.number * 2 + follows.direction as u64);
    // Bytes written since a data limit holds.
    let mut sent = 0u64;
    loop {
        if let Err(end) = follows.flowing().await {
            return end;
        }
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(n) => n,
                Err(_) => return End::Close,
            },
            // Re-evaluate the mode and toxics (a blackhole stops reading at once).
            changed = follows.modes.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return End::Close,
            },
            changed = follows.toxics.changed() => match changed {
                Ok(()) => continue,
                Err(_) => return End::Close,
            },
            () = follows.dead.comes() => return End::Dead,
        };
        let toxics = follows.toxics.borrow().clone();
        let direction = follows.direction;
        let mut hold = toxics.latency(direction, &mut rng);
        if let Mode::Delay(latency) = *follows.modes.borrow() {
            hold += latency;
        }
        if n == 0 {
            hold += toxics.slow_close(direction);
        }
        if let Err(end) = follows.hold(hold).await {
            return end;
        }
        // Read just before a switch to a blackhole: held until the heal.
        if let Err(end) = follows.flowing().await {
            return end;
        }
        // Read just before a sever: lost.
        if follows.dead.now() {
            return End::Dead;
        }
        if n == 0 {
            let _ = to.shutdown().await;
            return End::Eof;
        }
        let mut chunk = &buf[..n];
        let limit = toxics.limit(direction);
        let room = limit.map_or(u64::MAX, |limit| limit.saturating_sub(sent));
        let cut = room <= n as u64;
        if cut {
            chunk = &chunk[..usize::try_from(room).unwrap_or(n)];
        }
        if let Err(end) = follows.write(&mut to, chunk, toxics.pace(direction)).await {
            return end;
        }
        sent = if limit.is_some() {
            sent + chunk.len() as u64
        } else {
            0
        };
        if cut {
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
pub(super) mod tests {
    use std::time::Instant;

    use super::super::toxic::Toxic;
    use super::*;

    /// How long any wait for an effect may take.
    const DEADLINE: Duration = Duration::from_secs(10);
    /// How long a test watches a connection to show that *nothing* arrives on it.
    const SILENCE: Duration = Duration::from_millis(300);

    /// An echo server on a free port: every connection gets its bytes back.
    pub(in crate::fault) async fn echo() -> SocketAddr {
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

    /// On loopback the target sees the client's own address, not the proxy's.
    #[tokio::test]
    async fn the_target_sees_the_clients_address() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target = listener.local_addr().unwrap();
        let proxy = FaultProxy::start(target).await.unwrap();
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind("127.1.2.3:0".parse().unwrap()).unwrap();
        let _client = socket.connect(proxy.addr()).await.unwrap();
        let (_, seen) = tokio::time::timeout(Duration::from_secs(5), listener.accept())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(seen.ip().to_string(), "127.1.2.3");
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

    /// A server whose every connection is greeted with `hi` and whose received bytes go to
    /// the returned channel.
    async fn greeter() -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    stream.write_all(b"hi").await.unwrap();
                    let mut buf = [0; 64];
                    while let Ok(n @ 1..) = stream.read(&mut buf).await {
                        let _ = tx.send(buf[..n].to_vec());
                    }
                });
            }
        });
        (addr, rx)
    }

    fn toxics(direction: Direction, toxic: Toxic) -> Toxics {
        let mut toxics = Toxics::default();
        toxics.add(direction, toxic);
        toxics
    }

    /// A round trip of `msg`, timed.
    async fn timed_round_trip(stream: &mut TcpStream, msg: &[u8]) -> Duration {
        let started = Instant::now();
        round_trip(stream, msg).await;
        started.elapsed()
    }

    #[tokio::test]
    async fn latency_with_jitter_delays_one_direction_within_bounds() {
        let ms = Duration::from_millis;
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        round_trip(&mut stream, b"warm").await;
        let latency = Toxic::Latency {
            delay: ms(100),
            jitter: ms(30),
        };
        proxy.set_toxics(toxics(Direction::Answer, latency));
        for _ in 0..5 {
            let took = timed_round_trip(&mut stream, b"slow").await;
            assert!(took >= ms(70) && took < ms(400), "{took:?}");
        }
        proxy.set_toxics(toxics(Direction::Request, latency));
        let took = timed_round_trip(&mut stream, b"slow").await;
        assert!(took >= ms(70), "{took:?}");
        proxy.heal();
        assert!(timed_round_trip(&mut stream, b"fast").await < ms(70));
    }

    #[tokio::test]
    async fn bandwidth_caps_the_rate() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        let rate = Toxic::Bandwidth {
            bytes_per_second: 10_000,
        };
        proxy.set_toxics(toxics(Direction::Request, rate));
        // 3000 bytes at 10 000 B/s: 300 ms.
        let took = timed_round_trip(&mut stream, &[1; 3000]).await;
        assert!(
            took >= Duration::from_millis(280) && took < Duration::from_secs(3),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn slice_writes_pieces_apart() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        let slice = Toxic::Slice {
            bytes: 2,
            every: Duration::from_millis(10),
        };
        proxy.set_toxics(toxics(Direction::Answer, slice));
        stream.write_all(&[3; 40]).await.unwrap();
        let started = Instant::now();
        // The first piece comes alone: 2 bytes, the rest 10 ms apart.
        let mut buf = [0; 64];
        let first = tokio::time::timeout(DEADLINE, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(first, 2);
        read_exact(&mut stream, 38).await;
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(180), "{took:?}");
    }

    #[tokio::test]
    async fn slow_close_passes_the_eof_late() {
        let delay = Duration::from_millis(200);
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        proxy.set_toxics(toxics(Direction::Request, Toxic::SlowClose { delay }));
        round_trip(&mut stream, b"data").await;
        let started = Instant::now();
        stream.shutdown().await.unwrap();
        // The echo closes its side once the EOF reaches it.
        assert_eq!(read_result(&mut stream).await.unwrap(), 0);
        assert!(started.elapsed() >= delay, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn limit_data_closes_after_the_limit() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut stream = connect(&proxy).await;
        round_trip(&mut stream, b"before the limit").await;
        proxy.set_toxics(toxics(Direction::Answer, Toxic::LimitData { bytes: 10 }));
        stream.write_all(b"0123456").await.unwrap();
        assert_eq!(read_exact(&mut stream, 7).await, b"0123456");
        stream.write_all(b"789abcdef").await.unwrap();
        assert_eq!(read_exact(&mut stream, 3).await, b"789");
        let end = read_result(&mut stream).await;
        assert!(matches!(end, Ok(0) | Err(_)), "{end:?}");
        // A new connection counts from zero.
        round_trip(&mut connect(&proxy).await, b"0123456").await;
    }

    #[tokio::test]
    async fn loss_closes_new_connections_and_spares_open_ones() {
        let proxy = FaultProxy::start(echo().await).await.unwrap();
        let mut open = connect(&proxy).await;
        round_trip(&mut open, b"before").await;
        let mut lossy = Toxics::default();
        lossy.add_loss(1.0);
        proxy.set_toxics(lossy);
        let mut new = connect(&proxy).await;
        new.write_all(b"lost").await.unwrap();
        let end = read_result(&mut new).await;
        assert!(matches!(end, Ok(0) | Err(_)), "{end:?}");
        round_trip(&mut open, b"still").await;
        proxy.heal();
        round_trip(&mut connect(&proxy).await, b"after").await;
    }

    #[tokio::test]
    async fn a_request_blackhole_lets_answers_through() {
        let (target, mut received) = greeter().await;
        let proxy = FaultProxy::start(target).await.unwrap();
        proxy.set_toxics(toxics(Direction::Request, Toxic::Blackhole));
        let mut stream = connect(&proxy).await;
        assert_eq!(read_exact(&mut stream, 2).await, b"hi", "answers pass");
        stream.write_all(b"kept").await.unwrap();
        let silent = tokio::time::timeout(SILENCE, received.recv()).await;
        assert!(silent.is_err(), "the request passed: {silent:?}");
        proxy.heal();
        let got = tokio::time::timeout(DEADLINE, received.recv())
            .await
            .unwrap();
        assert_eq!(got.unwrap(), b"kept", "held bytes arrive on heal");
    }

    #[tokio::test]
    async fn an_answer_blackhole_lets_requests_through() {
        let (target, mut received) = greeter().await;
        let proxy = FaultProxy::start(target).await.unwrap();
        proxy.set_toxics(toxics(Direction::Answer, Toxic::Blackhole));
        let mut stream = connect(&proxy).await;
        stream.write_all(b"sent").await.unwrap();
        let got = tokio::time::timeout(DEADLINE, received.recv())
            .await
            .unwrap();
        assert_eq!(got.unwrap(), b"sent", "requests pass");
        assert_silent(&mut stream).await;
        proxy.heal();
        assert_eq!(read_exact(&mut stream, 2).await, b"hi");
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
