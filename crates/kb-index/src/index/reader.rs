//! The reading side of the index: one tantivy reader, reloaded after every commit and every
//! background merge, one reload at a time.

use std::sync::{Arc, Mutex, PoisonError};

use tantivy::directory::{Directory, WatchCallback, WatchHandle};
use tantivy::{Index, IndexReader, ReloadPolicy, Searcher};

use crate::error::{Error, Result};

/// The reader searches use, with what keeps its reloads in order.
pub(super) struct Reader {
    /// Held for every reader reload, so reloads happen one at a time and none can install an
    /// older snapshot than the one before (see [`Reader::follow_merges`]).
    reloading: Arc<Mutex<()>>,
    reader: IndexReader,
    /// Reloads the reader when background merges change the index (dropped with the index).
    _follow_merges: Option<WatchHandle>,
}

impl Reader {
    /// A reader that follows the index's `meta.json`. `commit` reloads it at once, so a search sent
    /// after a write's answer finds the write; the policy adds the reloads after background merges,
    /// which change no document but leave fewer segments: each query pays per segment, and after a
    /// bulk import the merges often finish only after the last commit.
    pub(super) fn new(index: &Index) -> tantivy::Result<Reader> {
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Reader { reloading: Arc::new(Mutex::new(())), reader, _follow_merges: None })
    }

    /// Reloads the reader whenever the index's `meta.json` changes, which is how background
    /// merges show (they change no document, but leave fewer segments, and a query pays per
    /// segment). The reload holds `reloading`, like the reload in `commit`: tantivy's own
    /// `OnCommitWithDelay` reloads on its watcher thread without it, and a reload that read the
    /// old `meta.json` could finish after `commit`'s and install the older snapshot, so a search
    /// sent after a write's answer missed it (seen once in 1,021 read-your-write checks).
    pub(super) fn follow_merges(&mut self, index: &Index) -> Result<()> {
        // Not the writer itself: it (and its directory lock) must go when the index is dropped,
        // even while tantivy's watcher thread still runs this callback.
        let reloading = Arc::clone(&self.reloading);
        let reader = self.reader.clone();
        let callback = WatchCallback::new(move || {
            let _serialized = reloading.lock().unwrap_or_else(PoisonError::into_inner);
            if let Err(error) = reader.reload() {
                tracing::warn!("cannot reload the index reader after a merge: {error}");
            }
        });
        let handle = index.directory().watch(callback).map_err(|source| Error::Reload { source })?;
        self._follow_merges = Some(handle);
        Ok(())
    }

    /// Reloads the reader now (after a commit), holding `reloading`.
    pub(super) fn reload(&self) -> Result<()> {
        let _serialized = self.reloading.lock().unwrap_or_else(PoisonError::into_inner);
        self.reader.reload().map_err(|source| Error::Reload { source })
    }

    /// The snapshot of the index as of the last reload.
    pub(super) fn searcher(&self) -> Searcher {
        self.reader.searcher()
    }
}
