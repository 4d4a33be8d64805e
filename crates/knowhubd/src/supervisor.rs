//! Supervised background services: each runs on a thread of its own under a name; a panic or
//! an error is caught, logged once, reported, and the service restarted with backoff. Every
//! service's state lives in one registry ([`Health`]) that `status` reads.
//!
//! A service is a function that runs until its [`Service`] says it is stopping. It reports
//! what it sees through that handle: [`Service::healthy`] after a unit of work went well,
//! [`Service::degraded`] while its work fails (a hub it cannot reach). Returning `Ok(())` before
//! the stop means it has nothing to do (no hub configured); returning an error or panicking
//! means it failed, and it is started again after a backoff (doubling, reset once it ran well
//! for a while). A failure stays visible (`unhealthy_since`, `last_failure`) until the service
//! says it is healthy again, so a service that crashes at every start never reads as running.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use kb_engine::engine::panic_text;

/// The first wait before a failed service starts again.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait between two starts of a service that keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A service that ran this long before it failed starts again after the first backoff.
const RAN_WELL: Duration = Duration::from_secs(60);
/// How often a service waiting out its backoff looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// What a service is doing, as `status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Started, not yet reported healthy.
    Starting,
    Running,
    /// Running, but its work fails (the reason says why); it keeps trying.
    Degraded,
    /// Crashed or returned an error; waiting to be started again.
    Failed,
    /// Finished: nothing to do with this configuration, or the daemon is stopping.
    Off,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Running => "running",
            State::Degraded => "degraded",
            State::Failed => "failed",
            State::Off => "off",
        }
    }
}

/// One service's entry in the registry.
#[derive(Debug, Clone)]
pub struct Report {
    pub name: &'static str,
    pub state: State,
    /// Why it is in this state (degraded, failed or off), in words.
    pub reason: Option<String>,
    /// When it entered this state.
    pub since: SystemTime,
    /// Since when it has been failing or degraded without a healthy report in between.
    pub unhealthy_since: Option<SystemTime>,
    /// How often the supervisor started it again after a failure.
    pub restarts: u64,
    /// The last crash or error, kept after the service healed.
    pub last_failure: Option<(SystemTime, String)>,
}

impl Report {
    fn new(name: &'static str) -> Report {
        Report {
            name,
            state: State::Starting,
            reason: None,
            since: SystemTime::now(),
            unhealthy_since: None,
            restarts: 0,
            last_failure: None,
        }
    }

    fn enter(&mut self, state: State, reason: Option<String>) {
        if self.state != state {
            self.since = SystemTime::now();
        }
        self.state = state;
        self.reason = reason;
    }

    /// Whether this service has been failing or degraded for longer than `grace`.
    pub fn unhealthy_for(&self, grace: Duration) -> bool {
        matches!(self.state, State::Degraded | State::Failed | State::Starting)
            && self.unhealthy_since.is_some_and(|since| since.elapsed().unwrap_or_default() >= grace)
    }
}

/// The registry every service reports into; `status` derives health from it.
#[derive(Default)]
pub struct Health {
    reports: Mutex<Vec<Report>>,
}

impl Health {
    /// Every registered service, in the order they were started.
    pub fn reports(&self) -> Vec<Report> {
        self.lock().clone()
    }

    /// The services failing or degraded for longer than `grace`.
    pub fn unhealthy(&self, grace: Duration) -> Vec<Report> {
        self.lock().iter().filter(|report| report.unhealthy_for(grace)).cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Report>> {
        self.reports.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, name: &'static str, change: impl FnOnce(&mut Report)) {
        let mut reports = self.lock();
        let index = match reports.iter().position(|report| report.name == name) {
            Some(index) => index,
            None => {
                reports.push(Report::new(name));
                reports.len() - 1
            }
        };
        change(&mut reports[index]);
    }

    fn healthy(&self, name: &'static str) {
        self.update(name, |report| {
            report.enter(State::Running, None);
            report.unhealthy_since = None;
        });
    }

    fn degraded(&self, name: &'static str, reason: String) {
        self.update(name, |report| {
            report.unhealthy_since.get_or_insert_with(SystemTime::now);
            report.enter(State::Degraded, Some(reason));
        });
    }

    fn failed(&self, name: &'static str, reason: String) {
        self.update(name, |report| {
            let now = SystemTime::now();
            report.unhealthy_since.get_or_insert(now);
            report.last_failure = Some((now, reason.clone()));
            report.restarts += 1;
            report.enter(State::Failed, Some(reason));
        });
    }

    fn off(&self, name: &'static str, reason: Option<String>) {
        self.update(name, |report| {
            report.unhealthy_since = None;
            report.enter(State::Off, reason);
        });
    }

    fn starting(&self, name: &'static str) {
        self.update(name, |report| {
            // A service that failed stays unhealthy until it reports otherwise.
            if report.state != State::Starting {
                report.enter(State::Starting, report.reason.clone());
            }
        });
    }
}

/// A running service's view of its supervision: the stop flag and where it reports.
pub struct Service {
    name: &'static str,
    health: Arc<Health>,
    stop: Arc<AtomicBool>,
    off_reason: Mutex<Option<String>>,
}

impl Service {
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the daemon is stopping: the service should return soon.
    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The stop flag itself, for code that polls an `AtomicBool`.
    pub fn stop_flag(&self) -> &AtomicBool {
        &self.stop
    }

