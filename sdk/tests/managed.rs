//! The SDK in managed mode against the real binary: every sandbox case, receipts, restarts
//! after kill -9, resume from a persisted RunRef, and streamed events.

mod common;
use common::*;
use openadapt_agent_sdk::{Client, ClientMode, Error, Interruption, Outcome, Reason, RestartPolicy, RunEvent, RunRef, RunResult};
use std::time::{Duration, Instant};

/// The honest answer for a run whose server was killed: not sure if saved, interrupted.
fn assert_interrupted(r: &RunResult) {
    assert_eq!(r.outcome, Outcome::NotSureIfSaved, "{r:?}");
    assert_eq!(r.reason, Reason::Interrupted, "{r:?}");
    assert!(!r.safe_to_retry);
    assert_eq!(
        r.interruptions(),
        vec![Interruption::CheckRecord { reason: Reason::Interrupted, needs_attention_id: None, run_id: r.run_id.clone() }]
    );
}

#[tokio::test]
async fn workflows_are_typed_cards() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    assert_eq!(client.mode(), ClientMode::Managed);
    assert!(client.server_pid().is_some());
    common::workflows_are_typed_cards(&client).await;
    client.close().await;
}

#[tokio::test]
async fn every_sandbox_case_answers_its_typed_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    common::every_sandbox_case_answers_its_typed_outcome(&client, "managed-case").await;
    client.close().await;
}

#[tokio::test]
async fn a_repeat_replays_and_other_inputs_conflict() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    common::a_repeat_replays_and_other_inputs_conflict(&client, tmp.path(), "managed").await;
    client.close().await;
}

#[tokio::test]
async fn tool_errors_are_typed() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    common::tool_errors_are_typed(&client).await;
    client.close().await;
}

#[tokio::test]
async fn run_streamed_events_come_in_order_from_progress_notifications() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 1000, RestartPolicy::default()).await;
    common::run_streamed_events_come_in_order(&client, "managed").await;
    client.close().await;
}

#[tokio::test]
async fn dropping_a_stream_stops_watching_and_resume_finds_the_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 700, RestartPolicy::default()).await;
    common::dropping_a_stream_stops_watching_and_resume_finds_the_outcome(&client, tmp.path(), "managed").await;
    client.close().await;
}

#[tokio::test]
async fn run_waits_through_get_run_when_a_call_answers_running() {
    let tmp = tempfile::tempdir().unwrap();
    let client = Client::builder()
        .runs_dir(tmp.path())
        .cache_home(cache_home())
        .simulated_latency(Duration::from_millis(1200))
        .wait_per_call(Duration::from_secs(1))
        .managed(server_bin(), RestartPolicy::default())
        .await
        .unwrap();
    let r = client.run(WORKFLOW, inputs(NOTE, "normal"), &id("managed-slow-1")).await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(claims(tmp.path()), 1);
    client.close().await;
}

#[tokio::test]
async fn a_program_that_does_not_start_is_a_spawn_error() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-program");
    match Client::builder().runs_dir(tmp.path()).managed(&missing, RestartPolicy::default()).await {
        Err(Error::Spawn(_)) => {}
        other => panic!("expected a spawn error: {other:?}"),
    }
}

#[tokio::test]
async fn a_receipt_survives_the_servers_death_and_a_new_client() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    let request_id = id("managed-receipt-1");
    let first = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_eq!(first.outcome, Outcome::Done);

    let old = client.server_pid().unwrap();
    kill_9(old);
    let again = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert!(again.replayed);
    assert_eq!((again.run_id.clone(), again.outcome.clone()), (first.run_id.clone(), Outcome::Done));
    assert_eq!(client.restarts(), 1);
    assert_ne!(client.server_pid(), Some(old));
    client.close().await;

    let other = managed(tmp.path(), 0, RestartPolicy::default()).await;
    let third = other.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert!(third.replayed);
    assert_eq!(third.run_id, first.run_id);
    assert_eq!(claims(tmp.path()), 1);
    other.close().await;
}

#[tokio::test]
async fn kill_9_mid_run_restarts_the_server_and_asks_again_under_the_same_request_id() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 1500, RestartPolicy::default()).await;
    let request_id = id("managed-kill-restart");
    let call = {
        let (client, request_id) = (client.clone(), request_id.clone());
        tokio::spawn(async move { client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await })
    };
    until_a_run_is_in_flight(tmp.path()).await;
    let old = client.server_pid().unwrap();
    kill_9(old);

    let r = call.await.unwrap().expect("the call is asked again of a restarted server");
    assert_interrupted(&r);
    assert!(r.replayed, "the answer is the killed attempt's, replayed");
    assert_eq!(client.restarts(), 1);
    assert_ne!(client.server_pid(), Some(old));
    assert_eq!((claims(tmp.path()), run_records(tmp.path())), (1, 1), "never a second attempt");

    let again = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_interrupted(&again);
    assert_eq!(again.run_id, r.run_id);
    assert_eq!(claims(tmp.path()), 1);
    client.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_come_back_answers_outcome_unknown_and_a_retry_is_safe() {
    let tmp = tempfile::tempdir().unwrap();
    let client = managed(tmp.path(), 1500, RestartPolicy::never()).await;
    let request_id = id("managed-outcome-unknown");
    let call = {
        let (client, request_id) = (client.clone(), request_id.clone());
        tokio::spawn(async move { client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await })
    };
    until_a_run_is_in_flight(tmp.path()).await;
    kill_9(client.server_pid().unwrap());
    match call.await.unwrap() {
        Err(Error::OutcomeUnknown { request_id: id }) => assert_eq!(id, request_id.as_str()),
        other => panic!("expected OutcomeUnknown: {other:?}"),
    }
    assert!(matches!(client.workflows().await, Err(Error::Transport(_))), "no restart under RestartPolicy::never");

    // The program retries with the same request_id on a new client: the honest outcome.
    let retry = managed(tmp.path(), 0, RestartPolicy::default()).await;
    let r = retry.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_interrupted(&r);
    assert!(r.replayed);
    assert_eq!((claims(tmp.path()), run_records(tmp.path())), (1, 1), "never a second attempt");
    retry.close().await;
}

