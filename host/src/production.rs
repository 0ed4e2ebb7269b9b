//! Production mode: compiled Flow bundles behind the contract. Builds the catalog (cards
//! checked by the validator components), the Flow runner, and answers the read-only tools with
//! PHI-safe projections: opaque ids, availability, status, counts and booleans.

use crate::bridge::{Bridge, Tools};
use crate::bundles::{self, Bundle, ParamType};
use crate::cards::{self, CardCheckers};
use crate::contract::{Mode, RunResult};
use crate::flow::{FlowConfig, FlowRunner};
use crate::runs::{RunState, RunsDir};
use crate::service::{CatalogEntry, Policy, RunRequest, Service};
use openadapt_engines::{CardValidator, Engines, EnginesConfig};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything production mode is started with.
pub struct Settings {
    pub bundles: PathBuf,
    pub runs_dir: PathBuf,
    pub runs_enabled: bool,
    pub attended: bool,
    pub card_validators: Vec<PathBuf>,
    pub synthetic_defaults: bool,
    pub protected_export: bool,
    pub allow_url_override: bool,
    pub engine_cache: PathBuf,
    pub flow: FlowConfig,
}

/// The read-only side of production mode, for the bridge.
pub struct Production {
    bundles: Vec<Bundle>,
    /// Card name per bundle id.
    names: HashMap<String, String>,
    runs_dir: PathBuf,
    protected_export: bool,
    synthetic_defaults: bool,
    runs_enabled: bool,
    attended: bool,
    allow_url_override: bool,
}

pub fn bridge(settings: &Settings) -> anyhow::Result<Bridge> {
    let found = bundles::discover(&settings.bundles).map_err(|e| anyhow::anyhow!("cannot read the bundles directory: {e}"))?;
    let engines = Engines::new(EnginesConfig { cache_dir: Some(settings.engine_cache.clone()), ..Default::default() })?;
    let default_validator = engines.default_card_validator()?;
    let guard = engines.identifier_guard()?;
    let mut operators: Vec<CardValidator> = Vec::new();
    let mut operators_failed = false;
    for path in &settings.card_validators {
        match engines.load_card_validator(path) {
            Ok(v) => operators.push(v),
            Err(e) => {
                // Fail closed: without every operator validator, no card file can be trusted.
                tracing::warn!(error = %e, "an operator card validator could not be loaded; every workflow uses its default card");
                operators_failed = true;
            }
        }
    }
    let checkers = CardCheckers { default: &default_validator, guard: &guard, operators: &operators };
    let mut catalog = Vec::new();
    let mut names = HashMap::new();
    let mut runnable = HashMap::new();
    for bundle in &found {
        if let Some(error) = &bundle.load_error {
            tracing::warn!(workflow = %bundle.id, "workflow unavailable: {error}");
        }
        let mut card = if operators_failed || !bundle.available() {
            cards::default_card(bundle)
        } else {
            let (card, refusal) = cards::card_for_bundle(bundle, &checkers);
            if let Some(refusal) = refusal {
                tracing::warn!(workflow = %bundle.id, "card refused, using the default card: {refusal}");
            }
            card
        };
        if names.values().any(|n| n == &card.name) {
            tracing::warn!(workflow = %bundle.id, "card name already taken, using the workflow id");
            card.name = bundle.id.clone();
        }
        names.insert(bundle.id.clone(), card.name.clone());
        runnable.insert(card.name.clone(), bundle.dir.clone());
        catalog.push(CatalogEntry { card, available: bundle.available() });
    }

    let runs = RunsDir::open(&settings.runs_dir).map_err(|e| anyhow::anyhow!("cannot open the runs directory: {e}"))?;
    let mut flow = settings.flow.clone();
    flow.runs_dir = settings.runs_dir.clone();
    flow.private_dir = runs.root().join("flow");
    let runner = Arc::new(FlowRunner::new(flow, runnable)?);
    let mode = if settings.attended { Mode::Attended } else { Mode::Production };
    let policy = Policy { mode, runs_enabled: settings.runs_enabled, require_all: !settings.synthetic_defaults };
    let service = Arc::new(Service::new(policy, runs, catalog, runner));
    let production = Production {
        bundles: found,
        names,
        runs_dir: settings.runs_dir.clone(),
        protected_export: settings.protected_export,
        synthetic_defaults: settings.synthetic_defaults,
        runs_enabled: settings.runs_enabled,
        attended: settings.attended,
        allow_url_override: settings.allow_url_override,
    };
    let tools = Tools::production(settings.runs_enabled, &production.legacy_run_tools(&service));
    Ok(Bridge::with_production(service, tools, Arc::new(production)))
}

