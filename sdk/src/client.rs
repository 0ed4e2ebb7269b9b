//! The client: a builder, the calls, and the stream of one run's events.

use crate::error::{Error, Result};
use crate::types::{Catalog, RequestId, RunRef, RunResult, WorkflowCard};
use serde_json::{json, Map, Value};
use std::ffi::OsString;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The server's longest wait per call (its `wait_seconds` maximum).
const MAX_WAIT: Duration = Duration::from_secs(600);
const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// How a managed client brings a dead server back.
///
/// When a call finds the server gone (the child exited or was killed, or its stdio closed),
/// the SDK starts a new one: the first try at once, then after `backoff_initial`, doubling
/// each time, for at most `max_restarts` new servers per call. The tries and the waits between
/// them fit in `backoff_total` from the moment the death was seen (at most 20 s; the first try
/// always gets at least 5 s to start). The call is then sent again to the new server exactly
/// as it was: `run_workflow` under the same request_id (the server never runs a request_id
/// twice, so the answer is the stored result, or the honest outcome of the run the death
/// interrupted: `not_sure_if_saved`/`interrupted`), `get_run` and `list_workflows` as they are
/// (they start nothing). If no new server answers within the policy, a `run_workflow` that
/// had been sent answers [`Error::OutcomeUnknown`]; anything else [`Error::Transport`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// New servers one call may start; 0 never restarts.
    pub max_restarts: u32,
    /// The wait before the second try; it doubles after each failed try.
    pub backoff_initial: Duration,
    /// All the restart tries and waits for one death fit in this; capped at
    /// [`RestartPolicy::MAX_BACKOFF_TOTAL`].
    pub backoff_total: Duration,
}

impl RestartPolicy {
    /// The most a call spends bringing back a dead server: 20 s.
    pub const MAX_BACKOFF_TOTAL: Duration = Duration::from_secs(20);

    /// A policy that never restarts: the first death of the server ends the client.
    pub fn never() -> Self {
        RestartPolicy { max_restarts: 0, ..Self::default() }
    }

    /// `backoff_total`, capped at 20 s.
    pub fn total(&self) -> Duration {
        self.backoff_total.min(Self::MAX_BACKOFF_TOTAL)
    }
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy { max_restarts: 5, backoff_initial: Duration::from_millis(250), backoff_total: Self::MAX_BACKOFF_TOTAL }
    }
}

/// Where a managed server's stderr (its log) goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServerStderr {
    /// This process's stderr.
    #[default]
    Inherit,
    /// Nowhere.
    Null,
    /// Appended to a file (every restarted server appends to the same file).
    Append(PathBuf),
}

/// Which way a client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientMode {
    /// The server's bridge in this process.
    Embedded,
    /// `openadapt-agent serve` as a child over private stdio.
    Managed,
}

/// Builds a [`Client`]: `Client::builder().runs_dir(dir).embedded().await?` or
/// `.managed(program, RestartPolicy::default()).await?`.
#[derive(Clone, Debug)]
pub struct ClientBuilder {
    pub(crate) runs_dir: Option<PathBuf>,
    pub(crate) cache_home: Option<PathBuf>,
    pub(crate) wait: Duration,
    pub(crate) simulated_latency: Duration,
    pub(crate) server_args: Vec<OsString>,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) stderr: ServerStderr,
    #[cfg(feature = "embedded")]
    pub(crate) telemetry: Option<openadapt_agent::telemetry::TelemetryConfig>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder {
            runs_dir: None,
            cache_home: None,
            wait: DEFAULT_WAIT,
            simulated_latency: Duration::ZERO,
            server_args: vec![],
            env: vec![],
            stderr: ServerStderr::Inherit,
            #[cfg(feature = "embedded")]
            telemetry: None,
        }
    }
}

