//! Managed mode: `openadapt-agent serve` as a child over private stdio, spoken to with rmcp's
//! client, restarted by a [`RestartPolicy`] when it dies.

use crate::client::{Call, ClientBuilder, ProgressSink, RestartPolicy, ServerStderr};
use crate::error::{Error, Result};
use rmcp::handler::client::progress::{ProgressDispatcher, ProgressSubscriber};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProgressNotificationParam, Request,
    RequestId, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// How much longer than its own `wait_seconds` a call may take before the SDK stops waiting.
const GRACE: Duration = Duration::from_secs(30);
/// The least time the first restart try gets, whatever the policy's budget.
const FIRST_TRY: Duration = Duration::from_secs(5);

/// What starts one server.
struct Spec {
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    stderr: ServerStderr,
}

/// Routes the server's progress notifications to the call that asked for them.
#[derive(Clone)]
struct Handler {
    progress: ProgressDispatcher,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("openadapt-agent-sdk", env!("CARGO_PKG_VERSION")))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress.handle_notification(params).await;
    }
}

/// One running server.
struct Conn {
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    progress: ProgressDispatcher,
    pid: Option<u32>,
}

/// How one attempt of a call ended.
enum Attempt {
    Answer(Result<Value>),
    /// The server is gone. `sent`: the request may have reached it.
    Gone { sent: bool },
}

pub(crate) struct Managed {
    spec: Spec,
    policy: RestartPolicy,
    current: Mutex<Option<Arc<Conn>>>,
    /// One restart at a time; calls that find the server dead wait for it.
    restarting: tokio::sync::Mutex<()>,
    restarts: AtomicU64,
    closed: AtomicBool,
}

impl Managed {
    pub async fn start(builder: &ClientBuilder, program: PathBuf, policy: RestartPolicy) -> Result<Self> {
        let mut args: Vec<OsString> = vec![];
        if let Some(dir) = &builder.runs_dir {
            args.push("--runs-dir".into());
            args.push(dir.clone().into_os_string());
        }
        if !builder.simulated_latency.is_zero() {
            args.push("--simulated-latency-ms".into());
            args.push(builder.simulated_latency.as_millis().to_string().into());
        }
        args.extend(builder.server_args.iter().cloned());
        let mut env = builder.env.clone();
        if let Some(home) = &builder.cache_home {
            env.push(("XDG_CACHE_HOME".into(), home.clone().into_os_string()));
        }
        let spec = Spec { program, args, env, stderr: builder.stderr.clone() };
        let conn = spec.spawn().await?;
        Ok(Managed {
            spec,
            policy,
            current: Mutex::new(Some(Arc::new(conn))),
            restarting: tokio::sync::Mutex::new(()),
            restarts: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.live().and_then(|c| c.pid)
    }

    pub fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Sends `call`, bringing back a dead server and sending it again (same arguments, so the
    /// same request_id) as the policy allows.
    pub async fn call(&self, call: &Call, progress: Option<&ProgressSink>) -> Result<Value> {
        let mut left = self.policy.max_restarts;
        let mut sent = false;
        loop {
            let conn = match self.live() {
                Some(conn) => conn,
                None => match self.recover(&mut left).await {
                    Ok(conn) => conn,
                    Err(e) => {
                        return Err(match (&call.request_id, sent) {
                            (Some(request_id), true) => Error::OutcomeUnknown { request_id: request_id.clone() },
                            _ => e,
                        });
                    }
                },
            };
            match conn.call(call, progress).await {
                Attempt::Answer(answer) => return answer,
                Attempt::Gone { sent: s } => {
                    sent |= s;
                    self.forget(&conn);
                }
            }
        }
    }

    /// The current server, if it is still there.
    fn live(&self) -> Option<Arc<Conn>> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        current.as_ref().filter(|c| !c.peer.is_transport_closed()).cloned()
    }

    fn forget(&self, dead: &Arc<Conn>) {
        let old = {
            let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            match &*current {
                Some(c) if Arc::ptr_eq(c, dead) => current.take(),
                _ => None,
            }
        };
        drop(old);
    }

    /// Starts a new server by the policy, unless another call already did.
    async fn recover(&self, left: &mut u32) -> Result<Arc<Conn>> {
        let _one_at_a_time = self.restarting.lock().await;
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::Transport("the client was closed".into()));
        }
        if let Some(conn) = self.live() {
            return Ok(conn);
        }
        let deadline = Instant::now() + self.policy.total();
        let mut delay = self.policy.backoff_initial;
        let mut last = "the server exited".to_string();
        let mut first = true;
        loop {
            if *left == 0 {
                return Err(Error::Transport(format!("{last}, and the restart policy allows no more restarts")));
            }
            let limit = if first {
                first = false;
                deadline.saturating_duration_since(Instant::now()).max(FIRST_TRY)
            } else {
                let now = Instant::now();
                if now >= deadline {
                    return Err(Error::Transport(format!("{last}; gave up after {:?} of restart tries", self.policy.total())));
                }
                tokio::time::sleep(delay.min(deadline - now)).await;
                delay = delay.saturating_mul(2);
                deadline.saturating_duration_since(Instant::now())
            };
            if limit.is_zero() {
                return Err(Error::Transport(format!("{last}; gave up after {:?} of restart tries", self.policy.total())));
            }
            *left -= 1;
            match tokio::time::timeout(limit, self.spec.spawn()).await {
                Ok(Ok(conn)) => {
                    let conn = Arc::new(conn);
                    *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(conn.clone());
                    self.restarts.fetch_add(1, Ordering::SeqCst);
                    return Ok(conn);
                }
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = "a new server did not answer in time".to_string(),
            }
        }
    }

