//! Tool specs and dispatch, independent of the transport: the MCP layer lists these tools and
//! hands each call here. Arguments are checked against the tool's inputSchema before dispatch;
//! a failure is a fixed sentence that never echoes a value.

use crate::production::{LegacyRunTool, Production};
use crate::service::{RunRequest, Service};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

const LIST_WORKFLOWS_IN: &str = include_str!("../../schemas/list_workflows.input.schema.json");
const LIST_WORKFLOWS_OUT: &str = include_str!("../../schemas/list_workflows.output.schema.json");
const LIST_WORKFLOWS_PRODUCTION: &str = include_str!("../../schemas/list_workflows.production.schema.json");
const RUN_WORKFLOW_IN: &str = include_str!("../../schemas/run_workflow.input.schema.json");
const GET_RUN_IN: &str = include_str!("../../schemas/get_run.input.schema.json");
const RUN_RESULT: &str = include_str!("../../schemas/run_result.schema.json");
const GET_WORKFLOW_IN: &str = include_str!("../../schemas/get_workflow.input.schema.json");
const GET_WORKFLOW_OUT: &str = include_str!("../../schemas/get_workflow.output.schema.json");
const GET_RUN_REPORT_IN: &str = include_str!("../../schemas/get_run_report.input.schema.json");
const LEGACY_RUN_OUT: &str = include_str!("../../schemas/legacy_run.output.schema.json");
const NEEDS_ATTENTION_IN: &str = include_str!("../../schemas/list_needs_attention.input.schema.json");
const NEEDS_ATTENTION_OUT: &str = include_str!("../../schemas/list_needs_attention.output.schema.json");
const ATTENTION_ITEM_IN: &str = include_str!("../../schemas/get_attention_item.input.schema.json");
const ATTENTION_ITEM_OUT: &str = include_str!("../../schemas/attention_item.output.schema.json");

pub const DEFAULT_WAIT_SECONDS: u64 = 60;

/// MCP tool annotations (hints for the client's own approval policy).
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl ToolSpec {
    fn validator(&self) -> &jsonschema::Validator {
        self.validator
            .get_or_init(|| jsonschema::validator_for(&self.input_schema).expect("input schemas compile"))
    }
}

pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// `None` for the deprecated per-bundle run tools, which never had one.
    pub output_schema: Option<Value>,
    pub hints: Hints,
    /// Compiled on first use (or by `warm`): compiling every schema up front would
    /// dominate the server's start.
    validator: std::sync::OnceLock<jsonschema::Validator>,
}

/// What a tool call answers.
#[derive(Debug)]
pub enum Reply {
    /// A contract result (refusals included): `structuredContent` plus the same JSON as text.
    Structured(Value),
    /// A tool error: a fixed sentence, no `structuredContent`.
    Error(&'static str),
}

pub const UNKNOWN_TOOL: &str = "This server has no tool of that name. Call tools/list to see its tools.";
pub const BAD_ARGUMENTS: &str = "The arguments do not match this tool's inputSchema. Check the names, types and limits it lists.";
pub const NO_SUCH_RUN: &str = "No run with that run_id is recorded in this server's runs directory.";
pub const UNKNOWN_WORKFLOW_ID: &str = "No workflow has that id. Call list_workflows for the current ids.";
pub const NO_REPORT: &str = "No run with that run_id has a report in this server's runs directory.";
pub const NO_ATTENTION_ITEM: &str = "No current attention item has that id. Call list_needs_attention to reload the queue.";
pub const STORAGE_FAILED: &str = "The server could not read or write its runs directory. Nothing new was started; check the server's log.";

/// Which tools a server registers, by mode (the seed's table).
#[derive(Clone, Debug, Default)]
pub struct Tools {
    pub run_workflow: bool,
    /// get_workflow, get_run_report, list_needs_attention, get_attention_item.
    pub read_only_extras: bool,
    pub legacy_runs: Vec<LegacyRunTool>,
}

impl Tools {
    pub fn sandbox() -> Self {
        Tools { run_workflow: true, read_only_extras: false, legacy_runs: vec![] }
    }

    pub fn production(runs: bool, legacy: &[LegacyRunTool]) -> Self {
        Tools { run_workflow: runs, read_only_extras: true, legacy_runs: if runs { legacy.to_vec() } else { vec![] } }
    }
}

pub struct Bridge {
    service: Arc<Service>,
    tools: Vec<ToolSpec>,
    legacy_runs: Vec<LegacyRunTool>,
    production: Option<Arc<Production>>,
}

fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("embedded schemas are valid JSON")
}

impl Bridge {
    pub fn new(service: Arc<Service>, tools: Tools) -> Self {
        Self::build(service, tools, None)
    }

    pub fn with_production(service: Arc<Service>, tools: Tools, production: Arc<Production>) -> Self {
        Self::build(service, tools, Some(production))
    }

