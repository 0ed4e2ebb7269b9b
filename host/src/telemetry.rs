//! Telemetry: OpenTelemetry traces, metrics and logs over OTLP/HTTP (protobuf), off by default.
//!
//! One span per tool call (`execute_tool`) with child spans for the sandbox engine session
//! (`engine.session`) and the Flow subprocess (`flow.subprocess`); counters and latency
//! histograms of outcomes by reason; a log record per tool call plus the server's own warn and
//! error lines. What a span may carry is the content policy's to say:
//!
//! | capture | spans carry |
//! |---|---|
//! | `off` (default) | timings, outcomes, reasons, hashed ids |
//! | `metadata` | also the tool name, the opaque workflow id, the mode and the engine |
//! | `full` (only with protected export) | also the call's arguments and result, secret-masked and truncated |
//!
//! Metric labels and log records never carry content, whatever the policy. Export happens on
//! the SDK's own threads behind bounded queues: a slow or unreachable collector never fails or
//! slows a tool call; spans it can't take are dropped. Shutdown flushes for at most 5 s.
//!
//! Header values never leave this module except inside the export requests: a `secret` header
//! is read from the environment at start, held as a sensitive value and printed nowhere.

use crate::bridge::Reply;
use crate::contract::{Evidence, Mode, Outcome, Reason, RunResult};
use http::{HeaderName, HeaderValue};
use opentelemetry::context::{ContextGuard, FutureExt as _};
use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _};
use opentelemetry::{Context, InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::logs::{SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use regex::Regex;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, LazyLock, Mutex, RwLock};
use std::time::{Duration, Instant};

/// The default byte limit of one captured value under `full`.
pub const DEFAULT_MAX_BYTES: usize = 8 * 1024;
/// The largest byte limit `full` accepts.
pub const MAX_MAX_BYTES: usize = 64 * 1024;
/// At most this many headers.
pub const MAX_HEADERS: usize = 8;
/// Shutdown waits at most this long for the last export, all signals together.
pub const SHUTDOWN_BUDGET: Duration = Duration::from_secs(5);
/// One export (all its retries) gives up after this long.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(3);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a collector's answer that is read.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;

const SCOPE: &str = "openadapt-agent";

/// What spans may carry beyond timings, outcomes and hashed ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Capture {
    /// Timings, outcomes, reasons and hashed ids only.
    #[default]
    Off,
    /// Also the tool name, the opaque workflow id, the mode and the engine. Never a value.
    Metadata,
    /// Also the call's arguments and result, truncated and secret-masked. Needs protected export.
    Full,
}

impl Capture {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "off" => Some(Capture::Off),
            "metadata" => Some(Capture::Metadata),
            "full" => Some(Capture::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Capture::Off => "off",
            Capture::Metadata => "metadata",
            Capture::Full => "full",
        }
    }
}

/// The content policy: what spans capture, the byte limit of one captured value, and whether
/// captured values go through secret masking (best effort, not a guarantee).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentPolicy {
    pub capture: Capture,
    pub max_bytes: usize,
    pub redact_secrets: bool,
}

impl Default for ContentPolicy {
    fn default() -> Self {
        ContentPolicy { capture: Capture::Off, max_bytes: DEFAULT_MAX_BYTES, redact_secrets: true }
    }
}

/// Which signals are exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signals {
    pub traces: bool,
    pub metrics: bool,
    pub logs: bool,
}

impl Signals {
    pub const ALL: Signals = Signals { traces: true, metrics: true, logs: true };
    pub const NONE: Signals = Signals { traces: false, metrics: false, logs: false };

    /// `traces,metrics,logs` or any non-empty subset.
    pub fn parse_list(list: &str) -> Result<Self, ConfigError> {
        let mut s = Signals::NONE;
        for name in list.split(',').map(str::trim) {
            match name {
                "traces" => s.traces = true,
                "metrics" => s.metrics = true,
                "logs" => s.logs = true,
                _ => return Err(ConfigError::new("--otlp-signals takes traces, metrics and logs, separated by commas")),
            }
        }
        Ok(s)
    }

    fn any(self) -> bool {
        self.traces || self.metrics || self.logs
    }
}

impl Default for Signals {
    fn default() -> Self {
        Signals::ALL
    }
}

/// Where a header's value comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum HeaderSource {
    /// A non-secret value given as is (`x-langfuse-ingestion-version: 4`).
    Literal(String),
    /// The name of an environment variable, read once at start; its value is secret.
    Env(String),
}

/// One header sent with every export request.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: HeaderSource,
}

impl Header {
    /// A non-secret header. Credential-looking names (authorization, api keys, tokens, cookies)
    /// are refused as literals: give those with [`Header::secret`].
    pub fn literal(name: impl Into<String>, value: impl Into<String>) -> Self {
        Header { name: name.into(), value: HeaderSource::Literal(value.into()) }
    }

    /// A secret header whose value is read from `env_var` when telemetry starts.
    pub fn secret(name: impl Into<String>, env_var: impl Into<String>) -> Self {
        Header { name: name.into(), value: HeaderSource::Env(env_var.into()) }
    }

    /// Parses the command line's `NAME=literal:VALUE` or `NAME=env:VAR`. Errors never echo the
    /// value.
    pub fn parse_flag(spec: &str) -> Result<Self, ConfigError> {
        const USAGE: &str = "--otlp-header takes NAME=env:VAR (secrets) or NAME=literal:VALUE (non-secrets)";
        let Some((name, source)) = spec.split_once('=') else { return Err(ConfigError::new(USAGE)) };
        if let Some(var) = source.strip_prefix("env:") {
            Ok(Header::secret(name, var))
        } else if let Some(value) = source.strip_prefix("literal:") {
            Ok(Header::literal(name, value))
        } else {
            Err(ConfigError::new(USAGE))
        }
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.value {
            HeaderSource::Literal(_) => "literal".to_string(),
            HeaderSource::Env(var) => format!("env:{var}"),
        };
        f.debug_struct("Header").field("name", &self.name).field("value", &source).finish()
    }
}