impl ClientBuilder {
    /// Where runs are recorded (the server's `--runs-dir`; default: the server's own default,
    /// for the sandbox `$OPENADAPT_AGENT_SANDBOX_DIR`, else `~/.openadapt/agent-sandbox`).
    pub fn runs_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.runs_dir = Some(dir.into());
        self
    }

    /// The cache home of the engines' compile cache, as `XDG_CACHE_HOME` sets it (default: the
    /// environment's, else `~/.cache`). Managed servers get it as `XDG_CACHE_HOME`.
    pub fn cache_home(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_home = Some(dir.into());
        self
    }

    /// How long one call to the server waits for a run before it answers `running` and the SDK
    /// asks again through `get_run` (default 60 s; 1 s to 600 s).
    pub fn wait_per_call(mut self, wait: Duration) -> Self {
        self.wait = wait.clamp(Duration::from_secs(1), MAX_WAIT);
        self
    }

    /// How long the simulated sandbox app takes before and after a save (default none): for
    /// studying slow apps and runs in flight.
    pub fn simulated_latency(mut self, latency: Duration) -> Self {
        self.simulated_latency = latency;
        self
    }

    /// One more argument to `openadapt-agent serve` (managed only), e.g. `--bundles DIR`.
    pub fn server_arg(mut self, arg: impl Into<OsString>) -> Self {
        self.server_args.push(arg.into());
        self
    }

    /// An environment variable for the managed server.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Where a managed server's log goes (default: this process's stderr).
    pub fn server_stderr(mut self, stderr: ServerStderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// OTLP telemetry for an embedded host, with the same settings as the server's `--otlp-*`
    /// flags (a managed server takes those flags through [`ClientBuilder::server_arg`]).
    /// Telemetry stops, flushing for at most 5 s, when the client is dropped.
    #[cfg(feature = "embedded")]
    pub fn telemetry(mut self, config: openadapt_agent::telemetry::TelemetryConfig) -> Self {
        self.telemetry = Some(config);
        self
    }

    /// A client with the sandbox server's bridge in this process: no child, no stdio. Serves
    /// the simulated sandbox on `runs_dir`; `server_arg`, `env` and `server_stderr` don't apply.
    #[cfg(feature = "embedded")]
    pub async fn embedded(self) -> Result<Client> {
        let backend = crate::embedded::Embedded::start(&self).await?;
        Ok(Client::new(Backend::Embedded(backend), self.wait))
    }

    /// A client that spawns `program serve [--runs-dir DIR] [server args]` over private stdio
    /// and restarts it by `policy` when it dies. Fails with [`Error::Spawn`] when the first
    /// server does not start and initialize.
    #[cfg(feature = "managed")]
    pub async fn managed(self, program: impl Into<PathBuf>, policy: RestartPolicy) -> Result<Client> {
        let backend = crate::managed::Managed::start(&self, program.into(), policy).await?;
        Ok(Client::new(Backend::Managed(backend), self.wait))
    }
}

/// One tool call as the backends see it.
#[cfg_attr(not(feature = "managed"), allow(dead_code))]
pub(crate) struct Call {
    pub tool: &'static str,
    pub args: Map<String, Value>,
    /// Set on `run_workflow`: a lost answer is [`Error::OutcomeUnknown`] for this id.
    pub request_id: Option<String>,
    /// The call's `wait_seconds`: how long the server may take to answer.
    pub wait: Duration,
}

/// Where progress (seconds since the call began waiting) goes.
pub(crate) type ProgressSink = mpsc::UnboundedSender<f64>;

pub(crate) enum Backend {
    #[cfg(feature = "managed")]
    Managed(crate::managed::Managed),
    #[cfg(feature = "embedded")]
    Embedded(crate::embedded::Embedded),
}

impl Backend {
    async fn call(&self, call: &Call, progress: Option<&ProgressSink>) -> Result<Value> {
        match self {
            #[cfg(feature = "managed")]
            Backend::Managed(m) => m.call(call, progress).await,
            #[cfg(feature = "embedded")]
            Backend::Embedded(e) => e.call(call, progress).await,
            #[cfg(not(any(feature = "managed", feature = "embedded")))]
            _ => {
                let _ = (call, progress);
                unreachable!("a client needs the managed or the embedded feature")
            }
        }
    }
}

struct Inner {
    backend: Backend,
    wait: Duration,
}

/// A typed client of one openadapt-agent server. Cheap to clone; calls may run concurrently.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("mode", &self.mode()).field("wait", &self.inner.wait).finish()
    }
}

