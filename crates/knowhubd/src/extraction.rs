//! Extraction: finished conversations queued by the hooks, read by an LLM on a worker thread of
//! its own, and its proposals stored through the write gate into the review queue.
//!
//! The path: the hook named by the plugin's `extractionTrigger` hands over the session's history
//! (`on_conversation`); only messages the session never had extracted are taken; the gate before
//! spend (`kb_extract::assess`) skips conversations with nothing reusable; in strict privacy mode
//! the turns are redacted before they are written to the queue. The worker (`run_worker`) takes
//! one due job at a time, cuts the transcript to the token budget, checks what is left of the
//! daily token cap (`budget`: the call asks for at most that, and its answer is read no further),
//! calls the Chat Completions endpoint of `[extraction]`, parses the answer, and stores the
//! proposals, the job's state and the tokens spent in one transaction.
//!
//! Architecture Invariant: a job is done exactly once. Its attempt is counted before the call and
//! its result written in one transaction, so a crash during a call repeats the call, never the
//! storage; an answer that cannot be read stores nothing.
//! Architecture Invariant: nothing is sent anywhere unless the plugin turned extraction on, and
//! the API key is read at each call and never logged or shown.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use kb_core::sameness::Claim;
use kb_core::{NewExperience, Source, Status};
use kb_extract::{Parsed, Turn};
use kb_store::{Enqueued, Job, NewJob, ProposalMeta, VectorRef, WriteItem};
use serde_json::{Value, json};

use crate::config::{ExtractionConfig, RouteConfig};
use crate::supervisor::Service;
use kb_engine::engine::{Engine, now_ms};

mod budget;
mod endpoint;
#[cfg(test)]
mod tests;

use self::budget::{Allowance, MAX_CHARGE, allowance, charged, least_needed};
pub(crate) use self::endpoint::shown_url;
use self::endpoint::{Answer, CallError, call};

const DAY_MS: i64 = 86_400_000;
/// The longest the worker sleeps before it looks at the queue again.
const IDLE_WAIT: Duration = Duration::from_secs(60);
/// The most of an endpoint's answer read, in bytes.
const MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;
/// Characters of a cited turn kept as the proposal's evidence.
const EVIDENCE_CHARS: usize = 240;
/// Characters of an endpoint's error body kept in the job's error.
const ERROR_BODY_CHARS: usize = 300;

/// The worker's settings, wake-ups and what it waits for.
#[derive(Default)]
pub struct Extraction {
    /// `[extraction]` of the daemon's config.
    pub config: ExtractionConfig,
    wake: Mutex<u64>,
    woken: Condvar,
    /// What the worker waits for, when it waits for something other than work.
    waiting: Mutex<Option<String>>,
    /// The endpoint refused `response_format`: the answer is asked for by instructions only.
    no_schema: AtomicBool,
    /// A hook event asked for extraction since the daemon started.
    requested: AtomicBool,
    /// How the LLM's calls have gone lately: what `status` says of the service.
    calls: Mutex<Calls>,
}

/// The LLM's recent calls: failures in a row since the last that succeeded, the last failure's
/// reason, and whether a job was given up on since.
#[derive(Debug, Default)]
struct Calls {
    failed_in_a_row: u32,
    last_failure: Option<String>,
    gave_up: bool,
}

/// Calls failed in a row before the service is reported degraded: one failure that a retry
/// heals is not a failing service; three are (with the default backoff, about seven minutes).
const FAILED_CALLS_TO_DEGRADE: u32 = 3;

impl Extraction {
    pub fn new(config: ExtractionConfig) -> Extraction {
        Extraction { config, ..Extraction::default() }
    }

    pub fn wake(&self) {
        *self.wake.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.woken.notify_all();
    }

    /// Sleeps up to `timeout`, or until `wake`.
    fn sleep(&self, timeout: Duration) {
        let generation = self.wake.lock().unwrap_or_else(PoisonError::into_inner);
        let seen = *generation;
        let _ = self
            .woken
            .wait_timeout_while(generation, timeout, |generation| *generation == seen)
            .unwrap_or_else(PoisonError::into_inner);
    }

