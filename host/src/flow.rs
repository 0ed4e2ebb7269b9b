//! Governed runs through the `openadapt-flow run` subprocess, whose gates stay authoritative.
//! This is the only module that knows the subprocess: it builds the fixed command line, passes
//! parameters in a private file, bounds the run's time, keeps Flow's output in a local
//! diagnostics file, and turns the persisted report into contract evidence.

use crate::contract::{
    self, ApprovalMode, CheckedHow, Evidence, ExecutionOutcome, FlowFinish, FlowReport, PauseState, Proof,
    TransactionOutcome,
};
use crate::runs::ClaimFlush;
use crate::service::{RunOutput, Runner};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Server-fixed settings of every governed run; no MCP call can change them.
#[derive(Clone, Debug)]
pub struct FlowConfig {
    /// The command that runs Flow's CLI, e.g. `python3 -m openadapt_flow`.
    pub flow_cli: Vec<String>,
    pub url: Option<String>,
    pub config: Option<PathBuf>,
    pub policy: Option<String>,
    pub approval_mode: Option<String>,
    pub timeout: Duration,
    pub extra_run_args: Vec<String>,
    pub started_by: String,
    /// Where Flow's run directories go: `<runs_dir>/<run_id>`.
    pub runs_dir: PathBuf,
    /// Private directory for parameter files and subprocess diagnostics.
    pub private_dir: PathBuf,
}

/// Runs bundles by opaque workflow id.
pub struct FlowRunner {
    config: FlowConfig,
    bundles: HashMap<String, PathBuf>,
    /// Process groups of runs in flight, stopped if the server shuts down mid-run.
    running: Mutex<HashSet<u32>>,
}

impl FlowRunner {
    pub fn new(config: FlowConfig, bundles: HashMap<String, PathBuf>) -> std::io::Result<Self> {
        for dir in [&config.runs_dir, &config.private_dir.join("params"), &config.private_dir.join("diagnostics")] {
            fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
        }
        Ok(FlowRunner { config, bundles, running: Mutex::new(HashSet::new()) })
    }

    /// The fixed argument list for one run (parameters travel in the file, never in argv).
    fn command(&self, bundle: &Path, run_dir: &Path, params_file: &Path, url: Option<&str>) -> Command {
        let c = &self.config;
        let mut cmd = Command::new(&c.flow_cli[0]);
        cmd.args(&c.flow_cli[1..]).arg("run").arg(bundle);
        cmd.arg("--run-dir").arg(run_dir).arg("--params-file").arg(params_file);
        if let Some(url) = url.or(c.url.as_deref()) {
            cmd.arg("--url").arg(url);
        }
        if let Some(config) = &c.config {
            cmd.arg("--config").arg(config);
        }
        if let Some(policy) = &c.policy {
            cmd.arg("--policy").arg(policy);
        }
        if let Some(mode) = &c.approval_mode {
            cmd.arg("--approval-mode").arg(mode);
        }
        cmd.arg("--started-by").arg(&c.started_by);
        cmd.args(&c.extra_run_args);
        cmd
    }

