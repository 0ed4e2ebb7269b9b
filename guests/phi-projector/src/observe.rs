//! The `openadapt.authoring.observe/v1` projection of an accessibility tree.

use crate::{AxNode, AxTree, Rect};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::HashSet;

pub const SCHEMA: &str = "openadapt.authoring.observe/v1";
/// At most this many nodes are emitted.
pub const MAX_NODES: usize = 200;
/// The serialized JSON is at most this many bytes.
pub const MAX_BYTES: usize = 32 * 1024;
/// Nodes deeper than this (a root is at depth 1) are dropped.
pub const MAX_DEPTH: u32 = 64;

const MAX_ROLE: usize = 32;
const MAX_AUTOMATION_ID: usize = 64;
const MAX_NAME: usize = 32;

/// Roles whose short label may be emitted as `name`.
const CONTROL_ROLES: [&str; 10] = [
    "button",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "checkbox",
    "radio",
    "switch",
    "togglebutton",
    "splitbutton",
];

#[derive(Serialize)]
struct Node<'a> {
    node_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    control_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    automation_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    enabled: bool,
    focused: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    bounds: Option<Bounds>,
}

#[derive(Serialize)]
struct Bounds {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

fn header(node_count: usize, truncated: bool) -> String {
    format!(r#"{{"schema":"{SCHEMA}","node_count":{node_count},"truncated":{truncated},"nodes":["#)
}
const FOOTER: &str = "]}";

/// Projects `tree` to the observe/v1 wire, as JSON.
///
/// Nodes are taken in list order. A node is dropped, and `truncated` set, when its parent index
/// is not below its own, its parent was dropped, it is deeper than [`MAX_DEPTH`], or its node id
/// repeats an earlier one; so every emitted parent precedes its children. Projection stops,
/// with `truncated` set, at the first node that would exceed [`MAX_NODES`] or [`MAX_BYTES`].
/// Values, text, titles, URLs and native ids are never emitted in any form.
pub fn observe(tree: &AxTree) -> String {
    // Budget for the largest header: a three-digit count and `false`.
    let fixed = header(MAX_NODES, false).len() + FOOTER.len();
    let mut used = fixed;
    let mut body = String::new();
    let mut count = 0;
    let mut truncated = false;

    // For each input node: its id and depth when it was emitted.
    let mut kept: Vec<Option<(String, u32)>> = Vec::with_capacity(tree.nodes.len().min(MAX_NODES));
    let mut seen = HashSet::new();
    for (index, node) in tree.nodes.iter().enumerate() {
        let placed = match node.parent {
            None => Some((None, 1)),
            Some(p) => usize::try_from(p)
                .ok()
                .filter(|&p| p < index)
                .and_then(|p| kept[p].as_ref())
                .map(|(id, depth)| (Some(id.clone()), depth + 1)),
        };
        let id = node_id(&tree.session_key, &node.native_id);
        let Some((parent, depth)) = placed.filter(|&(_, depth)| depth <= MAX_DEPTH) else {
            truncated = true;
            kept.push(None);
            continue;
        };
        if !seen.insert(id.clone()) {
            truncated = true;
            kept.push(None);
            continue;
        }

        let json = match serde_json::to_string(&project(node, id.clone(), parent, &tree.viewport)) {
            Ok(json) => json,
            Err(_) => {
                truncated = true;
                kept.push(None);
                continue;
            }
        };
        let comma = usize::from(count > 0);
        if count == MAX_NODES || used + comma + json.len() > MAX_BYTES {
            truncated = true;
            break;
        }
        if comma == 1 {
            body.push(',');
        }
        body.push_str(&json);
        used += comma + json.len();
        count += 1;
        kept.push(Some((id, depth)));
    }

    let mut out = header(count, truncated);
    out.push_str(&body);
    out.push_str(FOOTER);
    out
}

/// `n_` and the first 8 hex digits of SHA-256(session key ‖ 0x00 ‖ native id).
pub(crate) fn node_id(session_key: &[u8], native_id: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(session_key);
    hash.update([0u8]);
    hash.update(native_id.as_bytes());
    let digest = hash.finalize();
    let mut id = String::from("n_");
    for b in &digest[..4] {
        id.push(char::from(HEX[usize::from(b >> 4)]));
        id.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    id
}
const HEX: &[u8; 16] = b"0123456789abcdef";

fn project<'a>(
    node: &'a AxNode,
    node_id: String,
    parent: Option<String>,
    viewport: &Rect,
) -> Node<'a> {
    let role = role(&node.role);
    let name = if CONTROL_ROLES.contains(&role.as_str()) {
        node.name.as_deref().and_then(name)
    } else {
        None
    };
    Node {
        node_id,
        parent,
        control_type: node.control_type.as_deref().filter(|c| control_type_ok(c)),
        automation_id: node
            .automation_id
            .as_deref()
            .filter(|a| automation_id_ok(a)),
        name,
        role,
        enabled: node.enabled,
        focused: node.focused,
        bounds: node.bounds.as_ref().and_then(|b| normalize(b, viewport)),
    }
}

/// Nothing guard-core would flag as an identifier.
fn clean(s: &str) -> bool {
    guard_core::scan(s).is_empty()
}

fn role(raw: &str) -> String {
    let role = raw.to_ascii_lowercase();
    let ok = (1..=MAX_ROLE).contains(&role.len())
        && role
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && clean(&role);
    if ok {
        role
    } else {
        "unknown".to_owned()
    }
}

fn control_type_ok(c: &str) -> bool {
    (1..=MAX_ROLE).contains(&c.len())
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && clean(c)
}

fn automation_id_ok(a: &str) -> bool {
    (1..=MAX_AUTOMATION_ID).contains(&a.len())
        && a.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
        && !has_digit_run(a, 5)
        && clean(a)
}

fn has_digit_run(s: &str, len: usize) -> bool {
    let mut run = 0;
    s.chars().any(|c| {
        run = if guard_core::is_decimal_digit(c) {
            run + 1
        } else {
            0
        };
        run >= len
    })
}

/// A short control label: letters, spaces and `- ' & . , ! ? ( )`, no digits, nothing URL- or
/// identifier-shaped.
fn name(raw: &str) -> Option<&str> {
    let name = raw.trim();
    let chars = name.chars().count();
    let ok = (1..=MAX_NAME).contains(&chars)
        && name.chars().all(|c| {
            (c.is_alphabetic() && !c.is_numeric())
                || matches!(
                    c,
                    ' ' | '-' | '\'' | '&' | '.' | ',' | '!' | '?' | '(' | ')'
                )
        })
        && !name.contains("://")
        && !name.to_ascii_lowercase().contains("www.")
        && clean(name);
    ok.then_some(name)
}

/// Bounds relative to the viewport, each clamped to [0, 1] and rounded to 4 decimals.
fn normalize(b: &Rect, v: &Rect) -> Option<Bounds> {
    let finite = |r: &Rect| {
        r.x.is_finite() && r.y.is_finite() && r.width.is_finite() && r.height.is_finite()
    };
    if !finite(b) || !finite(v) || v.width <= 0.0 || v.height <= 0.0 {
        return None;
    }
    // `+ 0.0` turns a negative zero into zero.
    let unit = |n: f64| ((n.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0) + 0.0;
    Some(Bounds {
        x: unit((b.x - v.x) / v.width),
        y: unit((b.y - v.y) / v.height),
        w: unit(b.width / v.width),
        h: unit(b.height / v.height),
    })
}