    fn build(service: Arc<Service>, which: Tools, production: Option<Arc<Production>>) -> Self {
        let read_only = Hints { read_only: true, destructive: false, idempotent: true, open_world: false };
        let run_hints = Hints { read_only: false, destructive: true, idempotent: true, open_world: true };
        let mut run_in = schema(RUN_WORKFLOW_IN);
        // A known catalog makes an unknown name a schema failure; an empty one leaves it to
        // the contract (unknown_workflow).
        let names: Vec<Value> = service.catalog().iter().map(|c| Value::String(c.card.name.clone())).collect();
        let workflow = &mut run_in["properties"]["workflow"];
        if names.is_empty() {
            workflow.as_object_mut().map(|o| o.remove("enum"));
        } else {
            workflow["enum"] = Value::Array(names);
        }
        let tool = |name: &str, description: &str, input_schema: Value, output: Value, hints| ToolSpec {
            name: name.to_string(),
            description: description.to_string(),
            validator: std::sync::OnceLock::new(),
            input_schema,
            output_schema: Some(output),
            hints,
        };
        let mut list_out = schema(LIST_WORKFLOWS_OUT);
        if production.is_some() {
            if let (Some(props), Some(extra)) =
                (list_out["properties"].as_object_mut(), schema(LIST_WORKFLOWS_PRODUCTION)["properties"].as_object())
            {
                props.extend(extra.clone());
            }
        }
        let mut tools = vec![tool(
            "list_workflows",
            "List the workflows this server can run: for each, its name, purpose, what done means and the inputs it takes.",
            schema(LIST_WORKFLOWS_IN),
            list_out,
            read_only,
        )];
        if which.run_workflow {
            tools.push(tool(
                "run_workflow",
                "Run a workflow with its inputs and your own request_id. The answer is one outcome: done (saved and checked), needs_review (stopped before saving; a person decides), not_sure_if_saved (a person checks the record; never retry), did_not_run (nothing written; retry only when safe_to_retry is true), or running (call get_run). Reusing a request_id never runs the work twice.",
                run_in,
                schema(RUN_RESULT),
                run_hints,
            ));
        }
        tools.push(tool(
            "get_run",
            "Read the result of a run by its run_id, waiting up to wait_seconds while it is still running.",
            schema(GET_RUN_IN),
            schema(RUN_RESULT),
            read_only,
        ));
        if which.read_only_extras {
            tools.push(tool(
                "get_workflow",
                "Older tool. A workflow's structural facts by its opaque id: availability, step count, typed parameters. No labels, recorded values or paths.",
                schema(GET_WORKFLOW_IN),
                schema(GET_WORKFLOW_OUT),
                read_only,
            ));
            tools.push(tool(
                "get_run_report",
                "Older tool; get_run is preferred. A run's status and count-only summary by run_id. The report itself stays on this computer.",
                schema(GET_RUN_REPORT_IN),
                schema(LEGACY_RUN_OUT),
                read_only,
            ));
            tools.push(tool(
                "list_needs_attention",
                "List paused runs waiting for a person, as PHI-safe cards: opaque ids, typed categories, counts and the actions allowed now.",
                schema(NEEDS_ATTENTION_IN),
                schema(NEEDS_ATTENTION_OUT),
                read_only,
            ));
            tools.push(tool(
                "get_attention_item",
                "Reload one attention card by its opaque id before a person decides.",
                schema(ATTENTION_ITEM_IN),
                schema(ATTENTION_ITEM_OUT),
                read_only,
            ));
        }
        for legacy in &which.legacy_runs {
            tools.push(tool(
                &legacy.tool_name,
                "Deprecated: use run_workflow with a request_id. Runs the selected compiled workflow through the governed openadapt-flow run. Returns status (success, halt, refused, timeout, or error) plus the contract fields of run_workflow; only outcome done means saved and checked; never retry not_sure_if_saved. This tool takes no request_id, so a retry can write twice.",
                legacy.input_schema.clone(),
                Value::Null,
                run_hints,
            ));
            // One full output schema per bundle would make tools/list grow by kilobytes each.
            if let Some(t) = tools.last_mut() {
                t.output_schema = None;
            }
        }
        Bridge { service, tools, legacy_runs: which.legacy_runs, production }
    }

    /// Compiles every tool's input schema now, off the request path.
    pub fn warm(&self) {
        for tool in &self.tools {
            tool.validator();
        }
    }

    /// Stops runs in flight; the server is shutting down.
    pub fn shutdown(&self) {
        self.service.shutdown();
    }

    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Handles one tool call. `tick` is called about once a second while a call waits.
    pub async fn call(&self, name: &str, arguments: Option<&Map<String, Value>>, tick: impl FnMut(u64)) -> Reply {
        let facts = crate::telemetry::ServerFacts {
            mode: self.service.policy().mode,
            engine: if self.production.is_some() { "flow" } else { "simulated" },
        };
        // A name the caller made up is caller text: telemetry never carries it.
        let known = self.tools.iter().any(|t| t.name == name);
        let span = crate::telemetry::CallSpan::start(if known { name } else { "(unknown)" }, arguments, facts);
        let reply = span.run(self.dispatch(name, arguments, tick)).await;
        let workflow = if span.wants_metadata() { self.workflow_id(&reply) } else { None };
        span.finish(&reply, arguments, workflow.as_deref());
        reply
    }

