//! MCP over stdio with rmcp: a manual `ServerHandler` that puts the bridge's hand-written
//! schemas on the wire as they are. It knows the protocol, not outcomes.

use crate::bridge::{Bridge, Reply};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

pub struct McpServer {
    bridge: Arc<Bridge>,
    tools: Vec<Tool>,
}

impl McpServer {
    pub fn new(bridge: Arc<Bridge>) -> Self {
        let tools = bridge
            .tools()
            .iter()
            .map(|t| {
                let object = |v: &serde_json::Value| Arc::new(v.as_object().cloned().unwrap_or_default());
                let tool = Tool::new(t.name.clone(), t.description.clone(), object(&t.input_schema));
                match &t.output_schema {
                    Some(schema) => tool.with_raw_output_schema(object(schema)),
                    None => tool,
                }
                .with_annotations(
                        ToolAnnotations::new()
                            .read_only(t.hints.read_only)
                            .destructive(t.hints.destructive)
                            .idempotent(t.hints.idempotent)
                            .open_world(t.hints.open_world),
                    )
            })
            .collect();
        McpServer { bridge, tools }
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("openadapt-agent", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Call list_workflows, then run_workflow with your own request_id. Act on the outcome: done, needs_review, not_sure_if_saved, did_not_run, or running (call get_run).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let tick = move |secs: u64| {
            if let Some(token) = token.clone() {
                let peer = peer.clone();
                let note = ProgressNotificationParam::new(token, secs as f64).with_message("still running");
                tokio::spawn(async move {
                    let _ = peer.notify_progress(note).await;
                });
            }
        };
        let call = self.bridge.call(&request.name, request.arguments.as_ref(), tick);
        let reply = tokio::select! {
            reply = call => reply,
            // The client gave up: stop waiting. The run itself goes on and stays readable.
            _ = context.ct.cancelled() => return Err(McpError::internal_error("request cancelled", None)),
        };
        Ok(match reply {
            Reply::Structured(value) => {
                let text = value.to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content = Some(value);
                result
            }
            Reply::Error(sentence) => CallToolResult::error(vec![ContentBlock::text(sentence)]),
        }
        .into())
    }
}

/// Serves MCP on stdin/stdout until the client closes the connection.
pub async fn serve_stdio(bridge: Arc<Bridge>) -> anyhow::Result<()> {
    let server = McpServer::new(bridge.clone());
    let warm = bridge.clone();
    // After the handshake has had its moment: warming must not compete with the first answer,
    // nor its thread with the start.
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        drop(tokio::task::spawn_blocking(move || warm.warm()));
    });
    // Pipes (how MCP clients launch servers) are read and written on the reactor, with no
    // hand-off to a blocking thread per message; anything else falls back to blocking stdio.
    let running = server.serve(rmcp::transport::stdio_pipes()).await?;
    let waited = running.waiting().await;
    // The client is gone: nothing it started may go on unattended.
    bridge.shutdown();
    waited?;
    Ok(())
}
