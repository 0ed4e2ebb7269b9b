//! The sandboxed engines of openadapt-agent, as WIT-typed WebAssembly components.
//!
//! This is the only crate that knows wasmtime. [`Engines`] holds one wasmtime engine per
//! process; each default component (identifier guard, card validator, PHI projector, MockMed)
//! is embedded in the binary, compiled once (or loaded from the compile cache) on first use, and
//! instantiated into a fresh store for every call. Operators add card validators from `.wasm`
//! files at run time with [`Engines::load_card_validator`].
//!
//! Calls are synchronous and may block on file access: from async code, call them inside
//! `tokio::task::spawn_blocking`.

mod cache;
mod error;
mod runtime;
mod worlds;

pub use cache::CacheUse;
pub use error::EngineError;
pub use runtime::EnginesConfig;
pub use worlds::guard::{Finding, IdentifierGuard, IdentifierKind};
pub use worlds::mockmed::{AppError, Banner, FaultCase, MockMed, MockMedSession, ReadBack, Referral, SaveAnswer};
pub use worlds::projector::{
    AttendedAction, AttentionCategory, AttentionSource, AxNode, AxTree, Bounds, ObserveWire, ObservedNode,
    PhiProjector, QueueCard, Rect, OBSERVE_MAX_BYTES, OBSERVE_MAX_NODES, OBSERVE_SCHEMA,
};
pub use worlds::validator::{Card, CardInput, CardValidator, InputType, Problem, Verdict};

use runtime::Runtime;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use wasmtime::component::Component;

/// The default components, built from `guests/` by this crate's build script.
mod embedded {
    macro_rules! guest {
        ($name:literal) => {
            include_bytes!(concat!(env!("OPENADAPT_GUESTS_DIR"), "/", $name, ".wasm"))
        };
    }
    pub const IDENTIFIER_GUARD: &[u8] = guest!("identifier_guard");
    pub const CARD_VALIDATOR: &[u8] = guest!("card_validator");
    pub const PHI_PROJECTOR: &[u8] = guest!("phi_projector");
    pub const MOCKMED: &[u8] = guest!("mockmed");
}

/// The engine host: one per process. Cheap to clone.
#[derive(Clone)]
pub struct Engines {
    rt: Arc<Runtime>,
    defaults: Arc<Defaults>,
}

type Slot<T> = OnceLock<Result<(T, CacheUse), String>>;

#[derive(Default)]
struct Defaults {
    guard: Slot<IdentifierGuard>,
    validator: Slot<CardValidator>,
    projector: Slot<PhiProjector>,
    mockmed: Slot<MockMed>,
}

impl Engines {
    pub fn new(config: EnginesConfig) -> Result<Self, EngineError> {
        Ok(Engines { rt: Runtime::new(config)?, defaults: Arc::default() })
    }

    /// Returns a default engine, compiling (or loading from the cache) on first use; a failed
    /// load is remembered, so a broken engine is reported the same way every time.
    fn default<T: Clone>(
        &self,
        slot: &Slot<T>,
        wasm: &[u8],
        make: impl FnOnce(Arc<Runtime>, &Component) -> Result<T, EngineError>,
    ) -> Result<(T, CacheUse), EngineError> {
        let load = || -> Result<(T, CacheUse), EngineError> {
            let (component, cache_use) = self.rt.compile(wasm)?;
            Ok((make(self.rt.clone(), &component)?, cache_use))
        };
        slot.get_or_init(|| load().map_err(|e| e.to_string()))
            .clone()
            .map_err(|detail| EngineError::Setup { detail })
    }

    pub fn identifier_guard(&self) -> Result<IdentifierGuard, EngineError> {
        Ok(self.default(&self.defaults.guard, embedded::IDENTIFIER_GUARD, IdentifierGuard::new)?.0)
    }

    pub fn default_card_validator(&self) -> Result<CardValidator, EngineError> {
        let make = |rt, c: &Component| CardValidator::new(rt, c, "default");
        Ok(self.default(&self.defaults.validator, embedded::CARD_VALIDATOR, make)?.0)
    }

    pub fn phi_projector(&self) -> Result<PhiProjector, EngineError> {
        Ok(self.default(&self.defaults.projector, embedded::PHI_PROJECTOR, PhiProjector::new)?.0)
    }

    pub fn mockmed(&self) -> Result<MockMed, EngineError> {
        Ok(self.default(&self.defaults.mockmed, embedded::MOCKMED, MockMed::new)?.0)
    }

    /// Loads every default engine now rather than on first use, and tells how each was loaded,
    /// in the order guard, card validator, projector, MockMed.
    pub fn preload(&self) -> Result<[CacheUse; 4], EngineError> {
        let d = &self.defaults;
        Ok([
            self.default(&d.guard, embedded::IDENTIFIER_GUARD, IdentifierGuard::new)?.1,
            self.default(&d.validator, embedded::CARD_VALIDATOR, |rt, c| CardValidator::new(rt, c, "default"))?.1,
            self.default(&d.projector, embedded::PHI_PROJECTOR, PhiProjector::new)?.1,
            self.default(&d.mockmed, embedded::MOCKMED, MockMed::new)?.1,
        ])
    }

    /// Loads an operator's card validator from a `.wasm` component file. A file that is not a
    /// component, or does not export `openadapt:engines/validator@0.1.0`, is refused here.
    pub fn load_card_validator(&self, path: &Path) -> Result<CardValidator, EngineError> {
        let wasm = std::fs::read(path)
            .map_err(|e| EngineError::Unreadable { path: path.to_path_buf(), reason: e.to_string() })?;
        if !is_component(&wasm) {
            return Err(EngineError::NotAComponent { path: path.to_path_buf() });
        }
        let label = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (component, _) = self.rt.compile(&wasm)?;
        CardValidator::new(self.rt.clone(), &component, &label)
    }

}

/// A component starts with the wasm magic and the component layer's version (0x0d, layer 1).
fn is_component(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[4..8] == [0x0d, 0x00, 0x01, 0x00]
}

/// Where the build put a guest component: the test and example components are not embedded.
#[doc(hidden)]
pub fn built_guest(name: &str) -> PathBuf {
    Path::new(env!("OPENADAPT_GUESTS_DIR")).join(format!("{name}.wasm"))
}

#[doc(hidden)]
pub use worlds::probe;
