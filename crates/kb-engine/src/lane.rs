//! The write lane: a few threads at a lower OS priority that do the CPU-heavy part of a submit
//! that holds no lock (the gate, the near-duplicate lookup), so that searches come first. The
//! engine's commit lane (`Engine::committer`) is another, of two threads, for group commits;
//! [`start_below_searches`] starts the search index's threads (tantivy's indexing, merging,
//! segment-updating and `meta.json`-watching ones), the writes' background work too, at the same
//! priority.
//!
//! Issue 25: 50 submitting clients each ran their gate and their near-duplicate search on their
//! own request thread, at the searches' priority: 50 threads ready to run on two cores, and a
//! search waited its turn among them. Here at most one thread per core does that work, at nice
//! [`LANE_NICE`] (Linux; elsewhere at the normal priority): a search's thread preempts them, and
//! the submits queue in order instead of sharing the cores fifty ways.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::mpsc::{Receiver, Sender, channel, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};

/// The lane's threads' nice value. At 10 a thread weighs a tenth of one at the default 0 in
/// Linux's scheduler: a search ready to run gets the core nearly at once, and the lane still
/// takes every cycle nobody else wants.
pub const LANE_NICE: i32 = 10;

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The write lane (see the module's documentation).
pub struct Lane {
    jobs: Mutex<Option<Sender<Job>>>,
    threads: usize,
}

impl Lane {
    /// Starts `threads` threads named `name`. When none can be started, jobs run on the caller's
    /// thread, as they did before the lane.
    pub fn start(name: &str, threads: usize) -> Lane {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut started = 0;
        for n in 0..threads.max(1) {
            let receiver = Arc::clone(&receiver);
            let spawned = std::thread::Builder::new().name(format!("{name}-{n}")).spawn(move || work(&receiver));
            match spawned {
                Ok(_) => started += 1,
                Err(error) => tracing::warn!("the write lane has one thread fewer: {error}"),
            }
        }
        let jobs = (started > 0).then_some(sender);
        Lane { jobs: Mutex::new(jobs), threads: started }
    }

    /// How many threads the lane has (0: jobs run on their caller's thread).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Runs `job` on the lane and waits for its answer; a panic in it is raised again here, on the
    /// caller's thread, as if it had run here.
    pub fn run<T: Send + 'static>(&self, job: impl FnOnce() -> T + Send + 'static) -> T {
        let (answer, answered) = sync_channel(1);
        let wrapped: Job = Box::new(move || {
            let _ = answer.send(catch_unwind(AssertUnwindSafe(job)));
        });
        let refused = match &*self.jobs.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(jobs) => jobs.send(wrapped).err().map(|refused| refused.0),
            None => Some(wrapped),
        };
        if let Some(job) = refused {
            // No thread left to take it: it runs here.
            job();
        }
        match answered.recv() {
            Ok(Ok(value)) => value,
            Ok(Err(panic)) => resume_unwind(panic),
            // The job was dropped unrun: only when its thread died between taking and running it,
            // which `work` does not allow.
            Err(_) => panic!("the write lane dropped a job without running it"),
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Closing the channel ends the threads once they finish what they hold.
        self.jobs.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// A lane thread: lowers its own priority, then runs jobs until the lane is dropped. A job's panic
/// is caught by the job itself (see [`Lane::run`]), so the thread outlives it.
fn work(receiver: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        match job {
            Ok(job) => job(),
            Err(_) => return,
        }
    }
}

/// Runs `start` on a thread of its own at the lane's priority and waits for it: threads that
/// `start` starts inherit that priority (Linux keeps it per thread and passes it on). The search
/// index starts its threads this way (`kb_index::StartThreads`, given when the engine opens it),
/// so that tantivy's indexing, merging and segment-updating threads, background work of the
/// writes, run below the searches as the lanes do, whichever thread makes the writer anew or
/// commits. When no thread can be started, `start` runs on the caller's.
pub fn start_below_searches(start: &mut (dyn FnMut() + Send)) {
    let started = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new().name("below-searches".to_owned()).spawn_scoped(scope, || {
            lower_priority();
            start();
        });
        match spawned {
            Ok(thread) => {
                thread.join().unwrap_or_else(|panic| resume_unwind(panic));
                true
            }
            Err(error) => {
                tracing::warn!("started at the normal priority: no thread to start it below the searches: {error}");
                false
            }
        }
    });
    if !started {
        start();
    }
}

/// Sets the calling thread's nice value to [`LANE_NICE`], unless it is already nicer (a daemon
/// started with `nice` keeps its lane below its other threads). Linux keeps a nice value per
/// thread; on other systems `setpriority` would change the whole process's, so the lane keeps
/// the normal one.
pub fn lower_priority() {
    #[cfg(target_os = "linux")]
    if let Err(error) = set_own_nice(own_nice().max(LANE_NICE)) {
        tracing::debug!("the write lane keeps the normal priority: {error}");
    }
}

/// Sets the calling thread's nice value (Linux): raising it is always allowed, lowering it only
/// with the privilege to.
#[cfg(target_os = "linux")]
pub(crate) fn set_own_nice(nice: i32) -> std::io::Result<()> {
    // SAFETY: a plain system call on the calling thread's own id; no memory is passed.
    let changed = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if changed != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The nice value of the calling thread (Linux).
#[cfg(target_os = "linux")]
pub fn own_nice() -> i32 {
    // SAFETY: a plain system call answering the calling thread's own id.
    let tid = unsafe { libc::gettid() };
    // Asking one's own never fails.
    nice_of(tid).unwrap_or(0)
}

/// The nice value of this process's thread `tid` (Linux; the ids `/proc/self/task` lists), or
/// `None` when there is no such thread (any more).
#[cfg(target_os = "linux")]
pub(crate) fn nice_of(tid: libc::pid_t) -> Option<i32> {
    // -1 is a nice value as well as the error answer: errno, cleared before, tells them apart.
    // SAFETY: errno is the calling thread's own; the rest is a plain system call on a thread id,
    // with no memory passed.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t);
        (nice != -1 || *libc::__errno_location() == 0).then_some(nice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_the_lane_and_answer_their_caller() {
        let lane = Lane::start("test-lane", 2);
        assert_eq!(lane.threads(), 2);
        let caller = std::thread::current().id();
        let (value, ran_on) = lane.run(|| (6 * 7, std::thread::current().id()));
        assert_eq!(value, 42);
        assert_ne!(ran_on, caller, "the job ran on the caller's thread");
        // Many callers at once each get their own answer.
        let lane = Arc::new(lane);
        let answers: Vec<usize> = (0..16)
            .map(|n| {
                let lane = Arc::clone(&lane);
                std::thread::spawn(move || lane.run(move || n * n))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect();
        assert_eq!(answers, (0..16).map(|n| n * n).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_panics_its_caller_and_the_lane_goes_on() {
        let lane = Lane::start("test-lane", 1);
        let panicked = catch_unwind(AssertUnwindSafe(|| lane.run(|| -> u8 { panic!("boom") })));
        assert!(panicked.is_err(), "the caller did not see the job's panic");
        // Its one thread survived.
        assert_eq!(lane.run(|| 7), 7);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn lane_threads_run_below_the_callers_priority() {
        let lane = Lane::start("test-lane", 1);
        let caller = own_nice();
        let on_lane = lane.run(own_nice);
        // The lane asks for LANE_NICE; a caller already nicer than that keeps the lane at its own.
        assert_eq!(on_lane, caller.max(LANE_NICE), "lane threads at nice {on_lane}, the caller at {caller}");
    }
}
