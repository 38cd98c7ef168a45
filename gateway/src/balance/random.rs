//! Weighted random (ShenYu `RandomLoadBalancer`): all effective weights equal (including all
//! zero) → uniform over every upstream; otherwise P(i) = wᵢ / Σw, weight-0 entries never chosen.

use rand::Rng;

use super::{Upstream, effective_weight};

/// The index chosen among at least two upstreams.
pub(crate) fn pick(upstreams: &[Upstream], now_ms: i64, rng: &mut impl Rng) -> Option<usize> {
    let weights = upstreams.iter().map(|u| effective_weight(&u.data, now_ms));
    let mut total: i64 = 0;
    let mut first = None;
    let mut same = true;
    for w in weights.clone() {
        total += i64::from(w.max(0));
        same &= *first.get_or_insert(w) == w;
    }
    if upstreams.is_empty() {
        return None;
    }
    if same || total <= 0 {
        return Some(rng.random_range(0..upstreams.len()));
    }
    let mut offset = rng.random_range(0..total);
    for (i, w) in weights.enumerate() {
        offset -= i64::from(w.max(0));
        if offset < 0 {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::DivideUpstream;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn up(url: &str, weight: i32, status: bool) -> Upstream {
        let data = DivideUpstream {
            upstream_url: url.to_owned(),
            weight,
            status,
            ..Default::default()
        };
        Upstream {
            scheme: http::uri::Scheme::HTTP,
            authority: url.parse().unwrap(),
            host: url.parse().unwrap(),
            data,
        }
    }

    fn counts(ups: &[Upstream], n: usize) -> Vec<usize> {
        let mut rng = StdRng::seed_from_u64(7);
        let mut c = vec![0; ups.len()];
        for _ in 0..n {
            c[pick(ups, 0, &mut rng).unwrap()] += 1;
        }
        c
    }

    #[test]
    fn weights_shape_the_distribution() {
        let c = counts(&[up("a:1", 90, true), up("b:1", 10, true)], 10_000);
        assert!((8_500..9_500).contains(&c[0]), "{c:?}");
    }

    #[test]
    fn weight_zero_never_chosen_unless_all_equal() {
        let c = counts(&[up("a:1", 0, true), up("b:1", 10, true)], 1_000);
        assert_eq!(c[0], 0);
        let c = counts(&[up("a:1", 0, true), up("b:1", 0, true)], 1_000);
        assert!(c[0] > 300 && c[1] > 300, "{c:?}");
    }

    #[test]
    fn warmup_ramps_weight() {
        let mut u = up("a:1", 100, true).data;
        u.timestamp = 1_000;
        u.warmup = 10_000;
        assert_eq!(effective_weight(&u, 6_000), 50);
        assert_eq!(effective_weight(&u, 1_001), 1);
        assert_eq!(effective_weight(&u, 20_000), 100);
        u.status = false;
        assert_eq!(effective_weight(&u, 20_000), 0);
    }

    #[test]
    fn single_upstream_is_returned_as_is() {
        let ups = [up("a:1", 0, true)];
        assert_eq!(
            super::super::pick(&ups, 0).unwrap().data.upstream_url,
            "a:1"
        );
    }
}
