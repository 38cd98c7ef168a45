//! The crate's one lock-poison policy (see the crate docs): a poisoned [`Mutex`] is used as
//! it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, ignoring poisoning: every critical section in the gateway leaves its data
/// consistent at each step (a counter, a cache entry, a list of held events), so a panic in
/// another holder does not make it unusable, and the gateway keeps serving.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
