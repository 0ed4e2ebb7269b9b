//! A hostile component, run with exactly a card validator's grants, tries to leave its sandbox.
//! Every attempt must be denied; the positive control proves the preopen itself works.

mod common;
use openadapt_engines::probe;
use std::fs;

struct Fixture {
    _tmp: tempfile::TempDir,
    engines: openadapt_engines::Engines,
    bundle: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tmp.path().join("bundle");
    fs::create_dir(&bundle).unwrap();
    fs::write(bundle.join("workflow.json"), r#"{"params":{}}"#).unwrap();
    let outside = tmp.path().join("outside.txt");
    fs::write(&outside, "SECRET-OUTSIDE-CANARY").unwrap();
    std::os::unix::fs::symlink(&outside, bundle.join("link-out")).unwrap();
    fs::write(bundle.join("host-path.txt"), outside.to_str().unwrap()).unwrap();
    let engines = common::engines(tmp.path());
    Fixture { _tmp: tmp, engines, bundle, outside }
}

fn attempt(f: &Fixture, what: &str) -> Result<String, String> {
    probe::attempt(&f.engines, &common::hostile(), &f.bundle, what).expect("the probe call itself runs")
}

#[test]
fn reading_inside_the_preopen_works() {
    let f = fixture();
    assert_eq!(attempt(&f, "read-inside"), Ok(r#"{"params":{}}"#.to_string()));
}

#[test]
fn reads_outside_the_preopen_are_denied() {
    let f = fixture();
    for what in ["read-parent", "read-absolute", "read-host-path", "read-symlink"] {
        let got = attempt(&f, what);
        assert!(got.is_err(), "{what} must be denied, got {got:?}");
        assert!(!format!("{got:?}").contains("SECRET-OUTSIDE-CANARY"), "{what} leaked the file");
    }
}

#[test]
fn the_only_root_is_the_preopen() {
    let f = fixture();
    // `/` is not a preopen: listing it fails rather than showing the host's root.
    assert!(attempt(&f, "list-root").is_err());
}

#[test]
fn writes_into_a_read_only_preopen_are_denied() {
    let f = fixture();
    let got = attempt(&f, "write-readonly");
    assert!(got.is_err(), "write must be denied, got {got:?}");
    assert!(!f.bundle.join("planted.txt").exists());
    assert_eq!(fs::read_to_string(&f.outside).unwrap(), "SECRET-OUTSIDE-CANARY");
}

#[test]
fn network_is_denied() {
    let f = fixture();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    assert!(attempt(&f, "socket").is_err());
    assert!(attempt(&f, "resolve").is_err());
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "nothing may have connected");
}

#[test]
fn env_and_args_are_empty_and_time_is_frozen() {
    let f = fixture();
    std::env::set_var("OPENADAPT_TEST_SECRET", "SECRET-ENV-CANARY");
    assert_eq!(attempt(&f, "env"), Ok("0".into()));
    assert_eq!(attempt(&f, "args"), Ok("0".into()));
    assert_eq!(attempt(&f, "clock"), Ok("0".into()));
}
