//! The store's methods: submit, search, content, get, import, delete, list, export, review
//! (pending, approve, reject), reindex and backup.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use jsonrpsee::types::Params;
use kb_core::{Experience, NewExperience, Source, Status};
use kb_proto::method;
use kb_proto::wire;
use kb_store::ListFilter;

use super::{RpcResult, experience_id, invalid, page_limit, parse, register_write, rfc3339, to_rpc_error};
use crate::app::App;
use crate::trust::Provenance;
use kb_engine::engine::{CarriedVariant, Engine, ImportEntry, Reindexed, SearchMode, SearchQuery};
use kb_engine::semantic::Refresh;
use kb_engine::stats::Cause;

pub(super) fn register(module: &mut RpcModule<Arc<App>>) {
    register_write(module, method::SUBMIT, |params, app| {
        let engine = &app.engine;
        let started = Instant::now();
        let params: wire::SubmitParams = parse(params)?;
        let confirm = params.confirm;
        let new = new_experience(params)?;
        let submitted = if confirm { engine.submit_confirmed(new) } else { engine.submit(new) }
            .map_err(|error| to_rpc_error(engine, error))?;
        // The store takes writes again: an internal error of an earlier request has healed.
        engine.last_error.clear(Cause::Request);
        engine.submit_latency.record(started.elapsed());
        RpcResult::Ok(wire::SubmitResult {
            note: submitted.note(),
            duplicate_of: submitted.merged.then(|| submitted.id.clone()),
            similarity: submitted.similarity.map(|similarity| (similarity * 1000.0).round() / 1000.0),
            variant_kept: submitted.variant_kept,
            kept_apart_from: submitted
                .kept_apart
                .as_ref()
                .map(|kept| wire::KeptApartFrom { id: kept.similar_to.clone(), reason: kept.reason.clone() }),
            id: submitted.id,
            status: submitted.status.as_str().to_owned(),
            redactions: submitted
                .redactions
                .iter()
                .map(|redaction| (redaction.kind.to_owned(), redaction.count))
                .collect(),
            flags: submitted.flags,
        })
    });
    module
        .register_async_method(method::SEARCH, |params, app, _| async move {
            let engine = &app.engine;
            let started = Instant::now();
            let params: wire::SearchParams = parse(&params)?;
            let mode = match params.mode.as_deref() {
                None => SearchMode::Hybrid,
                Some(mode) => SearchMode::parse(mode)
                    .ok_or_else(|| invalid("mode", format!("must be hybrid, bm25 or vector, got {mode:?}")))?,
            };
            let origin = match params.origin.as_deref() {
                None => kb_engine::engine::Origin::All,
                Some(origin) => kb_engine::engine::Origin::parse(origin)
                    .ok_or_else(|| invalid("origin", format!("must be mine, team or all, got {origin:?}")))?,
            };
            let trusted = &app.config.hub.trusted;
            // What an agent may see, unless the user's own tool asks for everything (marked).
            let for_agents = |item: &kb_engine::engine::Found| crate::trust::agents_may_see(trusted, item);
            let query = SearchQuery {
                query: &params.query,
                top_k: params.top_k,
                min_score: params.min_score,
                agent_id: params.agent_id.as_deref(),
                mode,
                origin,
                visible: if params.unreviewed == Some(true) { None } else { Some(&for_agents) },
            };
            let (found, answered) = engine.search(query).await.map_err(|error| to_rpc_error(engine, error))?;
            engine.search_latency.record(started.elapsed());
            let results: Vec<wire::SearchHit> = found
                .into_iter()
                .map(|found| {
                    let provenance = Provenance::of_found(trusted, &found).label();
                    let experience = found.experience;
                    wire::SearchHit {
                        provenance,
                        id: experience.id.to_string(),
                        relevance: (found.relevance * 1000.0).round() / 1000.0,
                        has_content: experience.has_content,
                        source: experience.source.as_str().to_owned(),
                        created_at: rfc3339(experience.created_at_ms),
                        task: experience.task,
                        resource: experience.resource,
                        result: experience.result,
                        score: experience.score,
                        agent_id: experience.agent_id,
                    }
                })
                .collect();
            RpcResult::Ok(wire::SearchResult {
                count: results.len(),
                results,
                mode: answered.mode.as_str().to_owned(),
                note: answered.note,
            })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::CONTENT, |params, app, _| {
            let engine = &app.engine;
            let params: wire::ContentParams = parse(&params)?;
            let id = experience_id("experience_id", &params.experience_id)?;
            if params.unreviewed != Some(true) {
                let experience = engine.get(&id).map_err(|error| to_rpc_error(engine, error))?;
                if experience.status != Status::Active {
                    return Err(invalid(
                        "experience_id",
                        format!("{id} is {}; its content is shown with `kbctl show {id}`", experience.status.as_str()),
                    ));
                }
                let provenance = Provenance::of(engine, &app.config.hub.trusted, &experience);
                if !provenance.usable_by_agents() {
                    return Err(invalid(
                        "experience_id",
                        format!(
                            "{id} is {}; its content is shown with `kbctl show {id}`",
                            provenance.label().unwrap_or_default()
                        ),
                    ));
                }
            }
            let (content, content_type) = engine.content(&id).map_err(|error| to_rpc_error(engine, error))?;
            RpcResult::Ok(wire::ContentResult { experience_id: id, content, content_type })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::GET, |params, app, _| {
            let engine = &app.engine;
            let params: wire::GetParams = parse(&params)?;
            let id = experience_id("experience_id", &params.experience_id)?;
            let experience = engine.get(&id).map_err(|error| to_rpc_error(engine, error))?;
            let (variants, variants_total) =
                engine.variants(&id, GET_VARIANTS, GET_VARIANT_BYTES).map_err(|error| to_rpc_error(engine, error))?;
            let provenance = Provenance::of(engine, &app.config.hub.trusted, &experience).label();
            let mut record = record(experience);
            record.provenance = provenance;
            record.version = engine.version(&id).map_err(|error| to_rpc_error(engine, error))?;
            record.variants_total = (variants_total > variants.len()).then_some(variants_total);
            record.variants = variants.into_iter().map(variant_record).collect();
            record.variants_not_kept = engine
                .variants_not_kept(&id)
                .map_err(|error| to_rpc_error(engine, error))?
                .into_iter()
                .map(|(author, copies)| wire::NotKeptRecord { author, copies })
                .collect();
            record.origins = engine
                .origins(&id)
                .map_err(|error| to_rpc_error(engine, error))?
                .into_iter()
                .map(|origin| wire::OriginRecord {
                    hub_id: origin.hub_id,
                    author: origin.author,
                    machine: origin.machine,
                    merged: origin.merged,
                    hub_seq: origin.hub_seq,
                    conflict: origin.conflict,
                })
                .collect();
            RpcResult::Ok(record)
        })
        .expect("method names are unique");
    register_write(module, method::IMPORT, |params, app| {
        let engine = &app.engine;
        let params: wire::ImportParams = parse(params)?;
        let items = params
            .items
            .into_iter()
            .map(|item| {
                let item: wire::ImportItem = wire::parse_value(item).map_err(|error| error.to_string())?;
                import_item(item).map_err(|error| error.message().to_owned())
            })
            .collect();
        let imported = engine.import(items).map_err(|error| to_rpc_error(engine, error))?;
        engine.last_error.clear(Cause::Request);
        RpcResult::Ok(wire::ImportResult {
            ids: imported.ids,
            imported: imported.imported,
            duplicates: imported.duplicates,
            rejected: imported.rejected.into_iter().map(|(index, error)| wire::RejectedItem { index, error }).collect(),
        })
    });
    register_write(module, method::DELETE, |params, app| {
        let engine = &app.engine;
        let params: wire::DeleteParams = parse(params)?;
        if params.ids.is_empty() {
            return Err(invalid("ids", "must name at least one experience"));
        }
        let ids = params.ids.iter().map(|id| experience_id("ids", id)).collect::<RpcResult<Vec<_>>>()?;
        let (deleted, missing) = engine.delete(&ids).map_err(|error| to_rpc_error(engine, error))?;
        RpcResult::Ok(wire::DeleteResult { deleted, missing })
    });
    module
        .register_blocking_method(method::PENDING, |params, app, _| {
            let engine = &app.engine;
            let params: wire::PendingParams = parse(&params)?;
            let limit = page_limit(params.limit, 100)?;
            let held = engine.pending(limit).map_err(|error| to_rpc_error(engine, error))?;
            let trusted = &app.config.hub.trusted;
            let mut experiences: Vec<wire::PendingRecord> =
                held.into_iter().map(|held| pending_record(engine, trusted, held)).collect();
            // Then what is active but reaches no agent until reviewed: teammates' and extracted
            // experiences the user neither approved nor trusts the author of.
            let room = limit.saturating_sub(experiences.len());
            if params.unreviewed == Some(true) && room > 0 {
                let unreviewed = engine.unreviewed(room).map_err(|error| to_rpc_error(engine, error))?;
                experiences.extend(
                    unreviewed
                        .into_iter()
                        .filter(|experience| !Provenance::of(engine, trusted, experience).usable_by_agents())
                        .map(|experience| {
                            let held = kb_engine::engine::Held {
                                experience,
                                proposal: None,
                                similar: None,
                                reasons: Vec::new(),
                            };
                            pending_record(engine, trusted, held)
                        }),
                );
            }
            RpcResult::Ok(wire::PendingResult { count: experiences.len(), experiences })
        })
        .expect("method names are unique");
    register_write(module, method::APPROVE, |params, app| review(&app.engine, params, Status::Active));
    register_write(module, method::REJECT, |params, app| review(&app.engine, params, Status::Rejected));
    module
        .register_blocking_method(method::LIST, |params, app, _| {
            let engine = &app.engine;
            let params: wire::ListParams = parse(&params)?;
            let status =
                match params.status.as_deref() {
                    None => None,
                    Some(text) => Some(Status::parse(text).ok_or_else(|| {
                        invalid("status", format!("must be active, pending or rejected, got {text:?}"))
                    })?),
                };
            let limit = page_limit(params.limit, 50)?;
            let filter = ListFilter { status, agent_id: params.agent_id, before_id: params.before_id, limit };
            let experiences = engine.list(&filter).map_err(|error| to_rpc_error(engine, error))?;
            let next_before_id =
                (experiences.len() == limit).then(|| experiences.last().map(|last| last.id.to_string())).flatten();
            let trusted = &app.config.hub.trusted;
            let experiences: Vec<wire::ExperienceRecord> = experiences
                .into_iter()
                .map(|experience| {
                    let provenance = Provenance::of(engine, trusted, &experience).label();
                    wire::ExperienceRecord { provenance, ..record(experience) }
                })
                .collect();
            RpcResult::Ok(wire::ListResult { count: experiences.len(), experiences, next_before_id })
        })
        .expect("method names are unique");
    module
        .register_blocking_method(method::EXPORT, |params, app, _| {
            let engine = &app.engine;
            let params: wire::ExportParams = parse(&params)?;
            let limit = page_limit(params.limit, 500)?;
            let rows =
                engine.export_page(params.after_id.as_deref(), limit).map_err(|error| to_rpc_error(engine, error))?;
            let next_after_id =
                (rows.len() == limit).then(|| rows.last().map(|last| last.experience.id.to_string())).flatten();
            let items = rows
                .into_iter()
                .map(|row| {
                    let mut record = record(row.experience);
                    record.variants = row.variants.into_iter().map(variant_record).collect();
                    wire::ExportItem { record, content: row.content }
                })
                .collect();
            RpcResult::Ok(wire::ExportResult { items, next_after_id })
        })
        .expect("method names are unique");
    register_write(module, method::REINDEX, |params, app| {
        let engine = &app.engine;
        let started = Instant::now();
        let params: wire::ReindexParams = parse(params)?;
        let reindexed =
            engine.reindex(params.embeddings.unwrap_or(true)).map_err(|error| to_rpc_error(engine, error))?;
        let took_ms = started.elapsed().as_millis() as u64;
        RpcResult::Ok(reindex_result(reindexed, took_ms))
    });
    register_write(module, method::BACKUP, |params, app| {
        let engine = &app.engine;
        let params: wire::BackupParams = parse(params)?;
        let path = backup_path(&params.path)?;
        let bytes = engine.backup(&path).map_err(|error| to_rpc_error(engine, error))?;
        RpcResult::Ok(wire::BackupResult { path: params.path, bytes })
    });
}

fn reindex_result(reindexed: Reindexed, took_ms: u64) -> wire::ReindexResult {
    let (embeddings, queued_embeddings, model, note) = match reindexed.embeddings {
        None => ("skipped", 0, None, None),
        Some(Refresh::Queued { queued, model_id }) => ("queued", queued, Some(model_id), None),
        Some(Refresh::Deferred) => {
            let note =
                "the embedding model is still loading; every experience will be embedded again once it has loaded";
            ("deferred", 0, None, Some(note.to_owned()))
        }
        Some(Refresh::Unavailable { reason }) => {
            ("unavailable", 0, None, Some(format!("embeddings not redone: no embedding model ({reason})")))
        }
    };
    wire::ReindexResult {
        indexed: reindexed.indexed,
        took_ms,
        embeddings: Some(embeddings.to_owned()),
        queued_embeddings,
        model,
        note,
    }
}
/// The longest path the kernel takes (`PATH_MAX`, its NUL included).
const MAX_PATH_BYTES: usize = 4095;

/// Checks `kb.backup`'s path before SQLite sees it: SQLite takes file names as C strings, so
/// a NUL would cut the path short and the copy would land somewhere else, reported as 0 bytes
/// (issue 14).
fn backup_path(text: &str) -> RpcResult<PathBuf> {
    if text.is_empty() {
        return Err(invalid("path", "must not be empty"));
    }
    if let Some(position) = text.find('\0') {
        return Err(invalid("path", format!("must not contain a NUL character (found at byte {position})")));
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(invalid("path", format!("is {} bytes long, over the limit of {MAX_PATH_BYTES}", text.len())));
    }
    let path = PathBuf::from(text);
    if !path.is_absolute() {
        return Err(invalid("path", format!("must be an absolute path, got {text:?}")));
    }
    if text.ends_with('/') || path.file_name().is_none() {
        return Err(invalid("path", format!("must name a file, not a directory: {text:?}")));
    }
    let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(std::path::Path::new("/"));
    if !directory.is_dir() {
        return Err(invalid("path", format!("the directory {} does not exist", directory.display())));
    }
    Ok(path)
}

/// `kb.approve` and `kb.reject`: sets the status of the named experiences.
fn review(engine: &Engine, params: &Params<'_>, status: Status) -> RpcResult<wire::ReviewResult> {
    let params: wire::ReviewParams = parse(params)?;
    if params.ids.is_empty() {
        return Err(invalid("ids", "must name at least one experience"));
    }
    let ids = params.ids.iter().map(|id| experience_id("ids", id)).collect::<RpcResult<Vec<_>>>()?;
    let edit = match params.edit {
        None => None,
        Some(_) if status != Status::Active => return Err(invalid("edit", "only kb.approve takes an edit")),
        Some(_) if ids.len() != 1 => return Err(invalid("edit", "an edit applies to one id; name exactly one")),
        Some(edit) => Some(kb_engine::engine::Edit {
            task: edit.task,
            resource: edit.resource,
            result: edit.result,
            score: edit.score,
            content: edit.content,
        }),
    };
    let reviewed = engine
        .review(&ids, status, edit.as_ref(), params.versions.as_deref())
        .map_err(|error| to_rpc_error(engine, error))?;
    let mut result =
        wire::ReviewResult { changed: Vec::new(), merged: reviewed.merged, unchanged: Vec::new(), missing: Vec::new() };
    for (id, before) in ids.into_iter().zip(reviewed.before) {
        match before {
            None => result.missing.push(id),
            Some(before) if before == status && !reviewed.newly_reviewed.contains(&id) => result.unchanged.push(id),
            Some(before) => {
                tracing::info!(%id, from = before.as_str(), to = status.as_str(), reason = params.reason.as_deref().unwrap_or(""), "reviewed");
                result.changed.push(id);
            }
        }
    }
    Ok(result)
}

fn source(text: Option<&str>, default: Source) -> RpcResult<Source> {
    match text {
        None => Ok(default),
        Some(text) => Source::parse(text)
            .ok_or_else(|| invalid("source", format!("must be tool, extraction, import or cli, got {text:?}"))),
    }
}

fn new_experience(params: wire::SubmitParams) -> RpcResult<NewExperience> {
    Ok(NewExperience {
        source: Some(source(params.source.as_deref(), Source::Tool)?),
        task: params.task,
        resource: params.resource,
        result: params.result,
        score: params.score,
        content: params.content,
        content_type: params.content_type,
        agent_id: params.agent_id,
        submitted_by: params.submitted_by,
        session_key: params.session_key,
        confidence: None,
    })
}

/// An import item as a new experience, with the status and the variants its export line
/// carried, if any.
fn import_item(item: wire::ImportItem) -> RpcResult<ImportEntry> {
    let held = match item.status.as_deref() {
        None => None,
        Some(text) => Some(
            Status::parse(text)
                .ok_or_else(|| invalid("status", format!("must be active, pending or rejected, got {text:?}")))?,
        ),
    };
    let new = NewExperience {
        source: Some(source(item.source.as_deref(), Source::Import)?),
        task: item.task,
        resource: item.resource,
        result: item.result,
        score: item.score,
        content: item.content,
        content_type: item.content_type,
        agent_id: item.agent_id,
        submitted_by: item.submitted_by,
        session_key: item.session_key,
        confidence: item.confidence,
    };
    let variants = item
        .variants
        .into_iter()
        .enumerate()
        .map(|(index, variant)| {
            let created_at = humantime::parse_rfc3339_weak(&variant.created_at).map_err(|error| {
                invalid(&format!("variants[{index}].created_at"), format!("is not a time: {error}"))
            })?;
            let created_at_ms = created_at
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| i64::try_from(since.as_millis()).unwrap_or(i64::MAX));
            Ok(CarriedVariant {
                new: NewExperience {
                    source: Some(source(Some(&variant.source), Source::Import)?),
                    task: variant.task,
                    resource: variant.resource,
                    result: variant.result,
                    score: Some(i64::from(variant.score)),
                    content: variant.content,
                    content_type: variant.content_type,
                    agent_id: variant.agent_id,
                    submitted_by: variant.submitted_by,
                    session_key: variant.session_key,
                    confidence: None,
                },
                similarity: variant.similarity,
                created_at_ms,
            })
        })
        .collect::<RpcResult<Vec<_>>>()?;
    Ok(ImportEntry { new, held, variants })
}

fn variant_record(variant: kb_store::Variant) -> wire::VariantRecord {
    wire::VariantRecord {
        task: variant.task,
        resource: variant.resource,
        result: variant.result,
        score: variant.score,
        content: variant.content,
        content_type: variant.content_type,
        agent_id: variant.agent_id,
        submitted_by: variant.submitted_by,
        session_key: variant.session_key,
        source: variant.source,
        similarity: variant.similarity.map(|similarity| (similarity * 1000.0).round() / 1000.0),
        created_at: rfc3339(variant.created_at),
    }
}

/// The variants `kb.get` returns at most, newest first, and about how much of their text: a
/// teammate's thousands of copies of one experience made `kbctl show` print 80 MB.
const GET_VARIANTS: usize = 20;
const GET_VARIANT_BYTES: usize = 1 << 20;

fn record(experience: Experience) -> wire::ExperienceRecord {
    wire::ExperienceRecord {
        id: experience.id.to_string(),
        task: experience.task,
        resource: experience.resource,
        result: experience.result,
        score: experience.score,
        has_content: experience.has_content,
        content_type: experience.content_type,
        agent_id: experience.agent_id,
        submitted_by: experience.submitted_by,
        session_key: experience.session_key,
        source: experience.source.as_str().to_owned(),
        status: experience.status.as_str().to_owned(),
        confidence: experience.confidence,
        flags: experience.flags,
        created_at: rfc3339(experience.created_at_ms),
        updated_at: rfc3339(experience.updated_at_ms),
        merge_count: experience.merge_count,
        recall_count: experience.recall_count,
        variants: Vec::new(),
        variants_total: None,
        variants_not_kept: Vec::new(),
        origins: Vec::new(),
        provenance: None,
        version: None,
    }
}

/// A held (or unreviewed) experience for the review queue, marked with where it came from and
/// with the reasons it is held in words (each risky action and the words that matched).
fn pending_record(engine: &Engine, trusted: &[String], held: kb_engine::engine::Held) -> wire::PendingRecord {
    let (similar, similarity) =
        held.similar.map(|(experience, similarity)| (Box::new(record(experience)), similarity)).unzip();
    let provenance = Provenance::of(engine, trusted, &held.experience);
    let content = held
        .experience
        .has_content
        .then(|| engine.content(held.experience.id.as_str()).ok().map(|(content, _)| content))
        .flatten();
    // From what was read already: the author is the one provenance read (the same lookup).
    let author = match &provenance.origin {
        crate::trust::Origin::Teammate(author) => author.as_deref(),
        _ => None,
    };
    let version = Some(kb_engine::engine::version_of(&held.experience, content.as_deref(), author));
    // The gate's own reasons, kept since it held the experience; one written before the store
    // kept them gets the checks' reasons again (the ones that can be read back from the text).
    let mut reasons = held.reasons;
    if reasons.is_empty() && !held.experience.flags.is_empty() {
        let mut text = format!("{}\n{}\n{}", held.experience.task, held.experience.resource, held.experience.result);
        if let Some(content) = &content {
            text.push('\n');
            text.push_str(content);
        }
        reasons.extend(kb_core::gate::hidden_text_reasons(&text));
        reasons.extend(kb_core::risky::risky_actions(&text).iter().map(|action| action.reason()));
    }
    if held.experience.status == Status::Active && !provenance.usable_by_agents() {
        reasons.push(provenance.label().unwrap_or_default());
    }
    wire::PendingRecord {
        reasons,
        experience: wire::ExperienceRecord { provenance: provenance.label(), version, ..record(held.experience) },
        extraction: held.proposal.map(|proposal| wire::ProposalRecord {
            job_id: proposal.job_id,
            outcome: proposal.outcome,
            evidence: serde_json::from_str(&proposal.evidence_json).unwrap_or(serde_json::Value::Null),
        }),
        similar,
        similarity,
        content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup_error(path: &str) -> String {
        let error = backup_path(path).expect_err(path);
        assert_eq!(error.code(), kb_proto::ErrorCode::InvalidParams.code());
        assert_eq!(error.data().map(|data| data.get()), Some(r#"{"field":"path"}"#));
        error.message().to_owned()
    }

    #[test]
    fn backup_paths_that_sqlite_would_misread_are_refused_by_name() {
        assert!(backup_error("/tmp/backup\0.db").contains("NUL character (found at byte 11)"));
        assert!(backup_error("").contains("must not be empty"));
        assert!(backup_error("backup.db").contains("absolute"));
        assert!(backup_error("/tmp/").contains("must name a file"));
        assert!(backup_error("/no/such/directory/backup.db").contains("/no/such/directory does not exist"));
        assert!(backup_error(&format!("/tmp/{}", "x".repeat(5000))).contains("over the limit of 4095"));
        assert_eq!(backup_path("/tmp/backup.db").unwrap(), PathBuf::from("/tmp/backup.db"));
    }
}