/// Everything telemetry is started with; the CLI's `--otlp-*` flags and an embedded host's
/// builder fill the same struct.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TelemetryConfig {
    /// Base URL: `/v1/traces`, `/v1/metrics` and `/v1/logs` are appended (after any base
    /// path). HTTPS unless the host is loopback. No credentials, query or fragment.
    pub endpoint: String,
    /// At most [`MAX_HEADERS`].
    pub headers: Vec<Header>,
    pub signals: Signals,
    pub content: ContentPolicy,
    /// The server's `--allow-protected-export`: `Capture::Full` needs it.
    pub allow_protected_export: bool,
}

impl TelemetryConfig {
    /// All signals, content `off`, no headers.
    pub fn new(endpoint: impl Into<String>) -> Self {
        TelemetryConfig {
            endpoint: endpoint.into(),
            headers: Vec::new(),
            signals: Signals::ALL,
            content: ContentPolicy::default(),
            allow_protected_export: false,
        }
    }

    /// Checks everything that can be checked without the environment, in one line that
    /// never carries a header value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        parse_endpoint(&self.endpoint)?;
        if !self.signals.any() {
            return Err(ConfigError::new("--otlp-signals needs at least one of traces, metrics, logs"));
        }
        let c = &self.content;
        if c.capture == Capture::Full && !self.allow_protected_export {
            return Err(ConfigError::new("--otlp-content full needs --allow-protected-export"));
        }
        if c.max_bytes == 0 || c.max_bytes > MAX_MAX_BYTES {
            return Err(ConfigError::new("--otlp-max-bytes must be between 1 and 65536"));
        }
        if self.headers.len() > MAX_HEADERS {
            return Err(ConfigError::new("at most 8 --otlp-header values"));
        }
        let mut seen = Vec::new();
        for h in &self.headers {
            let name = h.name.to_ascii_lowercase();
            if HeaderName::from_bytes(name.as_bytes()).is_err() || name.is_empty() {
                return Err(ConfigError::new("an --otlp-header name is not a valid header name"));
            }
            if exporter_managed(&name) {
                return Err(ConfigError(format!("--otlp-header {name} is set by the exporter and can't be given")));
            }
            if seen.contains(&name) {
                return Err(ConfigError(format!("--otlp-header {name} is given twice")));
            }
            match &h.value {
                HeaderSource::Literal(value) => {
                    if credential_like(&name) {
                        return Err(ConfigError(format!(
                            "--otlp-header {name} carries a credential: give it as {name}=env:VAR, never as a literal"
                        )));
                    }
                    if HeaderValue::from_str(value).is_err() {
                        return Err(ConfigError(format!("--otlp-header {name}: the value is not a valid header value")));
                    }
                }
                HeaderSource::Env(var) => {
                    if var.is_empty() || var.contains('=') || var.contains('\0') {
                        return Err(ConfigError(format!("--otlp-header {name}: env: needs the name of an environment variable")));
                    }
                }
            }
            seen.push(name);
        }
        Ok(())
    }

    /// The URL one signal is exported to: the endpoint's base path plus `/v1/<signal>`.
    pub fn signal_url(&self, signal: &str) -> String {
        format!("{}/v1/{signal}", self.endpoint.trim_end_matches('/'))
    }

    /// Reads the headers' values (secrets from the environment) into sensitive header values.
    fn resolve_headers(&self) -> Result<Vec<(HeaderName, HeaderValue)>, ConfigError> {
        let mut out = Vec::new();
        for h in &self.headers {
            let name = HeaderName::from_bytes(h.name.to_ascii_lowercase().as_bytes())
                .map_err(|_| ConfigError::new("an --otlp-header name is not a valid header name"))?;
            let value = match &h.value {
                HeaderSource::Literal(v) => HeaderValue::from_str(v),
                HeaderSource::Env(var) => {
                    let Some(v) = std::env::var_os(var) else {
                        return Err(ConfigError(format!("--otlp-header {name}: the environment variable {var} is not set")));
                    };
                    let Some(v) = v.to_str().filter(|v| !v.is_empty()) else {
                        return Err(ConfigError(format!("--otlp-header {name}: the environment variable {var} is empty or not text")));
                    };
                    HeaderValue::from_str(v)
                }
            };
            let Ok(mut value) = value else {
                return Err(ConfigError(format!("--otlp-header {name}: the value is not a valid header value")));
            };
            value.set_sensitive(true);
            out.push((name, value));
        }
        Ok(out)
    }
}

/// A configuration that can't start: one line, never a header value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(String);