    fn set_waiting(&self, what: Option<String>) {
        *self.waiting.lock().unwrap_or_else(PoisonError::into_inner) = what;
    }

    pub fn waiting(&self) -> Option<String> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub fn requested(&self) -> bool {
        self.requested.load(Ordering::Relaxed)
    }

    /// A call whose answer was read: the service has healed.
    fn call_succeeded(&self) {
        *self.calls.lock().unwrap_or_else(PoisonError::into_inner) = Calls::default();
    }

    /// A call that failed (`gave_up`: the endpoint failed the job for good, every attempt
    /// refused or unanswered, or an error not worth retrying such as a 401).
    fn call_failed(&self, reason: &str, gave_up: bool) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.failed_in_a_row = calls.failed_in_a_row.saturating_add(1);
        calls.last_failure = Some(reason.to_owned());
        calls.gave_up |= gave_up;
    }

    /// Why the service is failing, while the LLM's calls keep failing (a job given up on, or
    /// [`FAILED_CALLS_TO_DEGRADE`] calls in a row), until one succeeds.
    pub fn failing(&self) -> Option<String> {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let reason = calls.last_failure.as_deref()?;
        let n = calls.failed_in_a_row;
        if calls.gave_up {
            Some(format!("extraction: a job failed for good, and no call has succeeded since ({n} failed): {reason}"))
        } else if n >= FAILED_CALLS_TO_DEGRADE {
            Some(format!("extraction: the LLM's last {n} calls failed, the last: {reason}"))
        } else {
            None
        }
    }
}

/// Which LLM extracts, as the configuration resolves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Endpoint {
        base_url: String,
        model: String,
    },
    /// Jobs are run by the OpenClaw plugin on OpenClaw's model (`lease`, `finish_lease`).
    OpenClaw,
    /// No LLM configured: jobs wait.
    None,
}

/// `auto` is the endpoint when one is configured, else OpenClaw's own model (no second key).
pub fn route(config: &ExtractionConfig) -> Route {
    match (&config.route, &config.base_url, &config.model) {
        (RouteConfig::Openclaw, _, _) => Route::OpenClaw,
        (_, Some(base_url), Some(model)) => Route::Endpoint { base_url: base_url.clone(), model: model.clone() },
        (RouteConfig::Auto, _, _) => Route::OpenClaw,
        (RouteConfig::Endpoint, _, _) => Route::None,
    }
}

/// A session's history as a hook handed it over, with the plugin's settings.
#[derive(Debug, Clone)]
pub struct Conversation {
    pub session_key: String,
    pub agent_id: Option<String>,
    pub messages: Vec<Value>,
    pub strict: bool,
    pub require_approval: bool,
}

/// What became of a conversation handed over by a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handed {
    /// No message the session had not had extracted already.
    NothingNew,
    /// Skipped by the gate before spend, for this reason.
    Skipped(&'static str),
    /// Queued as this job.
    Queued(i64),
}

/// Queues the messages of `conversation` that its session never had extracted, unless the gate
/// before spend skips them. Runs on a blocking thread: the hook has returned already.
pub fn on_conversation(engine: &Engine, extraction: &Extraction, conversation: Conversation) -> anyhow::Result<Handed> {
    extraction.requested.store(true, Ordering::Relaxed);
    let turns = kb_extract::parse_messages(&conversation.messages);
    let key = conversation.session_key.as_str();
    // A second event of the same session may queue some of these messages meanwhile: then
    // what is new is worked out again.
    for _ in 0..3 {
        let fingerprints: Vec<String> = turns.iter().map(|turn| turn.fingerprint.clone()).collect();
        let unseen = engine.reader().unseen_fingerprints(key, &fingerprints)?;
        let mut new: Vec<Turn> =
            turns.iter().zip(&unseen).filter(|(_, unseen)| **unseen).map(|(turn, _)| turn.clone()).collect();
        if new.is_empty() {
            return Ok(Handed::NothingNew);
        }
        let new_fingerprints: Vec<String> = new.iter().map(|turn| turn.fingerprint.clone()).collect();
        let assessment = kb_extract::assess(&new);
        if let Some(reason) = assessment.skip {
            engine.lock_writer().skip_conversation(key, &new_fingerprints, "skipped", now_ms())?;
            tracing::debug!(session = key, reason, "extraction: conversation skipped");
            return Ok(Handed::Skipped(reason));
        }
        if conversation.strict {
            kb_extract::redact_turns(&mut new);
        }
        let turns_json = serde_json::to_string(&new)?;
        let job = NewJob {
            session_key: key,
            agent_id: conversation.agent_id.as_deref(),
            turns_json: &turns_json,
            turn_count: new.len(),
            fingerprints: &new_fingerprints,
            privacy: if conversation.strict { "strict" } else { "relaxed" },
            require_approval: conversation.require_approval,
        };
        let enqueued = engine.lock_writer().enqueue_extraction(&job, extraction.config.max_queued, now_ms())?;
        if let Enqueued::Queued { id, dropped } = enqueued {
            if dropped > 0 {
                tracing::warn!(dropped, "extraction: the queue is full; the oldest jobs were dropped");
            }
            extraction.wake();
            return Ok(Handed::Queued(id));
        }
    }
    Ok(Handed::NothingNew)
}