#[tokio::test]
async fn restart_tries_stop_within_the_back_off_budget() {
    let tmp = tempfile::tempdir().unwrap();
    // A server that starts until `marker` exists, counting its starts.
    let script = tmp.path().join("flaky-server");
    let (marker, starts) = (tmp.path().join("broken"), tmp.path().join("starts"));
    std::fs::write(&script, "#!/bin/sh\necho start >> \"$STARTS\"\n[ -e \"$MARKER\" ] && exit 1\nexec \"$SERVER\" \"$@\"\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&script).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let policy = RestartPolicy { max_restarts: 100, backoff_initial: Duration::from_millis(100), backoff_total: Duration::from_secs(2) };
    let client = Client::builder()
        .runs_dir(tmp.path().join("runs"))
        .cache_home(cache_home())
        .simulated_latency(Duration::from_millis(1500))
        .env("STARTS", &starts)
        .env("MARKER", &marker)
        .env("SERVER", server_bin())
        .managed(&script, policy)
        .await
        .unwrap();
    let request_id = id("managed-budget-1");
    let call = {
        let (client, request_id) = (client.clone(), request_id.clone());
        tokio::spawn(async move { client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await })
    };
    until_a_run_is_in_flight(&tmp.path().join("runs")).await;
    std::fs::write(&marker, "").unwrap();
    let killed = Instant::now();
    kill_9(client.server_pid().unwrap());
    let answer = call.await.unwrap();
    let spent = killed.elapsed();
    assert!(matches!(&answer, Err(Error::OutcomeUnknown { request_id: id }) if id == request_id.as_str()), "{answer:?}");
    assert!(spent < Duration::from_secs(4), "gave up after {spent:?}, budget 2 s");
    let tries = std::fs::read_to_string(&starts).unwrap().lines().count() - 1;
    assert!((3..=12).contains(&tries), "{tries} restart tries with doubling back-off from 100 ms in 2 s");
    assert_eq!(client.restarts(), 0);

    // The server can start again: the retry under the same request_id answers honestly.
    std::fs::remove_file(&marker).unwrap();
    let r = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_interrupted(&r);
    assert_eq!(client.restarts(), 1);
    assert_eq!(claims(&tmp.path().join("runs")), 1);
    client.close().await;
}

#[tokio::test]
async fn resume_from_a_persisted_run_ref_after_the_server_was_killed_mid_run() {
    let tmp = tempfile::tempdir().unwrap();
    let saved = tmp.path().join("run-ref.json");
    let request_id = id("managed-resume-1");
    {
        // A program that starts a run, persists its RunRef, and dies with its server.
        let client = managed(tmp.path(), 1500, RestartPolicy::never()).await;
        let mut stream = client.run_streamed(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
        let Some(Ok(RunEvent::Started { run_id })) = stream.next().await else { panic!("a Started event first") };
        let run_ref = stream.run_ref().cloned().unwrap();
        assert_eq!(run_ref.run_id, run_id);
        assert_eq!(run_ref.request_id.as_deref(), Some(request_id.as_str()));
        std::fs::write(&saved, serde_json::to_vec(&run_ref).unwrap()).unwrap();
        kill_9(client.server_pid().unwrap());
        loop {
            match stream.next().await {
                Some(Ok(RunEvent::Progress { .. })) => continue,
                Some(Err(Error::Transport(_))) => break,
                other => panic!("the stream ends with the server: {other:?}"),
            }
        }
    }

    // The program's next life: a new client, the RunRef read back.
    let run_ref: RunRef = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
    let client = managed(tmp.path(), 0, RestartPolicy::default()).await;
    let r = client.resume(&run_ref).await.unwrap();
    assert_interrupted(&r);
    assert_eq!(r.run_id.as_deref(), Some(run_ref.run_id.as_str()));
    assert_eq!((claims(tmp.path()), run_records(tmp.path())), (1, 1), "never a second attempt");

    // Running the same request_id again replays that outcome; nothing runs.
    let again = client.run(WORKFLOW, inputs(NOTE, "normal"), &request_id).await.unwrap();
    assert_interrupted(&again);
    assert!(again.replayed);
    assert_eq!(again.run_id, r.run_id);
    assert_eq!(claims(tmp.path()), 1);
    client.close().await;
}