impl ConfigError {
    fn new(line: &str) -> Self {
        ConfigError(line.to_string())
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Headers the exporter or the HTTP client sets itself.
fn exporter_managed(name: &str) -> bool {
    matches!(
        name,
        "host"
            | "content-type"
            | "content-length"
            | "content-encoding"
            | "transfer-encoding"
            | "connection"
            | "keep-alive"
            | "upgrade"
            | "te"
            | "trailer"
            | "expect"
            | "accept-encoding"
            | "user-agent"
    ) || name.starts_with("proxy-")
}

fn credential_like(name: &str) -> bool {
    ["auth", "key", "token", "secret", "password", "cookie", "session", "signature", "credential"]
        .iter()
        .any(|w| name.contains(w))
}

/// The endpoint's parts that matter: whether the host is loopback.
fn parse_endpoint(endpoint: &str) -> Result<bool, ConfigError> {
    let bad = || ConfigError::new("--otlp-endpoint must be an http(s) URL with a host");
    let uri: http::Uri = endpoint.parse().map_err(|_| bad())?;
    let authority = uri.authority().ok_or_else(bad)?;
    if authority.as_str().contains('@') {
        return Err(ConfigError::new("--otlp-endpoint can't carry credentials: give them with --otlp-header NAME=env:VAR"));
    }
    if uri.query().is_some() || endpoint.contains('#') {
        return Err(ConfigError::new("--otlp-endpoint takes a base URL without a query or fragment"));
    }
    let host = authority.host();
    let loopback = is_loopback(host);
    match uri.scheme_str() {
        Some("https") => Ok(loopback),
        Some("http") if loopback => Ok(true),
        Some("http") => Err(ConfigError::new("--otlp-endpoint must use https unless the host is loopback")),
        _ => Err(bad()),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

// ---------------------------------------------------------------------------------------------
// Start and stop.

/// What is running while telemetry is on.
struct Active {
    policy: ContentPolicy,
    tracer: Option<SdkTracer>,
    instruments: Option<Instruments>,
    logger: Option<SdkLogger>,
}

struct Instruments {
    tool_calls: Counter<u64>,
    call_ms: Histogram<f64>,
    runs: Counter<u64>,
    run_ms: Histogram<f64>,
}

static ACTIVE: RwLock<Option<Arc<Active>>> = RwLock::new(None);

fn active() -> Option<Arc<Active>> {
    ACTIVE.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Whether telemetry is on in this process.
pub fn enabled() -> bool {
    ACTIVE.read().unwrap_or_else(|p| p.into_inner()).is_some()
}

/// Keeps telemetry on; dropping it (or [`TelemetryGuard::shutdown`]) flushes what is queued
/// for at most [`SHUTDOWN_BUDGET`] and turns telemetry off.
#[must_use = "telemetry stops when the guard is dropped"]
pub struct TelemetryGuard {
    tracer: Option<SdkTracerProvider>,
    meter: Option<SdkMeterProvider>,
    logger: Option<SdkLoggerProvider>,
    /// This guard's providers are the ones in use (not only built).
    installed: bool,
}

impl fmt::Debug for TelemetryGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryGuard")
            .field("traces", &self.tracer.is_some())
            .field("metrics", &self.meter.is_some())
            .field("logs", &self.logger.is_some())
            .finish()
    }
}

/// Starts telemetry for this process: validates the configuration, reads secret headers from
/// the environment, and builds one OTLP/HTTP exporter per selected signal. One telemetry per
/// process: starting a second while one is on is an error.
pub fn init(config: &TelemetryConfig) -> anyhow::Result<TelemetryGuard> {
    config.validate()?;
    let loopback = parse_endpoint(&config.endpoint)?;
    let headers = config.resolve_headers()?;
    if enabled() {
        anyhow::bail!("telemetry is already on in this process");
    }
    let transport = Transport::new(loopback, headers);
    let resource = Resource::builder()
        .with_service_name(SCOPE)
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build();
    let scope = InstrumentationScope::builder(SCOPE).with_version(env!("CARGO_PKG_VERSION")).build();
    // Until it is installed, dropping the guard (an exporter failed to build) only stops what
    // it built.
    let mut guard = TelemetryGuard { tracer: None, meter: None, logger: None, installed: false };
    let mut state = Active { policy: config.content, tracer: None, instruments: None, logger: None };

    if config.signals.traces {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(config.signal_url("traces"))
            .with_timeout(EXPORT_TIMEOUT)
            .with_http_client(transport.clone())
            .build()?;
        let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource.clone()).build();
        state.tracer = Some(provider.tracer_with_scope(scope.clone()));
        guard.tracer = Some(provider);
    }
    if config.signals.metrics {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(config.signal_url("metrics"))
            .with_timeout(EXPORT_TIMEOUT)
            .with_http_client(transport.clone())
            .build()?;
        let provider = SdkMeterProvider::builder().with_periodic_exporter(exporter).with_resource(resource.clone()).build();
        let meter = provider.meter_with_scope(scope.clone());
        state.instruments = Some(Instruments {
            tool_calls: meter
                .u64_counter("openadapt_agent.tool_calls")
                .with_description("Tool calls by outcome and reason")
                .build(),
            call_ms: meter
                .f64_histogram("openadapt_agent.tool_call.duration")
                .with_unit("ms")
                .with_description("How long a tool call took to answer")
                .build(),
            runs: meter
                .u64_counter("openadapt_agent.runs")
                .with_description("Finished run attempts and refusals by outcome and reason")
                .build(),
            run_ms: meter
                .f64_histogram("openadapt_agent.run.duration")
                .with_unit("ms")
                .with_description("How long a run attempt took, start to finish")
                .build(),
        });
        guard.meter = Some(provider);
    }
    if config.signals.logs {
        let exporter = opentelemetry_otlp::LogExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(config.signal_url("logs"))
            .with_timeout(EXPORT_TIMEOUT)
            .with_http_client(transport)
            .build()?;
        let provider = SdkLoggerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        state.logger = Some(provider.logger_with_scope(scope));
        guard.logger = Some(provider);
    }
    let mut slot = ACTIVE.write().unwrap_or_else(|p| p.into_inner());
    if slot.is_some() {
        drop(slot);
        anyhow::bail!("telemetry is already on in this process");
    }
    *slot = Some(Arc::new(state));
    drop(slot);
    guard.installed = true;
    Ok(guard)
}

impl TelemetryGuard {
    /// Flushes and stops, waiting at most [`SHUTDOWN_BUDGET`] for all signals together.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if self.tracer.is_none() && self.meter.is_none() && self.logger.is_none() {
            return;
        }
        if std::mem::take(&mut self.installed) {
            ACTIVE.write().unwrap_or_else(|p| p.into_inner()).take();
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut pending = 0;
        let mut run = |f: Box<dyn FnOnce() + Send>| {
            let tx = tx.clone();
            let spawned = std::thread::Builder::new().name("otlp-shutdown".into()).spawn(move || {
                f();
                let _ = tx.send(());
            });
            if spawned.is_ok() {
                pending += 1;
            }
        };
        if let Some(p) = self.tracer.take() {
            run(Box::new(move || drop(p.shutdown_with_timeout(SHUTDOWN_BUDGET))));
        }
        if let Some(p) = self.meter.take() {
            run(Box::new(move || drop(p.shutdown_with_timeout(SHUTDOWN_BUDGET))));
        }
        if let Some(p) = self.logger.take() {
            run(Box::new(move || drop(p.shutdown_with_timeout(SHUTDOWN_BUDGET))));
        }
        // Whatever is not out by the deadline stays behind: the process goes on without it.
        let deadline = Instant::now() + SHUTDOWN_BUDGET;
        for _ in 0..pending {
            if rx.recv_timeout(deadline.saturating_duration_since(Instant::now())).is_err() {
                tracing::warn!("telemetry shutdown: the collector did not take the last batch in time; it is dropped");
                break;
            }
        }
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------------
// The HTTP client: ureq (blocking) on the SDK's export threads; rustls with ring for HTTPS.

#[derive(Clone)]
struct Transport(Arc<TransportInner>);

struct TransportInner {
    agent: ureq::Agent,
    headers: Vec<(HeaderName, HeaderValue)>,
    last_warning: Mutex<Option<Instant>>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the header values.
        f.debug_struct("Transport").field("headers", &self.0.headers.len()).finish()
    }
}

impl Transport {
    fn new(loopback: bool, headers: Vec<(HeaderName, HeaderValue)>) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(EXPORT_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .http_status_as_error(false)
            // A redirect could carry the headers elsewhere: never follow one.
            .max_redirects(0)
            .max_redirects_will_error(false)
            // A loopback collector is reached directly, whatever proxy the environment names.
            .proxy(if loopback { None } else { ureq::Proxy::try_from_env() })
            .user_agent(concat!("openadapt-agent/", env!("CARGO_PKG_VERSION")))
            .build();
        Transport(Arc::new(TransportInner { agent: ureq::Agent::new_with_config(config), headers, last_warning: Mutex::new(None) }))
    }

    fn send(&self, request: http::Request<bytes::Bytes>) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let (mut parts, body) = request.into_parts();
        // Only the exporter's own content headers and the configured ones go out: headers the
        // exporter would add from OTEL_EXPORTER_OTLP_*HEADERS bypass the limits, so they don't.
        let mut headers = http::HeaderMap::new();
        for name in [http::header::CONTENT_TYPE, http::header::CONTENT_ENCODING] {
            if let Some(value) = parts.headers.get(&name) {
                headers.insert(name, value.clone());
            }
        }
        for (name, value) in &self.0.headers {
            headers.insert(name.clone(), value.clone());
        }
        parts.headers = headers;
        let request = http::Request::from_parts(parts, &body[..]);
        let answer = self.0.agent.run(request).and_then(|mut response| {
            let bytes = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec()?;
            let (parts, _) = response.into_parts();
            Ok(http::Response::from_parts(parts, bytes::Bytes::from(bytes)))
        });
        match answer {
            Ok(response) if response.status().is_success() => Ok(response),
            Ok(response) => {
                self.warn(&format!("the collector answered HTTP {}", response.status().as_u16()));
                Ok(response)
            }
            Err(e) => {
                self.warn(failure_kind(&e));
                // The error itself may name the endpoint; the SDK keeps it to itself.
                Err(Box::new(std::io::Error::other(failure_kind(&e))))
            }
        }
    }

    /// One line on stderr at most once a minute; never a header value or the error's text.
    fn warn(&self, what: &str) {
        let mut last = self.0.last_warning.lock().unwrap_or_else(|p| p.into_inner());
        if last.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
            return;
        }
        *last = Some(Instant::now());
        tracing::warn!("telemetry export failed ({what}); runs are not affected");
    }
}

