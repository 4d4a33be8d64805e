//! The reading side of the index: one tantivy reader, reloaded after every commit and every
//! background merge, one reload at a time, and the view searches use (`view.rs`): its snapshot
//! with the documents staged since.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use tantivy::directory::{Directory, WatchCallback, WatchHandle};
use tantivy::{Index, IndexReader, ReloadPolicy};

use super::overlay::Overlay;
use super::view::View;
use crate::error::{Error, Result};
use crate::schema::{Fields, build_schema};

/// The view searches use, swapped whole.
type ViewSlot = Arc<RwLock<Arc<View>>>;

/// The reader searches use, with what keeps its reloads in order.
pub(super) struct Reader {
    /// Held for every reader reload, so reloads happen one at a time and none can install an
    /// older snapshot than the one before (see [`Reader::follow_merges`]).
    reloading: Arc<Mutex<()>>,
    reader: IndexReader,
    view: ViewSlot,
    /// Held for every change of `view`, so that none is lost to another made meanwhile.
    swapping: Arc<Mutex<()>>,
    fields: Fields,
    /// Reloads the reader when background merges change the index (dropped with the index).
    _follow_merges: Option<WatchHandle>,
}

impl Reader {
    /// A reader that follows the index's `meta.json`. `commit` reloads it at once, so a search sent
    /// after a write's answer finds the write; the policy adds the reloads after background merges,
    /// which change no document but leave fewer segments: each query pays per segment, and after a
    /// bulk import the merges often finish only after the last commit.
    pub(super) fn new(index: &Index) -> tantivy::Result<Reader> {
        let reader: IndexReader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        let (_, fields) = build_schema();
        let view = View::new(reader.searcher(), Arc::default(), fields)?;
        Ok(Reader {
            reloading: Arc::new(Mutex::new(())),
            reader,
            view: Arc::new(RwLock::new(Arc::new(view))),
            swapping: Arc::new(Mutex::new(())),
            fields,
            _follow_merges: None,
        })
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
        let (view, swapping, fields) = (Arc::clone(&self.view), Arc::clone(&self.swapping), self.fields);
        let callback = WatchCallback::new(move || {
            let _serialized = reloading.lock().unwrap_or_else(PoisonError::into_inner);
            // The same staged documents over the merged segments, whose document ids changed.
            let reloaded = reader.reload().and_then(|()| {
                let _swapping = swapping.lock().unwrap_or_else(PoisonError::into_inner);
                let overlay = Arc::clone(&current(&view).overlay);
                View::new(reader.searcher(), overlay, fields).map(|reloaded| swap(&view, reloaded))
            });
            if let Err(error) = reloaded {
                tracing::warn!("cannot reload the index reader after a merge: {error}");
            }
        });
        let handle = index.directory().watch(callback).map_err(|source| Error::Reload { source })?;
        self._follow_merges = Some(handle);
        Ok(())
    }

    /// Holds off every other reload, for a commit and the reload after it: a reload after a
    /// merge that read the new `meta.json` before the commit's own reload would otherwise show
    /// the committed documents twice, from the segments and still staged.
    pub(super) fn lock_reloading(&self) -> MutexGuard<'_, ()> {
        self.reloading.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reloads the reader now, after a commit that took the first `committed` staged writes:
    /// searches see the new segments with the writes staged after those (while the commit ran).
    /// The caller holds [`Reader::lock_reloading`].
    pub(super) fn reload_committed(&self, committed: usize) -> Result<()> {
        self.reader.reload().map_err(|source| Error::Reload { source })?;
        let _swapping = self.lock_swapping();
        let rest = self.view().overlay.after(committed);
        let view = View::new(self.reader.searcher(), Arc::new(rest), self.fields)
            .map_err(|source| Error::Reload { source })?;
        swap(&self.view, view);
        Ok(())
    }

    /// Makes `stage`'s changes of the staged documents visible; `stage` returns the ids it newly
    /// shadowed.
    pub(super) fn restage(&self, stage: impl FnOnce(&mut Overlay) -> Vec<String>) -> tantivy::Result<()> {
        let _swapping = self.lock_swapping();
        let view = self.view();
        let mut overlay = Overlay::clone(&view.overlay);
        let newly_shadowed = stage(&mut overlay);
        let restaged = view.restaged(Arc::new(overlay), &newly_shadowed)?;
        swap(&self.view, restaged);
        Ok(())
    }

    /// Drops every staged write (the index is being cleared).
    pub(super) fn unstage(&self) -> tantivy::Result<()> {
        let _swapping = self.lock_swapping();
        let view = View::new(self.view().searcher.clone(), Arc::default(), self.fields)?;
        swap(&self.view, view);
        Ok(())
    }

    fn lock_swapping(&self) -> MutexGuard<'_, ()> {
        self.swapping.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What searches see now.
    pub(super) fn view(&self) -> Arc<View> {
        current(&self.view)
    }
}

fn current(view: &ViewSlot) -> Arc<View> {
    Arc::clone(&view.read().unwrap_or_else(PoisonError::into_inner))
}

fn swap(view: &ViewSlot, new: View) {
    *view.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(new);
}
