//! openadapt-agent: a local MCP stdio server that enters work in a clinic app and answers with
//! one of four outcomes a calling agent can act on safely.

pub mod cli;