impl Client {
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    #[cfg_attr(not(any(feature = "managed", feature = "embedded")), allow(dead_code))]
    fn new(backend: Backend, wait: Duration) -> Self {
        Client { inner: Arc::new(Inner { backend, wait }) }
    }

    pub fn mode(&self) -> ClientMode {
        match &self.inner.backend {
            #[cfg(feature = "managed")]
            Backend::Managed(_) => ClientMode::Managed,
            #[cfg(feature = "embedded")]
            Backend::Embedded(_) => ClientMode::Embedded,
            #[cfg(not(any(feature = "managed", feature = "embedded")))]
            _ => unreachable!(),
        }
    }

    /// The managed server's process id now (`None` when embedded, or between a death and its
    /// restart).
    pub fn server_pid(&self) -> Option<u32> {
        match &self.inner.backend {
            #[cfg(feature = "managed")]
            Backend::Managed(m) => m.pid(),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// How many times this client started a new server after one died (0 when embedded).
    pub fn restarts(&self) -> u64 {
        match &self.inner.backend {
            #[cfg(feature = "managed")]
            Backend::Managed(m) => m.restarts(),
            #[allow(unreachable_patterns)]
            _ => 0,
        }
    }

    async fn call(&self, call: Call, progress: Option<&ProgressSink>) -> Result<Value> {
        self.inner.backend.call(&call, progress).await
    }

    /// The whole `list_workflows` answer.
    pub async fn catalog(&self) -> Result<Catalog> {
        let call = Call { tool: "list_workflows", args: Map::new(), request_id: None, wait: Duration::ZERO };
        let value = self.call(call, None).await?;
        serde_json::from_value(value).map_err(|e| Error::Protocol(format!("the workflow list does not parse: {e}")))
    }

    /// The workflows the server offers, as typed cards.
    pub async fn workflows(&self) -> Result<Vec<WorkflowCard>> {
        Ok(self.catalog().await?.workflows)
    }

    /// Runs `workflow` with `inputs` (a JSON object, as the card's `inputs` schema describes)
    /// under the caller's own `request_id`, and waits for its outcome (through `get_run` when
    /// one call's wait runs out). The same request_id never runs twice: calling again, after
    /// any crash or restart, answers the stored result (`replayed`), and other inputs under it
    /// answer `did_not_run`/`request_id_conflict`.
    ///
    /// Every outcome is an `Ok(RunResult)`; errors are about reaching the server. After
    /// [`Error::OutcomeUnknown`], call `run` again with the same request_id.
    pub async fn run(&self, workflow: &str, inputs: Value, request_id: &RequestId) -> Result<RunResult> {
        let first = self.start(workflow, inputs, request_id, self.inner.wait).await?;
        self.until_terminal(first, None).await
    }

    /// Waits for a run through `get_run` until it is terminal. Works from a persisted
    /// [`RunRef`] after this program's restart, or after the server's: a run whose server died
    /// answers its honest outcome (`not_sure_if_saved`/`interrupted`); nothing is run again.
    pub async fn resume(&self, run: &RunRef) -> Result<RunResult> {
        let result = self.get_run(&run.run_id, None).await?;
        self.until_terminal(result, None).await
    }

    /// Starts a run and streams its events: `Started` (with the run id, so the run can be
    /// resumed), `Progress` about once a second while it runs, and `Finished` with the result,
    /// always in that order. Errors starting the run come back here; later ones as the
    /// stream's items. Dropping the stream stops watching; the run goes on, and `resume` or
    /// `run` with the same request_id finds it.
    pub async fn run_streamed(&self, workflow: &str, inputs: Value, request_id: &RequestId) -> Result<RunStream> {
        // Ask without waiting: the answer names the run (or is already final).
        let first = self.start(workflow, inputs, request_id, Duration::ZERO).await?;
        let run_ref = first.run_ref();
        let (tx, rx) = mpsc::unbounded_channel();
        if let Some(r) = &run_ref {
            let _ = tx.send(Ok(RunEvent::Started { run_id: r.run_id.clone() }));
        }
        let client = self.clone();
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let (ptx, mut prx) = mpsc::unbounded_channel::<f64>();
            let mut result = first;
            while !result.is_terminal() {
                let Some(run_id) = result.run_id.clone() else {
                    let _ = tx.send(Err(Error::Protocol("a running result without a run_id".into())));
                    return;
                };
                let offset = started.elapsed().as_secs_f64();
                let call = client.get_run(&run_id, Some(&ptx));
                tokio::pin!(call);
                let answer = loop {
                    tokio::select! {
                        answer = &mut call => break answer,
                        Some(secs) = prx.recv() => {
                            let _ = tx.send(Ok(RunEvent::Progress { seconds: offset + secs }));
                        }
                    }
                };
                while let Ok(secs) = prx.try_recv() {
                    let _ = tx.send(Ok(RunEvent::Progress { seconds: offset + secs }));
                }
                match answer {
                    Ok(next) => result = next,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            let _ = tx.send(Ok(RunEvent::Finished(result)));
        });
        Ok(RunStream { rx, task, run_ref })
    }

    /// Ends the client: a managed server is told to exit (a run still in flight on it is then
    /// recorded as interrupted); an embedded one stops its work in flight. Other clones of
    /// this client fail their calls from then on.
    pub async fn close(self) {
        match &self.inner.backend {
            #[cfg(feature = "managed")]
            Backend::Managed(m) => m.close().await,
            #[cfg(feature = "embedded")]
            Backend::Embedded(e) => e.close(),
            #[cfg(not(any(feature = "managed", feature = "embedded")))]
            _ => {}
        }
    }

    async fn start(&self, workflow: &str, inputs: Value, request_id: &RequestId, wait: Duration) -> Result<RunResult> {
        let args = json!({
            "workflow": workflow,
            "inputs": inputs,
            "request_id": request_id.as_str(),
            "wait_seconds": wait.as_secs(),
        });
        let call = Call {
            tool: "run_workflow",
            args: args.as_object().cloned().unwrap_or_default(),
            request_id: Some(request_id.as_str().to_string()),
            wait,
        };
        RunResult::from_json(self.call(call, None).await?)
    }

    async fn get_run(&self, run_id: &str, progress: Option<&ProgressSink>) -> Result<RunResult> {
        let wait = self.inner.wait;
        let args = json!({"run_id": run_id, "wait_seconds": wait.as_secs()});
        let call = Call { tool: "get_run", args: args.as_object().cloned().unwrap_or_default(), request_id: None, wait };
        RunResult::from_json(self.call(call, progress).await?)
    }

    async fn until_terminal(&self, mut result: RunResult, progress: Option<&ProgressSink>) -> Result<RunResult> {
        while !result.is_terminal() {
            let Some(run_id) = result.run_id.clone() else {
                return Err(Error::Protocol("a running result without a run_id".into()));
            };
            result = self.get_run(&run_id, progress).await?;
        }
        Ok(result)
    }
}

/// One event of a streamed run.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // a handful of events per run; the result is not boxed
pub enum RunEvent {
    /// The run has an id: `RunRef::new(run_id)` (or [`RunStream::run_ref`]) finds it again.
    Started { run_id: String },
    /// Still running: seconds this stream has waited, about once a second (from the server's
    /// MCP progress notifications when managed, from the service when embedded).
    Progress { seconds: f64 },
    /// The terminal result; the last event.
    Finished(RunResult),
}

/// The events of one run ([`Client::run_streamed`]): a `Stream` of `Result<RunEvent>`.
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Result<RunEvent>>,
    task: tokio::task::JoinHandle<()>,
    run_ref: Option<RunRef>,
}

impl RunStream {
    /// The next event; `None` after `Finished` or an error.
    pub async fn next(&mut self) -> Option<Result<RunEvent>> {
        self.rx.recv().await
    }

    /// Reads the rest of the stream and answers the result.
    pub async fn finish(mut self) -> Result<RunResult> {
        while let Some(event) = self.next().await {
            if let RunEvent::Finished(result) = event? {
                return Ok(result);
            }
        }
        Err(Error::Protocol("the run's events ended without a result".into()))
    }

    /// The run this stream follows, with its request_id and workflow: persist it to
    /// [`Client::resume`] later.
    pub fn run_ref(&self) -> Option<&RunRef> {
        self.run_ref.as_ref()
    }
}

impl futures_core::Stream for RunStream {
    type Item = Result<RunEvent>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for RunStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}
