//! Toxics: Toxiproxy's vocabulary of network faults, set on a [`super::FaultProxy`] per
//! direction of its connections and stacked (several toxics may hold at once). The *request*
//! direction carries the bytes from the side that opened the TCP connection, the *answer*
//! direction the bytes back to it.
//!
//! | toxic | what it does to a direction |
//! |---|---|
//! | [`Toxic::Latency`] | each chunk written `delay` ± `jitter` (uniform, seeded per connection) after it was read |
//! | [`Toxic::Bandwidth`] | at most `bytes_per_second`: each chunk written in pieces of 10 ms worth, paced |
//! | [`Toxic::Slice`] | each chunk cut into pieces of `bytes`, written `every` apart |
//! | [`Toxic::SlowClose`] | an EOF passed on only `delay` after it was read |
//! | [`Toxic::LimitData`] | the connection closed once `bytes` went that way since the toxic was set |
//! | [`Toxic::Blackhole`] | nothing forwarded that way (the proxy stops reading it); the other way passes |
//!
//! Loss ([`Toxics::loss`]) is a property of connections, not of a direction: each *new*
//! connection is closed at once (accepted, then closed: the client sees its peer close) with
//! probability `rate`, drawn from an RNG seeded with the connection's number, so a run is
//! reproducible. Open connections are not touched; chunks are never dropped (TCP would
//! retransmit them; a lost chunk inside a stream is a stalled connection, which `blackhole`
//! is).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// A direction of a proxied connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Direction {
    /// From the side that opened the connection to the target.
    Request,
    /// From the target back to the side that opened the connection.
    Answer,
}

/// One toxic on one direction. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) enum Toxic {
    /// Each chunk held `delay` ± `jitter` (uniform) before it is written.
    Latency {
        /// The mean delay.
        delay: Duration,
        /// The half-width of the uniform spread around `delay`.
        jitter: Duration,
    },
    /// At most this many bytes a second.
    Bandwidth {
        /// The rate (at least 1).
        bytes_per_second: u64,
    },
    /// Each chunk cut into pieces of `bytes`, `every` apart.
    Slice {
        /// The size of a piece (at least 1).
        bytes: usize,
        /// The pause after each piece.
        every: Duration,
    },
    /// An EOF passed on `delay` late.
    SlowClose {
        /// How late.
        delay: Duration,
    },
    /// The connection closed after this many bytes that way.
    LimitData {
        /// How many bytes pass.
        bytes: u64,
    },
    /// Nothing passes that way.
    Blackhole,
}

/// The toxics of a proxy: per direction, and the loss rate of new connections. They travel
/// as JSON to a proxy in a container ([`super::container`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Toxics {
    request: Vec<Toxic>,
    answer: Vec<Toxic>,
    /// The probability that a new connection is closed at once.
    loss: f64,
}

impl Toxics {
    /// Adds `toxic` on `direction`.
    pub(crate) fn add(&mut self, direction: Direction, toxic: Toxic) {
        match direction {
            Direction::Request => self.request.push(toxic),
            Direction::Answer => self.answer.push(toxic),
        }
    }

    /// Every chunk both ways cut into single bytes, `every` apart (the `slice` run mode).
    pub(crate) fn sliced(every: Duration) -> Toxics {
        let slice = Toxic::Slice { bytes: 1, every };
        Toxics {
            request: vec![slice],
            answer: vec![slice],
            loss: 0.0,
        }
    }

    /// Adds a loss of new connections at `rate` (0 to 1); two losses combine as independent
    /// draws.
    pub(crate) fn add_loss(&mut self, rate: f64) {
        self.loss = 1.0 - (1.0 - self.loss) * (1.0 - rate.clamp(0.0, 1.0));
    }

    fn on(&self, direction: Direction) -> &[Toxic] {
        match direction {
            Direction::Request => &self.request,
            Direction::Answer => &self.answer,
        }
    }

    /// Whether `direction` forwards nothing.
    pub(super) fn blackholed(&self, direction: Direction) -> bool {
        self.on(direction).contains(&Toxic::Blackhole)
    }

    /// Whether the `number`th connection is lost (closed on accept).
    pub(super) fn loses(&self, number: u64) -> bool {
        self.loss > 0.0 && StdRng::seed_from_u64(number).random_bool(self.loss)
    }

    /// How long the next chunk on `direction` is held: the sum of its latencies, each drawn
    /// within its jitter.
    pub(super) fn latency(&self, direction: Direction, rng: &mut StdRng) -> Duration {
        self.on(direction)
            .iter()
            .map(|toxic| match *toxic {
                Toxic::Latency { delay, jitter } if jitter.is_zero() => delay,
                Toxic::Latency { delay, jitter } => {
                    let spread = rng.random_range(0..=2 * jitter.as_nanos() as u64);
                    (delay + Duration::from_nanos(spread)).saturating_sub(jitter)
                }
                _ => Duration::ZERO,
            })
            .sum()
    }