fn failure_kind(e: &ureq::Error) -> &'static str {
    match e {
        ureq::Error::Timeout(_) => "timed out",
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => "connection refused",
        ureq::Error::Io(_) => "network error",
        ureq::Error::HostNotFound => "host not found",
        ureq::Error::Tls(_) | ureq::Error::Rustls(_) => "TLS error",
        ureq::Error::BodyExceedsLimit(_) => "answer too large",
        _ => "HTTP error",
    }
}

impl opentelemetry_http::HttpClient for Transport {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: http::Request<bytes::Bytes>,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        // The SDK's batch processors and periodic reader call this on their own threads, so a
        // blocking request there holds up nothing else.
        Box::pin(std::future::ready(self.send(request)))
    }
}

// ---------------------------------------------------------------------------------------------
// Content: hashing, masking, truncation.

/// An id as telemetry carries it: the first 16 hex digits of a domain-separated SHA-256.
pub fn hash_id(id: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"openadapt-agent/telemetry/id\0");
    h.update(id.as_bytes());
    hex::encode(&h.finalize()[..8])
}

static SECRETS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // PEM private keys (also one cut off before its END line).
        (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)", "[private key]"),
        (r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=\-]{8,}", "$1 [secret]"),
        (r"\b(sk|pk|rk)[-_](live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_\-]{12,}", "[api key]"),
        (r"\b(ghp|gho|ghu|ghs|ghr|github_pat|glpat|xox[abprs])[-_][A-Za-z0-9_\-]{10,}", "[api key]"),
        (r"\bAKIA[0-9A-Z]{16}\b", "[api key]"),
        (r"\bAIza[0-9A-Za-z_\-]{35}\b", "[api key]"),
        (r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", "[token]"),
        (r#"(?i)("?(?:api[_-]?key|secret|password|passwd|token|access[_-]?token)"?\s*[:=]\s*"?)[^"\s,}]{6,}"#, "$1[secret]"),
    ]
    .into_iter()
    .map(|(re, with)| (Regex::new(re).expect("valid secret patterns"), with))
    .collect()
});