/// The supervised worker: one due job at a time, until the daemon stops. A step that fails
/// (the store, say) degrades the service and is tried again after a pause; so do the LLM's
/// calls while they keep failing (`Extraction::failing`). The service is healthy again once a
/// step goes through and a call has succeeded since.
pub fn run_worker(engine: &Engine, extraction: &Extraction, service: &Service) -> anyhow::Result<()> {
    while !service.stopping() {
        service.checkpoint()?;
        match step(engine, extraction) {
            Ok(wait) => {
                // The store answered; the service is healthy unless the LLM's calls keep failing.
                match extraction.failing() {
                    Some(failing) => service.degraded(failing),
                    None => service.healthy(),
                }
                if let Some(wait) = wait {
                    extraction.sleep(wait);
                }
            }
            Err(error) => {
                let message = format!("extraction: {error:#}");
                tracing::error!("{message}");
                service.degraded(message);
                extraction.sleep(Duration::from_secs(5));
            }
        }
    }
    Ok(())
}

/// What `status` shows of the queue: what the worker waits for, then the queue's counts. The
/// worker says it holds a job back (the cap) only once it found it queued, and the job stays
/// queued while held, so a wait read first is always counted. Counted first, a job queued and
/// held back between the two reads showed as `queued: 0` beside a wait for the cap (CI).
pub fn queue_status(
    engine: &Engine,
    extraction: &Extraction,
    day: i64,
) -> Result<(Option<String>, kb_store::ExtractionStats), kb_engine::engine::EngineError> {
    read_queue_status(engine, extraction, day, || {})
}

/// [`queue_status`], with `between` run between its two reads (a test's worker steps there).
fn read_queue_status(
    engine: &Engine,
    extraction: &Extraction,
    day: i64,
    between: impl FnOnce(),
) -> Result<(Option<String>, kb_store::ExtractionStats), kb_engine::engine::EngineError> {
    let waiting = extraction.waiting();
    between();
    Ok((waiting, engine.extraction_stats(day)?))
}

/// What jobs wait for when OpenClaw's model extracts.
const WAITING_FOR_OPENCLAW: &str = "jobs wait for the OpenClaw plugin to run them on OpenClaw's model \
    (at the start of a turn); or set [extraction] base_url and model in the daemon's config";
/// What jobs wait for when no LLM is configured.
const WAITING_FOR_CONFIG: &str = "no extraction endpoint is configured: set [extraction] base_url and model \
    in the daemon's config (or route = \"openclaw\")";

