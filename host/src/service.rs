//! The service behind run_workflow and get_run: input check, request gate (the ledger claim),
//! a worker per attempt, and waiting. Transport-independent: the MCP layer calls it.

use crate::cards::WorkflowCard;
use crate::contract::{Decision, Mode, Reason, RunResult, SandboxInfo};
use crate::runs::{self, Claim, ClaimFlush, ClaimOutcome, Owner, RunRecord, RunState, RunsDir};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// What a runner reports about one attempt.
pub struct RunOutput {
    pub decision: Decision,
    pub simulated: bool,
    pub sandbox: Option<SandboxInfo>,
    /// Model calls the run made, from its report.
    pub model_calls: Option<u32>,
}

/// Runs one attempt of a workflow. Called on a worker thread once the attempt is claimed.
pub trait Runner: Send + Sync + 'static {
    /// `url` is a per-call target URL, only ever set when the operator allowed overrides.
    /// `claim` is the attempt's claim on its way to disk: wait for it before the first thing
    /// with an effect (a save, a launch), and if it fails, stop without one. Getting ready
    /// (starting an engine, reading and navigating the app) may go first.
    fn run(&self, run_id: &str, workflow: &str, inputs: &Map<String, Value>, url: Option<&str>, claim: &ClaimFlush) -> RunOutput;

    /// Stops whatever is still running, when the server shuts down.
    fn shutdown(&self) {}
}

/// A run_workflow call, after its arguments passed the tool's inputSchema.
pub struct RunRequest {
    pub workflow: String,
    pub inputs: Map<String, Value>,
    pub request_id: String,
    /// A per-call target URL (older run tools, under --allow-url-override only).
    pub url: Option<String>,
}

/// What the request gate came to.
#[allow(clippy::large_enum_variant)] // one per call, moved once
enum Begin {
    /// The answer is known now (a refusal, or a finished attempt replayed).
    Answer(RunResult),
    /// Another call's attempt is running: wait for it, and answer it as a replay.
    Replay { run_id: String },
    /// This call claimed a new attempt and must run it.
    Claimed(Attempt),
}

/// What a call's worker tells the waiting call, once.
enum Settled {
    /// The gate's answer (a refusal, or a finished attempt replayed).
    Answer(RunResult),
    /// Another call's attempt is running: wait for it, and answer it as a replay.
    Replay { run_id: String },
    /// The call's own attempt ended and its end is recorded.
    Finished(RunResult),
}

/// How long an attempt runs before its `running` record is written. One that ends sooner writes
/// only its final record: a file fewer for the disk to create and delete per run. Until then,
/// readers of the run go by its claim, and wait for a record while its owner lives (`settle`).
const RUNNING_RECORD_AFTER: Duration = Duration::from_millis(50);

/// A call's own attempt, as its worker shares it with the call and the running-record timer.
struct OwnAttempt {
    runs: RunsDir,
    record: std::sync::Mutex<OwnRecord>,
    /// Wakes the call when the gate is through and when the running record is written.
    changed: Notify,
}

/// How far the records of a call's own attempt got. The attempt's records live here from its
/// claim until its worker takes them back to write the final record.
#[derive(Default)]
enum OwnRecord {
    #[default]
    AtTheGate,
    /// The gate answered without claiming an attempt of this call's.
    NoAttempt,
    /// Claimed and running; its running record and request summary are not written yet.
    Pending(Box<AttemptRecords>),
    /// Its running record is written.
    Running(Box<AttemptRecords>),
    /// Its final record is being written (or could not be).
    Ending(String),
}

