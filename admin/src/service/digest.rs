//! The admin's config digest (`GET /actuator/digest`), computed once per committed version.
//!
//! Computing it reads and hashes everything committed (0.2 s at 10k selectors in a release
//! build), so an anonymous caller looping on it would load the database and slow every write.
//! The report is kept with the write count it was read at ([`Admin::writes`]): callers are
//! served the kept one until a write (or a pass-on of another admin's commits) moves the
//! count, and callers arriving during a computation wait for it and share its result.

use std::sync::Arc;

use model::DigestReport;
use tokio::sync::Mutex;

use super::Admin;
use crate::store::StoreError;

/// The last digest computed and the write count of the snapshot it was computed from.
#[derive(Debug, Default)]
pub(super) struct DigestCache(Mutex<Option<(u64, Arc<DigestReport>)>>);

impl Admin {
    /// The digest of everything committed, as of a write count no older than the one when
    /// the call began: computed only when a write came since the last computation.
    pub(crate) async fn digest(&self) -> Result<Arc<DigestReport>, StoreError> {
        // Held across the computation: concurrent callers wait and share its result.
        let mut cached = self.digest.0.lock().await;
        let writes = *self.writes.borrow();
        if let Some((version, report)) = cached.as_ref()
            && *version == writes
        {
            return Ok(Arc::clone(report));
        }
        let (version, snapshot) = self.versioned_snapshot().await?;
        let report = Arc::new(DigestReport::from(&snapshot.config));
        *cached = Some((version, Arc::clone(&report)));
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::future::join_all;

    use super::*;
    use crate::service::tests::selector;
    use crate::store::SelectorRecord;

    /// `n` divide selectors, stored in one transaction (10k creates one by one would take
    /// minutes in a debug build).
    async fn store_selectors(admin: &Admin, n: usize) {
        let records: Vec<SelectorRecord> = (0..n)
            .map(|i| SelectorRecord {
                name: format!("/bulk/{i}"),
                ..crate::store::tests::selector(&format!("bulk-{i:05}"), 1)
            })
            .collect();
        admin
            .store()
            .put_registration(&records, &[], None)
            .await
            .unwrap();
    }

    /// At 10k selectors the digest is computed once per version: a second call and concurrent
    /// calls get the very same report (no new computation), and a write gives a new one that
    /// counts it (the cache is never stale).
    #[tokio::test]
    async fn the_digest_is_computed_once_per_committed_version() {
        let store = crate::store::open(":memory:").await.unwrap();
        let admin = Admin::new(store).await.unwrap();
        store_selectors(&admin, 10_000).await;

        let first = admin.digest().await.unwrap();
        assert_eq!(first.selectors, 10_000);
        let second = admin.digest().await.unwrap();
        assert!(Arc::ptr_eq(&first, &second), "served from the cache");

        admin.create_selector(selector("/one-more")).await.unwrap();
        let concurrent = join_all((0..8).map(|_| admin.digest())).await;
        let after: Vec<_> = concurrent.into_iter().map(Result::unwrap).collect();
        assert_eq!(after[0].selectors, 10_001, "the write is in the digest");
        assert_ne!(after[0].digest, first.digest);
        assert!(
            after.iter().all(|r| Arc::ptr_eq(r, &after[0])),
            "concurrent callers share one computation"
        );
    }
}
