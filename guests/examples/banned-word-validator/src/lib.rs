//! An example operator card validator: refuses any card whose words mention a banned word.
//! Build it with `cargo build --release --target wasm32-wasip2` and pass the `.wasm` to
//! `openadapt-agent serve --card-validator PATH`.

wit_bindgen::generate!({ world: "card-validator", path: "../../../wit" });

use exports::openadapt::engines::validator::{Card, Guest, Problem, Verdict};

/// Words this clinic never lets a card promise.
const BANNED: &[&str] = &["guaranteed"];

struct BannedWords;

impl Guest for BannedWords {
    fn validate(card: Card) -> Verdict {
        let texts = [card.name.as_str(), card.purpose.as_str(), card.done_means.as_str()]
            .into_iter()
            .chain(card.inputs.iter().filter_map(|i| i.description.as_deref()));
        let banned = texts
            .map(str::to_lowercase)
            .any(|t| BANNED.iter().any(|w| t.contains(w)));
        if banned {
            Verdict::Refused(vec![Problem::PolicyRefused])
        } else {
            Verdict::Accepted
        }
    }
}

export!(BannedWords);
