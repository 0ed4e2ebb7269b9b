//! The identifier guard component: the `scanner` interface over `guard-core`.

wit_bindgen::generate!({ world: "identifier-guard", path: "../../wit" });

use exports::openadapt::engines::scanner::{Finding, Guest, IdentifierKind};

struct IdentifierGuard;

impl Guest for IdentifierGuard {
    fn scan(text: String) -> Vec<Finding> {
        guard_core::scan(&text)
            .into_iter()
            .map(|f| Finding {
                kind: match f.kind {
                    guard_core::Kind::DigitRun => IdentifierKind::DigitRun,
                    guard_core::Kind::Email => IdentifierKind::Email,
                    guard_core::Kind::Phone => IdentifierKind::Phone,
                },
                start: to_u32(f.start),
                end: to_u32(f.end),
            })
            .collect()
    }
}

/// A component's strings are far shorter than 4 GiB; saturate rather than wrap if not.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

export!(IdentifierGuard);