/// Runs the next due job through the endpoint, if any; returns how long to wait before the
/// next step (`None`: go on at once).
fn step(engine: &Engine, extraction: &Extraction) -> anyhow::Result<Option<Duration>> {
    let config = &extraction.config;
    let (base_url, model) = match route(config) {
        Route::Endpoint { base_url, model } => (base_url, model),
        other => {
            // The plugin takes the jobs (`lease`), or nothing does: the worker only says what
            // they wait for.
            let (job, next_due) = engine.reader().next_extraction_job(i64::MAX)?;
            let waiting = if other == Route::OpenClaw { WAITING_FOR_OPENCLAW } else { WAITING_FOR_CONFIG };
            extraction.set_waiting((job.is_some() || next_due.is_some()).then(|| waiting.to_owned()));
            return Ok(Some(IDLE_WAIT));
        }
    };
    let ready = match take_next(engine, extraction)? {
        Next::Ready(ready) => ready,
        Next::Wait(wait) => return Ok(Some(wait)),
        Next::Again => return Ok(None),
    };
    let schema = !extraction.no_schema.load(Ordering::Relaxed);
    let body = kb_extract::prompt::request_body(&model, &ready.rendered.text, ready.allowance.asked, schema);
    let called = call(config, &base_url, &body, &ready.allowance);
    conclude(engine, extraction, &ready, called, schema)?;
    Ok(None)
}

/// A due job ready to be sent, its attempt counted.
struct Ready {
    job: Job,
    turns: Vec<Turn>,
    rendered: kb_extract::Rendered,
    /// The tokens sent, as counted here: instructions and transcript.
    sent_tokens: u64,
    /// What the call may ask for and read (within what is left of today's cap, once taken).
    allowance: Allowance,
    day: i64,
}

enum Next {
    Ready(Box<Ready>),
    Wait(Duration),
    /// A job was settled without a call (unreadable, or over the whole cap): look again.
    Again,
}

/// Takes the next due job within the daily cap and counts its attempt.
fn take_next(engine: &Engine, extraction: &Extraction) -> anyhow::Result<Next> {
    let config = &extraction.config;
    let now = now_ms();
    let (job, next_due) = engine.reader().next_extraction_job(now)?;
    let Some(job) = job else {
        extraction.set_waiting(None);
        let wait = next_due.map_or(IDLE_WAIT, |due| Duration::from_millis((due - now).clamp(0, 60_000) as u64));
        return Ok(Next::Wait(wait));
    };
    let day = now.div_euclid(DAY_MS);
    if job.attempts >= config.max_attempts {
        // Every attempt was cut short (the daemon killed during the call, a leased job never
        // answered): a job that keeps doing that must not loop forever.
        let reason = format!("no answer after {} attempts, each interrupted or unanswered", job.attempts);
        tracing::warn!(job = job.id, "extraction failed: {reason}");
        engine.lock_writer().fail_extraction(job.id, &reason, 0, day, now)?;
        return Ok(Next::Again);
    }
    let Some(mut ready) = prepare(engine, extraction, job, day)? else { return Ok(Next::Again) };
    let spent = engine.reader().extraction_tokens(day)?;
    let remaining = config.daily_token_cap.saturating_sub(spent);
    // The call asks for at most what is left, and reads no more (`budget`): its worst case
    // cannot take the day past the cap.
    let Some(allowed) = allowance(config.max_output_tokens, remaining, ready.sent_tokens) else {
        let next_day = (day + 1) * DAY_MS;
        extraction.set_waiting(Some(format!(
            "the daily token cap is reached ({spent} of {} tokens spent today; the next job needs about {} to send \
             and room for an answer); jobs wait until 00:00 UTC",
            config.daily_token_cap, ready.sent_tokens,
        )));
        return Ok(Next::Wait(Duration::from_millis((next_day - now).clamp(1_000, 3_600_000) as u64)));
    };
    ready.allowance = allowed;
    extraction.set_waiting(None);
    engine.lock_writer().start_extraction_attempt(ready.job.id)?;
    Ok(Next::Ready(Box::new(ready)))
}

