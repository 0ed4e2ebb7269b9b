//! The compile cache: a second host loads from it, a corrupt entry is recompiled, and a
//! directory that is not private is never trusted.

mod common;
use openadapt_engines::{CacheUse, Engines, EnginesConfig};
use std::fs;
use std::os::unix::fs::PermissionsExt;

fn host(cache: &std::path::Path) -> Engines {
    Engines::new(EnginesConfig { cache_dir: Some(cache.to_path_buf()), ..Default::default() }).unwrap()
}

#[test]
fn second_host_loads_every_default_from_the_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    assert_eq!(host(&cache).preload().unwrap(), [CacheUse::Compiled; 4]);
    assert_eq!(fs::metadata(&cache).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(host(&cache).preload().unwrap(), [CacheUse::Hit; 4]);
}

#[test]
fn a_corrupt_entry_is_recompiled_and_still_works() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    host(&cache).preload().unwrap();
    for entry in fs::read_dir(&cache).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        fs::write(&path, bytes).unwrap();
    }
    let engines = host(&cache);
    assert_eq!(engines.preload().unwrap(), [CacheUse::Compiled; 4]);
    assert!(engines.identifier_guard().unwrap().scan("call 555-123-4567").unwrap().len() == 1);
    // The rewritten entries are good again.
    assert_eq!(host(&cache).preload().unwrap(), [CacheUse::Hit; 4]);
}

#[test]
fn a_shared_cache_dir_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    host(&cache).preload().unwrap();
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(host(&cache).preload().unwrap(), [CacheUse::Compiled; 4]);
}
