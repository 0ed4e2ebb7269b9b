//! MockMed, step by step, for each fault case; and a record store that outlives sessions.

mod common;
use openadapt_engines::{AppError, Banner, FaultCase, ReadBack, SaveAnswer};

const NOTE: &str = "Synthetic triage note: mild fever, recheck in two days.";

struct Fixture {
    _tmp: tempfile::TempDir,
    store: std::path::PathBuf,
    mockmed: openadapt_engines::MockMed,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let mockmed = common::engines(tmp.path()).mockmed().unwrap();
    Fixture { _tmp: tmp, store, mockmed }
}

#[test]
fn a_note_typed_again_replaces_the_first_and_only_a_saved_note_counts() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::Normal, "s1").unwrap();
    let referral = s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.confirm_right_record().unwrap(), Ok(true));
    s.enter_note("first text").unwrap().unwrap();
    s.enter_note(NOTE).unwrap().unwrap();
    // Entered, not saved: a draft is no note.
    assert_eq!(s.read_back(&referral.record_id, NOTE).unwrap(), Ok(ReadBack { notes_on_record: 0, note_found: false }));
    assert_eq!(s.save().unwrap(), Ok(SaveAnswer::Answered));
    assert_eq!(s.read_back(&referral.record_id, NOTE).unwrap(), Ok(ReadBack { notes_on_record: 1, note_found: true }));
    assert_eq!(s.enter_note("after the save").unwrap(), Err(AppError::WrongStep));
}

#[test]
fn normal_saves_and_reads_back() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::Normal, "s1").unwrap();
    assert!(s.reachable().unwrap());
    let referral = s.open_first_referral().unwrap().unwrap();
    assert_eq!(referral.matching_records, 1);
    assert_eq!(s.read_banner().unwrap(), Ok(Banner::None));
    assert_eq!(s.confirm_right_record().unwrap(), Ok(true));
    s.enter_note(NOTE).unwrap().unwrap();
    assert_eq!(s.save().unwrap(), Ok(SaveAnswer::Answered));
    assert_eq!(s.read_banner().unwrap(), Ok(Banner::Saved));
    assert_eq!(
        s.read_back(&referral.record_id, NOTE).unwrap(),
        Ok(ReadBack { notes_on_record: 1, note_found: true })
    );
    assert_eq!(s.note_saved(&referral.record_id, NOTE).unwrap(), Ok(true));
    assert_eq!(s.note_saved(&referral.record_id, "another text").unwrap(), Ok(false));
}

#[test]
fn duplicate_record_fails_the_right_record_check_before_any_write() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::DuplicateRecord, "s1").unwrap();
    assert!(s.reachable().unwrap());
    let referral = s.open_first_referral().unwrap().unwrap();
    assert_eq!(referral.matching_records, 2);
    assert_eq!(s.confirm_right_record().unwrap(), Ok(false));
    // Nothing after a failed check may write.
    assert_eq!(s.enter_note(NOTE).unwrap(), Err(AppError::WrongStep));
    assert_eq!(s.save().unwrap(), Err(AppError::WrongStep));
    assert_eq!(
        s.read_back(&referral.record_id, NOTE).unwrap(),
        Ok(ReadBack { notes_on_record: 0, note_found: false })
    );
}

#[test]
fn false_saved_banner_says_saved_but_the_store_has_no_note() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::FalseSavedBanner, "s1").unwrap();
    let referral = s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.confirm_right_record().unwrap(), Ok(true));
    s.enter_note(NOTE).unwrap().unwrap();
    assert_eq!(s.save().unwrap(), Ok(SaveAnswer::Answered));
    assert_eq!(s.read_banner().unwrap(), Ok(Banner::Saved));
    assert_eq!(
        s.read_back(&referral.record_id, NOTE).unwrap(),
        Ok(ReadBack { notes_on_record: 0, note_found: false })
    );
}

