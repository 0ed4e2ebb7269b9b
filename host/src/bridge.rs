//! Tool specs and dispatch, independent of the transport: the MCP layer lists these tools and
//! hands each call here. Arguments are checked against the tool's inputSchema before dispatch;
//! a failure is a fixed sentence that never echoes a value.

use crate::service::{Begin, RunRequest, Service};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

const LIST_WORKFLOWS_IN: &str = include_str!("../../schemas/list_workflows.input.schema.json");
const LIST_WORKFLOWS_OUT: &str = include_str!("../../schemas/list_workflows.output.schema.json");
const RUN_WORKFLOW_IN: &str = include_str!("../../schemas/run_workflow.input.schema.json");
const GET_RUN_IN: &str = include_str!("../../schemas/get_run.input.schema.json");
const RUN_RESULT: &str = include_str!("../../schemas/run_result.schema.json");

pub const DEFAULT_WAIT_SECONDS: u64 = 60;

/// MCP tool annotations (hints for the client's own approval policy).
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
    pub output_schema: Value,
    pub hints: Hints,
    validator: jsonschema::Validator,
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
pub const STORAGE_FAILED: &str = "The server could not read or write its runs directory. Nothing new was started; check the server's log.";

pub struct Bridge {
    service: Arc<Service>,
    tools: Vec<ToolSpec>,
}

fn schema(text: &str) -> Value {
    serde_json::from_str(text).expect("embedded schemas are valid JSON")
}

impl Bridge {
    pub fn new(service: Arc<Service>) -> Self {
        let read_only = Hints { read_only: true, destructive: false, idempotent: true, open_world: false };
        let mut run_in = schema(RUN_WORKFLOW_IN);
        // A known catalog makes an unknown name a schema failure; an empty one leaves it to
        // the contract (unknown_workflow).
        let names: Vec<Value> = service.catalog().iter().map(|c| Value::String(c.name.clone())).collect();
        let workflow = &mut run_in["properties"]["workflow"];
        if names.is_empty() {
            workflow.as_object_mut().map(|o| o.remove("enum"));
        } else {
            workflow["enum"] = Value::Array(names);
        }
        let tool = |name, description, input_schema: Value, output, hints| ToolSpec {
            name,
            description,
            validator: jsonschema::validator_for(&input_schema).expect("embedded input schemas compile"),
            input_schema,
            output_schema: schema(output),
            hints,
        };
        let tools = vec![
            tool(
                "list_workflows",
                "List the workflows this server can run: for each, its name, purpose, what done means and the inputs it takes.",
                schema(LIST_WORKFLOWS_IN),
                LIST_WORKFLOWS_OUT,
                read_only,
            ),
            tool(
                "run_workflow",
                "Run a workflow with its inputs and your own request_id. The answer is one outcome: done (saved and checked), needs_review (stopped before saving; a person decides), not_sure_if_saved (a person checks the record; never retry), did_not_run (nothing written; retry only when safe_to_retry is true), or running (call get_run). Reusing a request_id never runs the work twice.",
                run_in,
                RUN_RESULT,
                Hints { read_only: false, destructive: true, idempotent: true, open_world: true },
            ),
            tool(
                "get_run",
                "Read the result of a run by its run_id, waiting up to wait_seconds while it is still running.",
                schema(GET_RUN_IN),
                RUN_RESULT,
                read_only,
            ),
        ];
        Bridge { service, tools }
    }

    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Handles one tool call. `tick` is called about once a second while a call waits.
    pub async fn call(&self, name: &str, arguments: Option<&Map<String, Value>>, tick: impl FnMut(u64)) -> Reply {
        let Some(tool) = self.tools.iter().find(|t| t.name == name) else {
            return Reply::Error(UNKNOWN_TOOL);
        };
        let empty = Map::new();
        let args = arguments.unwrap_or(&empty);
        let args_value = Value::Object(args.clone());
        if !tool.validator.is_valid(&args_value) {
            return Reply::Error(BAD_ARGUMENTS);
        }
        let answer = match name {
            "list_workflows" => return Reply::Structured(self.service.list_workflows()),
            "run_workflow" => self.run_workflow(args, tick).await,
            "get_run" => self.get_run(args, tick).await,
            _ => return Reply::Error(UNKNOWN_TOOL),
        };
        match answer {
            Ok(reply) => reply,
            Err(e) => {
                tracing::error!(error = %e, tool = name, "runs directory failure");
                Reply::Error(STORAGE_FAILED)
            }
        }
    }

    async fn run_workflow(&self, args: &Map<String, Value>, tick: impl FnMut(u64)) -> std::io::Result<Reply> {
        let req = RunRequest {
            workflow: args["workflow"].as_str().unwrap_or_default().to_string(),
            inputs: args["inputs"].as_object().cloned().unwrap_or_default(),
            request_id: args["request_id"].as_str().unwrap_or_default().to_string(),
        };
        let wait = wait_of(args);
        let service = self.service.clone();
        let begin = tokio::task::spawn_blocking(move || service.begin_run(req))
            .await
            .map_err(std::io::Error::other)??;
        let result = match begin {
            Begin::Answer(result) => result,
            Begin::Wait { run_id, replayed } => self.service.wait(&run_id, wait, replayed, tick).await?,
        };
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
