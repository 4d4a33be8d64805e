//! The daemon's BM25 index rebuilt in process over the rows it imported, for the raw BM25
//! scores and coverage that the fusions compared in `quality` start from.

use std::collections::HashMap;

use anyhow::Context as _;

use super::sets::CorpusRow;
use super::{HYBRID_DEPTH, IMPORT_BATCH};

/// The rows the daemon imported, in an in-process index like the daemon's, for the BM25
/// candidates a hybrid search fuses (raw scores and coverage): over the socket, BM25 mode
/// answers with its own ranking's scores (`fusion::keyword`), not the raw ones a fusion starts
/// from. Only the rows the daemon stored (under the experience each became) are indexed, so
/// the candidates are the daemon's but for redaction, which none of the sets trips.
pub(super) struct TwinIndex<'a> {
    index: kb_index::ExperienceIndex,
    experience_of_row: HashMap<&'a str, &'a str>,
}

impl<'a> TwinIndex<'a> {
    pub(super) fn build(
        corpus: &'a [CorpusRow],
        rows_of_experience: &'a HashMap<String, Vec<&'a str>>,
    ) -> anyhow::Result<Self> {
        let experience_of_row: HashMap<&str, &str> = rows_of_experience
            .iter()
            .flat_map(|(experience, rows)| rows.iter().map(move |row| (*row, experience.as_str())))
            .collect();
        let index = kb_index::ExperienceIndex::open_in_ram().context("cannot open an in-process index")?;
        // Merged rows are one experience in the daemon: the first row stands for it.
        let docs: Vec<kb_index::IndexDoc<'_>> = corpus
            .iter()
            .filter(|row| {
                experience_of_row
                    .get(row.id.as_str())
                    .is_some_and(|experience| rows_of_experience[*experience].first() == Some(&row.id.as_str()))
            })
            .map(|row| {
                let (task, resource, result) = row.fields();
                kb_index::IndexDoc {
                    id: row.id.as_str(),
                    task,
                    resource,
                    result,
                    content: None,
                    score: row.score.unwrap_or(3),
                    status: kb_core::Status::Active,
                    agent_id: None,
                }
            })
            .collect();
        for batch in docs.chunks(IMPORT_BATCH) {
            index.add_new(batch).context("cannot index the rows in process")?;
        }
        index.commit(1).context("cannot commit the in-process index")?;
        Ok(TwinIndex { index, experience_of_row })
    }

    /// BM25's candidates for `query` by experience id, as deep as a hybrid search looks, and
    /// each one's coverage.
    pub(super) fn candidates(&self, query: &str) -> anyhow::Result<(Ranked, HashMap<String, f32>)> {
        let request = kb_index::SearchRequest {
            query,
            limit: HYBRID_DEPTH,
            min_score: 1,
            agent_id: None,
            status: kb_core::Status::Active,
            coverage: true,
        };
        let hits = self.index.search(&request).with_context(|| format!("in-process search for {query:?} failed"))?;
        let mut bm25 = Vec::with_capacity(hits.len());
        let mut coverage = HashMap::with_capacity(hits.len());
        for hit in hits {
            let experience = self.experience_of_row[hit.id.as_str()].to_owned();
            coverage.insert(experience.clone(), hit.coverage);
            bm25.push((experience, hit.bm25));
        }
        Ok((bm25, coverage))
    }

    /// The BM25 score and coverage of each of `experiences` for `query` wherever a search ranks
    /// them (`ExperienceIndex::score`), by experience id; those holding no word of it are left
    /// out (their score is 0).
    pub(super) fn scores(
        &self,
        query: &str,
        experiences: &[&str],
        rows_of_experience: &HashMap<String, Vec<&str>>,
    ) -> anyhow::Result<Vec<(String, f32, f32)>> {
        let rows: Vec<&str> = experiences
            .iter()
            .filter_map(|id| rows_of_experience.get(*id).and_then(|rows| rows.first()).copied())
            .collect();
        let hits = self.index.score(query, &rows).with_context(|| format!("in-process scores for {query:?} failed"))?;
        Ok(hits
            .into_iter()
            .map(|hit| (self.experience_of_row[hit.id.as_str()].to_owned(), hit.bm25, hit.coverage))
            .collect())
    }

    /// How many rows can hold `text` (`ExperienceIndex::max_holders`, as the daemon's pinning
    /// asks its own index).
    pub(super) fn max_holders(&self, text: &str) -> anyhow::Result<u64> {
        self.index.max_holders(text).with_context(|| format!("in-process holders of {text:?} failed"))
    }
}

/// Experience ids with their scores, best first.
type Ranked = Vec<(String, f32)>;
