//! Unit tests of the wire types: no server.

use crate::*;
use serde_json::{json, Value};

fn schema() -> Value {
    serde_json::from_str(include_str!("../../schemas/run_result.schema.json")).unwrap()
}

fn wire<T: serde::Serialize>(all: &[T]) -> Vec<String> {
    let mut v: Vec<String> = all.iter().map(|x| serde_json::to_value(x).unwrap().as_str().unwrap().to_string()).collect();
    v.sort();
    v
}

fn schema_enum(property: &str) -> Vec<String> {
    let mut v: Vec<String> =
        schema()["properties"][property]["enum"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect();
    v.sort();
    v
}

#[test]
fn every_vocabulary_matches_the_result_schema() {
    assert_eq!(wire(Outcome::ALL), schema_enum("outcome"));
    assert_eq!(wire(Reason::ALL), schema_enum("reason"));
    assert_eq!(Reason::ALL.len(), 28);
    assert_eq!(wire(NextStep::ALL), schema_enum("next_step"));
    assert_eq!(wire(RecordChanged::ALL), schema_enum("record_changed"));
    assert_eq!(wire(Proof::ALL), schema_enum("proof"));
    assert_eq!(wire(Mode::ALL), schema_enum("mode"));
}

fn sample(outcome: &str, reason: &str) -> Value {
    json!({
        "outcome": outcome, "label": "L", "safe_to_retry": false, "what_happened": "W", "next_action": "N",
        "next_step": "check_record", "reason": reason, "record_changed": "unknown", "proof": "none",
        "run_id": "run-abc", "request_id": "req-0001", "workflow": "add_triage_note", "mode": "sandbox",
        "contract_version": CONTRACT_VERSION,
    })
}

#[test]
fn a_full_result_round_trips_with_the_fields_the_sdk_does_not_type() {
    let mut v = sample("not_sure_if_saved", "save_not_confirmed");
    v["needs_attention_id"] = json!("0123456789abcdef01234567");
    v["seconds"] = json!(1.5);
    v["model_calls"] = json!(0);
    v["checked_how"] = json!("system_of_record");
    v["checked_how_label"] = json!("Checked in the system of record");
    v["sandbox"] = json!({"case": "false_saved_banner", "engine": "simulated"});
    v["technical"] = json!({"execution_outcome": "HALTED", "transaction_outcome": "RECONCILIATION_REQUIRED"});
    v["replayed"] = json!(true);
    let r = RunResult::from_json(v.clone()).unwrap();
    assert_eq!(r.outcome, Outcome::NotSureIfSaved);
    assert_eq!(r.reason, Reason::SaveNotConfirmed);
    assert!(r.replayed);
    assert_eq!(r.extra["technical"]["execution_outcome"], "HALTED");
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
}

#[test]
fn values_from_a_newer_server_parse_as_unknown_and_round_trip() {
    let mut v = sample("partly_saved", "quantum_flux");
    v["next_step"] = json!("call_a_wizard");
    v["proof"] = json!("notarized");
    v["mode"] = json!("orbital");
    v["record_changed"] = json!("maybe");
    let r = RunResult::from_json(v.clone()).unwrap();
    assert_eq!(r.outcome, Outcome::Unrecognized("partly_saved".into()));
    assert_eq!(r.reason, Reason::Unrecognized("quantum_flux".into()));
    assert!(!r.reason.is_known());
    assert!(r.is_terminal(), "an unknown outcome is not running");
    assert_eq!(serde_json::to_value(&r).unwrap(), v);
    // A person decides what an outcome the SDK does not know means.
    assert!(matches!(&r.interruptions()[..], [Interruption::Unrecognized { outcome, .. }] if outcome == "partly_saved"));
}

#[test]
fn a_missing_required_field_is_a_protocol_error() {
    let mut v = sample("done", "saved_and_checked");
    v.as_object_mut().unwrap().remove("safe_to_retry");
    assert!(matches!(RunResult::from_json(v), Err(Error::Protocol(_))));
}

#[test]
fn interruptions_say_what_a_person_must_do() {
    let mut v = sample("needs_review", "record_not_confirmed");
    v["needs_attention_id"] = json!("0123456789abcdef01234567");
    let r = RunResult::from_json(v).unwrap();
    assert_eq!(
        r.interruptions(),
        vec![Interruption::WaitForPerson {
            reason: Reason::RecordNotConfirmed,
            task: PersonTask::ConfirmRecord,
            needs_attention_id: Some("0123456789abcdef01234567".into()),
            run_id: Some("run-abc".into()),
        }]
    );
    for (reason, task) in [
        ("unexpected_screen", PersonTask::CheckScreen),
        ("person_needed", PersonTask::AttendApp),
        ("record_check_not_set_up", PersonTask::SetUpRecordCheck),
        ("approval_needed", PersonTask::ApproveSave),
        ("waiting_for_approval", PersonTask::ApproveNextSave),
        ("stopped_for_review", PersonTask::Review),
        ("a_newer_reason", PersonTask::Review),
    ] {
        let r = RunResult::from_json(sample("needs_review", reason)).unwrap();
        assert!(matches!(&r.interruptions()[..], [Interruption::WaitForPerson { task: t, .. }] if *t == task), "{reason}");
    }
    for reason in ["save_not_confirmed", "not_checked", "checked_below_minimum", "change_reversed", "timed_out", "result_unreadable", "interrupted"] {
        let r = RunResult::from_json(sample("not_sure_if_saved", reason)).unwrap();
        let i = r.interruptions();
        assert!(matches!(&i[..], [Interruption::CheckRecord { run_id: Some(id), .. }] if id == "run-abc"), "{reason}");
        assert_eq!(i[0].reason().as_str(), reason);
    }
    for (outcome, reason) in [("done", "saved_and_checked"), ("did_not_run", "app_unreachable"), ("running", "running")] {
        assert!(RunResult::from_json(sample(outcome, reason)).unwrap().interruptions().is_empty(), "{outcome}");
    }
}

#[test]
fn request_ids_follow_the_servers_pattern() {
    for ok in ["abcd", "req-0001", "A.b_c:d-e", &"x".repeat(128)] {
        assert_eq!(RequestId::new(ok).unwrap().as_str(), ok);
    }
    for bad in ["", "abc", "-abc", ".abcd", "has space", "ünï-code", &"x".repeat(129)] {
        assert!(matches!(RequestId::new(bad), Err(Error::InvalidRequestId)), "{bad:?}");
    }
    assert!(serde_json::from_value::<RequestId>(json!("no")).is_err());
    assert_eq!(serde_json::from_value::<RequestId>(json!("yes-1")).unwrap().as_str(), "yes-1");
}

#[test]
fn a_run_ref_persists_as_json() {
    let r = RunResult::from_json(sample("running", "running")).unwrap();
    let run_ref = r.run_ref().unwrap();
    let text = serde_json::to_string(&run_ref).unwrap();
    assert_eq!(text, r#"{"run_id":"run-abc","request_id":"req-0001","workflow":"add_triage_note"}"#);
    assert_eq!(serde_json::from_str::<RunRef>(&text).unwrap(), run_ref);
    assert_eq!(serde_json::from_str::<RunRef>(r#"{"run_id":"run-x"}"#).unwrap(), RunRef::new("run-x"));
}

#[test]
fn the_restart_budget_is_capped_at_twenty_seconds() {
    let p = RestartPolicy { backoff_total: std::time::Duration::from_secs(300), ..RestartPolicy::default() };
    assert_eq!(p.total(), std::time::Duration::from_secs(20));
    assert_eq!(RestartPolicy::default().total(), std::time::Duration::from_secs(20));
    assert_eq!(RestartPolicy::never().max_restarts, 0);
}

#[test]
fn cards_parse_with_their_extras() {
    let v = json!({
        "mode": "production", "run_tools_enabled": false, "how_to_run": "H",
        "workflows": [{"name": "w", "purpose": "p", "done_means": "d", "available": true,
                       "inputs": {"type": "object", "properties": {"a": {"type": "string"}}}, "id": "wf-1"}],
    });
    let c: Catalog = serde_json::from_value(v).unwrap();
    assert_eq!(c.mode, Mode::Production);
    assert_eq!(c.workflows[0].input_names(), ["a"]);
    assert_eq!(c.workflows[0].extra["id"], "wf-1");
    assert_eq!(c.workflows[0].changes_records, None);
}
