//! The write methods' threads: a blocking pool below the searches' priority, where a submit,
//! an import or a review is parsed, gated, queued and waits for its commit.
//!
//! Issue 25: with 50 clients submitting, the request threads (tokio's workers and its blocking
//! pool, at the searches' priority) took 0.46 of the two cores: each submit's parameters parsed,
//! its experience built, its wait for the write lane and the commit, its answer built, all on a
//! thread of tokio's blocking pool at nice 0, beside the searches. Here that work runs on
//! threads at the write lane's nice value ([`kb_engine::lane::LANE_NICE`]): a search ready to run
//! preempts them. What is left at the searches' priority is reading the request and writing the
//! answer. Reads (`kb.get`, `kb.content`, `kb.list`, ...) stay on tokio's own blocking pool: an
//! agent waits for them as it waits for a search.

use tokio::runtime::{Builder, Runtime};
use tokio::task::JoinHandle;

/// The most threads the pool starts: tokio's default for its own blocking pool. A submit holds
/// its thread while it waits for its group commit, so the pool needs one per concurrent writer.
const MAX_THREADS: usize = 512;

/// The write methods' thread pool (see the module's documentation).
pub struct WritePool {
    /// A runtime used only for its blocking pool; none when it could not start (the jobs then
    /// run on the caller's runtime's blocking pool, at the normal priority, as before).
    runtime: Option<Runtime>,
}

impl WritePool {
    /// Starts the pool (its threads start when the first jobs come).
    pub fn start() -> WritePool {
        let runtime = Builder::new_current_thread()
            .max_blocking_threads(MAX_THREADS)
            .thread_name("knowhub-write")
            .on_thread_start(kb_engine::lane::lower_priority)
            .build();
        match runtime {
            Ok(runtime) => WritePool { runtime: Some(runtime) },
            Err(error) => {
                tracing::warn!("the write methods run at the searches' priority: cannot start their pool: {error}");
                WritePool { runtime: None }
            }
        }
    }

    /// Runs `job` on the pool; its handle completes with its answer, or with the error of a job
    /// that panicked. It borrows nothing of the pool: a job already started finishes even when
    /// the pool is dropped meanwhile.
    pub fn spawn<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> JoinHandle<T> {
        match &self.runtime {
            Some(runtime) => runtime.spawn_blocking(job),
            None => tokio::task::spawn_blocking(job),
        }
    }
}

impl Drop for WritePool {
    fn drop(&mut self) {
        // Dropping a runtime waits for its threads, which an async context forbids: the daemon
        // drops its app there. The jobs still running finish on their own.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_job_runs_below_the_searches_and_answers_the_caller() {
        let pool = WritePool::start();
        let thread = pool.spawn(|| std::thread::current().name().map(str::to_owned)).await.expect("the job runs");
        assert_eq!(thread.as_deref(), Some("knowhub-write"));
        #[cfg(target_os = "linux")]
        {
            let nice = pool.spawn(kb_engine::lane::own_nice).await.expect("the job runs");
            assert!(nice >= kb_engine::lane::LANE_NICE, "the job ran at nice {nice}");
        }
    }

    #[tokio::test]
    async fn a_job_that_panics_is_an_error_and_the_pool_goes_on() {
        let pool = WritePool::start();
        let panicked = pool.spawn(|| panic!("a bad request")).await;
        assert!(panicked.expect_err("the panic is an error").is_panic());
        assert_eq!(pool.spawn(|| 2 + 2).await.expect("the next job runs"), 4);
    }

    #[tokio::test]
    async fn dropping_the_pool_in_an_async_context_lets_a_running_job_finish() {
        let pool = WritePool::start();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let job = pool.spawn(move || released.recv().is_ok());
        drop(pool);
        release.send(()).expect("the job still waits");
        assert!(job.await.expect("the job finished"));
    }
}
