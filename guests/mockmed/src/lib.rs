//! MockMed: a simulated clinic app. The host drives it one step at a time within a session;
//! the fault case is fixed when the session opens. Its record store is the directory preopened
//! read-write at `/store`, so it persists across sessions and across processes.

wit_bindgen::generate!({ world: "sandbox-app", path: "../../wit" });

use exports::openadapt::engines::app::{AppError, Banner, FaultCase, Guest, Referral, StoreCheck, SaveAnswer};
use std::cell::RefCell;
use std::fs;
use std::path::PathBuf;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

const STORE: &str = "/store";
/// The synthetic records MockMed ships with; the first referral belongs to the first one.
const SEED_RECORDS: &str = r#"{"records":[{"record_id":"rec-0001","patient":"Synthetic Patient A"},{"record_id":"rec-0002","patient":"Synthetic Patient B"}],"referrals":[{"referral_id":"ref-0001","record_id":"rec-0001"}]}"#;

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Opened,
    ReferralOpen,
    Confirmed,
    NoteEntered,
    Saved,
}

struct Session {
    case: FaultCase,
    id: String,
    step: Step,
    record_id: Option<String>,
    banner: Banner,
}

thread_local! {
    static SESSION: RefCell<Option<Session>> = const { RefCell::new(None) };
}

fn with_session<T>(f: impl FnOnce(&mut Session) -> Result<T, AppError>) -> Result<T, AppError> {
    SESSION.with(|s| match s.borrow_mut().as_mut() {
        None => Err(AppError::WrongStep),
        Some(session) if session.case == FaultCase::AppOffline => Err(AppError::Unreachable),
        Some(session) => f(session),
    })
}

fn expect_step(session: &Session, at_least: Step) -> Result<(), AppError> {
    if session.step >= at_least {
        Ok(())
    } else {
        Err(AppError::WrongStep)
    }
}

struct MockMed;

impl Guest for MockMed {
    fn open(case: FaultCase, session_id: String) {
        let id: String = session_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(64)
            .collect();
        SESSION.with(|s| {
            *s.borrow_mut() = Some(Session {
                case,
                id: if id.is_empty() { "session".into() } else { id },
                step: Step::Opened,
                record_id: None,
                banner: Banner::None,
            })
        });
    }

    fn reachable() -> bool {
        with_session(|_| Ok(())).is_ok()
    }

    fn open_first_referral() -> Result<Referral, AppError> {
        with_session(|s| {
            let records = load_records(&s.id)?;
            let record_id = records["referrals"][0]["record_id"]
                .as_str()
                .ok_or(AppError::StoreFailed)?
                .to_string();
            s.step = Step::ReferralOpen;
            s.record_id = Some(record_id.clone());
            // A duplicate chart: the referral's patient appears on two records.
            let matching_records = if s.case == FaultCase::DuplicateRecord { 2 } else { 1 };
            Ok(Referral { record_id, matching_records })
        })
    }

    fn confirm_right_record() -> Result<bool, AppError> {
        with_session(|s| {
            expect_step(s, Step::ReferralOpen)?;
            if s.case == FaultCase::DuplicateRecord {
                return Ok(false);
            }
            s.step = Step::Confirmed;
            Ok(true)
        })
    }

    fn enter_note(note: String) -> Result<(), AppError> {
        with_session(|s| {
            expect_step(s, Step::Confirmed)?;
            if s.step == Step::Saved {
                return Err(AppError::WrongStep);
            }
            let record_id = s.record_id.clone().ok_or(AppError::WrongStep)?;
            // Typed again: this session's own draft is replaced.
            write_draft(&record_id, &s.id, &note, s.step == Step::NoteEntered)?;
            s.step = Step::NoteEntered;
            Ok(())
        })
    }

    fn save() -> Result<SaveAnswer, AppError> {
        with_session(|s| {
            if s.step != Step::NoteEntered {
                return Err(AppError::WrongStep);
            }
            let record_id = s.record_id.clone().ok_or(AppError::WrongStep)?;
            s.step = Step::Saved;
            match s.case {
                FaultCase::FalseSavedBanner => {
                    // The app loses the note and says it saved it.
                    discard_draft(&record_id, &s.id)?;
                    s.banner = Banner::Saved;
                    Ok(SaveAnswer::Answered)
                }
                FaultCase::TimeoutAfterSave => {
                    publish_draft(&record_id, &s.id)?;
                    Ok(SaveAnswer::NoAnswer)
                }
                _ => {
                    publish_draft(&record_id, &s.id)?;
                    s.banner = Banner::Saved;
                    Ok(SaveAnswer::Answered)
                }
            }
        })
    }

    fn read_banner() -> Result<Banner, AppError> {
        with_session(|s| Ok(s.banner))
    }

