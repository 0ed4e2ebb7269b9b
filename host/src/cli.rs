//! The command line. Only `serve` speaks MCP on stdout; `demo` prints a table for people.

use crate::bridge::Bridge;
use crate::cards;
use crate::contract::Mode;
use crate::runs::RunsDir;
use crate::sandbox::SimulatedSandbox;
use crate::service::Service;
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
    /// What the server serves.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Where runs are recorded (sandbox default: $OPENADAPT_AGENT_SANDBOX_DIR, else
    /// ~/.openadapt/agent-sandbox; never the directory the client launched the server from).
    #[arg(long)]
    runs_dir: Option<PathBuf>,
    /// The sandbox engine: `simulated` (MockMed as a WebAssembly component), or `auto`.
    #[arg(long, value_enum, default_value = "simulated")]
    sandbox_engine: SandboxEngineArg,
    /// Same as `--mode sandbox`.
    #[arg(long)]
    tutorial: bool,
    /// Milliseconds the simulated app takes before and after a save, to study slow apps.
    #[arg(long, default_value_t = 0, hide = true)]
    simulated_latency_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Sandbox,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum SandboxEngineArg {
    Simulated,
    Auto,
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
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("openadapt-agent: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = match cli.command {
        Command::Serve(args) => runtime.block_on(serve(args)),
        Command::Demo { runs_dir } => runtime.block_on(crate::demo::run(runs_dir)),
    };
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
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
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
fn engine_cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache"))
        .join("openadapt-agent")
        .join("engines")
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let _sandbox = args.tutorial || args.mode == Some(ModeArg::Sandbox) || args.mode.is_none();
    if args.sandbox_engine == SandboxEngineArg::Auto {
        tracing::info!("sandbox engine auto: the flow engine is not available here, using simulated");
    }
    let dir = sandbox_dir(args.runs_dir);
    let runs = RunsDir::open(&dir).map_err(|e| anyhow::anyhow!("cannot open the runs directory: {e}"))?;
    let store_dir = runs.root().join("mockmed-store");
    let latency = std::time::Duration::from_millis(args.simulated_latency_ms);
    let runner = Arc::new(SimulatedSandbox::new(store_dir, engine_cache_dir(), latency));
    let service = Arc::new(Service::new(Mode::Sandbox, runs, vec![cards::sandbox_card()], runner));
    crate::mcp::serve_stdio(Arc::new(Bridge::new(service))).await
}
