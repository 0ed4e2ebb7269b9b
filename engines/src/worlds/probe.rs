//! Test support: runs the hostile test component's sandbox probe under exactly the grants a
//! card validator gets, so tests can prove each escape attempt is denied. Not for production.

use super::{guest_call, prepare};
use crate::error::EngineError;
use crate::runtime::Grants;
use crate::worlds::validator::BUNDLE_GUEST_PATH;
use crate::Engines;
use std::path::Path;

mod bindings {
    wasmtime::component::bindgen!({
        world: "hostile",
        path: "../guests/test-components/hostile/wit",
    });
}

/// Loads the component at `wasm` and runs `attempt(what)` with `bundle_dir` preopened
/// read-only at `/bundle`, as a card validator would see it.
pub fn attempt(engines: &Engines, wasm: &Path, bundle_dir: &Path, what: &str) -> Result<Result<String, String>, EngineError> {
    let bytes = std::fs::read(wasm).map_err(|e| EngineError::Unreadable { path: wasm.into(), reason: e.to_string() })?;
    let (component, _) = engines.rt.compile(&bytes)?;
    let pre = bindings::HostilePre::new(prepare(&engines.rt, &component)?)
        .map_err(|_| EngineError::WrongWorld { expected: "openadapt:hostile/probe@0.1.0" })?;
    let mut store = engines.rt.store(Grants::ReadOnlyDir { host: bundle_dir, guest: BUNDLE_GUEST_PATH })?;
    guest_call(&mut store, |s| {
        let hostile = pre.instantiate(&mut *s)?;
        hostile.openadapt_hostile_probe().call_attempt(s, what)
    })
}