/// Best-effort masking of API keys, bearer and basic credentials, JWTs, key=value secrets
/// and PEM private keys. Not a guarantee.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    for (re, with) in SECRETS.iter() {
        if let Cow::Owned(s) = re.replace_all(&out, *with) {
            out = Cow::Owned(s);
        }
    }
    out
}

/// `text` cut to at most `max_bytes`, on a character boundary.
pub fn truncate(text: &str, max_bytes: usize) -> &str {
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A value as `full` captures it: JSON, masked (unless the policy says not to), truncated.
pub fn capture_value(policy: &ContentPolicy, value: &Value) -> String {
    let text = value.to_string();
    let masked = if policy.redact_secrets { mask_secrets(&text) } else { Cow::Borrowed(text.as_str()) };
    truncate(&masked, policy.max_bytes).to_string()
}

// ---------------------------------------------------------------------------------------------
// Tool calls.

/// Server-wide facts a call span carries under `metadata`.
#[derive(Clone, Copy, Debug)]
pub struct ServerFacts {
    pub mode: Mode,
    /// `simulated` (the sandbox's MockMed) or `flow`.
    pub engine: &'static str,
}

/// The span (and metrics, and log record) of one tool call. Inert when telemetry is off.
/// Dropped unfinished (the client cancelled), it ends as `cancelled`.
pub struct CallSpan(Option<Box<CallState>>);

struct CallState {
    active: Arc<Active>,
    cx: Option<Context>,
    started: Instant,
    tool: String,
    facts: ServerFacts,
    arguments: Option<Value>,
    finished: bool,
}

/// What one finished call came to, as telemetry may carry it.
struct CallFacts<'a> {
    outcome: &'static str,
    reason: &'static str,
    replayed: bool,
    request_id: Option<&'a str>,
    run_id: Option<&'a str>,
    workflow: Option<&'a str>,
}

impl CallSpan {
    /// Starts the span of a call to `tool`. `arguments` are kept only under `full`.
    pub fn start(tool: &str, arguments: Option<&Map<String, Value>>, facts: ServerFacts) -> Self {
        let Some(active) = active() else { return CallSpan(None) };
        let capture = active.policy.capture;
        let cx = active.tracer.as_ref().map(|tracer| {
            let name: Cow<'static, str> =
                if capture >= Capture::Metadata { format!("execute_tool {tool}").into() } else { "execute_tool".into() };
            let mut attributes = Vec::new();
            if capture >= Capture::Metadata {
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
                attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_string()));
                attributes.push(KeyValue::new("openadapt.mode", facts.mode.as_str()));
                attributes.push(KeyValue::new("openadapt.engine", facts.engine));
            }
            let span = tracer
                .span_builder(name)
                .with_kind(SpanKind::Server)
                .with_attributes(attributes)
                .start_with_context(tracer, &Context::current());
            Context::current_with_span(span)
        });
        let arguments =
            (capture == Capture::Full).then(|| Value::Object(arguments.cloned().unwrap_or_default()));
        CallSpan(Some(Box::new(CallState {
            active,
            cx,
            started: Instant::now(),
            tool: tool.to_string(),
            facts,
            arguments,
            finished: false,
        })))
    }

    /// Whether the call's workflow id is wanted (under `metadata` and `full`).
    pub fn wants_metadata(&self) -> bool {
        self.0.as_ref().is_some_and(|s| s.active.policy.capture >= Capture::Metadata)
    }

    /// Runs `call` with this span as the current context, so blocking work it hands to
    /// [`spawn_blocking`] and runs it starts (through [`carry`]) become the span's children.
    pub async fn run<F: Future>(&self, call: F) -> F::Output {
        match self.0.as_ref().and_then(|s| s.cx.clone()) {
            Some(cx) => call.with_context(cx).await,
            None => call.await,
        }
    }

    /// Ends the span with what the call answered. `workflow` is the opaque workflow id, used
    /// under `metadata` and `full` only.
    pub fn finish(mut self, reply: &Reply, arguments: Option<&Map<String, Value>>, workflow: Option<&str>) {
        let Some(mut state) = self.0.take() else { return };
        let mut facts = reply_facts(reply, arguments);
        facts.workflow = workflow;
        state.end(&facts, Some(reply));
    }
}

impl Drop for CallSpan {
    fn drop(&mut self) {
        if let Some(mut state) = self.0.take() {
            let facts = CallFacts {
                outcome: "cancelled",
                reason: "client_cancelled",
                replayed: false,
                request_id: None,
                run_id: None,
                workflow: None,
            };
            state.end(&facts, None);
        }
    }
}

