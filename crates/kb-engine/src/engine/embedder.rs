//! The embedding loop: loads the model, embeds the backlog in runs, and reports through
//! [`Pulse`] to whoever runs it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::semantic::{self, Semantic};
use crate::stats::Cause;

use super::Engine;

/// A text any working model embeds: tells a model that fails from a text it cannot take.
pub(super) const EMBEDDING_PROBE: &str = "a short probe text";

/// What a background loop of the engine (the embedder) tells whoever runs it, and asks it:
/// the engine knows nothing of the daemon's supervisor, so they speak through this.
pub trait Pulse {
    /// Whether the loop should return: the daemon is stopping.
    fn stopping(&self) -> bool;
    /// Called between units of work; an error ends the loop (the supervisor's fault switch).
    fn checkpoint(&self) -> anyhow::Result<()>;
    /// A unit of work went well.
    fn healthy(&self);
    /// The work fails for this reason and is retried.
    fn degraded(&self, reason: String);
    /// The loop is about to return with nothing to do, for this reason.
    fn off(&self, reason: &str);
}

/// The ids of a batch being embedded: whatever was not stored goes back to the backlog when the
/// batch is dropped, whether it failed or the embedding thread panicked, so no experience is
/// left without a vector until the next restart.
pub(super) struct BatchInFlight<'a> {
    semantic: &'a Semantic,
    ids: &'a [String],
    stored: HashSet<String>,
}

impl Drop for BatchInFlight<'_> {
    fn drop(&mut self) {
        let remaining: Vec<String> = self.ids.iter().filter(|id| !self.stored.contains(id.as_str())).cloned().collect();
        if !remaining.is_empty() {
            self.semantic.requeue(&remaining);
        }
        self.semantic.batch_done();
    }
}

