//! The workspace's one lock-poison policy: a poisoned `std::sync::Mutex` is taken over.
//!
//! Every critical section in gantry leaves what it guards whole between statements (an update
//! is one assignment or one collection operation), so a panic in one holder poisons the lock
//! without leaving the data wrong. Taking the guard over keeps the process serving: a request
//! handler that panics must not take the admin's token table, the gateway's plugin state or a
//! harness run's records down with it. Every crate locks through [`MutexExt::locked`], never
//! `lock().unwrap()` or `lock().expect(..)`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// [`MutexExt::locked`]: the lock under the workspace's poison policy.
pub trait MutexExt<T: ?Sized> {
    /// Locks, taking a poisoned lock over (see the module docs).
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> MutexExt<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_over_with_its_data() {
        let m = std::sync::Arc::new(Mutex::new(vec![1]));
        let held = m.clone();
        let panicked = std::thread::spawn(move || {
            let mut v = held.lock().unwrap();
            v.push(2);
            panic!("a holder panics");
        })
        .join();
        assert!(panicked.is_err());
        assert!(m.is_poisoned());
        assert_eq!(*m.locked(), [1, 2]);
    }
}