impl CallState {
    fn end(&mut self, facts: &CallFacts<'_>, reply: Option<&Reply>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let policy = self.active.policy;
        let metadata = policy.capture >= Capture::Metadata;
        let elapsed_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let mut attributes = vec![
            KeyValue::new("openadapt.outcome", facts.outcome),
            KeyValue::new("openadapt.reason", facts.reason),
        ];
        if facts.replayed {
            attributes.push(KeyValue::new("openadapt.replayed", true));
        }
        if let Some(id) = facts.request_id {
            attributes.push(KeyValue::new("openadapt.request_id.hash", hash_id(id)));
        }
        if let Some(id) = facts.run_id {
            attributes.push(KeyValue::new("openadapt.run_id.hash", hash_id(id)));
        }
        if metadata {
            if let Some(w) = facts.workflow {
                attributes.push(KeyValue::new("openadapt.workflow.id", w.to_string()));
            }
        }
        if let Some(instruments) = &self.active.instruments {
            let mut labels = vec![
                KeyValue::new("openadapt.outcome", facts.outcome),
                KeyValue::new("openadapt.reason", facts.reason),
            ];
            if metadata {
                labels.push(KeyValue::new("gen_ai.tool.name", self.tool.clone()));
                labels.push(KeyValue::new("openadapt.mode", self.facts.mode.as_str()));
            }
            instruments.tool_calls.add(1, &labels);
            instruments.call_ms.record(elapsed_ms, &labels);
        }
        if let Some(logger) = &self.active.logger {
            let mut record = logger.create_log_record();
            record.set_event_name("openadapt_agent.tool_call");
            record.set_severity_number(Severity::Info);
            record.set_severity_text("INFO");
            record.set_body(AnyValue::from("tool call answered"));
            record.add_attributes(attributes.iter().map(|kv| (kv.key.clone(), value_of(&kv.value))));
            record.add_attribute("openadapt.duration_ms", elapsed_ms);
            if metadata {
                record.add_attribute("gen_ai.tool.name", self.tool.clone());
            }
            if let Some(cx) = &self.cx {
                let sc = cx.span().span_context().clone();
                record.set_trace_context(sc.trace_id(), sc.span_id(), Some(sc.trace_flags()));
            }
            logger.emit(record);
        }
        if let Some(cx) = self.cx.take() {
            let span = cx.span();
            if policy.capture == Capture::Full {
                if let Some(args) = &self.arguments {
                    attributes.push(KeyValue::new("gen_ai.tool.call.arguments", capture_value(&policy, args)));
                }
                let result = match reply {
                    Some(Reply::Structured(v)) => Some(capture_value(&policy, v)),
                    Some(Reply::Error(sentence)) => Some(capture_value(&policy, &Value::String(sentence.to_string()))),
                    None => None,
                };
                if let Some(result) = result {
                    attributes.push(KeyValue::new("gen_ai.tool.call.result", result));
                }
            }
            span.set_attributes(attributes);
            if matches!(reply, Some(Reply::Error(_))) {
                span.set_status(Status::error(facts.reason));
            }
            span.end();
        }
    }
}

fn value_of(v: &opentelemetry::Value) -> AnyValue {
    match v {
        opentelemetry::Value::Bool(b) => AnyValue::Boolean(*b),
        opentelemetry::Value::I64(i) => AnyValue::Int(*i),
        opentelemetry::Value::F64(f) => AnyValue::Double(*f),
        other => AnyValue::String(other.as_str().into_owned().into()),
    }
}

/// Closed codes for the fixed tool-error sentences.
fn error_code(sentence: &str) -> &'static str {
    use crate::bridge::*;
    match sentence {
        s if s == UNKNOWN_TOOL => "unknown_tool",
        s if s == BAD_ARGUMENTS => "bad_arguments",
        s if s == NO_SUCH_RUN => "no_such_run",
        s if s == UNKNOWN_WORKFLOW_ID => "unknown_workflow_id",
        s if s == NO_REPORT => "no_report",
        s if s == NO_ATTENTION_ITEM => "no_attention_item",
        s if s == STORAGE_FAILED => "storage_failed",
        _ => "other",
    }
}

/// Outcome, reason and ids of a reply, from closed vocabularies only: a value that isn't one
/// of the contract's words is never carried.
fn reply_facts<'a>(reply: &'a Reply, arguments: Option<&'a Map<String, Value>>) -> CallFacts<'a> {
    let arg = |k: &str| arguments.and_then(|a| a.get(k)).and_then(Value::as_str);
    match reply {
        Reply::Error(sentence) => CallFacts {
            outcome: "tool_error",
            reason: error_code(sentence),
            replayed: false,
            request_id: arg("request_id"),
            run_id: arg("run_id"),
            workflow: None,
        },
        Reply::Structured(v) => {
            let word = |k: &str| v.get(k).and_then(Value::as_str);
            CallFacts {
                outcome: word("outcome").and_then(Outcome::parse).map_or("ok", Outcome::as_str),
                reason: word("reason").and_then(Reason::parse).map_or("none", Reason::as_str),
                replayed: v.get("replayed").and_then(Value::as_bool) == Some(true),
                request_id: word("request_id").or_else(|| arg("request_id")),
                run_id: word("run_id").or_else(|| arg("run_id")),
                workflow: None,
            }
        }
    }
}

/// A finished run attempt or a refusal, for the run counters. Call once per result recorded.
pub fn record_run(result: &RunResult, took: Option<Duration>) {
    let Some(active) = active() else { return };
    let Some(instruments) = &active.instruments else { return };
    let mut labels = vec![
        KeyValue::new("openadapt.outcome", result.outcome.as_str()),
        KeyValue::new("openadapt.reason", result.reason.as_str()),
    ];
    if active.policy.capture >= Capture::Metadata {
        labels.push(KeyValue::new("openadapt.mode", result.mode.as_str()));
    }
    instruments.runs.add(1, &labels);
    if let Some(took) = took {
        instruments.run_ms.record(took.as_secs_f64() * 1000.0, &labels);
    }
}

// ---------------------------------------------------------------------------------------------
// Carrying the call's context onto worker threads, and the engine and Flow child spans.

/// The current telemetry context, to attach on another thread. Empty when telemetry is off.
pub struct Carried(Option<Context>);

/// Captures the current context (the call span, on a thread that has it attached).
pub fn carry() -> Carried {
    Carried(enabled().then(Context::current))
}

impl Carried {
    /// Makes the carried context current on this thread until the guard drops.
    pub fn attach(self) -> Option<ContextGuard> {
        self.0.map(Context::attach)
    }
}

/// `tokio::task::spawn_blocking` that carries the current telemetry context onto the
/// blocking thread.
pub fn spawn_blocking<F, R>(f: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let carried = carry();
    tokio::task::spawn_blocking(move || {
        let _cx = carried.attach();
        f()
    })
}

/// A child span of whatever call span is current (an engine session, a Flow subprocess).
/// Ends when dropped. Inert when telemetry or traces are off.
pub struct ChildSpan(Option<(opentelemetry_sdk::trace::Span, Capture)>);