/// Reads a job's turns and renders them within the budget; a job that cannot be read, or would
/// cost more than the whole daily cap, fails (`None`).
fn prepare(engine: &Engine, extraction: &Extraction, job: Job, day: i64) -> anyhow::Result<Option<Ready>> {
    let config = &extraction.config;
    let turns: Vec<Turn> = match serde_json::from_str(&job.turns_json) {
        Ok(turns) => turns,
        Err(error) => {
            let reason = format!("the queued conversation cannot be read: {error}");
            engine.lock_writer().fail_extraction(job.id, &reason, 0, day, now_ms())?;
            return Ok(None);
        }
    };
    let rendered = kb_extract::render(&turns, config.max_input_tokens);
    let sent_tokens = (kb_extract::estimate_tokens(kb_extract::prompt::SYSTEM) + rendered.tokens_sent) as u64;
    let Some(allowance) = allowance(config.max_output_tokens, config.daily_token_cap, sent_tokens) else {
        let reason = format!(
            "needs about {} tokens (its prompt and the least answer), more than the daily cap of {}",
            least_needed(sent_tokens),
            config.daily_token_cap
        );
        engine.lock_writer().fail_extraction(job.id, &reason, 0, day, now_ms())?;
        return Ok(None);
    };
    Ok(Some(Ready { job, turns, rendered, sent_tokens, allowance, day }))
}

/// Settles a job after its call: its proposals stored, or a retry, or a failure with the reason.
fn conclude(
    engine: &Engine,
    extraction: &Extraction,
    ready: &Ready,
    called: Result<Answer, CallError>,
    schema: bool,
) -> anyhow::Result<()> {
    let config = &extraction.config;
    let Ready { job, turns, day, .. } = ready;
    let (day, attempt) = (*day, job.attempts + 1);
    let now = now_ms();
    match called {
        Ok(answer) => {
            let tokens = charged(answer.tokens, ready.sent_tokens, &answer.text);
            match kb_extract::parse_answer(&answer.text, turns) {
                Ok(parsed) => {
                    extraction.call_succeeded();
                    store_proposals(engine, extraction, job, turns, parsed, tokens, day)?
                }
                Err(reason) => {
                    let reason = format!("the LLM's answer could not be read: {reason}");
                    tracing::warn!(job = job.id, "extraction: {reason}");
                    // One answer a model got wrong is not a failing service; three in a row are.
                    extraction.call_failed(&reason, false);
                    engine.lock_writer().fail_extraction(job.id, &reason, tokens, day, now)?;
                }
            }
        }
        Err(CallError::NoSchema(reason)) if schema => {
            tracing::info!("extraction: the endpoint refused response_format ({reason}); asking by instructions only");
            extraction.no_schema.store(true, Ordering::Relaxed);
            engine.lock_writer().retry_extraction(job.id, now, &reason, 0, day)?;
        }
        Err(CallError::Retry { reason, after }) if attempt < config.max_attempts => {
            // The endpoint may ask for a longer wait, never a shorter one: `Retry-After: 0`
            // would otherwise let it pull retries as fast as it answers.
            let ours = backoff(config, attempt);
            let backoff = after.map_or(ours, |after| after.max(ours));
            tracing::warn!(job = job.id, attempt, "extraction: {reason}; retrying in {backoff:?}");
            extraction.call_failed(&reason, false);
            let not_before = now + backoff.as_millis() as i64;
            engine.lock_writer().retry_extraction(job.id, not_before, &reason, 0, day)?;
        }
        Err(CallError::OverAllowance { reason, read }) => {
            // Cut off: the endpoint ignored `max_tokens`. What was sent and read is spent; a
            // retry would spend it again.
            let tokens = ready.sent_tokens.saturating_add(read).min(MAX_CHARGE);
            tracing::warn!(job = job.id, tokens, "extraction failed: {reason}");
            extraction.call_failed(&reason, true);
            engine.lock_writer().fail_extraction(job.id, &reason, tokens, day, now)?;
        }
        Err(error) => {
            let reason = match error {
                CallError::Retry { reason, .. } => format!("{reason} (gave up after {attempt} attempts)"),
                CallError::NoSchema(reason) | CallError::Fatal(reason) => reason,
                CallError::OverAllowance { reason, .. } => reason,
            };
            tracing::warn!(job = job.id, "extraction failed: {reason}");
            extraction.call_failed(&reason, true);
            engine.lock_writer().fail_extraction(job.id, &reason, 0, day, now)?;
        }
    }
    Ok(())
}