    /// A unit of work went well: the service is running, and any failure before is healed.
    pub fn healthy(&self) {
        self.health.healthy(self.name);
    }

    /// The service's work fails for `reason`; it keeps trying. Shown in `status` until
    /// [`Service::healthy`].
    pub fn degraded(&self, reason: impl Into<String>) {
        self.health.degraded(self.name, reason.into());
    }

    /// Says why the service is about to return with nothing to do (shown as `off`).
    pub fn off(&self, reason: impl Into<String>) {
        *self.off_reason.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.into());
    }

    /// Called by a service between units of work. In debug builds (the tests') it fails or
    /// panics when the file named by `KNOWHUB_TEST_FAULTS` has a line `<service>=error` or
    /// `<service>=panic`: the switch the fault-injection tests use. Release builds have none.
    pub fn checkpoint(&self) -> anyhow::Result<()> {
        #[cfg(debug_assertions)]
        match injected_fault(self.name).as_deref() {
            Some("panic") => panic!("a fault injected into the {} service by a test", self.name),
            Some("error") => anyhow::bail!("a fault injected into the {} service by a test", self.name),
            _ => {}
        }
        Ok(())
    }

    /// Sleeps up to `duration`, waking early when the daemon stops.
    pub fn sleep(&self, duration: Duration) {
        let until = Instant::now() + duration;
        while !self.stopping() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            std::thread::sleep(left.min(STOP_POLL));
        }
    }
}

/// The engine's background loops (the embedder) report through this.
impl kb_engine::engine::Pulse for Service {
    fn stopping(&self) -> bool {
        Service::stopping(self)
    }

    fn checkpoint(&self) -> anyhow::Result<()> {
        Service::checkpoint(self)
    }

    fn healthy(&self) {
        Service::healthy(self);
    }

    fn degraded(&self, reason: String) {
        Service::degraded(self, reason);
    }

    fn off(&self, reason: &str) {
        Service::off(self, reason);
    }
}

#[cfg(debug_assertions)]
fn injected_fault(name: &str) -> Option<String> {
    let path = std::env::var_os("KNOWHUB_TEST_FAULTS").filter(|path| !path.is_empty())?;
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| line.trim().strip_prefix(name)?.strip_prefix('=')).map(|fault| fault.trim().to_owned())
}

/// Starts services on threads of their own and restarts them when they fail.
pub struct Supervisor {
    health: Arc<Health>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Called on stop, so a service asleep on a condition variable of its own wakes up.
    wakers: Vec<Box<dyn Fn() + Send + Sync>>,
}

impl Supervisor {
    pub fn new(health: Arc<Health>) -> Supervisor {
        Supervisor { health, stop: Arc::new(AtomicBool::new(false)), threads: Vec::new(), wakers: Vec::new() }
    }

    /// Runs `body` as the service `name` until the supervisor stops; `wake` is called at stop
    /// to interrupt a service waiting on something other than the stop flag.
    pub fn spawn(
        &mut self,
        name: &'static str,
        body: impl Fn(&Service) -> anyhow::Result<()> + Send + 'static,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> anyhow::Result<()> {
        let service =
            Service { name, health: self.health.clone(), stop: self.stop.clone(), off_reason: Mutex::new(None) };
        self.health.starting(name);
        let thread = std::thread::Builder::new()
            .name(format!("knowhub-{name}"))
            .spawn(move || supervise(&service, &body))
            .map_err(|error| anyhow::anyhow!("cannot start the {name} thread: {error}"))?;
        self.threads.push(thread);
        self.wakers.push(Box::new(wake));
        Ok(())
    }

    /// Tells every service to stop and wakes them; does not wait.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        for wake in &self.wakers {
            wake();
        }
    }

    /// Joins the services that have returned; one in the middle of a blocking call (a model
    /// download, an HTTP call) is not waited for, since the process is ending.
    pub fn join_finished(self) {
        for thread in self.threads {
            if thread.is_finished() {
                let _ = thread.join();
            }
        }
    }
}