impl Engine {
    /// Keeps the embedding model's background work going: loads the model (retrying while it
    /// cannot), fills the vector index, then embeds the backlog in batches until `pulse` says
    /// the daemon stops. Returns an error when the stored vectors cannot be loaded (whoever
    /// runs this starts it again); a batch that fails is put back and retried.
    pub fn run_embedder(self: &Arc<Self>, pulse: &dyn Pulse) -> anyhow::Result<()> {
        let embedder = loop {
            if self.semantic.choice().spec.is_none() {
                pulse.off("embeddings are off in the configuration");
                return Ok(());
            }
            if pulse.stopping() {
                return Ok(());
            }
            pulse.checkpoint()?;
            if let Some(embedder) = self.semantic.load_model() {
                break embedder;
            }
            // A model that cannot load (no download, no runtime) is a setting to fix, shown as
            // the embedder's state; searches go on by BM25, so the service is not failing.
            pulse.healthy();
            let retry_at = Instant::now() + self.semantic.choice().retry;
            while Instant::now() < retry_at {
                if pulse.stopping() {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        };
        if let Err(error) = self.semantic.attach(&self.lock_writer(), embedder.as_ref()) {
            let message = format!("cannot load the stored vectors: {error:#}");
            self.last_error.set(Cause::Embedder, message.clone());
            anyhow::bail!(message);
        }
        pulse.healthy();
        // Search is ready on the main session; the query session follows (a second or two), on
        // a thread of its own: the backlog does not wait for it, and a load that never ends (a
        // model file on a stalled disk) holds up nothing but itself.
        let (engine, main) = (Arc::clone(self), Arc::clone(&embedder));
        let spawned = std::thread::Builder::new()
            .name("query-session".to_owned())
            .spawn(move || engine.semantic.load_query_session(&main));
        if let Err(error) = spawned {
            tracing::warn!(
                "search queries share the embedding model's session with writes: no thread to load theirs: {error}"
            );
        }
        // The backlog's runs are background work: below the searches' priority, as the write
        // lane's (after the query session's thread was started: it would inherit it).
        crate::lane::lower_priority();
        crate::memory::release_free_memory();
        let model_id = embedder.model_id().to_owned();
        let mut embedded_since_trim = false;
        while !pulse.stopping() {
            pulse.checkpoint()?;
            let ids = self.semantic.take_backlog(semantic::BACKLOG_WINDOW, Duration::from_millis(500));
            // The store's window share, when it is due (the store changed by a tenth since); a
            // reader connection is held only while the sample is read.
            let sample = |n| Ok(self.reader().sample_embedding_sources(n)?);
            if let Err(error) = self.semantic.measure_window_share(sample, embedder.as_ref()) {
                tracing::warn!("cannot measure how much of the store's texts the model sees: {error:#}");
            }
            if ids.is_empty() {
                if std::mem::take(&mut embedded_since_trim) {
                    // Half a second without work: the activations of the runs (ONNX Runtime's
                    // arena is off, so they went back to malloc; 170 MiB for a batch of long
                    // texts, measured by kb-embed's `examples/model_memory.rs`) go back to the system.
                    crate::memory::release_free_memory();
                }
                continue;
            }
            embedded_since_trim = true;
            let mut batch = BatchInFlight { semantic: &self.semantic, ids: &ids, stored: HashSet::new() };
            let embedded = self.embed_batch(embedder.as_ref(), &model_id, &ids, &mut batch.stored);
            match &embedded {
                Ok(_) => {
                    self.last_error.clear(Cause::Embedder);
                    pulse.healthy();
                }
                Err(error) => {
                    let message = format!("cannot embed experiences (will retry): {error:#}");
                    tracing::warn!("{message}");
                    self.last_error.set(Cause::Embedder, message.clone());
                    pulse.degraded(message);
                }
            }
            // Runs stored before a failure stay done; the rest go back (also on a panic).
            drop(batch);
            if embedded.is_err() {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Ok(())
    }

    /// A run the model refused, embedded text by text. A text it refuses alone is left without
    /// a vector (logged and shown as the last error; search finds it by its words, and the next
    /// start tries again), so that one bad text cannot hold up the backlog forever. When the
    /// model refuses a known-good probe as well, it is the model that fails: the run's error
    /// stands and the batch is retried.
    pub(super) fn embed_one_by_one(
        &self,
        embedder: &dyn kb_embed::Embedder,
        run: &[(String, String)],
        run_error: kb_embed::Error,
    ) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
        let mut embedded = Vec::with_capacity(run.len());
        let mut refused = Vec::new();
        for (id, text) in run {
            let outcome = {
                let _turn = self.semantic.backlog_turn();
                embedder.embed(&[text.as_str()])
            };
            match outcome {
                Ok(mut vectors) if vectors.len() == 1 => embedded.push((id.clone(), vectors.remove(0))),
                Ok(_) => refused.push((id, "no vector came back".to_owned())),
                Err(error) => refused.push((id, kb_embed::error_chain(&error))),
            }
        }
        if refused.is_empty() {
            return Ok(embedded);
        }
        let probed = {
            let _turn = self.semantic.backlog_turn();
            embedder.embed(&[EMBEDDING_PROBE])
        };
        if probed.is_err() {
            return Err(run_error.into());
        }
        for (id, reason) in refused {
            let message = format!("experience {id} left without a vector: the model refuses its text: {reason}");
            tracing::warn!("{message}");
            self.last_error.set(Cause::Refused, message);
        }
        Ok(embedded)
    }

    /// Embeds the experiences `ids` that are still active, in runs of similar length, and stores
    /// each run's vectors as soon as it is done (their ids into `stored`, so a failure later in
    /// the batch requeues only the rest). Every run takes the model's turn after the queries and
    /// writes waiting, and is cut shorter while searches are being made.
    pub(super) fn embed_batch(
        &self,
        embedder: &dyn kb_embed::Embedder,
        model_id: &str,
        ids: &[String],
        stored: &mut HashSet<String>,
    ) -> anyhow::Result<()> {
        let id_refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut sources: Vec<(String, String)> = self
            .reader()
            .embedding_sources(&id_refs)?
            .into_iter()
            .map(|source| {
                let text = semantic::embedding_text(&source.task, &source.resource, &source.result);
                (source.id, text)
            })
            .collect();
        sources.sort_by_cached_key(|(_, text)| kb_embed::estimated_tokens(text));
        let mut rest = sources.as_slice();
        while !rest.is_empty() {
            // The budget is looked at before every run: a search may have started meanwhile.
            let budget = self.semantic.run_token_budget();
            let run = semantic::runs(rest, budget, |(_, text)| kb_embed::estimated_tokens(text))[0];
            rest = &rest[run.len()..];
            let texts: Vec<&str> = run.iter().map(|(_, text)| text.as_str()).collect();
            let turn = self.semantic.backlog_turn();
            let started = Instant::now();
            let outcome = embedder.embed(&texts);
            let took = started.elapsed();
            drop(turn);
            self.semantic.pace_backlog(took);
            let embedded: Vec<(String, Vec<f32>)> = match outcome {
                Ok(vectors) => run.iter().map(|(id, _)| id.clone()).zip(vectors).collect(),
                Err(error) => self.embed_one_by_one(embedder, run, error)?,
            };
            let blobs: Vec<Vec<u8>> = embedded.iter().map(|(_, vector)| kb_embed::to_bytes(vector)).collect();
            let rows: Vec<(&str, &[u8])> =
                embedded.iter().zip(&blobs).map(|((id, _), blob)| (id.as_str(), blob.as_slice())).collect();
            let mut store = self.lock_writer();
            store.put_vectors(model_id, &rows)?;
            self.semantic.store_batch(model_id, &embedded);
            stored.extend(embedded.into_iter().map(|(id, _)| id));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use kb_core::NewExperience;
    use kb_proto::Paths;

    use super::*;
    use crate::config::EngineConfig;

    /// A model that refuses every text containing `refused`, or every text at all once broken:
    /// what the real models here never do, and what the backlog must survive.
    struct Picky {
        refused: &'static str,
        broken: AtomicBool,
    }

    impl kb_embed::Embedder for Picky {
        fn model_id(&self) -> &str {
            "picky"
        }

        fn dimensions(&self) -> usize {
            2
        }

        fn embed(&self, texts: &[&str]) -> kb_embed::Result<Vec<Vec<f32>>> {
            if self.broken.load(Ordering::Relaxed) || texts.iter().any(|text| text.contains(self.refused)) {
                return Err(kb_embed::Error::Embed {
                    model_id: "picky".into(),
                    n_texts: texts.len(),
                    reason: "refused".into(),
                });
            }
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        }
    }

    fn engine_with(tasks: &[&str]) -> (tempfile::TempDir, Arc<Engine>, Vec<String>) {
        let home = tempfile::tempdir().unwrap();
        let engine =
            Engine::open(Paths::resolve(Some(home.path().to_path_buf()), None), EngineConfig::default()).unwrap();
        engine.prepare_index();
        let ids = tasks
            .iter()
            .map(|task| {
                let new = NewExperience {
                    task: (*task).to_owned(),
                    resource: "r".into(),
                    result: "ok".into(),
                    ..NewExperience::default()
                };
                engine.submit(new).unwrap().id
            })
            .collect();
        (home, engine, ids)
    }

    #[test]
    fn a_text_the_model_refuses_is_left_out_and_the_rest_of_its_run_is_stored() {
        let (_home, engine, ids) = engine_with(&["deploy with helm", "poisoned text", "cache docker layers"]);
        let model = Picky { refused: "poisoned", broken: AtomicBool::new(false) };
        let mut stored = HashSet::new();
        engine.embed_batch(&model, "picky", &ids, &mut stored).expect("the batch goes on without the bad text");
        assert_eq!(stored, HashSet::from([ids[0].clone(), ids[2].clone()]));
        assert_eq!(engine.reader().vector_counts("picky").unwrap(), (2, 2));
        let (_, last_error) = engine.last_error.get().expect("the refusal is reported");
        assert!(last_error.contains(&ids[1]) && last_error.contains("refuses"), "{last_error}");
    }

    #[test]
    fn a_model_that_refuses_everything_fails_the_batch_so_it_is_retried() {
        let (_home, engine, ids) = engine_with(&["deploy with helm", "cache docker layers"]);
        let model = Picky { refused: "never", broken: AtomicBool::new(true) };
        let mut stored = HashSet::new();
        assert!(engine.embed_batch(&model, "picky", &ids, &mut stored).is_err());
        assert!(stored.is_empty());
        assert_eq!(engine.reader().vector_counts("picky").unwrap(), (0, 0));
    }
}