impl OwnAttempt {
    fn new(runs: RunsDir) -> Self {
        OwnAttempt { runs, record: Default::default(), changed: Notify::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OwnRecord> {
        self.record.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn set(&self, state: OwnRecord) {
        *self.lock() = state;
        self.changed.notify_one();
    }

    /// The run id, once claimed, and whether its running record is still to be written.
    fn run_id(&self) -> Option<(String, bool)> {
        match &*self.lock() {
            OwnRecord::Pending(records) => Some((records.running.run_id.clone(), true)),
            OwnRecord::Running(records) => Some((records.running.run_id.clone(), false)),
            OwnRecord::Ending(run_id) => Some((run_id.clone(), false)),
            OwnRecord::AtTheGate | OwnRecord::NoAttempt => None,
        }
    }

    /// Writes the running record and the request summary, unless the record is written
    /// already or the final one is coming. Blocking; the lock keeps the final record from being
    /// written meanwhile.
    fn write_running(&self) {
        let mut own = self.lock();
        let OwnRecord::Pending(records) = &*own else { return };
        if let Err(e) = self.runs.write_run(&records.running, false) {
            tracing::warn!(error = %e, "could not write a running record");
            return;
        }
        write_request_summary(&self.runs, &records.request_key, &records.claims);
        if let OwnRecord::Pending(records) = std::mem::take(&mut *own) {
            *own = OwnRecord::Running(records);
        }
        self.changed.notify_one();
    }

    /// `write_running` on a blocking thread.
    fn write_running_soon(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let own = self.clone();
        tokio::task::spawn_blocking(move || own.write_running())
    }

    /// The attempt's records, back to its worker for the final record: no running record is
    /// written after this (one being written is waited for).
    fn ending(&self) -> Box<AttemptRecords> {
        let mut own = self.lock();
        match std::mem::take(&mut *own) {
            OwnRecord::Pending(records) | OwnRecord::Running(records) => {
                *own = OwnRecord::Ending(records.running.run_id.clone());
                records
            }
            _ => unreachable!("only the worker ends its attempt, once, after it was claimed"),
        }
    }
}

/// The records of a claimed attempt: its running record (the final one once finished), and
/// its request's key and claims, this attempt's included, for the request summary.
struct AttemptRecords {
    running: RunRecord,
    request_key: String,
    claims: Vec<Claim>,
}

/// A claimed attempt, not yet run and not yet recorded.
struct Attempt {
    records: AttemptRecords,
    inputs: Map<String, Value>,
    url: Option<String>,
    claim: Arc<ClaimFlush>,
}

/// One workflow the server offers.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    pub card: WorkflowCard,
    /// False when the workflow can't run now (its bundle failed to load).
    pub available: bool,
}

/// How a server was started: what it offers and what it lets callers do.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub mode: Mode,
    /// run_workflow is registered.
    pub runs_enabled: bool,
    /// Every declared input is required (false only under synthetic recorded defaults).
    pub require_all: bool,
}

pub struct Service {
    mode: Mode,
    policy: Policy,
    runs: RunsDir,
    catalog: Vec<CatalogEntry>,
    runner: Arc<dyn Runner>,
    owner: Owner,
    /// Wakes waiters when a run of this process finishes; runs of other processes are polled.
    finished: Arc<Notify>,
}

/// How often a wait reads the record of a run another call or process holds.
const POLL: Duration = Duration::from_millis(25);
/// How often a wait for this call's own attempt wakes, for progress ticks.
const TICK: Duration = Duration::from_secs(1);

impl Service {
    pub fn new(policy: Policy, runs: RunsDir, catalog: Vec<CatalogEntry>, runner: Arc<dyn Runner>) -> Self {
        Service {
            mode: policy.mode,
            policy,
            runs,
            catalog,
            runner,
            owner: Owner::current(),
            finished: Arc::new(Notify::new()),
        }
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    pub fn catalog(&self) -> &[CatalogEntry] {
        &self.catalog
    }

    pub fn runs_dir(&self) -> &RunsDir {
        &self.runs
    }

    pub fn list_workflows(&self) -> Value {
        let how = if self.policy.runs_enabled {
            "Call run_workflow with a workflow name, its inputs and your own request_id. Reuse the same request_id to retry or to read back the same request; it never runs twice."
        } else {
            "This server is read-only: it lists workflows and reads runs, but can't start one."
        };
        json!({
            "mode": self.mode,
            "run_tools_enabled": self.policy.runs_enabled,
            "how_to_run": how,
            "workflows": self.catalog.iter().map(|c| c.card.to_wire(c.available, self.policy.require_all)).collect::<Vec<_>>(),
        })
    }

    /// A run_workflow call: the request gate, then the attempt it claimed (if any), then
    /// waiting until `wait` after the call began for the answer. `tick` is called about once a
    /// second while waiting.
    ///
    /// The gate runs on a blocking thread, and the attempt it claims on another, the attempt's
    /// worker, while the gate's thread makes the claim durable. Whichever ends the call tells it
    /// once: the gate's answer, or the finished result, handed over in memory instead of read
    /// back from the record. A call that waits out `wait` answers from the running
    /// record, which it has written at once if the attempt was too young to have one.
    pub async fn run(self: &Arc<Self>, req: RunRequest, wait: Duration, mut tick: impl FnMut(u64)) -> std::io::Result<RunResult> {
        if let Some(result) = self.replay_finished(&req) {
            return Ok(result);
        }
        let (settled_tx, mut settled) = tokio::sync::oneshot::channel();
        let own = Arc::new(OwnAttempt::new(self.runs.clone()));
        let (service, worker_own) = (self.clone(), own.clone());
        // Not awaited: the attempt goes on if this call stops waiting or is cancelled.
        drop(crate::telemetry::spawn_blocking(move || match service.begin_run(req) {
            Ok(Begin::Claimed(attempt)) => {
                // The attempt gets ready on a thread of its own while this one makes the claim
                // durable. This order holds whatever the scheduler does: a thread that starts a
                // flush blocks at once, so the attempt's thread gets a CPU even if it was queued
                // behind this one, while a flush handed to another thread could wait out the
                // whole of the attempt's getting ready.
                let claim = attempt.claim.clone();
                let attempt_service = service.clone();
                drop(crate::telemetry::spawn_blocking(move || {
                    attempt_service.run_attempt(attempt, &worker_own, settled_tx)
                }));
                // Its error reaches the attempt, which stops before any effect.
                let _ = claim.wait();
            }
            other => {
                worker_own.set(OwnRecord::NoAttempt);
                drop(settled_tx.send(other.map(|begin| match begin {
                    Begin::Answer(result) => Settled::Answer(result),
                    Begin::Replay { run_id } => Settled::Replay { run_id },
                    Begin::Claimed(_) => unreachable!("matched above"),
                })));
            }
        }));
        // A long attempt gets its running record whether or not this call still waits.
        tokio::spawn({
            let own = own.clone();
            async move {
                loop {
                    tokio::time::sleep(RUNNING_RECORD_AFTER).await;
                    match own.run_id() {
                        None if matches!(*own.lock(), OwnRecord::AtTheGate) => continue,
                        Some((_, true)) => drop(own.write_running_soon().await),
                        _ => {}
                    }
                    return;
                }
            }
        });

        let started = Instant::now();
        let deadline = started + wait;
        let mut ticks = 0u64;
        loop {
            let now = Instant::now();
            let waited_out = now >= deadline;
            if waited_out {
                // The record says how far the attempt got: written now if it is due. Still at
                // the gate (a claim's flush can hang on a sick disk), or with its final record
                // on its way, the call waits for the worker.
                match own.run_id() {
                    Some((_, true)) => drop(own.write_running_soon()),
                    Some((run_id, false)) if matches!(*own.lock(), OwnRecord::Running(_)) => {
                        return self.wait_for(&run_id, Duration::ZERO, false, tick).await;
                    }
                    _ => {}
                }
            }
            let secs = started.elapsed().as_secs();
            if secs > ticks {
                ticks = secs;
                tick(secs);
            }
            let nap = if waited_out { TICK } else { TICK.min(deadline - now) };
            let left = deadline.saturating_duration_since(now);
            let next = async {
                if !waited_out {
                    return Some((&mut settled).await);
                }
                tokio::select! {
                    told = &mut settled => Some(told),
                    _ = own.changed.notified() => None,
                }
            };
            match tokio::time::timeout(nap, next).await {
                Err(_) | Ok(None) => {}
                Ok(Some(Ok(Ok(Settled::Answer(result) | Settled::Finished(result))))) => return Ok(result),
                Ok(Some(Ok(Ok(Settled::Replay { run_id })))) => return self.wait_for(&run_id, left, true, tick).await,
                Ok(Some(Ok(Err(e)))) => return Err(e),
                // The worker ended without recording an end: the record tells what is known,
                // written now if the attempt was too young to have one.
                Ok(Some(Err(_))) => {
                    let Some((run_id, pending)) = own.run_id() else {
                        return Err(std::io::Error::other("the request gate stopped"));
                    };
                    if pending {
                        let _ = own.write_running_soon().await;
                    }
                    return self.wait_for(&run_id, left, false, tick).await;
                }
            }
        }
    }

    /// A repeat of a request whose latest attempt finished for good, answered on the calling
    /// thread from what is on disk: a few small reads, no worker, nothing written. `None` for
    /// anything else (a refusal to record, an attempt to claim, settle or wait for, a key not
    /// loaded yet), which the gate decides.
    fn replay_finished(&self, req: &RunRequest) -> Option<RunResult> {
        if !self.policy.runs_enabled {
            return None;
        }
        let entry = self.catalog.iter().find(|c| c.card.name == req.workflow && c.available)?;
        let resolved = entry.card.check_inputs(&req.inputs, self.policy.require_all).ok()?;
        let fingerprint = self.runs.loaded_fingerprint(&fingerprint_input(req, &resolved))?;
        let claims = self.runs.claims(&RunsDir::request_key(&req.request_id)).ok()?;
        let first = claims.first()?;
        if first.is_torn() || first.fingerprint != fingerprint {
            return None;
        }
        let record = self.runs.read_run(&claims.last()?.run_id).ok()??;
        let settled = record.state == RunState::Finished && !record.result.reason.is_retryable();
        settled.then(|| record.result.mark_replayed())
    }

    /// The request gate. Blocking (claims are fsync'd): call on a blocking thread of the runtime.
    fn begin_run(&self, req: RunRequest) -> std::io::Result<Begin> {
        if !self.policy.runs_enabled {
            return self.refuse(RunResult::new(Reason::RunsDisabled, self.mode), &req, None).map(Begin::Answer);
        }
        let Some(entry) = self.catalog.iter().find(|c| c.card.name == req.workflow) else {
            return self.refuse(RunResult::new(Reason::UnknownWorkflow, self.mode), &req, None).map(Begin::Answer);
        };
        let card = &entry.card;
        if !entry.available {
            return self.refuse(RunResult::new(Reason::WorkflowUnavailable, self.mode), &req, Some(card)).map(Begin::Answer);
        }
        let resolved = match card.check_inputs(&req.inputs, self.policy.require_all) {
            Ok(resolved) => resolved,
            Err(problems) => {
                let mut result = RunResult::new(Reason::InvalidInput, self.mode);
                result.invalid_inputs = Some(problems);
                return self.refuse(result, &req, Some(card)).map(Begin::Answer);
            }
        };
        let fingerprint = self.runs.fingerprint(&fingerprint_input(&req, &resolved))?;
        let key = RunsDir::request_key(&req.request_id);

        // Each pass either answers or claims the next attempt; a lost claim race re-reads.
        loop {
            let claims = self.runs.claims(&key)?;
            if let Some(first) = claims.first() {
                // A torn claim's inputs are unknown: it is answered as interrupted, not as a conflict.
                if !first.is_torn() && first.fingerprint != fingerprint {
                    let mut result = RunResult::new(Reason::RequestIdConflict, self.mode);
                    result.first_run_id = Some(first.run_id.clone());
                    return self.refuse(result, &req, Some(card)).map(Begin::Answer);
                }
            }
            let attempt = match claims.last() {
                None => 1,
                Some(last) => {
                    let record = self.settle(last)?;
                    match record.state {
                        RunState::Running => return Ok(Begin::Replay { run_id: record.run_id }),
                        RunState::Finished if !record.result.reason.is_retryable() => {
                            return Ok(Begin::Answer(record.result.mark_replayed()));
                        }
                        RunState::Finished if last.attempt >= runs::MAX_ATTEMPTS => {
                            let result = RunResult::new(Reason::RetryLimit, self.mode);
                            return self.refuse(result, &req, Some(card)).map(Begin::Answer);
                        }
                        RunState::Finished => last.attempt + 1,
                    }
                }
            };
            let ledger_key = format!("{key}:{attempt}");
            let run_id = self.runs.claim_run_id(&ledger_key)?;
            let claim = Claim {
                schema: runs::CLAIM_SCHEMA.into(),
                namespace: runs::LEDGER_NAMESPACE.into(),
                ledger_key: ledger_key.clone(),
                run_id: run_id.clone(),
                workflow: req.workflow.clone(),
                fingerprint: fingerprint.clone(),
                attempt,
                pid: self.owner.pid,
                pid_start: self.owner.pid_start,
                host: self.owner.host.clone(),
                claimed_at: runs::now_rfc3339(),
            };
            let flush = match self.runs.claim(&key, &claim)? {
                ClaimOutcome::Lost(_) => continue,
                ClaimOutcome::Won(flush) => flush,
            };
            let running = RunResult::new(Reason::Running, self.mode);
            let record =
                self.record(&run_id, Some(&req.request_id), Some(&req.workflow), running, RunState::Running, Some(&claim));
            let mut claims = claims;
            claims.push(claim);
            let records = AttemptRecords { running: record, request_key: key, claims };
            return Ok(Begin::Claimed(Attempt { records, inputs: resolved, url: req.url, claim: Arc::new(flush) }));
        }
    }

    /// Runs a claimed attempt on the calling (blocking) thread, records its end and hands the
    /// result to `settled`. Nothing is handed over when the end could not be recorded: the
    /// record stays `running`, and reads as interrupted once this process is gone, so no caller
    /// is told an outcome the ledger does not hold. Then it writes the request summary, which
    /// is derived from the claims (the authority), after the caller has its answer (a long
    /// attempt wrote it with its running record already), and asks for spare files for the next
    /// claims and records.
    fn run_attempt(&self, attempt: Attempt, own: &OwnAttempt, settled: tokio::sync::oneshot::Sender<std::io::Result<Settled>>) {
        let Attempt { records, inputs, url, claim } = attempt;
        claim.yield_to_flush(Duration::from_millis(1));
        let run_id = records.running.run_id.clone();
        let workflow = records.running.workflow.clone().unwrap_or_default();
        own.set(OwnRecord::Pending(Box::new(records)));
        let started = Instant::now();
        let output = self.runner.run(&run_id, &workflow, &inputs, url.as_deref(), &claim);
        // Durable before the end is recorded, whether or not the runner came to wait for it.
        if let Err(e) = claim.wait() {
            // The runner took no effect. No record either, as for any claim that could not
            // be flushed: once this process is gone the attempt reads as interrupted.
            drop(own.ending());
            drop(settled.send(Err(e)));
            return;
        }
        let mut result =
            RunResult::from_decision(&output.decision, self.mode, output.simulated).with_seconds(started.elapsed().as_secs_f64());
        result.sandbox = output.sandbox;
        result.model_calls = output.model_calls;
        let AttemptRecords { running: mut record, request_key, claims } = *own.ending();
        record.finish(result);
        crate::telemetry::record_run(&record.result, Some(started.elapsed()));
        let written = self.runs.write_run(&record, true);
        self.finished.notify_waiters();
        match written {
            Ok(()) => drop(settled.send(Ok(Settled::Finished(record.result)))),
            Err(e) => {
                drop(settled);
                tracing::error!(error = %e, "could not write a run's final record");
            }
        }
        write_request_summary(&self.runs, &request_key, &claims);
        self.runs.want_spares();
    }

    /// The record behind a claim, settled: a claim whose record is missing or left running by
    /// a process that is gone is recorded as interrupted.
    fn settle(&self, claim: &Claim) -> std::io::Result<RunRecord> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match self.read_settled(&claim.run_id)? {
                Some(record) => return Ok(record),
                // The claimant writes its record once its attempt has gone on for a moment,
                // or when it ends; wait for it unless it is gone.
                None if claim.owner().is_gone() || Instant::now() > deadline => {
                    // The request id itself is not on disk (only its hash), so the record
                    // can't name it.
                    let interrupted = RunResult::new(Reason::Interrupted, self.mode);
                    let workflow = Some(claim.workflow.as_str()).filter(|w| !w.is_empty());
                    let mut record = self.record(&claim.run_id, None, workflow, interrupted, RunState::Finished, Some(claim));
                    record.finished_at = Some(runs::now_rfc3339());
                    self.runs.write_run(&record, true)?;
                    return Ok(record);
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }

    /// Reads a record, turning a `running` one whose owner is gone into `interrupted`.
    fn read_settled(&self, run_id: &str) -> std::io::Result<Option<RunRecord>> {
        let Some(mut record) = self.runs.read_run(run_id)? else { return Ok(None) };
        if record.state == RunState::Running && record.owner().is_gone() {
            let mut interrupted = RunResult::new(Reason::Interrupted, self.mode);
            interrupted.sandbox = record.result.sandbox.clone();
            record.finish(interrupted);
            self.runs.write_run(&record, true)?;
        }
        Ok(Some(record))
    }

    /// Stops the runner's work in flight (the server is going away).
    pub fn shutdown(&self) {
        self.runner.shutdown();
    }

    /// get_run's lookup: `None` when no such run exists here.
    pub fn lookup(&self, run_id: &str) -> std::io::Result<Option<RunRecord>> {
        self.read_settled(run_id)
    }

    /// Waits up to `wait` for `run_id` to finish; answers `running` if it has not. `tick` is
    /// called about once a second while waiting (for progress notifications).
    pub async fn wait(&self, run_id: &str, wait: Duration, replayed_answer: bool, tick: impl FnMut(u64)) -> std::io::Result<RunResult> {
        self.wait_for(run_id, wait, replayed_answer, tick).await
    }

    /// `wait`, with the result of an attempt this call runs itself handed over by its worker
    /// (`own`); other runs are read from their records, polled, since another process may
    /// hold them.
    async fn wait_for(
        &self,
        run_id: &str,
        wait: Duration,
        replayed_answer: bool,
        mut tick: impl FnMut(u64),
    ) -> std::io::Result<RunResult> {
        let started = Instant::now();
        let deadline = started + wait;
        let mut ticks = 0u64;
        loop {
            let notified = self.finished.notified();
            let now = Instant::now();
            let Some(record) = self.read_settled(run_id)? else {
                return Err(std::io::Error::other("a run record disappeared"));
            };
            if record.state == RunState::Finished {
                return Ok(if replayed_answer { record.result.mark_replayed() } else { record.result });
            }
            if now >= deadline {
                return Ok(record.result);
            }
            let secs = started.elapsed().as_secs();
            if secs > ticks {
                ticks = secs;
                tick(secs);
            }
            let _ = tokio::time::timeout(POLL.min(deadline - now), notified).await;
        }
    }

    /// Records a refusal under a new run id. Refusals reserve nothing.
    fn refuse(&self, result: RunResult, req: &RunRequest, card: Option<&WorkflowCard>) -> std::io::Result<RunResult> {
        // Only a known workflow's name is kept: a caller's unknown name is not ours to store.
        let workflow = card.map(|c| c.name.as_str());
        let mut record = self.record(&runs::new_run_id(), Some(&req.request_id), workflow, result, RunState::Finished, None);
        record.finished_at = Some(record.started_at.clone());
        self.runs.write_run(&record, true)?;
        crate::telemetry::record_run(&record.result, None);
        Ok(record.result)
    }

    /// A new record; `result` takes the record's ids.
    fn record(
        &self,
        run_id: &str,
        request_id: Option<&str>,
        workflow: Option<&str>,
        result: RunResult,
        state: RunState,
        claim: Option<&Claim>,
    ) -> RunRecord {
        let mut record = RunRecord {
            schema: runs::RUN_SCHEMA.into(),
            run_id: run_id.into(),
            request_id: request_id.map(str::to_string),
            workflow: workflow.map(str::to_string),
            mode: self.mode.as_str().into(),
            state,
            started_at: runs::now_rfc3339(),
            finished_at: None,
            pid: self.owner.pid,
            pid_start: self.owner.pid_start,
            host: self.owner.host.clone(),
            attempt: claim.map(|c| c.attempt),
            ledger_key: claim.map(|c| c.ledger_key.clone()),
            fingerprint: claim.map(|c| c.fingerprint.clone()),
            result,
        };
        record.result = record.stamp(record.result.clone());
        record
    }
}

/// What a request's fingerprint is taken of: the workflow, its inputs with defaults, the URL.
fn fingerprint_input(req: &RunRequest, resolved: &Map<String, Value>) -> String {
    runs::canonical_json(&json!({"workflow": req.workflow, "inputs": resolved, "url": req.url}))
}

/// The request summary is derived from the claims, which are the authority: a failure to
/// write it is only worth a warning.
fn write_request_summary(runs: &RunsDir, request_key: &str, claims: &[Claim]) {
    if let Err(e) = runs.write_request_summary(request_key, claims) {
        tracing::warn!(error = %e, "could not update a request summary");
    }
}
