//! Whether a search hit is relevant enough to be shown unasked (auto-recall): a decision apart
//! from ranking. An explicit search ranks every candidate and shows the best whatever their
//! level; a prompt gets an experience only on evidence that it is about that experience.
//!
//! Two kinds of evidence count, either is enough:
//! - **The vectors:** the hit's cosine with the prompt reaches the model's relevance floor
//!   (`semantic::default_min_similarity`, calibrated by `tools/calibrate-floor.py` on the quality
//!   sets and 40 unrelated questions; `embedding.min_similarity` overrides it).
//! - **The words** (all there is without a model): the hit holds at least [`MIN_WORDS`] distinct
//!   content words of the prompt, and those words are at least [`MIN_SHARE`] of what the prompt
//!   says (idf-weighted, the prompt's words the store has never seen included:
//!   `kb_index::Evidence`). One shared word is never enough, however rare it is in a small store:
//!   "What is the capital of Mongolia? Answer in one word." shares "one" with an experience about
//!   running vitest "after one pass", and that is not evidence. Or the hit holds an identifier of
//!   the prompt that singles it out (the lookups search pins first; a quoted word is not one).
//!
//! Words that frame a request ("how do I", `kb_index`'s framing words) are not content words.
//!
//! How the word thresholds were calibrated: `kb-bench recall-gate` (see the README), on the
//! development sets only, each set's store (whole, and cut to about 50 rows) asked its own
//! questions (the labelled answer, when BM25 puts it in the top 3, should pass) and every other
//! family's questions plus `unrelated-queries.txt` (nothing should pass), leaving each set out in
//! turn: the share with the most answers shown while no other set's false recall exceeds 2% was
//! 0.55 in five folds of six (0.5 with debian-en left out). `MIN_WORDS` is a rule, not fitted.

/// What a search found that speaks for a hit, for [`Evidence::worth_showing_unasked`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// The hit's cosine with the query, when the vectors found it (ranking applies no floor).
    pub cosine: Option<f32>,
    /// The model's relevance floor for that cosine.
    pub floor: f32,
    /// What the hit holds of the query's content words, when BM25 found it.
    pub words: kb_index::Evidence,
    /// Whether the hit holds an identifier the query looks up (`ERR_4242`, `tsconfig.json`, held by
    /// no more experiences than the answer shows); a quoted string alone does not count.
    pub exact: bool,
}

/// The fewest distinct content words of the prompt a hit must hold to be shown on its words.
pub const MIN_WORDS: u32 = 2;

/// The smallest idf-weighted share of the prompt's content words a hit must hold to be shown on
/// its words.
pub const MIN_SHARE: f32 = 0.55;

impl Evidence {
    /// Whether the hit may be put into a prompt nobody asked it for.
    pub fn worth_showing_unasked(&self) -> bool {
        self.exact
            || self.cosine.is_some_and(|cosine| cosine >= self.floor)
            || words_are_evidence(self.words, MIN_WORDS, MIN_SHARE)
    }
}

/// Whether holding `words` of the prompt is evidence at these thresholds (the calibration tries
/// others).
pub fn words_are_evidence(words: kb_index::Evidence, min_words: u32, min_share: f32) -> bool {
    words.words >= min_words && words.share >= min_share
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: u32, share: f32) -> kb_index::Evidence {
        kb_index::Evidence { share, words }
    }

    #[test]
    fn one_shared_word_is_never_evidence() {
        let one = Evidence { words: words(1, 1.0), ..Evidence::default() };
        assert!(!one.worth_showing_unasked());
        let little = Evidence { words: words(3, MIN_SHARE - 0.01), ..Evidence::default() };
        assert!(!little.worth_showing_unasked());
        let enough = Evidence { words: words(2, MIN_SHARE), ..Evidence::default() };
        assert!(enough.worth_showing_unasked());
    }

    #[test]
    fn the_vectors_count_from_the_models_floor_and_a_lookup_always() {
        let below = Evidence { cosine: Some(0.82), floor: 0.83, ..Evidence::default() };
        assert!(!below.worth_showing_unasked());
        assert!(Evidence { cosine: Some(0.83), ..below }.worth_showing_unasked());
        assert!(Evidence { exact: true, ..below }.worth_showing_unasked());
        assert!(!Evidence::default().worth_showing_unasked());
    }

    /// The words a hit holds, measured by the real index: the prompt of issue 25 shares "one"
    /// with an experience of a small store, which is no evidence; a prompt about it is.
    #[test]
    fn the_index_measures_the_words_a_hit_holds_unseen_ones_included() {
        let index = kb_index::ExperienceIndex::open_in_ram().unwrap();
        let doc = |id, task, resource, result| kb_index::IndexDoc {
            id,
            task,
            resource,
            result,
            content: None,
            score: 4,
            status: kb_core::Status::Active,
            agent_id: None,
        };
        index
            .add_new(&[
                doc("vitest", "Run the vitest suite exactly once", "vitest --run", "Exits after one pass"),
                doc("node", "Pin the node version", ".nvmrc", "setup-node reads it"),
            ])
            .unwrap();
        index.commit(1).unwrap();
        let evidence = |query: &str| -> Vec<(String, kb_index::Evidence)> {
            let request = kb_index::SearchRequest {
                query,
                limit: 5,
                min_score: 1,
                agent_id: None,
                status: kb_core::Status::Active,
                coverage: true,
            };
            index.search(&request).unwrap().into_iter().map(|hit| (hit.id, hit.evidence)).collect()
        };
        let mongolia = evidence("What is the capital of Mongolia? Answer in one word.");
        assert_eq!(mongolia.len(), 1, "{mongolia:?}");
        let (_, words) = mongolia[0];
        assert_eq!(words.words, 1, "{words:?}");
        // One of the prompt's five content words ("capital", "mongolia", "answer", "one",
        // "word"; "what" frames the question), the other four never seen by the store.
        assert!(words.share <= 0.2 + 1e-6, "{words:?}");
        assert!(!Evidence { words, ..Evidence::default() }.worth_showing_unasked());
        let about = evidence("run the vitest suite once");
        assert_eq!(about[0].0, "vitest");
        assert_eq!(about[0].1.words, 4, "{about:?}");
        assert!((about[0].1.share - 1.0).abs() < 1e-5, "{about:?}");
        assert!(Evidence { words: about[0].1, ..Evidence::default() }.worth_showing_unasked());
    }
}