    /// Runs one attempt and returns its evidence. Never panics on what Flow does.
    pub fn run_bundle(&self, run_id: &str, bundle: &Path, params: &Map<String, Value>, url: Option<&str>) -> Evidence {
        let run_dir = self.config.runs_dir.join(run_id);
        let params_file = match write_params(&self.config.private_dir.join("params"), params) {
            Ok(f) => f,
            Err(e) => {
                tracing::error!(error = %e, "could not write a params file");
                return Evidence::LaunchFailed;
            }
        };
        let diagnostics = self.config.private_dir.join("diagnostics").join(format!("{run_id}.log"));
        let log = match private_file(&diagnostics) {
            Ok(f) => f,
            Err(e) => {
                tracing::error!(error = %e, "could not open a diagnostics file");
                return Evidence::LaunchFailed;
            }
        };
        let mut cmd = self.command(bundle, &run_dir, params_file.path(), url);
        let log_err = match log.try_clone() {
            Ok(f) => f,
            Err(_) => return Evidence::LaunchFailed,
        };
        // Its own process group, so a timeout can stop Flow and everything it started; and
        // Flow dies with the thread that waits for it, should this server be killed outright.
        cmd.stdin(Stdio::null()).stdout(log).stderr(log_err).process_group(0);
        // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches only the child.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let started = Instant::now();
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                tracing::warn!(error = %e, "openadapt-flow could not be launched");
                return Evidence::LaunchFailed;
            }
        };
        let pid = child.id();
        self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(pid);
        // A waiter thread sees the exit the moment it happens; this thread keeps the deadline.
        let (exited, exit) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = exited.send(child.wait());
        });
        let status = match exit.recv_timeout(self.config.timeout.saturating_sub(started.elapsed())) {
            Ok(Ok(status)) => Some(status),
            Ok(Err(_)) | Err(_) => None,
        };
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&pid);
        // The params file goes now, whatever happened.
        drop(params_file);
        let Some(status) = status else {
            kill_group(pid);
            let _ = exit.recv();
            return Evidence::TimedOut;
        };
        let exit_code = status.code();
        let report = read_report(&run_dir.join("report.json"));
        if exit_code == Some(2) && report.is_none() {
            let output = fs::read_to_string(&diagnostics).unwrap_or_default();
            return Evidence::NotReady { failed_checks: contract::parse_failed_checks(&output) };
        }
        // A report that disagrees with itself proves nothing: it is treated as missing.
        let report = report.map(|r| report_evidence(&r)).filter(|r| r.envelope_consistent || is_legacy(r));
        Evidence::Finished(FlowFinish {
            exit_code,
            report,
            pause: PauseState::default(),
            waiting_for_approval: false,
        })
    }
}

impl Runner for FlowRunner {
    fn run(&self, run_id: &str, workflow: &str, inputs: &Map<String, Value>, url: Option<&str>, claim: &ClaimFlush) -> RunOutput {
        let evidence = match self.bundles.get(workflow) {
            // Flow may act as soon as it starts.
            Some(_) if claim.wait().is_err() => Evidence::LaunchFailed,
            Some(bundle) => {
                let span = crate::telemetry::child_span("flow.subprocess", "flow");
                let evidence = self.run_bundle(run_id, bundle, &crate::cards::params_for_flow(inputs), url);
                span.end_with(&evidence);
                evidence
            }
            None => Evidence::Refused(contract::Reason::WorkflowUnavailable),
        };
        let model_calls = match &evidence {
            Evidence::Finished(f) => f.report.as_ref().and_then(|r| r.model_calls),
            _ => None,
        };
        RunOutput { decision: contract::decide(&evidence, Proof::Local), simulated: false, sandbox: None, model_calls }
    }

    fn shutdown(&self) {
        for pgid in self.running.lock().unwrap_or_else(|p| p.into_inner()).drain() {
            kill_group(pgid);
        }
    }
}

