//! Link options for release builds of the server binary on x86_64 Linux, where rustc links with
//! its own lld. A server's resident memory is mostly the code pages it touches, and the kernel maps
//! 64 KiB or more around every touched page, so:
//! - `link/hot-symbols.txt` (made by `bench/hot_symbols.py`) lists the functions one sandbox
//!   session runs; lld lays them out first, together, instead of scattered over 13 MB of text;
//! - relative relocations are packed (DT_RELR), which glibc 2.36 and later apply, so the loader
//!   reads a few KiB of relocations at start instead of 700 KiB.
//!
//! Neither changes what the program does. A stale list only costs memory: names it lacks keep
//! their usual place.

use std::env;
use std::ffi::CStr;
use std::path::Path;
use std::process::Command;

const BIN: &str = "openadapt-agent";

fn main() {
    let hot = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("link/hot-symbols.txt");
    println!("cargo::rerun-if-changed={}", hot.display());
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if !links_with_rust_lld() || env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    if hot.is_file() {
        println!("cargo::rustc-link-arg-bin={BIN}=-Wl,--symbol-ordering-file={}", hot.display());
        println!("cargo::rustc-link-arg-bin={BIN}=-Wl,--no-warn-symbol-ordering");
    }
    if env::var("HOST") == env::var("TARGET") && glibc_version() >= (2, 36) {
        println!("cargo::rustc-link-arg-bin={BIN}=-Wl,-z,pack-relative-relocs");
    }
}

/// rustc links x86_64-unknown-linux-gnu with its bundled lld from 1.90 on, unless told otherwise.
fn links_with_rust_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    if env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| flags.contains("link")) {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("-V").output() else { return false };
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let version = String::from_utf8_lossy(&out.stdout);
    let minor = version.split_whitespace().nth(1).and_then(|v| v.split('.').nth(1)?.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}

/// The C library this build runs on; the binary is built where it runs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> (u32, u32) {
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a static NUL-terminated string such as "2.36".
    let version = unsafe { CStr::from_ptr(gnu_get_libc_version()) }.to_string_lossy().into_owned();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_version() -> (u32, u32) {
    (0, 0)
}