/// A job handed to the OpenClaw plugin to run on OpenClaw's model.
#[derive(Debug, Clone)]
pub struct Lease {
    pub job_id: i64,
    pub agent_id: Option<String>,
    pub session_key: String,
    pub system: &'static str,
    pub message: String,
    pub timeout: Duration,
    pub max_tokens: u32,
}

/// What `lease` found.
pub enum Leased {
    Job(Lease),
    /// Nothing to run now, and why when there is a reason beyond an empty queue.
    Nothing(Option<String>),
}

/// Hands the next due job to the plugin (route `openclaw`): the same prompt the endpoint gets.
/// The job stays queued but is not due again until the call's timeout (and a margin) passed,
/// so a plugin that dies mid-call delays it, never loses it.
pub fn lease(engine: &Engine, extraction: &Extraction) -> anyhow::Result<Leased> {
    let config = &extraction.config;
    match route(config) {
        Route::OpenClaw => {}
        Route::Endpoint { .. } => {
            return Ok(Leased::Nothing(Some("the daemon runs extraction on its configured endpoint".to_owned())));
        }
        Route::None => return Ok(Leased::Nothing(Some(WAITING_FOR_CONFIG.to_owned()))),
    }
    extraction.requested.store(true, Ordering::Relaxed);
    match take_next(engine, extraction)? {
        Next::Ready(ready) => {
            let timeout = Duration::from_secs(config.timeout_seconds);
            let until = now_ms() + (timeout + LEASE_MARGIN).as_millis() as i64;
            engine.lock_writer().lease_extraction(ready.job.id, until)?;
            Ok(Leased::Job(Lease {
                job_id: ready.job.id,
                agent_id: ready.job.agent_id.clone(),
                session_key: ready.job.session_key.clone(),
                system: kb_extract::prompt::SYSTEM,
                message: kb_extract::prompt::user_message(&ready.rendered.text),
                timeout,
                max_tokens: ready.allowance.asked,
            }))
        }
        Next::Wait(_) | Next::Again => Ok(Leased::Nothing(extraction.waiting())),
    }
}

/// How long past its call's timeout a leased job waits for its result before it is due again.
const LEASE_MARGIN: Duration = Duration::from_secs(30);

/// The result of a leased job, from the plugin: the model's text, or why the call failed
/// (retried like an endpoint's timeout). A result for a job that is not queued any more (a late
/// answer after the lease ran out and another attempt finished it) is ignored: `false`.
pub fn finish_lease(
    engine: &Engine,
    extraction: &Extraction,
    job_id: i64,
    answer: Result<String, String>,
    tokens: Option<u64>,
) -> anyhow::Result<bool> {
    let Some(job) = engine.reader().queued_extraction_job(job_id)? else { return Ok(false) };
    let day = now_ms().div_euclid(DAY_MS);
    let Some(ready) = prepare(engine, extraction, job, day)? else { return Ok(true) };
    let called = match answer {
        Ok(text) => {
            // Without the runtime's usage (subagent.complete reports none), the tokens are counted
            // here; with it, the larger of the two is charged, as for an endpoint.
            let tokens = charged(tokens, ready.sent_tokens, &text);
            Ok(Answer { text, tokens: Some(tokens) })
        }
        Err(reason) => Err(CallError::Retry { reason: format!("OpenClaw's model failed: {reason}"), after: None }),
    };
    // The attempt was counted at the lease: `job.attempts` includes it.
    let ready = Ready { job: Job { attempts: ready.job.attempts.saturating_sub(1), ..ready.job }, ..ready };
    conclude(engine, extraction, &ready, called, false)?;
    // The worker says how the calls go in `status`: it looks again now.
    extraction.wake();
    Ok(true)
}

/// The wait before attempt `attempt + 1`: `retry_seconds`, doubled each attempt, at most 30 minutes.
fn backoff(config: &ExtractionConfig, attempt: u32) -> Duration {
    let seconds = config.retry_seconds.saturating_mul(1 << attempt.saturating_sub(1).min(16));
    Duration::from_secs(seconds.min(1_800))
}