#[test]
fn timeout_after_save_sends_the_save_and_never_answers() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::TimeoutAfterSave, "s1").unwrap();
    let referral = s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.confirm_right_record().unwrap(), Ok(true));
    s.enter_note(NOTE).unwrap().unwrap();
    assert_eq!(s.save().unwrap(), Ok(SaveAnswer::NoAnswer));
    assert_eq!(s.read_banner().unwrap(), Ok(Banner::None));
    // The caller can't know; the store shows the save did land.
    assert_eq!(
        s.read_back(&referral.record_id, NOTE).unwrap(),
        Ok(ReadBack { notes_on_record: 1, note_found: true })
    );
}

#[test]
fn app_offline_is_unreachable_before_anything_is_sent() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::AppOffline, "s1").unwrap();
    assert!(!s.reachable().unwrap());
    assert_eq!(s.open_first_referral().unwrap(), Err(AppError::Unreachable));
    assert_eq!(s.enter_note(NOTE).unwrap(), Err(AppError::Unreachable));
    assert_eq!(s.save().unwrap(), Err(AppError::Unreachable));
    assert_eq!(std::fs::read_dir(&f.store).unwrap().count(), 0, "nothing written");
}

#[test]
fn steps_out_of_order_are_refused() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::Normal, "s1").unwrap();
    assert_eq!(s.confirm_right_record().unwrap(), Err(AppError::WrongStep));
    assert_eq!(s.save().unwrap(), Err(AppError::WrongStep));
    s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.enter_note(NOTE).unwrap(), Err(AppError::WrongStep), "not confirmed yet");
}

#[test]
fn the_store_persists_across_sessions_and_engine_hosts() {
    let f = fixture();
    for (i, note) in ["first note", "second note"].iter().enumerate() {
        let mut s = f.mockmed.open(&f.store, FaultCase::Normal, &format!("session-{i}")).unwrap();
        s.open_first_referral().unwrap().unwrap();
        s.confirm_right_record().unwrap().unwrap();
        s.enter_note(note).unwrap().unwrap();
        s.save().unwrap().unwrap();
    }
    // A new engine host (as after a restart) reads what earlier sessions wrote.
    let tmp2 = tempfile::tempdir().unwrap();
    let mockmed = common::engines(tmp2.path()).mockmed().unwrap();
    let mut s = mockmed.open(&f.store, FaultCase::Normal, "session-0").unwrap();
    let r = s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.read_back(&r.record_id, "first note").unwrap(), Ok(ReadBack { notes_on_record: 2, note_found: true }));
    assert_eq!(s.read_back(&r.record_id, "second note").unwrap(), Ok(ReadBack { notes_on_record: 2, note_found: false }));
    // Another session's read-back never takes an equal note of someone else's for its own.
    let mut s = mockmed.open(&f.store, FaultCase::Normal, "reader").unwrap();
    let r = s.open_first_referral().unwrap().unwrap();
    assert_eq!(s.read_back(&r.record_id, "first note").unwrap(), Ok(ReadBack { notes_on_record: 2, note_found: false }));
}

#[test]
fn a_false_banner_is_caught_even_when_an_equal_note_is_already_on_file() {
    let f = fixture();
    let mut s = f.mockmed.open(&f.store, FaultCase::Normal, "earlier").unwrap();
    s.open_first_referral().unwrap().unwrap();
    s.confirm_right_record().unwrap().unwrap();
    s.enter_note(NOTE).unwrap().unwrap();
    s.save().unwrap().unwrap();
    let mut s = f.mockmed.open(&f.store, FaultCase::FalseSavedBanner, "later").unwrap();
    let r = s.open_first_referral().unwrap().unwrap();
    s.confirm_right_record().unwrap().unwrap();
    s.enter_note(NOTE).unwrap().unwrap();
    assert_eq!(s.save().unwrap(), Ok(SaveAnswer::Answered));
    assert_eq!(s.read_banner().unwrap(), Ok(Banner::Saved));
    assert_eq!(s.read_back(&r.record_id, NOTE).unwrap(), Ok(ReadBack { notes_on_record: 1, note_found: false }));
    assert_eq!(s.note_saved(&r.record_id, NOTE).unwrap(), Ok(false));
}
