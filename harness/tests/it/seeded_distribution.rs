//! A `distribution` check with `seed:` replays on the host backend: two runs of the same case
//! with the same seed (`concurrency: 1`) count exactly the same picks per upstream, and a run
//! with another seed counts different ones (the reference gateway's `PUT /actuator/seed`).
//!
//! Trial: `seeded_distribution::replays@websocket`.

use std::collections::BTreeMap;
use std::path::Path;

use harness::judge::Measurements;
use harness::{Backend, BackendKind, ProcessEnv, RunOptions};
use libtest_mimic::{Failed, Trial};
use model::SyncMode;

/// An 80/20 random split, 300 requests one at a time, seeded with `seed`.
fn case(seed: u64) -> String {
    format!(
        "
name: seeded_split
modes: [websocket]
upstreams: [alpha, beta]
backends: [host]
setup:
  selectors:
    - name: split
      plugin: divide
      conditions: [{{ paramType: uri, operator: startsWith, paramValue: /split/ }}]
      upstreams: [{{ upstream: alpha, weight: 80 }}, {{ upstream: beta, weight: 20 }}]
      rules:
        - name: all
          conditions: [{{ paramType: uri, operator: startsWith, paramValue: /split/ }}]
          handle: {{ loadBalance: random, retry: 0 }}
wait:
  probe: {{ request: {{ path: /split/probe }}, expect: {{ status: 200, route: present }} }}
checks:
  - name: seeded
    distribution:
      request: {{ path: /split/x }}
      selector: split
      requests: 300
      concurrency: 1
      shares: {{ alpha: 80, beta: 20 }}
      seed: {seed}
"
    )
}

/// The counts per upstream of one run with `seed`.
fn counts(seed: u64) -> Result<BTreeMap<String, u64>, Failed> {
    let scenario = harness::scenario::parse_str(Path::new("seeded.yaml"), &case(seed))?;
    let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
    let backend = Backend::new(BackendKind::Host, bin_dir)?;
    let opts = RunOptions {
        backend: BackendKind::Host,
        ..RunOptions::from_env(&ProcessEnv)
    };
    let record = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(harness::run_case(
            &scenario,
            SyncMode::Websocket,
            &backend,
            &opts,
            &|_| {},
        ))?;
    // The case's one check, and the service-log check every case ends with.
    match &record.checks[..] {
        [check, logs] if logs.name == "service logs" => match &check.measurements {
            Measurements::Distribution(s) if s.seed == Some(seed) && s.unseeded.is_none() => {
                Ok(s.observed.clone())
            }
            other => Err(format!("not a seeded distribution: {other:?}").into()),
        },
        other => Err(format!("{} checks", other.len()).into()),
    }
}

fn replays() -> Result<(), Failed> {
    let (first, again, other) = (counts(42)?, counts(42)?, counts(43)?);
    if first != again {
        return Err(format!("seed 42 counted {first:?}, then {again:?}").into());
    }
    if first == other {
        return Err(format!("seeds 42 and 43 both counted {first:?}").into());
    }
    Ok(())
}

/// The trial.
pub(crate) fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "seeded_distribution::replays@websocket",
        replays,
    )]
}
