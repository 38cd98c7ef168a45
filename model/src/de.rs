//! Serde helpers for ShenYu's two JSON dialects.

use serde::{Deserialize, Deserializer};

/// Reads a JSON `null` (Jackson writes them) as the type's default, like a missing field.
pub(crate) fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Reads a JSON `null` or a missing field as `true` (ShenYu's default for e.g. `continued`).
pub(crate) fn null_true<'de, D>(d: D) -> Result<bool, D::Error>
where
    D: Deserializer<'de>,
{
    Ok(Option::<bool>::deserialize(d)?.unwrap_or(true))
}

/// `true`, as a serde default function.
pub(crate) fn r#true() -> bool {
    true
}
