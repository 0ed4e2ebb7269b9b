#![allow(dead_code)]
use openadapt_engines::{Engines, EnginesConfig};
use std::time::Duration;

/// An engine host for one test, with its own compile cache under `dir`.
pub fn engines(dir: &std::path::Path) -> Engines {
    Engines::new(EnginesConfig {
        cache_dir: Some(dir.join("cache")),
        call_deadline: Duration::from_millis(500),
        memory_limit: 32 << 20,
        ..Default::default()
    })
    .expect("engine host")
}

pub fn hostile() -> std::path::PathBuf {
    openadapt_engines::built_guest("hostile")
}
