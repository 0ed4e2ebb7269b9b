//! The command line. Only `serve` speaks MCP on stdout; other commands print for people.

use clap::{Parser, Subcommand};
use openadapt_engines::{Engines, EnginesConfig, FaultCase};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "openadapt-agent", version, about = "Enter work in a clinic app and get back one of four outcomes a calling agent can act on safely")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the simulated MockMed sandbox through every fault case and print what happened.
    Demo {
        /// Where the sandbox keeps its records (default: $OPENADAPT_AGENT_SANDBOX_DIR, else
        /// ~/.openadapt/agent-sandbox).
        #[arg(long)]
        runs_dir: Option<PathBuf>,
    },
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One clear line, exit 2: the first line of clap's message is the error itself.
            let msg = e.to_string();
            eprintln!("{}", msg.lines().next().unwrap_or("invalid usage"));
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    init_logging();
    match cli.command {
        Command::Demo { runs_dir } => demo(runs_dir),
    }
}

fn init_logging() {
    // stdout belongs to JSON-RPC; logs always go to stderr.
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPENADAPT_AGENT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

/// The sandbox directory: the flag, else the environment, else the home default; never the
/// directory the client launched us from.
pub fn sandbox_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("OPENADAPT_AGENT_SANDBOX_DIR").map(PathBuf::from))
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
            home.join(".openadapt").join("agent-sandbox")
        })
}

fn demo(runs_dir: Option<PathBuf>) -> ExitCode {
    let dir = sandbox_dir(runs_dir);
    let store = dir.join("mockmed-store");
    if let Err(e) = std::fs::create_dir_all(&store) {
        eprintln!("openadapt-agent: cannot create the sandbox directory: {e}");
        return ExitCode::FAILURE;
    }
    let engines = Engines::new(EnginesConfig { cache_dir: Some(dir.join("engine-cache")), ..Default::default() })
        .and_then(|e| e.mockmed().map(|m| (e, m)));
    let (_engines, mockmed) = match engines {
        Ok(pair) => pair,
        Err(e) => {
            eprintln!("openadapt-agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{:<20} {:<9} {:<13} {:<10} {:<8} {:<10} {}", "case", "reached", "right record", "answered", "banner", "read-back", "transaction");
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for case in FaultCase::ALL {
        let session = format!("demo-{stamp:x}-{}", case.as_str().replace('_', "-"));
        let note = "Synthetic triage note for the demo";
        let walk = || -> Result<(bool, Option<bool>, bool, Option<bool>), openadapt_engines::EngineError> {
            let mut app = mockmed.open(&store, case, &session)?;
            if !app.reachable()? {
                return Ok((false, None, false, None));
            }
            let Ok(referral) = app.open_first_referral()? else { return Ok((true, None, false, None)) };
            let right = app.confirm_right_record()?.unwrap_or(false);
            if !right {
                return Ok((true, Some(false), false, None));
            }
            let _ = app.enter_note(note)?;
            let answered = app.save()? == Ok(openadapt_engines::SaveAnswer::Answered);
            let back = app.read_back(&referral.record_id, note)?.map(|b| b.note_found).ok();
            Ok((true, Some(true), answered, back))
        };
        match walk() {
            Ok((reached, right, answered, back)) => println!(
                "{:<20} {:<9} {:<13} {:<10} {:<8} {:<10} {}",
                case.as_str(), reached, show(right), answered, "-", show(back), "-"
            ),
            Err(e) => println!("{:<20} failed: {e}", case.as_str()),
        }
    }
    ExitCode::SUCCESS
}

fn show(v: Option<bool>) -> String {
    v.map(|b| b.to_string()).unwrap_or_else(|| "-".into())
}