/// A deprecated per-bundle run tool: `run_<opaque id>`.
#[derive(Clone, Debug)]
pub struct LegacyRunTool {
    pub tool_name: String,
    pub workflow: String,
    pub input_schema: Value,
    /// The argument that carries a per-call URL, when the operator allowed overrides.
    pub url_key: Option<String>,
}

impl Production {
    /// The opaque id of the bundle behind a card name.
    pub fn workflow_id(&self, card_name: &str) -> Option<&str> {
        self.names.iter().find(|(_, name)| name.as_str() == card_name).map(|(id, _)| id.as_str())
    }

    fn legacy_run_tools(&self, service: &Service) -> Vec<LegacyRunTool> {
        self.bundles
            .iter()
            .filter(|b| b.available())
            .filter_map(|b| {
                let name = self.names.get(&b.id)?;
                let entry = service.catalog().iter().find(|c| &c.card.name == name)?;
                let mut properties = Map::new();
                for input in &entry.card.inputs {
                    properties.insert(input.name.clone(), json!({"type": "string", "description": input.description}));
                }
                let required: Vec<String> = if self.synthetic_defaults { vec![] } else { properties.keys().cloned().collect() };
                // A declared `url` input stays an input; the override then takes a free name.
                let url_key = self.allow_url_override.then(|| {
                    let mut key = "url".to_string();
                    let mut n = 1;
                    while properties.contains_key(&key) {
                        n += 1;
                        key = if n == 2 { "target_url_override".into() } else { format!("target_url_override_{n}") };
                    }
                    key
                });
                if let Some(key) = &url_key {
                    properties.insert(key.clone(), json!({"type": "string", "description": "Optional target app URL for this run; allowed because the operator started the server with --allow-url-override."}));
                }
                let schema = json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
                Some(LegacyRunTool { tool_name: format!("run_{}", b.id), workflow: name.clone(), input_schema: schema, url_key })
            })
            .collect()
    }

    /// Extra facts list_workflows carries in production mode.
    pub fn list_extras(&self, listing: &mut Value) {
        let by_name: HashMap<&str, &Bundle> =
            self.bundles.iter().filter_map(|b| self.names.get(&b.id).map(|n| (n.as_str(), b))).collect();
        if let Some(items) = listing["workflows"].as_array_mut() {
            for item in items {
                let Some(bundle) = item["name"].as_str().and_then(|n| by_name.get(n)) else { continue };
                let projection = self.workflow_projection(bundle);
                if let (Some(item), Some(p)) = (item.as_object_mut(), projection.as_object()) {
                    item.extend(p.clone());
                }
            }
        }
        listing["schema_version"] = json!(1);
        listing["lifecycle"] = json!("admission-derived");
        listing["protected_export_enabled"] = json!(self.protected_export);
        listing["synthetic_recorded_defaults_enabled"] = json!(self.synthetic_defaults);
        listing["note"] = if self.runs_enabled {
            Value::Null
        } else {
            json!("Runs are disabled. The operator starts the server with --mode production (or the older --allow-run) to enable them.")
        };
        if self.protected_export {
            listing["protected"] = json!({"bundles": self.bundles.iter().map(|b| b.dir.display().to_string()).collect::<Vec<_>>()});
        }
    }

    fn workflow_projection(&self, bundle: &Bundle) -> Value {
        let type_name = |k: &ParamType| match k {
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            _ => "string",
        };
        let mut p = json!({
            "id": bundle.id,
            "available": bundle.available(),
            "step_count": bundle.available().then_some(bundle.step_count),
            "parameters": bundle.params.iter().map(|p| json!({
                "name": p.name, "type": type_name(&p.kind), "required": !self.synthetic_defaults,
            })).collect::<Vec<_>>(),
            "encrypted": bundle.encrypted,
        });
        if self.protected_export {
            p["protected"] = json!({"bundle_dir": bundle.dir.display().to_string(), "load_error": bundle.load_error});
        }
        p
    }

    /// get_workflow: `None` for an unknown id.
    pub fn get_workflow(&self, id: &str) -> Option<Value> {
        let bundle = self.bundles.iter().find(|b| b.id == id)?;
        let mut p = self.workflow_projection(bundle);
        p["schema_version"] = json!(bundle.schema_version);
        p["certification"] = json!({
            "certified": Value::Null,
            "message": if bundle.available() {
                "Certification is not evaluated by this server; Flow's run gate checks it before every run."
            } else {
                "The local bundle could not be loaded safely."
            },
        });
        Some(p)
    }

    /// list_needs_attention: the queue of paused runs (Flow's attended queue is read in a
    /// later release; until then it is empty).
    pub fn list_needs_attention(&self) -> Value {
        json!({"open_count": 0, "actions_enabled": self.attended, "live_actions_ready": false, "items": []})
    }