/// Starts a child span of the current context; `engine` is carried under `metadata`.
pub fn child_span(name: &'static str, engine: &'static str) -> ChildSpan {
    let Some(active) = active() else { return ChildSpan(None) };
    let Some(tracer) = &active.tracer else { return ChildSpan(None) };
    let capture = active.policy.capture;
    let mut builder = tracer.span_builder(name).with_kind(SpanKind::Internal);
    if capture >= Capture::Metadata {
        builder = builder.with_attributes([KeyValue::new("openadapt.engine", engine)]);
    }
    ChildSpan(Some((builder.start_with_context(tracer, &Context::current()), capture)))
}

impl ChildSpan {
    /// An outcome fact (a closed word or a flag): carried under every policy.
    pub fn set_bool(&mut self, key: &'static str, value: bool) {
        if let Some((span, _)) = &mut self.0 {
            span.set_attribute(KeyValue::new(key, value));
        }
    }

    /// Records what the engine or subprocess came to, then ends the span.
    pub fn end_with(mut self, evidence: &Evidence) {
        if let Some((span, _)) = &mut self.0 {
            span.set_attribute(KeyValue::new("openadapt.evidence", evidence_kind(evidence)));
            if let Evidence::Finished(f) = evidence {
                if let Some(code) = f.exit_code {
                    span.set_attribute(KeyValue::new("process.exit.code", code as i64));
                }
            }
        }
    }
}

impl Drop for ChildSpan {
    fn drop(&mut self) {
        if let Some((span, _)) = &mut self.0 {
            span.end();
        }
    }
}

/// The closed name of an evidence kind.
pub fn evidence_kind(e: &Evidence) -> &'static str {
    match e {
        Evidence::Refused(_) => "refused",
        Evidence::LaunchFailed => "launch_failed",
        Evidence::NotReady { .. } => "not_ready",
        Evidence::TimedOut => "timed_out",
        Evidence::Interrupted => "interrupted",
        Evidence::Finished(_) => "finished",
    }
}

// ---------------------------------------------------------------------------------------------
// The server's warn and error lines as OTLP log records.

/// A `tracing` layer that sends warn and error events to the logs signal while telemetry is
/// on. Under `off` and `metadata` a record carries the level, target and source location only
/// (a line's text may interpolate a local detail); under `full` also its masked, truncated
/// text and fields.
pub struct LogBridge;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for LogBridge {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if *meta.level() > tracing::Level::WARN {
            return;
        }
        let target = meta.target();
        // Telemetry's own lines (export failures) and its libraries' would feed back.
        if ["openadapt_agent::telemetry", "opentelemetry", "ureq", "rustls"].iter().any(|t| target.starts_with(t)) {
            return;
        }
        let Some(active) = active() else { return };
        let Some(logger) = &active.logger else { return };
        let (severity, text) =
            if *meta.level() == tracing::Level::ERROR { (Severity::Error, "ERROR") } else { (Severity::Warn, "WARN") };
        let mut record = logger.create_log_record();
        record.set_severity_number(severity);
        record.set_severity_text(text);
        record.set_target(target.to_string());
        if let Some(file) = meta.file() {
            record.add_attribute("code.file.path", file.to_string());
        }
        if let Some(line) = meta.line() {
            record.add_attribute("code.line.number", line as i64);
        }
        if active.policy.capture == Capture::Full {
            let mut fields = FieldText::default();
            event.record(&mut fields);
            let policy = active.policy;
            let cap = |s: &str| {
                let masked = if policy.redact_secrets { mask_secrets(s) } else { Cow::Borrowed(s) };
                truncate(&masked, policy.max_bytes).to_string()
            };
            record.set_body(AnyValue::from(cap(&fields.message)));
            for (k, v) in fields.fields {
                record.add_attribute(k, cap(&v));
            }
        } else {
            record.set_body(AnyValue::from(format!("{} event", text.to_ascii_lowercase())));
        }
        logger.emit(record);
    }
}

