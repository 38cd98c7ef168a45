//! CPU starvation of a process (a step's `starve`): a SIGSTOP/SIGCONT duty cycle the harness
//! runs until the [`Starvation`] is dropped (a `feed`, the end of the step, a failure or a
//! cancelled run), which leaves the process running.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use model::lock::MutexExt;
use rustix::process::Signal;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::backend::process::signal;
use crate::error::BackendError;

/// A process stopped for `stopped` of every cycle and running for `running`; dropping it
/// ends the cycle and sends SIGCONT.
#[derive(Debug)]
pub(crate) struct Starvation {
    service: String,
    pid: u32,
    /// Whether it was fed; held while a signal is sent, so no SIGSTOP of the cycle can
    /// follow the last SIGCONT.
    fed: Arc<Mutex<bool>>,
    cycle: JoinHandle<()>,
}

impl Starvation {
    /// Starts the duty cycle on process `pid` of `service`, stopped phase first. Fails when
    /// the first SIGSTOP cannot be sent.
    pub(crate) fn start(
        service: &str,
        pid: u32,
        stopped: Duration,
        running: Duration,
    ) -> Result<Starvation, BackendError> {
        signal(service, pid, Signal::STOP)?;
        let fed = Arc::new(Mutex::new(false));
        let (name, cycle_fed) = (service.to_owned(), fed.clone());
        let cycle = tokio::spawn(async move {
            // Deadlines from one start, so the cycle does not drift with the signals' cost.
            let mut next = Instant::now();
            for (phase, then) in [(stopped, Signal::CONT), (running, Signal::STOP)]
                .into_iter()
                .cycle()
            {
                next += phase;
                sleep_until(next).await;
                let fed = cycle_fed.locked();
                if *fed {
                    return;
                }
                if let Err(e) = signal(&name, pid, then) {
                    tracing::info!("starvation of {name} ends: {e}");
                    return;
                }
            }
        });
        Ok(Starvation {
            service: service.to_owned(),
            pid,
            fed,
            cycle,
        })
    }
}

impl Drop for Starvation {
    fn drop(&mut self) {
        let mut fed = self.fed.locked();
        *fed = true;
        self.cycle.abort();
        // The process may have ended meanwhile: nothing to continue then.
        if let Err(e) = signal(&self.service, self.pid, Signal::CONT) {
            tracing::info!("feeding {}: {e}", self.service);
        }
    }
}