    /// get_run_report: the older, count-only view of a run. `None` when nothing is known.
    pub fn run_report(&self, service: &Service, run_id: &str) -> std::io::Result<Option<Value>> {
        let Some(record) = service.lookup(run_id)? else { return Ok(None) };
        if record.state == RunState::Running {
            return Ok(Some(legacy_result(&record.result, record.workflow.as_deref(), summary(None))));
        }
        let report_path = self.runs_dir.join(run_id).join("report.json");
        let report: Option<Value> = std::fs::read(&report_path).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let mut out = legacy_result(&record.result, record.workflow.as_deref(), summary(report.as_ref()));
        if self.protected_export {
            out["protected"] = json!({"run_dir": self.runs_dir.join(run_id).display().to_string(), "report": report});
        }
        Ok(Some(out))
    }

    /// A deprecated run_<id> call: validated like the reference (every declared input, as
    /// text), then run through the same request gate under a fresh request id.
    pub async fn run_legacy(&self, service: &Arc<Service>, tool: &LegacyRunTool, args: &Map<String, Value>) -> std::io::Result<Value> {
        let request_id = format!("legacy-{}", &crate::runs::new_run_id()[4..]);
        let mut args = args.clone();
        let url = tool.url_key.as_ref().and_then(|k| args.remove(k)).and_then(|v| v.as_str().map(str::to_string));
        let inputs = match service.catalog().iter().find(|c| c.card.name == tool.workflow) {
            Some(entry) => cards::typed_from_text(&entry.card, &args),
            None => args,
        };
        let req = RunRequest { workflow: tool.workflow.clone(), inputs, request_id, url };
        // The older tools wait for the end of the run, as they always have.
        let result = service.run(req, std::time::Duration::from_secs(24 * 3600), |_| {}).await?;
        let report = result.run_id.as_ref().and_then(|id| std::fs::read(self.runs_dir.join(id).join("report.json")).ok());
        let report: Option<Value> = report.and_then(|b| serde_json::from_slice(&b).ok());
        Ok(legacy_result(&result, Some(&tool.workflow), summary(report.as_ref())))
    }
}

/// Count-only metrics of a persisted report.
fn summary(report: Option<&Value>) -> Value {
    let Some(report) = report else { return json!({}) };
    let mut s = Map::new();
    if let Some(results) = report.get("results").and_then(Value::as_array) {
        s.insert("steps_total".into(), json!(results.len()));
    }
    for key in ["steps_ok", "steps_skipped", "heal_count", "model_calls"] {
        if let Some(n) = report.get(key).and_then(Value::as_u64) {
            s.insert(key.into(), json!(n));
        }
    }
    if let Some(ms) = report.get("total_ms").and_then(Value::as_f64).filter(|ms| *ms >= 0.0) {
        s.insert("total_ms".into(), json!(ms));
    }
    Value::Object(s)
}

/// The older tools' status word for a contract result.
fn legacy_status(result: &RunResult) -> &'static str {
    use crate::contract::{Outcome, Reason};
    match (result.outcome, result.reason) {
        (Outcome::Done, _) => "success",
        (_, Reason::TimedOut) => "timeout",
        (_, Reason::NotReadyToRun | Reason::InvalidInput | Reason::UnknownWorkflow | Reason::RunsDisabled) => "refused",
        (Outcome::NeedsReview | Outcome::NotSureIfSaved, _) => "halt",
        _ => "error",
    }
}

fn legacy_result(result: &RunResult, workflow: Option<&str>, summary: Value) -> Value {
    let status = legacy_status(result);
    let mut out = json!({
        "schema_version": 1,
        "status": status,
        "success": status == "success",
        "sealed": false,
        "requires_seal": false,
        "frames_included": false,
        "workflow_id": workflow,
        "run_id": result.run_id,
        "message": result.what_happened,
        "summary": summary,
    });
    let contract = result.to_json();
    for key in [
        "outcome", "label", "safe_to_retry", "what_happened", "next_action", "next_step", "reason", "record_changed", "proof",
        "contract_version", "failed_checks",
    ] {
        if let Some(v) = contract.get(key) {
            out[key] = v.clone();
        }
    }
    if let Some(t) = &result.technical {
        if let Some(e) = t.execution_outcome {
            out["execution_outcome"] = json!(e);
        }
        if let Some(t2) = t.transaction_outcome {
            out["transaction_outcome"] = json!(t2);
        }
        if let Some(m) = t.approval_mode {
            out["approval_mode"] = json!(m);
        }
    }
    out
}
