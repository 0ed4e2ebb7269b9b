//! A typed Rust API per WIT world. Each module binds its world and nothing else.

pub mod guard;
pub mod mockmed;
pub mod probe;
pub mod projector;
pub mod validator;

use crate::error::EngineError;
use crate::runtime::{call_error, Runtime, StoreState};
use wasmtime::component::{Component, InstancePre};
use wasmtime::Store;

/// Links a component against the host's WASI surface once; later calls only instantiate.
pub(crate) fn prepare(rt: &Runtime, component: &Component) -> Result<InstancePre<StoreState>, EngineError> {
    rt.linker
        .instantiate_pre(component)
        .map_err(|e| EngineError::UnsupportedImports { detail: format!("{e:#}") })
}

/// Runs one guest call, mapping a trap, deadline or memory failure to its typed error.
pub(crate) fn guest_call<T>(
    store: &mut Store<StoreState>,
    call: impl FnOnce(&mut Store<StoreState>) -> wasmtime::Result<T>,
) -> Result<T, EngineError> {
    call(store).map_err(|e| call_error(store, e))
}
