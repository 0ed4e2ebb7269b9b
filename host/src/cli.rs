//! The command line. Only `serve` speaks MCP on stdout; `demo` prints a table for people.

use crate::bridge::{Bridge, Tools};
use crate::cards;
use crate::contract::Mode;
use crate::runs::RunsDir;
use crate::sandbox::SimulatedSandbox;
use crate::service::{CatalogEntry, Policy, Service};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "openadapt-agent",
    version,
    about = "Enter work in a clinic app and get back one of four outcomes a calling agent can act on safely"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum Command {
    /// Serve MCP on stdin/stdout. With no flags: the simulated sandbox.
    Serve(ServeArgs),
    /// Start the server, call it over MCP through every sandbox case, a replay and a conflict,
    /// and print what came back.
    Demo {
        /// Where the sandbox keeps its records (default: $OPENADAPT_AGENT_SANDBOX_DIR, else
        /// ~/.openadapt/agent-sandbox).
        #[arg(long)]
        runs_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// What the server serves: the simulated sandbox, compiled bundles (production), or
    /// bundles with attended decisions on paused runs.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// A compiled Flow bundle, or a directory of bundles.
    #[arg(long, value_name = "DIR")]
    bundles: Option<PathBuf>,
    /// Register run tools for the bundles (same as `--mode production`).
    #[arg(long)]
    allow_run: bool,
    /// Allow attended decisions on paused runs.
    #[arg(long)]
    allow_attended_actions: bool,
    /// Where runs are recorded (sandbox default: $OPENADAPT_AGENT_SANDBOX_DIR, else
    /// ~/.openadapt/agent-sandbox; bundles: $OPENADAPT_AGENT_RUNS_DIR, else ~/.openadapt/runs;
    /// never the directory the client launched the server from).
    #[arg(long, value_name = "DIR")]
    runs_dir: Option<PathBuf>,
    /// The sandbox engine: `simulated` (MockMed as a WebAssembly component), or `auto`.
    #[arg(long, value_enum, default_value = "simulated")]
    sandbox_engine: SandboxEngineArg,
    /// Same as `--mode sandbox`.
    #[arg(long)]
    tutorial: bool,
    /// An operator card validator component (`.wasm`); repeatable. Every card file must pass
    /// every validator.
    #[arg(long = "card-validator", value_name = "PATH")]
    card_validators: Vec<PathBuf>,
    /// Let omitted inputs use the values recorded in the demonstration. Synthetic demos only;
    /// needs run authority; recorded values never appear in a schema.
    #[arg(long)]
    allow_synthetic_recorded_defaults: bool,
    /// Include raw labels, values, paths, reports and subprocess output in results. Only for a
    /// trusted client inside the same protected data boundary.
    #[arg(long)]
    allow_protected_export: bool,
    /// Let a call give its own target URL.
    #[arg(long)]
    allow_url_override: bool,
    /// The command that runs openadapt-flow (split on whitespace).
    #[arg(long, value_name = "CMD", default_value = "python3 -m openadapt_flow")]
    flow_cli: String,
    /// The target app URL of every run.
    #[arg(long)]
    url: Option<String>,
    /// Flow deployment configuration (YAML) for every run.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Flow policy (name or path) for every run.
    #[arg(long)]
    policy: Option<String>,
    /// Flow's approval mode for every run.
    #[arg(long, value_enum)]
    approval_mode: Option<ApprovalModeArg>,
    /// Seconds a governed run may work before it is stopped (time a person spends approving
    /// is Flow's own to bound).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    timeout: u64,
    /// One more argument for every `openadapt-flow run`; repeatable.
    #[arg(long = "extra-run-arg", value_name = "ARG", allow_hyphen_values = true)]
    extra_run_args: Vec<String>,
    /// Milliseconds the simulated app takes before and after a save, to study slow apps.
    #[arg(long, default_value_t = 0, hide = true)]
    simulated_latency_ms: u64,
    /// Export OpenTelemetry traces, metrics and logs over OTLP/HTTP to this base URL
    /// (`/v1/traces`, `/v1/metrics`, `/v1/logs` are appended). HTTPS unless the host is
    /// loopback. Telemetry is off without it.
    #[arg(long, value_name = "URL")]
    otlp_endpoint: Option<String>,
    /// A header sent with every export: `NAME=env:VAR` reads a secret from the environment
    /// at start; `NAME=literal:VALUE` is for non-secrets. Repeatable, at most 8.
    #[arg(long = "otlp-header", value_name = "NAME=env:VAR")]
    otlp_headers: Vec<String>,
    /// The signals to export, separated by commas (default: traces,metrics,logs).
    #[arg(long, value_name = "LIST")]
    otlp_signals: Option<String>,
    /// What spans carry: `off` (default: timings, outcomes, reasons, hashed ids), `metadata`
    /// (also tool name, opaque workflow id, mode, engine), `full` (also arguments and
    /// results, masked and truncated; needs --allow-protected-export).
    #[arg(long, value_enum, value_name = "POLICY")]
    otlp_content: Option<OtlpContentArg>,
    /// The byte limit of one value captured under `--otlp-content full` (default 8192, at
    /// most 65536).
    #[arg(long, value_name = "N")]
    otlp_max_bytes: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OtlpContentArg {
    Off,
    Metadata,
    Full,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Sandbox,
    Production,
    Attended,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SandboxEngineArg {
    Simulated,
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ApprovalModeArg {
    #[value(name = "each_item")]
    EachItem,
    #[value(name = "problems_only")]
    ProblemsOnly,
    #[value(name = "not_gated")]
    NotGated,
}

/// What a valid combination of flags starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    Sandbox,
    Bundles { runs: bool, attended: bool },
}

impl ServeArgs {
    /// Resolves the flags to what the server starts, or the one line that says why not.
    pub fn start(&self) -> Result<Start, &'static str> {
        let start = match (self.mode, &self.bundles) {
            (Some(ModeArg::Sandbox), Some(_)) => return Err("--mode sandbox can't be combined with --bundles"),
            (Some(ModeArg::Production), None) => return Err("--mode production needs --bundles DIR"),
            (Some(ModeArg::Attended), None) => return Err("--mode attended needs --bundles DIR"),
            (_, None) if self.allow_attended_actions => return Err("--allow-attended-actions needs --bundles DIR"),
            (Some(ModeArg::Sandbox) | None, None) => Start::Sandbox,
            (Some(ModeArg::Production), Some(_)) => Start::Bundles { runs: true, attended: self.allow_attended_actions },
            (Some(ModeArg::Attended), Some(_)) => Start::Bundles { runs: true, attended: true },
            (None, Some(_)) => Start::Bundles { runs: self.allow_run, attended: self.allow_attended_actions },
        };
        if self.tutorial && start != Start::Sandbox {
            return Err("--tutorial starts the sandbox and can't be combined with --bundles");
        }
        if let Some(dir) = &self.bundles {
            if !dir.is_dir() {
                return Err("the --bundles directory does not exist");
            }
        }
        if self.allow_synthetic_recorded_defaults && !matches!(start, Start::Bundles { runs: true, .. }) {
            return Err("--allow-synthetic-recorded-defaults needs run authority (--mode production or --allow-run) and --bundles");
        }
        if self.flow_cli.split_whitespace().next().is_none() {
            return Err("--flow-cli must name a command");
        }
        if self.timeout == 0 {
            return Err("--timeout must be at least 1 second");
        }
        Ok(start)
    }
}

impl ServeArgs {
    /// The telemetry the `--otlp-*` flags ask for (`None`: off), or the one line that says
    /// why not. Secret header values are read later, when telemetry starts.
    pub fn telemetry(&self) -> Result<Option<crate::telemetry::TelemetryConfig>, String> {
        use crate::telemetry::{Capture, Header, Signals, TelemetryConfig};
        let Some(endpoint) = &self.otlp_endpoint else {
            let any = !self.otlp_headers.is_empty()
                || self.otlp_signals.is_some()
                || self.otlp_content.is_some()
                || self.otlp_max_bytes.is_some();
            return if any {
                Err("--otlp-header, --otlp-signals, --otlp-content and --otlp-max-bytes need --otlp-endpoint URL".into())
            } else {
                Ok(None)
            };
        };
        let mut config = TelemetryConfig::new(endpoint.clone());
        config.allow_protected_export = self.allow_protected_export;
        for spec in &self.otlp_headers {
            config.headers.push(Header::parse_flag(spec).map_err(|e| e.to_string())?);
        }
        if let Some(list) = &self.otlp_signals {
            config.signals = Signals::parse_list(list).map_err(|e| e.to_string())?;
        }
        if let Some(content) = self.otlp_content {
            config.content.capture = match content {
                OtlpContentArg::Off => Capture::Off,
                OtlpContentArg::Metadata => Capture::Metadata,
                OtlpContentArg::Full => Capture::Full,
            };
        }
        if let Some(n) = self.otlp_max_bytes {
            config.content.max_bytes = n;
        }
        config.validate().map_err(|e| e.to_string())?;
        Ok(Some(config))
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One clear line, exit 2: the first line of clap's message is the error itself.
            let msg = e.to_string();
            eprintln!("{}", msg.lines().next().unwrap_or("error: invalid usage"));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    init_logging();
    // One thread drives the protocol; blocking work (claims, engines, Flow) has its own
    // threads, so a second async worker would only add cross-thread wake-ups per message.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("openadapt-agent: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Everything this process and its children create is private to this user: records,
    // MockMed's store (written through WASI), Flow's run directories.
    // SAFETY: umask(2) only sets this process's file mode creation mask.
    unsafe {
        libc::umask(0o077);
    }
    let outcome = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Demo { runs_dir } => runtime.block_on(crate::demo::run(runs_dir)),
    };
    // An attempt still running gets a moment to record how it ended (Flow's process groups
    // were already stopped); past that, its record reads as interrupted.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("openadapt-agent: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    // stdout belongs to JSON-RPC; logs always go to stderr.
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPENADAPT_AGENT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
        // rmcp's own debug lines print whole requests, arguments included: never let them out.
        .add_directive("rmcp=warn".parse().expect("a valid directive"));
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // Warn and error lines also go to the OTLP logs signal while telemetry is on.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .finish()
        .with(crate::telemetry::LogBridge)
        .init();
}

/// The sandbox directory: the flag, else the environment, else the home default; never the
/// directory the client launched us from.
pub fn sandbox_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("OPENADAPT_AGENT_SANDBOX_DIR").map(PathBuf::from))
        .unwrap_or_else(|| home().join(".openadapt").join("agent-sandbox"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir)
}

/// Where precompiled engines are cached: per user, shared by every server of this user.
pub fn engine_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache"))
        .join("openadapt-agent")
        .join("engines")
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let start = match args.start() {
        Ok(start) => start,
        Err(line) => {
            eprintln!("error: {line}");
            std::process::exit(2);
        }
    };
    // Telemetry starts before anything runs and flushes (at most 5 s) when serve returns.
    let _telemetry = start_telemetry(&args)?;
    if args.allow_protected_export {
        tracing::warn!("protected export is ON: results may carry raw labels, values, paths and reports");
    } else if matches!(start, Start::Bundles { .. }) {
        // Production operators should see this at the default log level.
        tracing::warn!("protected export is off (the default): results carry only PHI-safe projections");
    }
    let bridge = match start {
        Start::Sandbox => sandbox_bridge(&args)?,
        Start::Bundles { runs, attended } => {
            // Card checks run WASI engines, which block: keep them off the async workers.
            let settings = args.production(runs, attended);
            tokio::task::spawn_blocking(move || crate::production::bridge(&settings)).await??
        }
    };
    crate::mcp::serve_stdio(Arc::new(bridge)).await
}

