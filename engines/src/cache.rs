//! The compile cache: precompiled components in a host-owned directory.
//!
//! An entry's name is sha256 of (wasm bytes, wasmtime version, the engine's compatibility hash),
//! so a change of any of them is a miss. Each file is `sha256(artifact) || artifact`; the
//! checksum is verified before the (unsafe) deserialize, and a file that fails it, or fails to
//! deserialize, is compiled again. The directory must be ours and private (0700), else the cache
//! is not used at all: only artifacts this host made itself are ever deserialized.

use crate::error::EngineError;
use sha2::{Digest, Sha256};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::component::Component;
use wasmtime::Engine;

const WASMTIME_VERSION: &str = env!("OPENADAPT_WASMTIME_VERSION");
const CHECKSUM_LEN: usize = 32;

/// Whether a load came from the cache. Reported for benchmarks and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheUse {
    Hit,
    Compiled,
}

pub(crate) struct CompileCache {
    dir: PathBuf,
    settings: [u8; 32],
}

impl CompileCache {
    /// Opens (creating if needed) a private cache directory. `None` when the directory can't be
    /// made private and ours: compiling every time is slower but never unsafe.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Option<Self> {
        if let Err(err) = create_private_dir(dir) {
            tracing::warn!(error = %err, "compile cache disabled: could not create its directory");
            return None;
        }
        if !is_private_and_ours(dir) {
            tracing::warn!("compile cache disabled: its directory is not private to this user");
            return None;
        }
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Some(CompileCache { dir: dir.to_path_buf(), settings: hasher.0.finalize().into() })
    }

    fn entry_path(&self, wasm: &[u8]) -> PathBuf {
        let mut key = Sha256::new();
        key.update(b"openadapt-engines-compile-cache/v1\0");
        key.update(WASMTIME_VERSION.as_bytes());
        key.update([0]);
        key.update(self.settings);
        key.update(Sha256::digest(wasm));
        self.dir.join(format!("{}.cwasm", hex::encode(key.finalize())))
    }

    pub(crate) fn load(&self, engine: &Engine, wasm: &[u8]) -> Result<(Component, CacheUse), EngineError> {
        let path = self.entry_path(wasm);
        if let Ok(bytes) = fs::read(&path) {
            if let Some(artifact) = verified(&bytes) {
                // SAFETY: the artifact was written by `store` below into a directory private to
                // this user, and its checksum matches, so it is exactly what this host's
                // `precompile_component` produced for this engine configuration.
                match unsafe { Component::deserialize(engine, artifact) } {
                    Ok(component) => return Ok((component, CacheUse::Hit)),
                    Err(err) => tracing::warn!(error = %err, "recompiling an unusable cache entry"),
                }
            } else {
                tracing::warn!("recompiling a corrupt cache entry");
            }
        }
        let artifact = engine
            .precompile_component(wasm)
            .map_err(|e| EngineError::Compile { detail: format!("{e:#}") })?;
        if let Err(err) = self.store(&path, &artifact) {
            tracing::warn!(error = %err, "could not write a compile cache entry");
        }
        // SAFETY: `artifact` was just produced by this engine's own `precompile_component`.
        let component = unsafe { Component::deserialize(engine, &artifact) }
            .map_err(|e| EngineError::Compile { detail: format!("{e:#}") })?;
        Ok((component, CacheUse::Compiled))
    }

    fn store(&self, path: &Path, artifact: &[u8]) -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
        tmp.write_all(&Sha256::digest(artifact))?;
        tmp.write_all(artifact)?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn verified(bytes: &[u8]) -> Option<&[u8]> {
    if bytes.len() <= CHECKSUM_LEN {
        return None;
    }
    let (sum, artifact) = bytes.split_at(CHECKSUM_LEN);
    (Sha256::digest(artifact).as_slice() == sum).then_some(artifact)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(unix)]
fn is_private_and_ours(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(dir) else { return false };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc_geteuid() };
    meta.is_dir() && meta.uid() == euid && meta.mode() & 0o077 == 0
}

#[cfg(not(unix))]
fn is_private_and_ours(dir: &Path) -> bool {
    dir.is_dir()
}

#[cfg(unix)]
extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// Feeds `Hash` output into sha256, so the engine's compatibility hash becomes a stable key.
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}
