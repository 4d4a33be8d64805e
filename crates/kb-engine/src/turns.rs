//! The model's scheduler: every run of a session of the embedding model takes a turn of that
//! session's [`ModelTurns`], and a waiting query's turn comes before any write's, a write's before
//! the backlog's.
//!
//! Architecture Invariant: nothing runs the model without a [`Turn`]; one run at a time per
//! session. The model has two sessions (`semantic/queries.rs`): the main one (ONNX Runtime's
//! threads use both cores for it) runs writes and the backlog; the query session runs search
//! queries alone, so a query never waits for a write's or the backlog's run, only for another
//! query's. While the query session is not loaded (or is turned off, or failed to load), queries
//! take the main session's turns first: a query then waits at most for the run in progress,
//! never behind the runs of submits, imports or the backlog queued before it (issue 25: with 50
//! writers a hybrid search waited up to 2 s behind their embeddings on the model's mutex).
//! So that the backlog still drains under a steady stream of writes, it gets one turn after
//! every [`WRITE_TURNS_PER_BACKLOG_TURN`] turns writes took while it waited; queries are never
//! put behind it.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Who asks for the model, most urgent first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// A search's query: an agent (auto-recall gives up after a second) waits for it.
    Query = 0,
    /// A write that needs its vector before it commits (a possible near-duplicate, a review).
    Write = 1,
    /// Experiences committed without a vector: submits first, then imports and reindexes.
    Backlog = 2,
}

const N_PRIORITIES: usize = 3;

/// While the backlog waits, writes take at most this many turns in a row before it gets one.
pub const WRITE_TURNS_PER_BACKLOG_TURN: u32 = 8;

/// How long after a query (or a submit) the daemon counts as busy with searches (or writes):
/// backlog runs are kept short and paced meanwhile (see `Semantic::run_token_budget` and
/// `Semantic::pace_backlog`).
const RECENT: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct State {
    busy: bool,
    waiting: [usize; N_PRIORITIES],
    /// Turns writes took in a row while the backlog waited.
    writes_ahead_of_backlog: u32,
    /// Turns given, by priority.
    served: [u64; N_PRIORITIES],
    last_query: Option<Instant>,
    last_write: Option<Instant>,
}

impl State {
    /// Whether a waiter of `priority` may take the model now.
    fn next_is(&self, priority: Priority) -> bool {
        if self.busy {
            return false;
        }
        let backlog_due = self.waiting[Priority::Backlog as usize] > 0
            && self.writes_ahead_of_backlog >= WRITE_TURNS_PER_BACKLOG_TURN;
        match priority {
            Priority::Query => true,
            Priority::Write => self.waiting[Priority::Query as usize] == 0 && !backlog_due,
            Priority::Backlog => {
                self.waiting[Priority::Query as usize] == 0
                    && (self.waiting[Priority::Write as usize] == 0 || backlog_due)
            }
        }
    }
}

/// The model's turns (see the module's documentation).
#[derive(Debug, Default)]
pub struct ModelTurns {
    state: Mutex<State>,
    changed: Condvar,
}

/// The model, held: dropping it gives the next turn.
#[must_use = "the turn ends when it is dropped"]
pub struct Turn<'a> {
    turns: &'a ModelTurns,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.lock().busy = false;
        self.turns.changed.notify_all();
    }
}