/// Starts the telemetry the flags ask for; a bad combination or an unset secret variable is
/// one line and exit 2.
fn start_telemetry(args: &ServeArgs) -> anyhow::Result<Option<crate::telemetry::TelemetryGuard>> {
    let config = match args.telemetry() {
        Ok(None) => return Ok(None),
        Ok(Some(config)) => config,
        Err(line) => {
            eprintln!("error: {line}");
            std::process::exit(2);
        }
    };
    match crate::telemetry::init(&config) {
        Ok(guard) => {
            if config.content.capture == crate::telemetry::Capture::Full {
                tracing::warn!("telemetry content capture is full: spans carry masked, truncated tool arguments and results");
            }
            tracing::info!(content = config.content.capture.as_str(), "telemetry export is on");
            Ok(Some(guard))
        }
        Err(e) if e.is::<crate::telemetry::ConfigError>() => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        Err(e) => Err(e.context("cannot start telemetry")),
    }
}

fn sandbox_bridge(args: &ServeArgs) -> anyhow::Result<Bridge> {
    if args.sandbox_engine == SandboxEngineArg::Auto {
        tracing::info!("sandbox engine auto: the flow engine is not available here, using simulated");
    }
    let dir = sandbox_dir(args.runs_dir.clone());
    let latency = std::time::Duration::from_millis(args.simulated_latency_ms);
    sandbox_bridge_at(&dir, &engine_cache_dir(), latency)
}