    /// The opaque id of the workflow a reply names (production: the bundle id), for telemetry
    /// under `metadata`. Only a workflow the catalog knows is ever named.
    fn workflow_id(&self, reply: &Reply) -> Option<String> {
        let Reply::Structured(v) = reply else { return None };
        let name = v.get("workflow").and_then(Value::as_str)?;
        self.service.catalog().iter().find(|c| c.card.name == name)?;
        match &self.production {
            Some(p) => p.workflow_id(name).map(str::to_string),
            None => Some(name.to_string()),
        }
    }

    async fn dispatch(&self, name: &str, arguments: Option<&Map<String, Value>>, tick: impl FnMut(u64)) -> Reply {
        let Some(tool) = self.tools.iter().find(|t| t.name == name) else {
            return Reply::Error(UNKNOWN_TOOL);
        };
        let empty = Map::new();
        let args = arguments.unwrap_or(&empty);
        let args_value = Value::Object(args.clone());
        if !tool.validator().is_valid(&args_value) {
            return Reply::Error(BAD_ARGUMENTS);
        }
        let answer = match name {
            "list_workflows" => {
                let mut listing = self.service.list_workflows();
                if let Some(p) = &self.production {
                    p.list_extras(&mut listing);
                }
                return Reply::Structured(listing);
            }
            "run_workflow" => self.run_workflow(args, tick).await,
            "get_run" => self.get_run(args, tick).await,
            _ => self.production_call(name, args).await,
        };
        match answer {
            Ok(reply) => reply,
            Err(e) => {
                tracing::error!(error = %e, tool = name, "runs directory failure");
                Reply::Error(STORAGE_FAILED)
            }
        }
    }

    /// The tools only production mode registers; `tools` already proved the name is one.
    async fn production_call(&self, name: &str, args: &Map<String, Value>) -> std::io::Result<Reply> {
        let Some(p) = &self.production else { return Ok(Reply::Error(UNKNOWN_TOOL)) };
        let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        Ok(match name {
            "get_workflow" => p.get_workflow(&text("workflow")).map_or(Reply::Error(UNKNOWN_WORKFLOW_ID), Reply::Structured),
            "get_run_report" => {
                let service = self.service.clone();
                let production = p.clone();
                let id = text("run_id");
                let found = tokio::task::spawn_blocking(move || production.run_report(&service, &id))
                    .await
                    .map_err(std::io::Error::other)??;
                found.map_or(Reply::Error(NO_REPORT), Reply::Structured)
            }
            "list_needs_attention" => Reply::Structured(p.list_needs_attention()),
            "get_attention_item" => Reply::Error(NO_ATTENTION_ITEM),
            _ => match self.legacy_runs.iter().find(|t| t.tool_name == name) {
                Some(tool) => Reply::Structured(p.run_legacy(&self.service, tool, args).await?),
                None => Reply::Error(UNKNOWN_TOOL),
            },
        })
    }

    async fn run_workflow(&self, args: &Map<String, Value>, tick: impl FnMut(u64)) -> std::io::Result<Reply> {
        let req = RunRequest {
            workflow: args["workflow"].as_str().unwrap_or_default().to_string(),
            inputs: args["inputs"].as_object().cloned().unwrap_or_default(),
            request_id: args["request_id"].as_str().unwrap_or_default().to_string(),
            url: None,
        };
        let result = self.service.run(req, wait_of(args), tick).await?;
        Ok(Reply::Structured(result.to_json()))
    }

    async fn get_run(&self, args: &Map<String, Value>, tick: impl FnMut(u64)) -> std::io::Result<Reply> {
        let run_id = args["run_id"].as_str().unwrap_or_default().to_string();
        let wait = wait_of(args);
        let service = self.service.clone();
        let id = run_id.clone();
        let found = tokio::task::spawn_blocking(move || service.lookup(&id)).await.map_err(std::io::Error::other)??;
        let Some(record) = found else { return Ok(Reply::Error(NO_SUCH_RUN)) };
        let result = match record.state {
            crate::runs::RunState::Finished => record.result,
            crate::runs::RunState::Running => self.service.wait(&run_id, wait, false, tick).await?,
        };
        Ok(Reply::Structured(result.to_json()))
    }
}

fn wait_of(args: &Map<String, Value>) -> Duration {
    Duration::from_secs(args.get("wait_seconds").and_then(Value::as_u64).unwrap_or(DEFAULT_WAIT_SECONDS))
}