    pub async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _one_at_a_time = self.restarting.lock().await;
        let conn = self.current.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(conn) = conn {
            let service = conn.service.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(service) = service {
                // Closes the server's stdin and waits (up to rmcp's limit) for it to exit.
                let _ = service.cancel().await;
            }
        }
    }
}

impl Spec {
    async fn spawn(&self) -> Result<Conn> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.arg("serve").args(&self.args);
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        let stderr = match &self.stderr {
            ServerStderr::Inherit => Stdio::inherit(),
            ServerStderr::Null => Stdio::null(),
            ServerStderr::Append(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map(Stdio::from)
                .map_err(|e| Error::Spawn(format!("cannot open the server's log file: {e}")))?,
        };
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(stderr)
            .spawn()
            .map_err(|e| Error::Spawn(format!("{}: {e}", self.program.display())))?;
        let pid = transport.id();
        let progress = ProgressDispatcher::new();
        let service = Handler { progress: progress.clone() }
            .serve(transport)
            .await
            .map_err(|e| Error::Spawn(format!("the server did not initialize: {e}")))?;
        Ok(Conn { peer: service.peer().clone(), service: Mutex::new(Some(service)), progress, pid })
    }
}

impl Conn {
    async fn call(&self, call: &Call, progress: Option<&ProgressSink>) -> Attempt {
        let params = CallToolRequestParams::new(call.tool).with_arguments(call.args.clone());
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let options = PeerRequestOptions::with_timeout(call.wait + GRACE);
        let handle = match self.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => return Attempt::Gone { sent: false },
            Err(e) => return Attempt::Answer(Err(Error::Transport(e.to_string()))),
        };
        // A caller that stops waiting (a dropped stream or future) tells the server, which
        // stops waiting too; the run itself goes on and stays readable.
        let mut abandoned = Abandoned { peer: self.peer.clone(), id: Some(handle.id.clone()) };
        let mut subscriber = match progress {
            Some(_) => Some(self.progress.subscribe(handle.progress_token.clone()).await),
            None => None,
        };
        let response = handle.await_response();
        tokio::pin!(response);
        let answer = loop {
            let note = tokio::select! {
                answer = &mut response => break answer,
                note = next_note(&mut subscriber) => note,
            };
            match (note, progress) {
                (Some(note), Some(sink)) => {
                    let _ = sink.send(note.progress);
                }
                _ => subscriber = None,
            }
        };
        abandoned.id = None;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => Attempt::Answer(tool_result(result)),
            Ok(_) => Attempt::Answer(Err(Error::Protocol("the server answered a tool call with something else".into()))),
            Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)) => Attempt::Gone { sent: true },
            Err(ServiceError::Timeout { timeout }) => Attempt::Answer(Err(match &call.request_id {
                Some(request_id) => Error::OutcomeUnknown { request_id: request_id.clone() },
                None => Error::Transport(format!("no answer within {timeout:?}")),
            })),
            Err(ServiceError::McpError(e)) => Attempt::Answer(Err(Error::Protocol(e.message.to_string()))),
            Err(e) => Attempt::Answer(Err(Error::Transport(e.to_string()))),
        }
    }
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting.
struct Abandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let note = CancelledNotificationParam::new(Some(id), Some("the caller stopped waiting".into()));
            let _ = peer.notify_cancelled(note).await;
        });
    }
}

async fn next_note(subscriber: &mut Option<ProgressSubscriber>) -> Option<ProgressNotificationParam> {
    match subscriber {
        Some(s) => std::future::poll_fn(|cx| futures_core::Stream::poll_next(std::pin::Pin::new(&mut *s), cx)).await,
        None => std::future::pending().await,
    }
}

fn tool_result(result: CallToolResult) -> Result<Value> {
    if result.is_error == Some(true) {
        let text = result.content.first().and_then(|c| c.as_text()).map(|t| t.text.clone()).unwrap_or_default();
        return Err(Error::Tool(text));
    }
    result.structured_content.ok_or_else(|| Error::Protocol("a tool result without structuredContent".into()))
}
