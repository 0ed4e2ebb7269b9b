//! Embedded mode: the sandbox server's bridge in this process. No child and no stdio; progress
//! comes from the service's own ticks.

use crate::client::{Call, ClientBuilder, ProgressSink};
use crate::error::{Error, Result};
use openadapt_agent::bridge::{Bridge, Reply};
use serde_json::Value;
use std::sync::Arc;

pub(crate) struct Embedded {
    bridge: Arc<Bridge>,
    /// Declared after the bridge, so runs stop before the last spans are flushed.
    _telemetry: Option<openadapt_agent::telemetry::TelemetryGuard>,
}

impl Embedded {
    pub async fn start(builder: &ClientBuilder) -> Result<Self> {
        let dir = openadapt_agent::cli::sandbox_dir(builder.runs_dir.clone());
        let cache = match &builder.cache_home {
            Some(home) => home.join("openadapt-agent").join("engines"),
            None => openadapt_agent::cli::engine_cache_dir(),
        };
        let latency = builder.simulated_latency;
        let telemetry = match &builder.telemetry {
            Some(config) => Some(openadapt_agent::telemetry::init(config).map_err(|e| Error::Spawn(format!("telemetry: {e:#}")))?),
            None => None,
        };
        // Opening the runs directory blocks (it creates and fsyncs directories).
        let bridge = tokio::task::spawn_blocking(move || openadapt_agent::cli::sandbox_bridge_at(&dir, &cache, latency))
            .await
            .map_err(|e| Error::Spawn(e.to_string()))?
            .map_err(|e| Error::Spawn(format!("{e:#}")))?;
        Ok(Embedded { bridge: Arc::new(bridge), _telemetry: telemetry })
    }

    pub async fn call(&self, call: &Call, progress: Option<&ProgressSink>) -> Result<Value> {
        let tick = |secs: u64| {
            if let Some(sink) = progress {
                let _ = sink.send(secs as f64);
            }
        };
        match self.bridge.call(call.tool, Some(&call.args), tick).await {
            Reply::Structured(value) => Ok(value),
            Reply::Error(sentence) => Err(Error::Tool(sentence.to_string())),
        }
    }

    pub fn close(&self) {
        self.bridge.shutdown();
    }
}

impl Drop for Embedded {
    fn drop(&mut self) {
        self.bridge.shutdown();
    }
}