fn private_file(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

/// A mode-0600 JSON object of string values, deleted when dropped.
fn write_params(dir: &Path, params: &Map<String, Value>) -> std::io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new()
        .prefix("params-")
        .suffix(".json")
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    file.write_all(serde_json::to_string(params)?.as_bytes())?;
    file.as_file().sync_data()?;
    Ok(file)
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created for the child.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

fn read_report(path: &Path) -> Option<Value> {
    let bytes = fs::read(path).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    value.is_object().then_some(value)
}

/// A report from before Flow's precise outcomes: only the `success` flag.
fn is_legacy(r: &FlowReport) -> bool {
    r.execution_outcome.is_none() && r.transaction_outcome.is_none() && r.success.is_some()
}

fn parse<T: serde::de::DeserializeOwned>(v: Option<&Value>) -> Option<T> {
    v.and_then(|v| serde_json::from_value(v.clone()).ok())
}

/// The facts of a persisted report the contract needs. `envelope_consistent` is false when the
/// report's own fields disagree with each other (then only "unreadable" can be said of it).
pub fn report_evidence(report: &Value) -> FlowReport {
    let execution: Option<ExecutionOutcome> = parse(report.get("execution_outcome"));
    FlowReport {
        success: report.get("success").and_then(Value::as_bool),
        execution_outcome: execution,
        transaction_outcome: parse::<TransactionOutcome>(report.get("transaction_outcome")),
        envelope_consistent: consistent(report, execution),
        approval_required: report.pointer("/approval/decision").and_then(Value::as_str) == Some("approval_required"),
        checked_how: parse::<CheckedHow>(report.pointer("/readback/checked_how")),
        below_minimum: report.pointer("/readback/below_minimum").and_then(Value::as_bool) == Some(true),
        approval_mode: parse::<ApprovalMode>(report.pointer("/approval/mode")),
        model_calls: report.get("model_calls").and_then(Value::as_u64).map(|n| n.min(u32::MAX as u64) as u32),
    }
}

/// Whether the report agrees with itself: a known execution outcome, a boolean success, a
/// known profile, production eligibility only for a verified standard or regulated run, and
/// an outcome envelope that repeats the report's own facts.
fn consistent(report: &Value, execution: Option<ExecutionOutcome>) -> bool {
    let Some(execution) = execution else { return false };
    if !report.get("success").is_some_and(Value::is_boolean) {
        return false;
    }
    let profile = report.get("execution_profile");
    if let Some(p) = profile {
        if !matches!(p.as_str(), Some("demo" | "standard" | "regulated")) {
            return false;
        }
    }
    match report.get("production_eligible") {
        None | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) => {
            let standard = matches!(profile.and_then(Value::as_str), Some("standard" | "regulated"));
            if execution != ExecutionOutcome::Verified || !standard {
                return false;
            }
        }
        Some(_) => return false,
    }
    let Some(envelope) = report.get("outcome_envelope") else { return false };
    let Some(envelope) = envelope.as_object() else { return false };
    if envelope.get("outcome") != report.get("execution_outcome") {
        return false;
    }
    [
        ("execution_profile", "profile"),
        ("production_eligible", "production_eligible"),
        ("execution_completed", "execution_completed"),
        ("model_calls", "model_calls"),
        ("external_network_calls", "external_network_calls"),
    ]
    .iter()
    .all(|(report_key, envelope_key)| match report.get(*report_key) {
        Some(v) => envelope.get(*envelope_key) == Some(v),
        None => true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn verified() -> Value {
        json!({
            "success": true, "execution_outcome": "VERIFIED", "transaction_outcome": "VERIFIED",
            "execution_profile": "standard", "production_eligible": true, "execution_completed": true,
            "model_calls": 0,
            "outcome_envelope": {"version": "openadapt.execution-outcome/v1", "outcome": "VERIFIED",
                "profile": "standard", "production_eligible": true, "execution_completed": true, "model_calls": 0},
            "readback": {"checked_how": "system_of_record", "below_minimum": false},
            "approval": {"mode": "not_gated"}
        })
    }

    #[test]
    fn a_verified_report_is_consistent() {
        let r = report_evidence(&verified());
        assert!(r.envelope_consistent);
        assert_eq!(r.execution_outcome, Some(ExecutionOutcome::Verified));
        assert_eq!(r.transaction_outcome, Some(TransactionOutcome::Verified));
        assert_eq!(r.checked_how, Some(CheckedHow::SystemOfRecord));
        assert_eq!(r.approval_mode, Some(ApprovalMode::NotGated));
        assert_eq!(r.model_calls, Some(0));
    }

    #[test]
    fn disagreements_make_a_report_inconsistent() {
        let mut r = verified();
        r["outcome_envelope"]["outcome"] = json!("HALTED");
        assert!(!report_evidence(&r).envelope_consistent);
        let mut r = verified();
        r["outcome_envelope"]["model_calls"] = json!(3);
        assert!(!report_evidence(&r).envelope_consistent);
        let mut r = verified();
        r["execution_profile"] = json!("demo");
        r["outcome_envelope"]["profile"] = json!("demo");
        assert!(!report_evidence(&r).envelope_consistent, "production eligible needs standard");
        let mut r = verified();
        r.as_object_mut().unwrap().remove("outcome_envelope");
        assert!(!report_evidence(&r).envelope_consistent);
        let mut r = verified();
        r["success"] = json!("yes");
        assert!(!report_evidence(&r).envelope_consistent);
    }
}