/// Stores a job's proposals through the write gate, with the job's state and tokens, in one
/// transaction. Proposals below the confidence floor, rejected before, already held, or failing
/// the gate are dropped and counted. Held proposals (review required, or a suspected injection)
/// are stored under a key of their own, so that they neither merge into nor block anything
/// until approved; the experience each resembles is named with it.
fn store_proposals(
    engine: &Engine,
    extraction: &Extraction,
    job: &Job,
    turns: &[Turn],
    parsed: Parsed,
    tokens: u64,
    day: i64,
) -> anyhow::Result<()> {
    let config = &extraction.config;
    let mut low_confidence = 0u64;
    let mut invalid = parsed.invalid.len() as u64;
    let mut rejected_before = 0u64;
    let mut already = 0u64;
    let mut quarantined = 0u64;
    let mut keys = HashSet::new();
    let mut prepared = Vec::new();
    for reason in &parsed.invalid {
        tracing::info!(job = job.id, "extraction: proposal dropped: {reason}");
    }
    // One answer cannot flood the review queue: the most confident few are taken, and held ones
    // only while the queue has room; what is over either limit is counted, never silently lost.
    let mut proposals = parsed.proposals;
    proposals.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let mut over_limit = proposals.len().saturating_sub(config.max_proposals_per_job) as u64;
    proposals.truncate(config.max_proposals_per_job);
    let mut room =
        (config.max_pending_proposals as u64).saturating_sub(engine.extraction_stats(day)?.pending_proposals);
    for (index, proposal) in proposals.into_iter().enumerate() {
        if proposal.confidence < config.min_confidence {
            low_confidence += 1;
            continue;
        }
        let evidence = evidence_json(&proposal.evidence, turns);
        let content_type = proposal.content.as_ref().map(|_| "text/markdown".to_owned());
        let new = NewExperience {
            task: proposal.task,
            resource: proposal.resource,
            result: proposal.result,
            score: Some(proposal.score),
            content: proposal.content,
            content_type,
            agent_id: job.agent_id.clone(),
            submitted_by: None,
            session_key: Some(job.session_key.clone()),
            source: Some(Source::Extraction),
            confidence: Some(proposal.confidence),
        };
        let mut gated = match kb_core::gate(new, engine.policy()) {
            Ok(gated) => gated,
            Err(error) => {
                tracing::info!(job = job.id, "extraction: proposal dropped by the gate: {error}");
                invalid += 1;
                continue;
            }
        };
        let key = gated.dedup_key.clone();
        if !keys.insert(key.clone()) {
            already += 1;
            continue;
        }
        {
            let reader = engine.reader();
            if reader.rejected_before(&key)? {
                rejected_before += 1;
                continue;
            }
            if reader.held_proposal(&key)? {
                already += 1;
                continue;
            }
        }
        let text = kb_engine::semantic::embedding_text(
            &gated.experience.task,
            &gated.experience.resource,
            &gated.experience.result,
        );
        let vector = engine.semantic.embed_now(&text).map(|(model_id, vector)| {
            let bytes = kb_embed::to_bytes(&vector);
            (model_id, vector, bytes)
        });
        let near = vector.as_ref().map(|(model_id, vector, _)| (model_id.as_str(), vector.as_slice()));
        if let Some(rejected) = rejected_like(engine, near, &gated)? {
            tracing::info!(
                job = job.id,
                rejected = %rejected,
                "extraction: a proposal says in other words what the user rejected; not proposed again"
            );
            rejected_before += 1;
            continue;
        }
        let twin = engine.reader().with_dedup_key(&key)?.filter(|(_, status)| *status == Status::Active);
        let similar = match twin {
            Some((id, _)) => Some((id, 1.0f64)),
            None => vector
                .as_ref()
                .and_then(|(model_id, vector, _)| engine.semantic.near_duplicate(model_id, vector))
                .map(|hit| (hit.id, f64::from(hit.score))),
        };
        let suspected = gated.status == Status::Pending;
        let held = job.require_approval || suspected;
        if held && room == 0 {
            over_limit += 1;
            continue;
        }
        room = room.saturating_sub(u64::from(held));
        quarantined += u64::from(suspected);
        gated.flags.push("extracted".to_owned());
        if held {
            gated.status = Status::Pending;
            gated.dedup_key = format!("proposal:{}:{index}:{key}", job.id);
        }
        let meta = ProposalMeta {
            outcome: proposal.outcome.as_str().to_owned(),
            evidence_json: evidence,
            dedup_key: key,
            similar,
        };
        prepared.push((gated, vector, meta, held));
    }
    let items: Vec<WriteItem<'_>> = prepared
        .iter()
        .map(|(gated, vector, meta, held)| WriteItem {
            vector: vector.as_ref().map(|(model_id, _, bytes)| VectorRef { model_id, bytes }),
            similar_to: if *held {
                None
            } else {
                meta.similar
                    .as_ref()
                    .filter(|(_, similarity)| *similarity < 1.0)
                    .map(|(id, similarity)| (id.as_str(), *similarity as f32))
            },
            ..WriteItem::plain(gated)
        })
        .collect();
    let metas: Vec<Option<ProposalMeta>> = prepared.iter().map(|(_, _, meta, _)| Some(meta.clone())).collect();
    let counters = [
        ("low_confidence", low_confidence),
        ("invalid", invalid),
        ("rejected_before", rejected_before),
        ("already_proposed", already),
        ("quarantined", quarantined),
        ("over_limit", over_limit),
        ("proposed", items.len() as u64),
    ];
    if over_limit > 0 {
        tracing::warn!(
            job = job.id,
            over_limit,
            "extraction: proposals over the per-job or review-queue limit were not kept"
        );
    }
    let mut store = engine.lock_writer();
    let (outcomes, _) = store.finish_extraction(
        job.id,
        &items,
        &metas,
        &kb_store::JobResult { tokens, day, counters: &counters, now_ms: now_ms() },
    )?;
    engine.after_write(&mut store, &kb_engine::engine::created_ids(&outcomes));
    drop(store);
    tracing::info!(job = job.id, proposals = outcomes.len(), tokens, "extraction: job done");
    Ok(())
}