    /// How the bytes of `direction` are paced: `None` when they are written as read.
    pub(super) fn pace(&self, direction: Direction) -> Option<Pace> {
        let mut pace: Option<Pace> = None;
        for toxic in self.on(direction) {
            let (piece, every, per_byte) = match *toxic {
                Toxic::Slice { bytes, every } => (bytes.max(1), every, Duration::ZERO),
                Toxic::Bandwidth { bytes_per_second } => {
                    let rate = bytes_per_second.max(1);
                    // 10 ms worth of bytes per piece.
                    let piece = usize::try_from(rate / 100).unwrap_or(usize::MAX).max(1);
                    let per_byte = Duration::from_nanos(1_000_000_000 / rate);
                    (piece, Duration::ZERO, per_byte)
                }
                _ => continue,
            };
            let both = pace.get_or_insert(Pace {
                piece,
                every,
                per_byte,
            });
            both.piece = both.piece.min(piece);
            both.every = both.every.max(every);
            both.per_byte = both.per_byte.max(per_byte);
        }
        pace
    }

    /// How late an EOF on `direction` is passed on.
    pub(super) fn slow_close(&self, direction: Direction) -> Duration {
        self.on(direction)
            .iter()
            .map(|toxic| match *toxic {
                Toxic::SlowClose { delay } => delay,
                _ => Duration::ZERO,
            })
            .sum()
    }

    /// How many bytes may go on `direction` before the connection is closed.
    pub(super) fn limit(&self, direction: Direction) -> Option<u64> {
        self.on(direction)
            .iter()
            .filter_map(|toxic| match *toxic {
                Toxic::LimitData { bytes } => Some(bytes),
                _ => None,
            })
            .min()
    }
}

/// How a direction's bytes are written: pieces of at most `piece` bytes, each followed by a
/// pause of `every` or of its size times `per_byte`, whichever is longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pace {
    pub(super) piece: usize,
    every: Duration,
    per_byte: Duration,
}

impl Pace {
    /// The pause after a piece of `len` bytes.
    pub(super) fn gap(&self, len: usize) -> Duration {
        self.every
            .max(self.per_byte * u32::try_from(len).unwrap_or(u32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_stack_and_jitter_stays_within_its_bound() {
        let mut toxics = Toxics::default();
        let ms = Duration::from_millis;
        toxics.add(
            Direction::Answer,
            Toxic::Latency {
                delay: ms(100),
                jitter: ms(20),
            },
        );
        toxics.add(
            Direction::Answer,
            Toxic::Latency {
                delay: ms(10),
                jitter: Duration::ZERO,
            },
        );
        let mut rng = StdRng::seed_from_u64(7);
        let drawn: Vec<_> = (0..200)
            .map(|_| toxics.latency(Direction::Answer, &mut rng))
            .collect();
        assert!(
            drawn.iter().all(|d| (ms(90)..=ms(130)).contains(d)),
            "{drawn:?}"
        );
        assert!(drawn.iter().any(|d| *d < ms(105)) && drawn.iter().any(|d| *d > ms(115)));
        assert_eq!(toxics.latency(Direction::Request, &mut rng), Duration::ZERO);
    }

    #[test]
    fn slice_and_bandwidth_pace_together() {
        let mut toxics = Toxics::default();
        toxics.add(
            Direction::Request,
            Toxic::Bandwidth {
                bytes_per_second: 1000,
            },
        );
        assert_eq!(
            toxics.pace(Direction::Request).unwrap().gap(10),
            Duration::from_millis(10)
        );
        toxics.add(
            Direction::Request,
            Toxic::Slice {
                bytes: 1,
                every: Duration::from_millis(5),
            },
        );
        let pace = toxics.pace(Direction::Request).unwrap();
        assert_eq!(pace.piece, 1);
        assert_eq!(pace.gap(1), Duration::from_millis(5));
        assert_eq!(toxics.pace(Direction::Answer), None);
    }

    #[test]
    fn loss_is_drawn_per_connection_number() {
        let mut toxics = Toxics::default();
        assert!(!(0..100).any(|n| toxics.loses(n)));
        toxics.add_loss(1.0);
        assert!((0..100).all(|n| toxics.loses(n)));
        let mut half = Toxics::default();
        half.add_loss(0.5);
        let lost = (0..1000).filter(|n| half.loses(*n)).count();
        assert!((400..600).contains(&lost), "{lost}");
        assert_eq!(lost, (0..1000).filter(|n| half.loses(*n)).count());
    }
}