    fn read_back(record_id: String, note: String) -> Result<StoreCheck, AppError> {
        with_session(|s| {
            let dir = notes_dir(&record_id)?;
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(StoreCheck { notes_on_record: 0, note_found: false })
                }
                Err(_) => return Err(AppError::StoreFailed),
            };
            let mut notes_on_record = 0;
            // Notes are never removed; an entry that can't be read while listed is skipped.
            for entry in entries.flatten() {
                if entry.path().extension().is_some_and(|e| e == "json") {
                    notes_on_record += 1;
                }
            }
            let note_found = own_note_is(&dir, &s.id, &note)?;
            Ok(StoreCheck { notes_on_record, note_found })
        })
    }

    fn note_saved(record_id: String, note: String) -> Result<bool, AppError> {
        with_session(|s| own_note_is(&notes_dir(&record_id)?, &s.id, &note))
    }
}

/// This session's own note, read from the store, not from the session's memory.
fn own_note_is(dir: &std::path::Path, session_id: &str, note: &str) -> Result<bool, AppError> {
    match fs::read_to_string(dir.join(format!("{session_id}.json"))) {
        Ok(stored) => {
            let doc: serde_json::Value = serde_json::from_str(&stored).map_err(|_| AppError::StoreFailed)?;
            Ok(doc["note"].as_str() == Some(note))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(_) => Err(AppError::StoreFailed),
    }
}

/// Reads the record list, seeding it on first use. Seeding is idempotent, so two sessions
/// racing to seed write the same bytes.
fn load_records(session_id: &str) -> Result<serde_json::Value, AppError> {
    let path = PathBuf::from(STORE).join("records.json");
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let tmp = PathBuf::from(STORE).join(format!(".records.{session_id}.tmp"));
            fs::write(&tmp, SEED_RECORDS).map_err(|_| AppError::StoreFailed)?;
            fs::rename(&tmp, &path).map_err(|_| AppError::StoreFailed)?;
            SEED_RECORDS.to_string()
        }
        Err(_) => return Err(AppError::StoreFailed),
    };
    serde_json::from_str(&text).map_err(|_| AppError::StoreFailed)
}

fn notes_dir(record_id: &str) -> Result<PathBuf, AppError> {
    if record_id.is_empty() || !record_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(AppError::StoreFailed);
    }
    Ok(PathBuf::from(STORE).join("notes").join(record_id))
}

/// The store's root directory, as its WASI descriptor. Notes are written through it with
/// positioned writes, not std's file streams: the host runs a stream write on another thread and
/// hands the result back, while it does a descriptor write in place.
fn store() -> Result<Descriptor, AppError> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .find_map(|(dir, name)| (name == STORE).then_some(dir))
        .ok_or(AppError::StoreFailed)
}

/// `notes/<record_id>/<session_id>` plus `extension`, relative to the store.
fn note_path(record_id: &str, session_id: &str, extension: &str) -> Result<String, AppError> {
    notes_dir(record_id)?;
    Ok(format!("notes/{record_id}/{session_id}.{extension}"))
}

/// Keeps the note as this session's draft, as clinic apps autosave what is typed: one file per
/// session, created exclusively, so concurrent sessions never overwrite each other (`again`:
/// this session's own draft, replaced). A draft is not a note: nothing reads it but the save,
/// and `read_back` counts only saved notes. Making the file here, while the note is entered,
/// leaves the save nothing to create: creating a file is the slow part of a write on a disk
/// where many were deleted lately.
fn write_draft(record_id: &str, session_id: &str, note: &str, again: bool) -> Result<(), AppError> {
    let path = note_path(record_id, session_id, "draft")?;
    let body = serde_json::json!({ "note": note }).to_string();
    let store = store()?;
    let how = if again { OpenFlags::TRUNCATE } else { OpenFlags::CREATE | OpenFlags::EXCLUSIVE };
    let create = || store.open_at(PathFlags::empty(), &path, how, DescriptorFlags::WRITE);
    let file = match create() {
        Err(ErrorCode::NoEntry) => {
            // The record's first note: make its directory.
            for d in ["notes".to_string(), format!("notes/{record_id}")] {
                match store.create_directory_at(&d) {
                    Ok(()) | Err(ErrorCode::Exist) => {}
                    Err(_) => return Err(AppError::StoreFailed),
                }
            }
            create()
        }
        other => other,
    }
    .map_err(|_| AppError::StoreFailed)?;
    let mut written = 0;
    while written < body.len() {
        let n = file.write(&body.as_bytes()[written..], written as u64).map_err(|_| AppError::StoreFailed)?;
        if n == 0 {
            return Err(AppError::StoreFailed);
        }
        written += n as usize;
    }
    Ok(())
}

/// Saves the session's draft as its note, whole, by renaming it into place: one file per
/// session (the draft was created exclusively), and only the session that wrote a note reads
/// its text back.
fn publish_draft(record_id: &str, session_id: &str) -> Result<(), AppError> {
    let store = store()?;
    store
        .rename_at(&note_path(record_id, session_id, "draft")?, &store, &note_path(record_id, session_id, "json")?)
        .map_err(|_| AppError::StoreFailed)
}

fn discard_draft(record_id: &str, session_id: &str) -> Result<(), AppError> {
    store()?.unlink_file_at(&note_path(record_id, session_id, "draft")?).map_err(|_| AppError::StoreFailed)
}

export!(MockMed);