/// The rejected experience that `gated` says again in other words, if any: one that makes the
/// same claims (outcome, negations, values: `kb_core::sameness`) and either shares enough of its
/// words (`Claim::rewords`, with or without a model) or is as similar as a submit that would
/// merge into it (`embedding.similar_threshold`, when a model embedded both). An LLM rewords;
/// the user's rejection should hold all the same.
fn rejected_like(
    engine: &Engine,
    near: Option<(&str, &[f32])>,
    gated: &kb_core::Gated,
) -> anyhow::Result<Option<String>> {
    let threshold = engine.config.embedding.similar_threshold;
    let experience = &gated.experience;
    // Read once, whatever the number of rejected experiences it is compared with.
    let proposed = Claim::of(&experience.task, &experience.resource, &experience.result);
    for (id, [task, resource, result], bytes) in engine.reader().rejected_texts(near.map(|(model_id, _)| model_id))? {
        let stored = Claim::of(&task, &resource, &result);
        if !stored.same_claims(&proposed) {
            continue;
        }
        let similar = match (near, bytes.as_deref().map(kb_embed::from_bytes)) {
            (Some((_, vector)), Some(Ok(rejected))) => cosine(vector, &rejected) >= threshold,
            _ => false,
        };
        if similar || stored.rewords(&proposed) {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut norm_a, mut norm_b) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 { 0.0 } else { dot / (norm_a.sqrt() * norm_b.sqrt()) }
}

/// The turns a proposal cites, with an excerpt of each, as JSON.
fn evidence_json(evidence: &[usize], turns: &[Turn]) -> String {
    let cited: Vec<Value> = evidence
        .iter()
        .filter_map(|number| turns.get(number.wrapping_sub(1)).map(|turn| (number, turn)))
        .map(|(number, turn)| {
            let mut text = turn.text.clone();
            for call in &turn.tool_calls {
                text.push_str(&format!("\n-> {} {}", call.name, call.arguments));
            }
            let excerpt: String = text.trim().chars().take(EVIDENCE_CHARS).collect();
            json!({"turn": number, "role": turn.role, "tool": turn.tool, "error": turn.is_error, "excerpt": excerpt})
        })
        .collect();
    Value::Array(cited).to_string()
}
