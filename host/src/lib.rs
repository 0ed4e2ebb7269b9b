//! openadapt-agent: a local MCP stdio server that enters work in a clinic app and answers with
//! one of four outcomes a calling agent can act on safely.
//!
//! The way of one call: `mcp` (protocol) → `bridge` (tool specs, inputSchema check) →
//! `service` (card input check, request gate, worker, wait) → a runner (`sandbox`) → evidence
//! → `contract` (a pure function to the result) → `runs` (records on disk).

pub mod bridge;
pub mod bundles;
pub mod cards;
pub mod cli;
pub mod contract;
pub mod demo;
pub mod flow;
pub mod mcp;
pub mod production;
pub mod runs;
pub mod sandbox;
pub mod service;
pub mod telemetry;