/// The sandbox bridge `serve` builds, for a runs directory, an engine cache directory and the
/// simulated app's latency (zero unless studying slow apps): for callers that run the server
/// in-process, such as the SDK's embedded mode. Blocking (it opens the runs directory).
pub fn sandbox_bridge_at(dir: &std::path::Path, engine_cache: &std::path::Path, latency: std::time::Duration) -> anyhow::Result<Bridge> {
    let runs = RunsDir::open(dir).map_err(|e| anyhow::anyhow!("cannot open the runs directory: {e}"))?;
    let store_dir = runs.root().join("mockmed-store");
    let runner = Arc::new(SimulatedSandbox::new(store_dir, engine_cache.to_path_buf(), latency));
    let policy = Policy { mode: Mode::Sandbox, runs_enabled: true, require_all: true };
    let catalog = vec![CatalogEntry { card: cards::sandbox_card(), available: true }];
    let service = Arc::new(Service::new(policy, runs, catalog, runner));
    Ok(Bridge::new(service, Tools::sandbox()))
}

impl ServeArgs {
    fn production(&self, runs: bool, attended: bool) -> crate::production::Settings {
        let runs_dir = self
            .runs_dir
            .clone()
            .or_else(|| std::env::var_os("OPENADAPT_AGENT_RUNS_DIR").map(PathBuf::from))
            .unwrap_or_else(|| home().join(".openadapt").join("runs"));
        crate::production::Settings {
            bundles: self.bundles.clone().expect("checked by start()"),
            runs_dir,
            runs_enabled: runs,
            attended,
            card_validators: self.card_validators.clone(),
            synthetic_defaults: self.allow_synthetic_recorded_defaults,
            protected_export: self.allow_protected_export,
            allow_url_override: self.allow_url_override,
            engine_cache: engine_cache_dir(),
            flow: crate::flow::FlowConfig {
                flow_cli: self.flow_cli.split_whitespace().map(str::to_string).collect(),
                url: self.url.clone(),
                config: self.config.clone(),
                policy: self.policy.clone(),
                approval_mode: self.approval_mode.map(|m| {
                    match m {
                        ApprovalModeArg::EachItem => "each_item",
                        ApprovalModeArg::ProblemsOnly => "problems_only",
                        ApprovalModeArg::NotGated => "not_gated",
                    }
                    .to_string()
                }),
                timeout: std::time::Duration::from_secs(self.timeout),
                extra_run_args: self.extra_run_args.clone(),
                started_by: "agent:unidentified".into(),
                runs_dir: PathBuf::new(),
                private_dir: PathBuf::new(),
            },
        }
    }
}
