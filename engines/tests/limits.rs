//! Misbehaving and malformed operator validators are refused with typed errors, and the same
//! engine host keeps serving the next call.

mod common;
use openadapt_engines::{Card, CardInput, EngineError, InputType, Verdict};
use std::fs;
use std::time::{Duration, Instant};

fn card(name: &str) -> Card {
    Card {
        name: name.into(),
        purpose: "Adds a triage note to the open referral.".into(),
        done_means: "The note is on the record and read back.".into(),
        inputs: vec![CardInput { name: "note".into(), input_type: InputType::Text, description: None }],
    }
}

fn bundle(dir: &std::path::Path) -> std::path::PathBuf {
    let b = dir.join("bundle");
    fs::create_dir_all(&b).unwrap();
    fs::write(b.join("workflow.json"), r#"{"param_specs":{"note":{"type":"string"}}}"#).unwrap();
    b
}

#[test]
fn loop_memory_bomb_and_trap_are_stopped_and_the_host_keeps_serving() {
    let tmp = tempfile::tempdir().unwrap();
    let engines = common::engines(tmp.path());
    let b = bundle(tmp.path());
    let hostile = engines.load_card_validator(&common::hostile()).expect("hostile loads as a validator");
    let default = engines.default_card_validator().unwrap();

    let started = Instant::now();
    let err = hostile.validate(&b, &card("loop_forever")).unwrap_err();
    assert!(matches!(err, EngineError::DeadlineExceeded), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "the deadline must stop the loop");
    assert_eq!(default.validate(&b, &card("add_triage_note")).unwrap(), Verdict::Accepted);

    let err = hostile.validate(&b, &card("eat_memory")).unwrap_err();
    assert!(matches!(err, EngineError::MemoryExceeded), "{err:?}");
    assert_eq!(default.validate(&b, &card("add_triage_note")).unwrap(), Verdict::Accepted);

    let err = hostile.validate(&b, &card("trap_now")).unwrap_err();
    assert!(matches!(err, EngineError::Trapped), "{err:?}");

    // The same loaded validator works again: a trapped instance is never reused.
    assert_eq!(hostile.validate(&b, &card("add_triage_note")).unwrap(), Verdict::Accepted);
}

#[test]
fn files_that_are_not_validators_are_refused_clearly() {
    let tmp = tempfile::tempdir().unwrap();
    let engines = common::engines(tmp.path());

    let missing = tmp.path().join("missing.wasm");
    assert!(matches!(engines.load_card_validator(&missing), Err(EngineError::Unreadable { .. })));

    let text = tmp.path().join("notes.wasm");
    fs::write(&text, "definitely not wasm").unwrap();
    assert!(matches!(engines.load_card_validator(&text), Err(EngineError::NotAComponent { .. })));

    // A core module (the smallest valid one) is not a component.
    let core = tmp.path().join("core.wasm");
    fs::write(&core, b"\0asm\x01\0\0\0").unwrap();
    let err = engines.load_card_validator(&core).err().unwrap();
    assert!(matches!(err, EngineError::NotAComponent { .. }), "{err:?}");
    assert!(err.to_string().contains("is not a WebAssembly component"));

    // A component header with a broken body fails to compile, with a local error.
    let broken = tmp.path().join("broken.wasm");
    fs::write(&broken, b"\0asm\x0d\0\x01\0\xff\xff").unwrap();
    assert!(matches!(engines.load_card_validator(&broken), Err(EngineError::Compile { .. })));

    // A real component of another world.
    let guard = openadapt_engines::built_guest("identifier_guard");
    let err = engines.load_card_validator(&guard).err().unwrap();
    assert!(matches!(err, EngineError::WrongWorld { expected: "openadapt:engines/validator@0.1.0" }), "{err:?}");

    // The host still serves.
    let b = bundle(tmp.path());
    assert_eq!(engines.default_card_validator().unwrap().validate(&b, &card("add_triage_note")).unwrap(), Verdict::Accepted);
}

#[test]
fn a_validator_of_another_wit_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let engines = common::engines(tmp.path());
    // Rewrite the export's version inside a real validator: same bytes, version 0.2.0.
    let wasm = fs::read(openadapt_engines::built_guest("banned_word_validator")).unwrap();
    let from = b"openadapt:engines/validator@0.1.0";
    let to = b"openadapt:engines/validator@0.2.0";
    let mut patched = wasm.clone();
    let mut hits = 0;
    let mut i = 0;
    while i + from.len() <= patched.len() {
        if &patched[i..i + from.len()] == from {
            patched[i..i + from.len()].copy_from_slice(to);
            hits += 1;
        }
        i += 1;
    }
    assert!(hits > 0);
    let path = tmp.path().join("v2.wasm");
    fs::write(&path, patched).unwrap();
    let err = engines.load_card_validator(&path).err().unwrap();
    assert!(matches!(err, EngineError::WrongWorld { .. }), "{err:?}");
}
