//! How the collector takes its locks: one function every module uses, below them all.

use std::sync::{Mutex, MutexGuard};

/// Locks a std mutex, recovering the data of a lock poisoned by a panicking holder (the
/// accounting stays usable: every update is a single step).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
