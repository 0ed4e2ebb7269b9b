//! Compiled Flow bundles: discovery, the typed inputs of `workflow.json`, and the opaque id a
//! calling agent sees. Recorded example values are read only to learn which inputs exist;
//! they are never kept.

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};

const MARKERS: [&str; 2] = ["workflow.json", "workflow.json.enc"];

/// Flow's parameter types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamType {
    String,
    Date,
    Enum(Vec<String>),
    Number,
    Boolean,
    EntityRef,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
}

/// One bundle, or why it could not be read.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// `workflow_` + 24 hex: stable, and says nothing about the bundle.
    pub id: String,
    pub dir: PathBuf,
    pub params: Vec<Param>,
    pub step_count: usize,
    pub schema_version: Option<u64>,
    pub encrypted: bool,
    /// Why the bundle can't be used (kept local: it may name paths).
    pub load_error: Option<String>,
}

impl Bundle {
    pub fn available(&self) -> bool {
        self.load_error.is_none()
    }
}

pub fn is_bundle_dir(path: &Path) -> bool {
    MARKERS.iter().any(|m| path.join(m).is_file())
}

/// `root` is one bundle, or a directory whose immediate subdirectories are bundles.
pub fn discover(root: &Path) -> std::io::Result<Vec<Bundle>> {
    if !root.is_dir() {
        return Err(std::io::Error::new(std::io::ErrorKind::NotFound, "the bundles directory does not exist"));
    }
    let dirs: Vec<PathBuf> = if is_bundle_dir(root) {
        vec![root.to_path_buf()]
    } else {
        let mut dirs: Vec<PathBuf> =
            fs::read_dir(root)?.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir() && is_bundle_dir(p)).collect();
        dirs.sort();
        dirs
    };
    Ok(dirs.into_iter().map(|d| load(&d)).collect())
}

pub fn load(dir: &Path) -> Bundle {
    let fallback_id = || public_id_from_files(dir);
    let encrypted = dir.join("workflow.json.enc").is_file();
    let failed = |why: &str| Bundle {
        id: fallback_id(),
        dir: dir.into(),
        params: vec![],
        step_count: 0,
        schema_version: None,
        encrypted,
        load_error: Some(why.into()),
    };
    let text = match fs::read_to_string(dir.join("workflow.json")) {
        Ok(text) => text,
        Err(_) if encrypted => return failed("encrypted bundle"),
        Err(_) => return failed("workflow.json unreadable"),
    };
    let doc: Value = match serde_json::from_str::<Value>(&text) {
        Ok(v) if v.is_object() => v,
        _ => return failed("workflow.json malformed"),
    };
    let id = match doc.pointer("/manifest/content_digest").and_then(Value::as_str) {
        Some(digest) if !digest.is_empty() => public_id(digest.as_bytes()),
        _ => fallback_id(),
    };
    Bundle {
        id,
        dir: dir.into(),
        params: params(&doc),
        step_count: doc.get("steps").and_then(Value::as_array).map_or(0, Vec::len),
        schema_version: doc.get("schema_version").and_then(Value::as_u64),
        encrypted,
        load_error: None,
    }
}

/// The declared inputs: every `param_specs` entry with its type, then any `params` name
/// without a spec (a string). Sorted by name, so the card's order is stable.
fn params(doc: &Value) -> Vec<Param> {
    let specs = doc.get("param_specs").and_then(Value::as_object);
    let mut out: Vec<Param> = Vec::new();
    if let Some(specs) = specs {
        for (name, spec) in specs {
            let choices = || -> Vec<String> {
                spec.get("choices")
                    .and_then(Value::as_array)
                    .map(|c| c.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect())
                    .unwrap_or_default()
            };
            let kind = match spec.get("type").and_then(Value::as_str).unwrap_or("string") {
                "date" => ParamType::Date,
                "enum" => ParamType::Enum(choices()),
                "number" => ParamType::Number,
                "boolean" => ParamType::Boolean,
                "entity_ref" => ParamType::EntityRef,
                _ => ParamType::String,
            };
            out.push(Param { name: name.clone(), kind });
        }
    }
    if let Some(recorded) = doc.get("params").and_then(Value::as_object) {
        for name in recorded.keys() {
            if !out.iter().any(|p| &p.name == name) {
                out.push(Param { name: name.clone(), kind: ParamType::String });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `workflow_` + the first 24 hex of sha256("openadapt-agent-workflow-id-v1" NUL material).
pub fn public_id(material: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(b"openadapt-agent-workflow-id-v1\0");
    h.update(material);
    format!("workflow_{}", &hex::encode(h.finalize())[..24])
}

/// Without a manifest digest: a hash of the bundle's marker files.
fn public_id_from_files(dir: &Path) -> String {
    let mut h = Sha256::new();
    for marker in MARKERS {
        let path = dir.join(marker);
        if path.is_file() && !path.is_symlink() {
            if let Ok(bytes) = fs::read(&path) {
                h.update(marker.as_bytes());
                h.update(bytes);
            }
        }
    }
    public_id(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_comes_from_the_manifest_digest() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join("workflow.json"),
            r#"{"name":"Secret Clinic Flow","params":{"mrn":"12345678","note":"x"},"param_specs":{"visit":{"type":"date"},"kind":{"type":"enum","choices":["a","b"]},"n":{"type":"number"}},"manifest":{"content_digest":"sha256:abc"}}"#,
        )
        .unwrap();
        let b = load(tmp.path());
        assert_eq!(b.id, public_id(b"sha256:abc"));
        assert!(b.id.starts_with("workflow_") && b.id.len() == 33);
        let names: Vec<&str> = b.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["kind", "mrn", "n", "note", "visit"]);
        assert_eq!(b.params[0].kind, ParamType::Enum(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn a_directory_of_bundles_is_discovered_in_order_and_bad_ones_are_marked() {
        let tmp = tempfile::tempdir().unwrap();
        for (name, body) in [("b", "{}"), ("a", "not json")] {
            fs::create_dir(tmp.path().join(name)).unwrap();
            fs::write(tmp.path().join(name).join("workflow.json"), body).unwrap();
        }
        fs::create_dir(tmp.path().join("not-a-bundle")).unwrap();
        let found = discover(tmp.path()).unwrap();
        assert_eq!(found.len(), 2);
        assert!(!found[0].available());
        assert!(found[1].available());
        assert!(discover(&tmp.path().join("missing")).is_err());
    }
}
