//! Builds the guest components (a workspace of their own under `guests/`) for `wasm32-wasip2`
//! into a target dir of their own, so the nested cargo never waits on the outer build's lock,
//! and hands their paths to the crate, which embeds the default ones.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";
/// The artifact of every component in the guest workspace.
const GUESTS: &[&str] = &[
    "identifier_guard",
    "card_validator",
    "phi_projector",
    "mockmed",
    "banned_word_validator",
    "hostile",
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.parent().unwrap().to_path_buf();
    let guests = root.join("guests");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());

    for dir in ["guests", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    println!("cargo:rerun-if-changed={}", root.join("Cargo.lock").display());

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    if !target_installed(&rustc) {
        println!(
            "cargo::error=the {TARGET} target is not installed: run `rustup target add {TARGET}`"
        );
        std::process::exit(1);
    }

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = out.join("guests-target");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&guests)
        .args(["build", "--release", "--workspace", "--target", TARGET, "--target-dir"])
        .arg(&target_dir);
    // The outer build's flags and target settings are for the host, not for the guests.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_LLVM_COV",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("could not start cargo for the guest components");
    if !status.success() {
        println!("cargo::error=building the guest components for {TARGET} failed (see the output above)");
        std::process::exit(1);
    }

    let built = target_dir.join(TARGET).join("release");
    let dest = out.join("guests");
    fs::create_dir_all(&dest).unwrap();
    for name in GUESTS {
        let from = built.join(format!("{name}.wasm"));
        let to = dest.join(format!("{name}.wasm"));
        copy_if_changed(&from, &to);
    }
    println!("cargo:rustc-env=OPENADAPT_GUESTS_DIR={}", dest.display());
    println!("cargo:rustc-env=OPENADAPT_WASMTIME_VERSION={}", wasmtime_version(&root));
}

fn target_installed(rustc: &str) -> bool {
    let Ok(output) = Command::new(rustc).args(["--print", "sysroot"]).output() else {
        return false;
    };
    let sysroot = String::from_utf8_lossy(&output.stdout).trim().to_string();
    Path::new(&sysroot).join("lib/rustlib").join(TARGET).join("lib").is_dir()
}

fn copy_if_changed(from: &Path, to: &Path) {
    let bytes = fs::read(from).unwrap_or_else(|e| panic!("missing guest artifact {}: {e}", from.display()));
    if fs::read(to).ok().as_deref() != Some(&bytes[..]) {
        fs::write(to, &bytes).unwrap();
    }
}

/// The resolved wasmtime version, part of the compile-cache key.
fn wasmtime_version(root: &Path) -> String {
    let lock = fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "name = \"wasmtime\"" {
            if let Some(v) = lines.next().and_then(|l| l.trim().strip_prefix("version = ")) {
                return v.trim_matches('"').to_string();
            }
        }
    }
    "unknown".into()
}