/// The supervision loop of one service.
fn supervise(service: &Service, body: &dyn Fn(&Service) -> anyhow::Result<()>) {
    let name = service.name;
    let mut backoff = FIRST_BACKOFF;
    let mut last_message = String::new();
    loop {
        if service.stopping() {
            break;
        }
        service.health.starting(name);
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| body(service)));
        if service.stopping() {
            service.health.off(name, Some("the daemon is stopping".to_owned()));
            break;
        }
        let message = match outcome {
            Ok(Ok(())) => {
                let reason = service.off_reason.lock().unwrap_or_else(PoisonError::into_inner).take();
                service.health.off(name, reason);
                break;
            }
            Ok(Err(error)) => format!("failed: {error:#}"),
            Err(panic) => format!("crashed: {}", panic_text(panic.as_ref())),
        };
        if started.elapsed() >= RAN_WELL {
            backoff = FIRST_BACKOFF;
        }
        // Logged once per distinct failure: a service that fails the same way at every start
        // would otherwise fill the log.
        if message != last_message {
            tracing::error!(service = name, "the {name} service {message}; restarting it in {backoff:?}");
        } else {
            tracing::debug!(service = name, "the {name} service {message} again; restarting it in {backoff:?}");
        }
        service.health.failed(name, message.clone());
        last_message = message;
        service.sleep(backoff);
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn report(health: &Health, name: &str) -> Report {
        health.reports().into_iter().find(|report| report.name == name).expect("registered")
    }

    #[test]
    fn a_panicking_service_is_reported_failed_restarted_and_healed_once_it_runs_well() {
        let health = Arc::new(Health::default());
        let mut supervisor = Supervisor::new(health.clone());
        let starts = Arc::new(AtomicUsize::new(0));
        let counted = starts.clone();
        supervisor
            .spawn(
                "flaky",
                move |service| {
                    if counted.fetch_add(1, Ordering::SeqCst) < 2 {
                        panic!("boom {}", 42);
                    }
                    service.healthy();
                    while !service.stopping() {
                        service.sleep(Duration::from_millis(20));
                    }
                    Ok(())
                },
                || {},
            )
            .expect("spawn");
        wait_until("it crashed once", || report(&health, "flaky").restarts >= 1);
        let failed = report(&health, "flaky");
        assert!(failed.last_failure.as_ref().is_some_and(|(_, message)| message.contains("boom 42")), "{failed:?}");
        assert!(failed.unhealthy_since.is_some());
        assert!(!health.unhealthy(Duration::ZERO).is_empty(), "a crashed service is unhealthy");
        wait_until("it runs", || report(&health, "flaky").state == State::Running);
        let healed = report(&health, "flaky");
        assert_eq!(healed.restarts, 2);
        assert_eq!(healed.unhealthy_since, None);
        assert!(health.unhealthy(Duration::ZERO).is_empty());
        assert!(healed.last_failure.is_some(), "the failure stays on record after healing");
        supervisor.stop();
        wait_until("it is off", || report(&health, "flaky").state == State::Off);
        supervisor.join_finished();
    }

    #[test]
    fn an_error_is_a_failure_and_a_degraded_service_is_unhealthy_only_after_the_grace() {
        let health = Arc::new(Health::default());
        let mut supervisor = Supervisor::new(health.clone());
        supervisor.spawn("erring", |_service| anyhow::bail!("cannot reach it"), || {}).expect("spawn");
        supervisor
            .spawn(
                "limping",
                |service| {
                    service.degraded("the hub refuses the connection");
                    while !service.stopping() {
                        service.sleep(Duration::from_millis(20));
                    }
                    Ok(())
                },
                || {},
            )
            .expect("spawn");
        wait_until("it failed", || report(&health, "erring").state == State::Failed);
        assert_eq!(report(&health, "erring").reason.as_deref(), Some("failed: cannot reach it"));
        wait_until("it is degraded", || report(&health, "limping").state == State::Degraded);
        assert!(
            !health.unhealthy(Duration::from_secs(3600)).iter().any(|report| report.name == "limping"),
            "within the grace a degraded service is not yet unhealthy"
        );
        assert!(health.unhealthy(Duration::ZERO).iter().any(|report| report.name == "limping"));
        supervisor.stop();
        supervisor.join_finished();
    }

    #[test]
    fn a_service_with_nothing_to_do_is_off_with_its_reason_and_healthy() {
        let health = Arc::new(Health::default());
        let mut supervisor = Supervisor::new(health.clone());
        supervisor
            .spawn(
                "idle",
                |service| {
                    service.off("no [hub] is configured");
                    Ok(())
                },
                || {},
            )
            .expect("spawn");
        wait_until("it is off", || report(&health, "idle").state == State::Off);
        assert_eq!(report(&health, "idle").reason.as_deref(), Some("no [hub] is configured"));
        assert!(health.unhealthy(Duration::ZERO).is_empty());
        supervisor.join_finished();
    }
}
