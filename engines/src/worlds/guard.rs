//! The identifier guard world: finds identifier-shaped text and reports kinds and spans.

use super::{guest_call, prepare};
use crate::error::EngineError;
use crate::runtime::{Grants, Runtime, StoreState};
use std::ops::Range;
use std::sync::Arc;
use wasmtime::component::Component;

mod bindings {
    wasmtime::component::bindgen!({ world: "identifier-guard", path: "../wit" });
}
use bindings::exports::openadapt::engines::scanner;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IdentifierKind {
    DigitRun,
    Email,
    Phone,
}

/// One identifier-shaped span of the scanned text, in UTF-8 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub kind: IdentifierKind,
    pub span: Range<usize>,
}

#[derive(Clone)]
pub struct IdentifierGuard {
    rt: Arc<Runtime>,
    pre: bindings::IdentifierGuardPre<StoreState>,
}

impl IdentifierGuard {
    pub(crate) fn new(rt: Arc<Runtime>, component: &Component) -> Result<Self, EngineError> {
        let pre = bindings::IdentifierGuardPre::new(prepare(&rt, component)?)
            .map_err(|_| EngineError::WrongWorld { expected: "openadapt:engines/scanner@0.1.0" })?;
        Ok(IdentifierGuard { rt, pre })
    }

    /// Every identifier-shaped span in `text`, ordered by start.
    pub fn scan(&self, text: &str) -> Result<Vec<Finding>, EngineError> {
        let mut store = self.rt.store(Grants::Nothing)?;
        let found = guest_call(&mut store, |s| {
            let guard = self.pre.instantiate(&mut *s)?;
            guard.openadapt_engines_scanner().call_scan(s, text)
        })?;
        found
            .into_iter()
            .map(|f| {
                let span = f.start as usize..f.end as usize;
                // A span must be a real slice of the text, or the guard broke its contract.
                if span.start >= span.end || text.get(span.clone()).is_none() {
                    return Err(EngineError::BadOutput);
                }
                let kind = match f.kind {
                    scanner::IdentifierKind::DigitRun => IdentifierKind::DigitRun,
                    scanner::IdentifierKind::Email => IdentifierKind::Email,
                    scanner::IdentifierKind::Phone => IdentifierKind::Phone,
                };
                Ok(Finding { kind, span })
            })
            .collect()
    }

    /// True when `text` holds nothing identifier-shaped.
    pub fn passes(&self, text: &str) -> Result<bool, EngineError> {
        Ok(self.scan(text)?.is_empty())
    }
}