#[derive(Default)]
struct FieldText {
    message: String,
    fields: Vec<(&'static str, String)>,
}

impl tracing::field::Visit for FieldText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields.push((field.name(), format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        } else {
            self.fields.push((field.name(), value.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(endpoint: &str) -> TelemetryConfig {
        TelemetryConfig::new(endpoint)
    }

    #[test]
    fn endpoints_are_https_unless_loopback() {
        for ok in [
            "http://127.0.0.1:4318",
            "http://localhost:4318/",
            "http://[::1]:4318",
            "http://127.9.8.7",
            "https://cloud.langfuse.com/api/public/otel",
            "https://otlp-gateway.example/otlp/",
        ] {
            assert_eq!(config(ok).validate(), Ok(()), "{ok}");
        }
        for bad in [
            "http://collector.example:4318",
            "http://10.0.0.1:4318",
            "ftp://127.0.0.1",
            "127.0.0.1:4318",
            "https://user:pass@collector.example",
            "https://collector.example/otlp?x=1",
            "https://collector.example/otlp#frag",
            "",
        ] {
            assert!(config(bad).validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn signal_paths_are_appended_to_the_base_path() {
        assert_eq!(config("http://127.0.0.1:4318").signal_url("traces"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(
            config("https://cloud.langfuse.com/api/public/otel/").signal_url("logs"),
            "https://cloud.langfuse.com/api/public/otel/v1/logs"
        );
    }

    #[test]
    fn headers_are_checked_and_never_echoed() {
        let with = |h: Vec<Header>| {
            let mut c = config("http://127.0.0.1:4318");
            c.headers = h;
            c.validate()
        };
        assert_eq!(with(vec![Header::secret("Authorization", "X"), Header::literal("x-langfuse-ingestion-version", "4")]), Ok(()));
        for managed in ["Host", "content-type", "Content-Length", "content-encoding", "proxy-authorization", "Transfer-Encoding"] {
            let e = with(vec![Header::literal(managed, "v")]).unwrap_err();
            assert!(e.to_string().contains("set by the exporter"), "{managed}: {e}");
        }
        let e = with(vec![Header::literal("Authorization", "Bearer hunter2-secret")]).unwrap_err();
        assert!(e.to_string().contains("env:VAR") && !e.to_string().contains("hunter2"), "{e}");
        assert!(with(vec![Header::literal("x-api-key", "abc")]).is_err());
        assert!(with((0..9).map(|i| Header::literal(format!("x-h{i}"), "v")).collect()).is_err());
        assert!(with(vec![Header::literal("x-a", "1"), Header::literal("X-A", "2")]).is_err());
        assert!(with(vec![Header::literal("bad name", "1")]).is_err());
        assert!(with(vec![Header::literal("x-a", "line\nbreak")]).is_err());

        assert_eq!(Header::parse_flag("Authorization=env:OTLP_AUTH").unwrap(), Header::secret("Authorization", "OTLP_AUTH"));
        assert_eq!(Header::parse_flag("x-v=literal:a=b:c").unwrap(), Header::literal("x-v", "a=b:c"));
        let e = Header::parse_flag("Authorization=Bearer hunter2").unwrap_err();
        assert!(!e.to_string().contains("hunter2"));
        assert!(!format!("{:?}", Header::literal("x-v", "hunter2")).contains("hunter2"));
    }

    #[test]
    fn unset_secret_variables_are_refused_by_name() {
        let mut c = config("http://127.0.0.1:4318");
        c.headers = vec![Header::secret("Authorization", "OPENADAPT_TELEMETRY_TEST_SURELY_UNSET")];
        let e = c.resolve_headers().unwrap_err();
        assert!(e.to_string().contains("OPENADAPT_TELEMETRY_TEST_SURELY_UNSET is not set"), "{e}");
    }

    #[test]
    fn full_needs_protected_export_and_a_sane_limit() {
        let mut c = config("http://127.0.0.1:4318");
        c.content.capture = Capture::Full;
        assert!(c.validate().unwrap_err().to_string().contains("--allow-protected-export"));
        c.allow_protected_export = true;
        assert_eq!(c.validate(), Ok(()));
        c.content.max_bytes = MAX_MAX_BYTES + 1;
        assert!(c.validate().is_err());
        c.content.max_bytes = 0;
        assert!(c.validate().is_err());
        c.content.max_bytes = MAX_MAX_BYTES;
        assert_eq!(c.validate(), Ok(()));
        c.signals = Signals::NONE;
        assert!(c.validate().is_err());
    }

    #[test]
    fn signal_lists_parse() {
        assert_eq!(Signals::parse_list("traces").unwrap(), Signals { traces: true, metrics: false, logs: false });
        assert_eq!(Signals::parse_list("traces,metrics,logs").unwrap(), Signals::ALL);
        assert!(Signals::parse_list("traces,spans").is_err());
        assert!(Signals::parse_list("").is_err());
    }

    #[test]
    fn secrets_are_masked() {
        let text = "key sk-proj-abcdefghijklmnop1234 and Authorization: Bearer abc.def.ghi-jkl_mno and \
                    -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- and ghp_abcdefghijklmnopqrstu \
                    and AKIAABCDEFGHIJKLMNOP and {\"api_key\": \"s3cr3t-value\"} stays: hello";
        let masked = mask_secrets(text);
        for secret in ["abcdefghijklmnop1234", "abc.def.ghi", "MIIEow", "ghp_abc", "AKIAABCD", "s3cr3t"] {
            assert!(!masked.contains(secret), "{secret} in {masked}");
        }
        assert!(masked.contains("stays: hello"));
        let cut = mask_secrets("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqh");
        assert_eq!(cut, "[private key]");
        assert!(matches!(mask_secrets("nothing to see"), Cow::Borrowed(_)));
    }

    #[test]
    fn truncation_keeps_characters_whole() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("abc", 10), "abc");
        let policy = ContentPolicy { capture: Capture::Full, max_bytes: 16, redact_secrets: true };
        let v = capture_value(&policy, &serde_json::json!({"note": "x".repeat(100)}));
        assert!(v.len() <= 16);
    }

    #[test]
    fn ids_hash_to_sixteen_hex_digits() {
        let h = hash_id("req-1");
        assert_eq!(h.len(), 16);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(h, hash_id("req-1"));
        assert_ne!(h, hash_id("req-2"));
    }

    #[test]
    fn one_telemetry_per_process_and_it_restarts_after_shutdown() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let config = TelemetryConfig::new(format!("http://127.0.0.1:{port}"));
        let guard = init(&config).unwrap();
        assert!(enabled());
        assert!(init(&config).unwrap_err().to_string().contains("already on"));
        assert!(enabled(), "a refused second start leaves the first on");
        let facts = ServerFacts { mode: Mode::Sandbox, engine: "simulated" };
        for _ in 0..50 {
            let span = CallSpan::start("list_workflows", None, facts);
            span.finish(&Reply::Structured(serde_json::json!({})), None, None);
            drop(CallSpan::start("get_run", None, facts));
        }
        guard.shutdown();
        assert!(!enabled());
        drop(init(&config).unwrap());
        assert!(!enabled());
    }

    #[test]
    fn reply_facts_use_closed_words_only() {
        let reply = Reply::Structured(serde_json::json!({"outcome": "done", "reason": "saved_and_checked", "request_id": "r", "run_id": "x"}));
        let f = reply_facts(&reply, None);
        assert_eq!((f.outcome, f.reason, f.request_id, f.run_id), ("done", "saved_and_checked", Some("r"), Some("x")));
        let reply = Reply::Structured(serde_json::json!({"outcome": "CANARY", "reason": "CANARY"}));
        let f = reply_facts(&reply, None);
        assert_eq!((f.outcome, f.reason), ("ok", "none"));
        let f = reply_facts(&Reply::Error(crate::bridge::BAD_ARGUMENTS), None);
        assert_eq!((f.outcome, f.reason), ("tool_error", "bad_arguments"));
    }
}