impl ModelTurns {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for the model's turn at `priority`.
    pub fn take(&self, priority: Priority) -> Turn<'_> {
        self.take_unless(priority, &|| false).expect("a turn nothing else can serve always comes")
    }

    /// [`ModelTurns::take`], unless `done` turns true while waiting (another's run did the
    /// work, see `Semantic::embed_texts_now`): then `None`, and the turn is left to the next.
    pub fn take_unless(&self, priority: Priority, done: &dyn Fn() -> bool) -> Option<Turn<'_>> {
        let mut state = self.lock();
        state.waiting[priority as usize] += 1;
        if priority == Priority::Query {
            state.last_query = Some(Instant::now());
        }
        loop {
            if done() {
                state.waiting[priority as usize] -= 1;
                drop(state);
                // A waiter of lower priority may have waited for this one to leave.
                self.changed.notify_all();
                return None;
            }
            if state.next_is(priority) {
                break;
            }
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.waiting[priority as usize] -= 1;
        state.busy = true;
        state.served[priority as usize] += 1;
        match priority {
            Priority::Write if state.waiting[Priority::Backlog as usize] > 0 => state.writes_ahead_of_backlog += 1,
            Priority::Backlog => state.writes_ahead_of_backlog = 0,
            _ => {}
        }
        Some(Turn { turns: self })
    }

    /// Waiters by priority (query, write, backlog).
    pub fn waiting(&self) -> [usize; N_PRIORITIES] {
        self.lock().waiting
    }

    /// Turns given by priority (query, write, backlog).
    pub fn served(&self) -> [u64; N_PRIORITIES] {
        self.lock().served
    }

    /// A query was embedded by the query session: searches are being made all the same.
    pub fn note_query(&self) {
        self.lock().last_query = Some(Instant::now());
    }

    /// Whether a query asked for the model lately: searches are being made.
    pub fn queries_recent(&self) -> bool {
        self.lock().last_query.is_some_and(|last| last.elapsed() < RECENT)
    }

    /// A submit came in (whether or not it needs the model).
    pub fn note_write(&self) {
        self.lock().last_write = Some(Instant::now());
    }

    /// Whether searches or submits came in lately: the backlog leaves them CPU.
    pub fn foreground_recent(&self) -> bool {
        let state = self.lock();
        [state.last_query, state.last_write].into_iter().flatten().any(|last| last.elapsed() < RECENT)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Spawns a thread that waits for a turn at `priority`, then records its name.
    fn waiter(
        turns: &Arc<ModelTurns>,
        order: &Arc<Mutex<Vec<String>>>,
        priority: Priority,
        name: &str,
    ) -> std::thread::JoinHandle<()> {
        let (turns, order, name) = (turns.clone(), order.clone(), name.to_owned());
        std::thread::spawn(move || {
            let _turn = turns.take(priority);
            order.lock().unwrap().push(name);
        })
    }

    /// Waits until the scheduler holds exactly `expected` waiters: no timing is asserted.
    fn until_waiting(turns: &ModelTurns, expected: [usize; N_PRIORITIES]) {
        while turns.waiting() != expected {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_query_asked_while_writes_and_the_backlog_wait_is_served_before_them() {
        let turns = Arc::new(ModelTurns::default());
        let order = Arc::new(Mutex::new(Vec::new()));
        let run_in_progress = turns.take(Priority::Backlog);
        let mut threads = vec![waiter(&turns, &order, Priority::Backlog, "backlog")];
        until_waiting(&turns, [0, 0, 1]);
        for n in 0..3 {
            threads.push(waiter(&turns, &order, Priority::Write, &format!("write {n}")));
            until_waiting(&turns, [0, n + 1, 1]);
        }
        threads.push(waiter(&turns, &order, Priority::Query, "query"));
        until_waiting(&turns, [1, 3, 1]);
        drop(run_in_progress);
        for thread in threads {
            thread.join().unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order[0], "query", "{order:?}");
        assert!(order[1..4].iter().all(|name| name.starts_with("write")), "{order:?}");
        assert_eq!(order[4], "backlog", "{order:?}");
        assert_eq!(turns.served(), [1, 3, 2]);
        assert!(turns.queries_recent());
    }

    #[test]
    fn the_backlog_gets_a_turn_under_a_steady_stream_of_writes_but_never_before_a_query() {
        let turns = ModelTurns::default();
        // Writes keep coming while the backlog waits: each of their turns counts.
        turns.lock().waiting = [0, 0, 1];
        for _ in 0..WRITE_TURNS_PER_BACKLOG_TURN {
            let mut state = turns.lock();
            state.waiting[Priority::Write as usize] = 1;
            assert!(state.next_is(Priority::Write) && !state.next_is(Priority::Backlog));
            drop(state);
            drop(turns.take(Priority::Write));
        }
        let mut state = turns.lock();
        state.waiting[Priority::Write as usize] = 1;
        assert!(state.next_is(Priority::Backlog), "the backlog's turn is due");
        assert!(!state.next_is(Priority::Write), "a write waits for it");
        state.waiting[Priority::Query as usize] = 1;
        assert!(!state.next_is(Priority::Backlog) && state.next_is(Priority::Query), "a query still goes first");
        state.waiting = [0, 1, 0];
        drop(state);
        drop(turns.take(Priority::Backlog));
        assert_eq!(turns.lock().writes_ahead_of_backlog, 0, "its share starts again");
        assert_eq!(turns.served(), [0, u64::from(WRITE_TURNS_PER_BACKLOG_TURN), 1]);
    }
}
