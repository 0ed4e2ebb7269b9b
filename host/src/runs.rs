//! Requests and records on disk, under `<runs-dir>/openadapt-agent/`. This module knows files,
//! not MCP and not outcomes beyond the stored result.
//!
//! - `fingerprint.key`: 32 random bytes keying the input fingerprint.
//! - `claims/<sha256(request_id)[:40]>:<attempt>`: the at-most-once authority. A claim is made
//!   with an exclusive create, which decides who runs the attempt, so two processes sharing
//!   the directory can never run the same one; it is durable before the attempt's first
//!   effect. Its run id is keyed from its name, so even a claim whose content a power cut tore
//!   names its run.
//! - `requests/<sha256(request_id)[:40]>.json`: a derived summary of a request's attempts.
//! - `runs/<run_id>.json`: one per call, refusals included, replaced atomically.
//! - `claims/.claim-*`, `requests/.tmp-*`, `runs/.tmp-*`: temp files, among them each
//!   process's spares (`Spares`).
//!
//! Directories are 0700 and files 0600. Input values are never written: only a keyed
//! fingerprint of them.

use crate::contract::RunResult;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

pub const LEDGER_NAMESPACE: &str = "openadapt-agent/run-workflow/v1";
pub const RUN_SCHEMA: &str = "openadapt-agent.run/v1";
pub const REQUEST_SCHEMA: &str = "openadapt-agent.request/v1";
pub const CLAIM_SCHEMA: &str = "openadapt-agent.claim/v1";
pub const MAX_ATTEMPTS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Running,
    Finished,
}

/// Which process wrote a record, precisely enough to tell whether it is still alive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// The process's start time in clock ticks since boot, so a reused pid is not mistaken
    /// for the owner.
    pub pid_start: Option<u64>,
    pub host: String,
}

impl Owner {
    pub fn current() -> Self {
        let pid = std::process::id();
        Owner { pid, pid_start: process_start(pid), host: hostname() }
    }

    /// False only when the owner is provably gone: same host, and no process with that pid and
    /// start time exists.
    pub fn is_gone(&self) -> bool {
        if self.host != hostname() {
            return false;
        }
        match (process_start(self.pid), self.pid_start) {
            (None, _) => true,
            (Some(now), Some(then)) => now != then,
            (Some(_), None) => false,
        }
    }
}

/// A run record: the contract result plus bookkeeping; never input values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema: String,
    pub run_id: String,
    pub request_id: Option<String>,
    pub workflow: Option<String>,
    pub mode: String,
    pub state: RunState,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub pid: u32,
    pub pid_start: Option<u64>,
    pub host: String,
    pub attempt: Option<u32>,
    pub ledger_key: Option<String>,
    pub fingerprint: Option<String>,
    pub result: RunResult,
}

impl RunRecord {
    /// Ends the record with `result`, which takes the record's own ids.
    pub fn finish(&mut self, result: RunResult) {
        self.result = self.stamp(result);
        self.state = RunState::Finished;
        self.finished_at = Some(now_rfc3339());
    }

    /// `result` carrying this record's run id, request id and workflow.
    pub fn stamp(&self, result: RunResult) -> RunResult {
        result.with_ids(Some(self.run_id.clone()), self.request_id.clone(), self.workflow.clone())
    }

    pub fn owner(&self) -> Owner {
        Owner { pid: self.pid, pid_start: self.pid_start, host: self.host.clone() }
    }
}

/// The content of a claim file: which run holds the attempt, for which inputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub schema: String,
    pub namespace: String,
    pub ledger_key: String,
    pub run_id: String,
    pub workflow: String,
    pub fingerprint: String,
    pub attempt: u32,
    pub pid: u32,
    pub pid_start: Option<u64>,
    pub host: String,
    pub claimed_at: String,
}

impl Claim {
    pub fn owner(&self) -> Owner {
        Owner { pid: self.pid, pid_start: self.pid_start, host: self.host.clone() }
    }

    /// Stands in for a claim file whose content a power cut tore (a claim made from a spare
    /// reaches the disk with the kernel's writeback, after it is won): its attempt may have run, and nothing else about it is known but its run
    /// id, which comes from its name. It has no fingerprint and no live owner: its run's
    /// record decides, or every reader settles it as the same interrupted run.
    fn torn(ledger_key: String, run_id: String, attempt: u32) -> Self {
        Claim {
            schema: CLAIM_SCHEMA.into(),
            namespace: LEDGER_NAMESPACE.into(),
            run_id,
            ledger_key,
            workflow: String::new(),
            fingerprint: String::new(),
            attempt,
            // No process has pid 0: the owner is provably gone.
            pid: 0,
            pid_start: None,
            host: hostname(),
            claimed_at: String::new(),
        }
    }

    /// True for the stand-in of a torn claim: its inputs are unknown.
    pub fn is_torn(&self) -> bool {
        self.fingerprint.is_empty()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RequestSummary {
    schema: String,
    fingerprint: String,
    workflow: String,
    attempts: Vec<String>,
}

/// What claiming an attempt came to.
pub enum ClaimOutcome {
    /// This call holds the attempt and must run it, once the claim is durable (`ClaimFlush`)
    /// before anything that has an effect.
    Won(ClaimFlush),
    /// Another call holds it; here is its claim.
    Lost(Claim),
}

/// The runs directory of one server (and of every server process that shares it).
#[derive(Clone)]
pub struct RunsDir {
    root: PathBuf,
    /// Read (or made, and flushed) on first use: a server that only lists and reads never
    /// waits for it, and a fresh directory's first flushes are slow.
    key: Arc<OnceLock<[u8; 32]>>,
    spares: Arc<Spares>,
}

/// Empty temp files made ahead of need, in a quiet moment (`RunsDir::want_spares`) rather than
/// on a run's way to its answer: creating a file costs tens of microseconds on a disk where
/// many were deleted lately. A claim made from a spare claim file, whose inode is flushed
/// already, is durable once its directory is flushed: one flush instead of two.
struct Spares {
    /// The runs dir's `openadapt-agent/`.
    root: PathBuf,
    /// In `claims/`, flushed.
    claims: Mutex<Vec<tempfile::NamedTempFile>>,
    /// In `runs/`, for final records, whose own flush covers them.
    records: Mutex<Vec<tempfile::NamedTempFile>>,
    /// In `requests/`, for request summaries.
    summaries: Mutex<Vec<tempfile::NamedTempFile>>,
}

/// How many spares of each kind a process keeps ready.
const SPARES: usize = 2;
/// How long the ledger must have had nothing to flush before spares are made: long enough for
/// a client's next call (a repeat, a get_run) not to meet them on the disk.
const SPARES_AFTER_QUIET: Duration = Duration::from_millis(3);

impl Spares {
    fn take(pool: &Mutex<Vec<tempfile::NamedTempFile>>) -> Option<tempfile::NamedTempFile> {
        pool.lock().unwrap_or_else(PoisonError::into_inner).pop()
    }

    fn new(root: PathBuf) -> Self {
        Spares { root, claims: Mutex::default(), records: Mutex::default(), summaries: Mutex::default() }
    }

    fn make(&self) -> io::Result<()> {
        Spares::fill(&self.claims, &self.root.join("claims"), |dir| {
            let spare = new_claim_file(dir)?;
            spare.as_file().sync_all()?;
            Ok(spare)
        })?;
        Spares::fill(&self.records, &self.root.join("runs"), new_temp_file)?;
        Spares::fill(&self.summaries, &self.root.join("requests"), new_temp_file)
    }

    /// Tops `pool` up with files `make` creates in `dir`.
    fn fill(
        pool: &Mutex<Vec<tempfile::NamedTempFile>>,
        dir: &Path,
        make: impl Fn(&Path) -> io::Result<tempfile::NamedTempFile>,
    ) -> io::Result<()> {
        while pool.lock().unwrap_or_else(PoisonError::into_inner).len() < SPARES {
            let spare = make(dir)?;
            pool.lock().unwrap_or_else(PoisonError::into_inner).push(spare);
        }
        Ok(())
    }
}

impl RunsDir {
    /// Opens `<runs_dir>/openadapt-agent`, creating the layout; the fingerprint key is read
    /// or made by the first fingerprint.
    pub fn open(runs_dir: &Path) -> io::Result<Self> {
        let root = runs_dir.join("openadapt-agent");
        for dir in [&root, &root.join("claims"), &root.join("requests"), &root.join("runs")] {
            private_dir(dir)?;
        }
        let spares = Arc::new(Spares::new(root.clone()));
        Ok(RunsDir { root, key: Arc::default(), spares })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// HMAC-SHA256 of a canonical JSON document, keyed by this directory's key, as hex.
    /// Blocking the first time (it may create and flush the key).
    pub fn fingerprint(&self, canonical: &str) -> io::Result<String> {
        Ok(keyed_fingerprint(self.key()?, canonical))
    }

    fn key(&self) -> io::Result<&[u8; 32]> {
        match self.key.get() {
            Some(key) => Ok(key),
            // Racing callers all end up with the one key published on disk.
            None => {
                let loaded = load_or_create_key(&self.root.join("fingerprint.key"))?;
                Ok(self.key.get_or_init(|| loaded))
            }
        }
    }

    /// The run id of the attempt claimed as `ledger_key` (`<request key>:<attempt>`): `run-`
    /// and 24 hex of a keyed hash of it. Every process sharing the directory names the attempt
    /// alike, and the id gives away nothing of the request id.
    pub fn claim_run_id(&self, ledger_key: &str) -> io::Result<String> {
        let digest = keyed_fingerprint(self.key()?, &format!("run-id:{ledger_key}"));
        Ok(format!("run-{}", &digest[..24]))
    }

    /// The fingerprint, if the key is loaded already (which takes no file access).
    pub fn loaded_fingerprint(&self, canonical: &str) -> Option<String> {
        self.key.get().map(|key| keyed_fingerprint(key, canonical))
    }

    /// `<first 40 hex of sha256(request_id)>`, the request's name on disk.
    pub fn request_key(request_id: &str) -> String {
        hex::encode(Sha256::digest(request_id.as_bytes()))[..40].to_string()
    }

    fn claim_path(&self, request_key: &str, attempt: u32) -> PathBuf {
        self.root.join("claims").join(format!("{request_key}:{attempt}"))
    }

    fn run_path(&self, run_id: &str) -> PathBuf {
        self.root.join("runs").join(format!("{run_id}.json"))
    }

    /// The request's claims in attempt order, stopping at the first attempt never claimed.
    pub fn claims(&self, request_key: &str) -> io::Result<Vec<Claim>> {
        let mut out = Vec::new();
        for attempt in 1..=MAX_ATTEMPTS {
            match self.read_claim(request_key, attempt)? {
                Some(c) => out.push(c),
                None => break,
            }
        }
        Ok(out)
    }

    fn read_claim(&self, request_key: &str, attempt: u32) -> io::Result<Option<Claim>> {
        let bytes = match fs::read(self.claim_path(request_key, attempt)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
            Ok(bytes) => bytes,
        };
        let ledger_key = format!("{request_key}:{attempt}");
        match serde_json::from_slice::<Claim>(&bytes) {
            // Only this attempt's own claim counts: a torn file may hold stale bytes.
            Ok(claim) if claim.ledger_key == ledger_key && claim.attempt == attempt => Ok(Some(claim)),
            _ => {
                tracing::warn!("a claim does not parse; its attempt reads as interrupted");
                let run_id = self.claim_run_id(&ledger_key)?;
                Ok(Some(Claim::torn(ledger_key, run_id, attempt)))
            }
        }
    }

    /// Claims `claim.attempt` of `request_key`. The claim is written whole to a private temp
    /// file, then renamed into place without replacing: that rename is the exclusive create,
    /// so no process ever sees a claim half-written, and it decides who won. The winner's
    /// claim exists durably once its `ClaimFlush` is done: made from a spare (whose inode is
    /// flushed already), by a directory flush, which can go on while the attempt gets ready;
    /// otherwise by flushing the file and the directory together before this returns. A
    /// spare's content is flushed later, so a power cut can tear it; the claim then reads as
    /// an interrupted attempt under the same run id (`claim_run_id`), and its run's record, if
    /// any, decides.
    pub fn claim(&self, request_key: &str, claim: &Claim) -> io::Result<ClaimOutcome> {
        let path = self.claim_path(request_key, claim.attempt);
        let dir = path.parent().expect("claims dir");
        let bytes = serde_json::to_vec(claim)?;
        let persisted = match Spares::take(&self.spares.claims) {
            // Its inode is on disk already: only the directory is left to flush.
            Some(mut spare) => {
                spare.write_all(&bytes)?;
                match spare.persist_noclobber(&path) {
                    Ok(_) => Ok(ClaimFlush::pending(Flush::when_waited(File::open(dir)?, true))),
                    Err(e) => Err(e),
                }
            }
            None => {
                let mut tmp = new_claim_file(dir)?;
                tmp.write_all(&bytes)?;
                persist_durably(tmp, dir, |tmp| tmp.persist_noclobber(&path))?.map(|()| ClaimFlush::done())
            }
        };
        match persisted {
            Ok(flush) => Ok(ClaimOutcome::Won(flush)),
            // The temp file is removed as the error drops.
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => match self.read_claim(request_key, claim.attempt)? {
                Some(winner) => Ok(ClaimOutcome::Lost(winner)),
                None => Err(io::Error::other("a claim vanished")),
            },
            Err(e) => Err(e.error),
        }
    }

    /// Tops up this process's spare temp files (`Spares`): empty private files, in `claims/`
    /// with their inodes flushed, in `runs/` and in `requests/`. Blocking. Spares are removed when the
    /// process ends (a killed process leaves its own behind, as it would a temp file).
    pub fn make_spares(&self) -> io::Result<()> {
        self.spares.make()
    }

    /// Has the ledger's helper thread top up the spares once nothing has been flushed for
    /// `SPARES_AFTER_QUIET`. Returns at once.
    pub fn want_spares(&self) {
        if let Some(helper) = ledger_helper() {
            let _ = helper.send(LedgerJob::Spares(Arc::downgrade(&self.spares)));
        }
    }

    /// Rewrites the derived request summary from the claims (last writer wins; all writers
    /// derive it from the same claims).
    pub fn write_request_summary(&self, request_key: &str, claims: &[Claim]) -> io::Result<()> {
        let Some(first) = claims.first() else { return Ok(()) };
        let summary = RequestSummary {
            schema: REQUEST_SCHEMA.into(),
            fingerprint: first.fingerprint.clone(),
            workflow: first.workflow.clone(),
            attempts: claims.iter().map(|c| c.run_id.clone()).collect(),
        };
        let path = self.root.join("requests").join(format!("{request_key}.json"));
        write_atomic(&path, &serde_json::to_vec_pretty(&summary)?, false, Spares::take(&self.spares.summaries))
    }

    /// Reads a run record. `Ok(None)` when there is none, or when what is there does not
    /// parse: a final record is flushed after it is renamed into place, so a power cut can
    /// leave it torn, and its claim then decides (an attempt without a record is interrupted).
    pub fn read_run(&self, run_id: &str) -> io::Result<Option<RunRecord>> {
        match fs::read(self.run_path(run_id)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(record) => Ok(Some(record)),
                Err(e) => {
                    tracing::warn!(error = %e, "a run record does not parse; reading it as missing");
                    Ok(None)
                }
            },
        }
    }

    /// Writes a run record atomically. `durable` adds the fsyncs a final result needs; a
    /// `running` record is only a hint (its claim is the durable part).
    pub fn write_run(&self, record: &RunRecord, durable: bool) -> io::Result<()> {
        let spare = if durable { Spares::take(&self.spares.records) } else { None };
        write_atomic(&self.run_path(&record.run_id), &serde_json::to_vec_pretty(record)?, durable, spare)
    }
}

fn keyed_fingerprint(key: &[u8; 32], canonical: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
    mac.update(canonical.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

fn load_or_create_key(path: &Path) -> io::Result<[u8; 32]> {
    let read = |path: &Path| -> io::Result<[u8; 32]> {
        let mut key = [0u8; 32];
        File::open(path)?.read_exact(&mut key)?;
        Ok(key)
    };
    match read(path) {
        Ok(key) => return Ok(key),
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| io::Error::other(e.to_string()))?;
    // Publish whole or not at all: write a private temp file, then hard-link it into place,
    // which fails if another process published first; then everyone reads the winner's key.
    let dir = path.parent().expect("key dir");
    let mut tmp = tempfile::Builder::new().permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)?;
    tmp.write_all(&key)?;
    tmp.as_file().sync_all()?;
    match fs::hard_link(tmp.path(), path) {
        Ok(()) => File::open(dir)?.sync_all()?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    read(path)
}

use std::os::unix::fs::PermissionsExt;

fn new_claim_file(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(".claim-").permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)
}

fn new_temp_file(dir: &Path) -> io::Result<tempfile::NamedTempFile> {
    tempfile::Builder::new().prefix(".tmp-").permissions(fs::Permissions::from_mode(0o600)).tempfile_in(dir)
}

/// temp file (`spare`, or a new one) + rename (+ file and directory fsync): readers see the old
/// or the new file whole.
fn write_atomic(path: &Path, bytes: &[u8], durable: bool, spare: Option<tempfile::NamedTempFile>) -> io::Result<()> {
    let dir = path.parent().expect("record dir");
    let mut tmp = match spare {
        Some(spare) => spare,
        None => new_temp_file(dir)?,
    };
    tmp.write_all(bytes)?;
    if !durable {
        return tmp.persist(path).map(drop).map_err(|e| e.error);
    }
    persist_durably(tmp, dir, |tmp| tmp.persist(path))?.map_err(|e| e.error)
}

/// Renames `tmp` into place in `dir` with `persist`, then flushes its data (`Flush`) and `dir`
/// together: durable when this returns the persist's `Ok`. A persist that failed is handed back
/// as it is, for the caller to read, and nothing is flushed for it.
fn persist_durably(
    tmp: tempfile::NamedTempFile,
    dir: &Path,
    persist: impl FnOnce(tempfile::NamedTempFile) -> Result<File, tempfile::PersistError>,
) -> io::Result<Result<(), tempfile::PersistError>> {
    let file = match persist(tmp) {
        Ok(file) => file,
        Err(e) => return Ok(Err(e)),
    };
    let data = Flush::of(file, false);
    let dir_synced = File::open(dir).and_then(|d| d.sync_all());
    data.wait().and(dir_synced)?;
    Ok(Ok(()))
}

/// A won claim on its way to disk: flushed by the first `wait`, which the gate's thread calls
/// while the attempt gets ready on a thread of its own (starts its engine, reads and navigates
/// the app). The attempt waits for it before anything with an effect: a power cut before the
/// claim is durable may lose it, and then nothing was written, so the attempt may run again.
pub struct ClaimFlush {
    flush: Mutex<Option<Flush>>,
    done: OnceLock<Result<(), (io::ErrorKind, String)>>,
}

/// How long a wait for a claim's flush that another thread is doing stays awake.
const AWAKE_FOR_FLUSH: Duration = Duration::from_micros(300);

impl ClaimFlush {
    fn pending(flush: Flush) -> Self {
        ClaimFlush { flush: Mutex::new(Some(flush)), done: OnceLock::new() }
    }

    fn done() -> Self {
        ClaimFlush { flush: Mutex::new(None), done: OnceLock::from(Ok(())) }
    }

    /// Gives up the CPU until another thread has begun this flush, for at most `max`. The
    /// attempt's thread calls it first: started by the gate, it may have been run on the gate's
    /// CPU ahead of the gate, and the flush would then wait out the attempt's getting ready. It
    /// yields rather than sleeps, so the gate needs to wake nobody to go on.
    pub fn yield_to_flush(&self, max: Duration) {
        yield_while(max, || !self.begun());
    }

    /// True once a waiter has taken the flush to do it (or there was none to do).
    fn begun(&self) -> bool {
        self.flush.lock().unwrap_or_else(PoisonError::into_inner).is_none()
    }

    /// Makes the claim durable, or waits for the thread doing it; the same answer every time.
    /// The wait starts awake, yielding, for up to `AWAKE_FOR_FLUSH`: the attempt is usually
    /// ready shortly before its claim's flush ends, and an idle CPU here takes about as long
    /// to wake up as the rest of the flush.
    pub fn wait(&self) -> io::Result<()> {
        yield_while(AWAKE_FOR_FLUSH, || self.begun() && self.done.get().is_none());
        let done = self.done.get_or_init(|| {
            let flush = self.flush.lock().unwrap_or_else(PoisonError::into_inner).take();
            flush.map_or(Ok(()), |flush| flush.wait().map_err(|e| (e.kind(), e.to_string())))
        });
        done.clone().map_err(|(kind, text)| io::Error::new(kind, text))
    }
}

/// Yields the CPU while `busy` holds, for at most `max`.
fn yield_while(max: Duration, busy: impl Fn() -> bool) {
    let until = Instant::now() + max;
    while busy() && Instant::now() < until {
        std::thread::yield_now();
    }
}

/// A file or directory to flush, by whichever thread comes to it first. `of` hands it to the
/// ledger's helper thread at once: a renamed file's data, while the caller flushes its
/// directory, so the two flushes overlap on the device instead of queueing one behind the other
/// (a power cut before both are done can leave the renamed file torn, which its readers allow
/// for). The caller does it when it comes to wait if the helper is busy with other callers'
/// files, so a caller never queues behind another's flush. `when_waited` leaves it to whoever
/// waits first (`ClaimFlush`).
struct Flush(Arc<FlushJob>);

struct FlushJob {
    file: File,
    /// `fsync` rather than `fdatasync`: for a directory, whose entries are what counts.
    all: bool,
    state: Mutex<FlushState>,
    finished: Condvar,
}

enum FlushState {
    Waiting,
    Running,
    Done(io::Result<()>),
}

impl FlushJob {
    /// Flushes, unless another thread has taken the job already.
    fn take_and_run(&self) {
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if !matches!(*state, FlushState::Waiting) {
                return;
            }
            *state = FlushState::Running;
        }
        let flushed = if self.all { self.file.sync_all() } else { self.file.sync_data() };
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = FlushState::Done(flushed);
        self.finished.notify_all();
    }
}

impl Flush {
    /// Starts flushing `file` on the helper thread: its data, or everything about it with `all`
    /// (a directory: the entries it holds).
    fn of(file: File, all: bool) -> Self {
        let flush = Flush::when_waited(file, all);
        // Without a helper the caller flushes when it comes to wait.
        if let Some(helper) = ledger_helper() {
            let _ = helper.send(LedgerJob::Flush(flush.0.clone()));
        }
        flush
    }

    /// A flush of `file` that the first thread to `wait` for it does.
    fn when_waited(file: File, all: bool) -> Self {
        Flush(Arc::new(FlushJob { file, all, state: Mutex::new(FlushState::Waiting), finished: Condvar::new() }))
    }

    fn wait(self) -> io::Result<()> {
        let job = self.0;
        job.take_and_run();
        let state = job.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut state = job
            .finished
            .wait_while(state, |s| !matches!(s, FlushState::Done(_)))
            .unwrap_or_else(PoisonError::into_inner);
        match std::mem::replace(&mut *state, FlushState::Running) {
            FlushState::Done(flushed) => flushed,
            _ => unreachable!("waited for Done"),
        }
    }
}

/// Work for the ledger's helper thread.
enum LedgerJob {
    /// Flush a file or a directory (`Flush`).
    Flush(Arc<FlushJob>),
    /// Top up a runs directory's spares, once the ledger is quiet. Weak: spares of a runs
    /// directory nobody holds any more are not made, and its own are not kept alive.
    Spares(Weak<Spares>),
}

/// The process's ledger helper thread, started on first use: a thread of its own rather than
/// one from tokio's blocking pool, whose hand-off costs an extra lock round between the threads.
fn ledger_helper() -> Option<&'static mpsc::Sender<LedgerJob>> {
    static HELPER: OnceLock<Option<mpsc::Sender<LedgerJob>>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel();
            std::thread::Builder::new().name("ledger-flush".into()).spawn(move || help_the_ledger(&queue)).ok().map(|_| jobs)
        })
        .as_ref()
}

fn help_the_ledger(queue: &mpsc::Receiver<LedgerJob>) {
    let mut wanted: Vec<Weak<Spares>> = Vec::new();
    loop {
        let job = if wanted.is_empty() {
            queue.recv().ok()
        } else {
            match queue.recv_timeout(SPARES_AFTER_QUIET) {
                Ok(job) => Some(job),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    for spares in wanted.drain(..) {
                        let Some(spares) = spares.upgrade() else { continue };
                        if let Err(e) = spares.make() {
                            tracing::warn!(error = %e, "could not make spare temp files");
                        }
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            }
        };
        match job {
            None => return,
            Some(LedgerJob::Flush(job)) => job.take_and_run(),
            Some(LedgerJob::Spares(spares)) => {
                if !wanted.iter().any(|w| w.ptr_eq(&spares)) {
                    wanted.push(spares);
                }
            }
        }
    }
}

/// Field 22 of `/proc/<pid>/stat`: the start time, which tells a live owner from a reused pid.
fn process_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; fields after it follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// Now, as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_millis()
    )
}

/// `run-` + 24 random hex.
pub fn new_run_id() -> String {
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).expect("the OS random source");
    format!("run-{}", hex::encode(bytes))
}

/// JSON with object keys sorted at every level and no whitespace: the fingerprint's input.
pub fn canonical_json(value: &serde_json::Value) -> String {
    fn write(v: &serde_json::Value, out: &mut String) {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&map[k], out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let v = serde_json::json!({"b": 1, "a": {"d": [2, {"z": 0, "y": 1}], "c": "x"}});
        assert_eq!(canonical_json(&v), r#"{"a":{"c":"x","d":[2,{"y":1,"z":0}]},"b":1}"#);
    }

    #[test]
    fn rfc3339_has_the_expected_shape() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 24, "{t}");
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }

    #[test]
    fn owner_of_this_process_is_alive_and_a_dead_pid_is_gone() {
        assert!(!Owner::current().is_gone());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let gone = Owner { pid, pid_start: Some(1), host: hostname() };
        assert!(gone.is_gone());
    }

    #[test]
    fn the_key_is_created_once_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunsDir::open(tmp.path()).unwrap();
        let b = RunsDir::open(tmp.path()).unwrap();
        assert_eq!(a.fingerprint("x").unwrap(), b.fingerprint("x").unwrap());
        let mode = fs::metadata(tmp.path().join("openadapt-agent/fingerprint.key")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mode = fs::metadata(tmp.path().join("openadapt-agent/runs")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_torn_claim_is_an_interrupted_attempt_and_a_torn_record_is_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = RunsDir::open(tmp.path()).unwrap();
        // What a power cut can leave of a claim or record flushed after its rename.
        fs::write(runs.root().join("claims/k:1"), b"").unwrap();
        fs::write(runs.root().join("runs/run-torn.json"), b"{\"schema\": \"openadapt-agen").unwrap();
        let claims = runs.claims("k").unwrap();
        assert_eq!(claims.len(), 1);
        let torn = &claims[0];
        assert!(torn.is_torn());
        assert!(torn.owner().is_gone(), "nobody holds a torn claim");
        assert_eq!((torn.attempt, torn.ledger_key.as_str()), (1, "k:1"));
        assert_eq!(torn.run_id, runs.claim_run_id("k:1").unwrap(), "the run it was claimed for");
        assert!(torn.run_id.starts_with("run-") && torn.run_id.len() == 28, "{}", torn.run_id);
        // Stale bytes of another claim are no claim of this attempt's either.
        fs::write(runs.root().join("claims/k:2"), fs::read(runs.root().join("claims/k:1")).unwrap()).unwrap();
        fs::write(
            runs.root().join("claims/j:1"),
            serde_json::to_vec(&Claim { ledger_key: "k:1".into(), ..test_claim("run-x") }).unwrap(),
        )
        .unwrap();
        assert!(runs.claims("j").unwrap()[0].is_torn());
        assert_eq!(runs.claims("j").unwrap()[0].run_id, runs.claim_run_id("j:1").unwrap());
        assert_eq!(runs.read_run("run-torn").unwrap(), None);
    }

    #[test]
    fn a_writer_whose_file_the_flusher_has_not_come_to_flushes_it_itself() {
        // The job never reaches the flusher, as when it is busy with other files: the writer
        // must flush by itself rather than wait for it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let job = Arc::new(FlushJob {
                file: tempfile::tempfile().unwrap(),
                all: false,
                state: Mutex::new(FlushState::Waiting),
                finished: Condvar::new(),
            });
            let _ = tx.send(Flush(job).wait().is_ok());
        });
        assert!(rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the flush finished"));
    }

    fn test_claim(run_id: &str) -> Claim {
        let owner = Owner::current();
        Claim {
            schema: CLAIM_SCHEMA.into(),
            namespace: LEDGER_NAMESPACE.into(),
            ledger_key: "k:1".into(),
            run_id: run_id.into(),
            workflow: "w".into(),
            fingerprint: "f".into(),
            attempt: 1,
            pid: owner.pid,
            pid_start: owner.pid_start,
            host: owner.host,
            claimed_at: now_rfc3339(),
        }
    }

    /// Temp files (spares among them) in `sub` of the runs dir whose names start with `prefix`.
    fn temp_files(runs: &RunsDir, sub: &str, prefix: &str) -> usize {
        fs::read_dir(runs.root().join(sub))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(prefix))
            .count()
    }

    /// The names in `claims/` that are not claims: temp files and spares.
    fn temp_claim_files(runs: &RunsDir) -> usize {
        temp_files(runs, "claims", ".claim-")
    }

    #[test]
    fn a_claim_is_won_once() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = RunsDir::open(tmp.path()).unwrap();
        assert!(matches!(runs.claim("k", &test_claim("run-a")).unwrap(), ClaimOutcome::Won(_)));
        match runs.claim("k", &test_claim("run-b")).unwrap() {
            ClaimOutcome::Lost(winner) => assert_eq!(winner.run_id, "run-a"),
            ClaimOutcome::Won(_) => panic!("claimed twice"),
        }
        assert_eq!(runs.claims("k").unwrap().len(), 1);
        assert_eq!(temp_claim_files(&runs), 0);
    }

    #[test]
    fn a_claim_from_a_spare_is_won_once_private_and_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = RunsDir::open(tmp.path()).unwrap();
        runs.make_spares().unwrap();
        assert_eq!(temp_claim_files(&runs), SPARES);
        match runs.claim("k", &test_claim("run-a")).unwrap() {
            // Its directory's flush was started; every wait has the same answer.
            ClaimOutcome::Won(flush) => assert!(flush.wait().is_ok() && flush.wait().is_ok()),
            ClaimOutcome::Lost(_) => panic!("lost an uncontested claim"),
        }
        assert_eq!(temp_claim_files(&runs), SPARES - 1, "the claim took a spare");
        let path = runs.root().join("claims/k:1");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let read = runs.claims("k").unwrap();
        assert_eq!(read, vec![Claim { claimed_at: read[0].claimed_at.clone(), ..test_claim("run-a") }]);
        // A lost race spends its spare and reads back the winner.
        match runs.claim("k", &test_claim("run-b")).unwrap() {
            ClaimOutcome::Lost(winner) => assert_eq!(winner.run_id, "run-a"),
            ClaimOutcome::Won(_) => panic!("claimed twice"),
        }
        assert_eq!(temp_claim_files(&runs), SPARES - 2);
        runs.make_spares().unwrap();
        assert_eq!(temp_claim_files(&runs), SPARES);
        drop(runs);
        let runs = RunsDir::open(tmp.path()).unwrap();
        assert_eq!(temp_claim_files(&runs), 0, "spares go with the process");
    }

    #[test]
    fn a_claims_flush_is_done_once_by_the_first_waiter_and_every_waiter_gets_its_answer() {
        // Two threads, as the gate and its attempt: whichever comes first flushes, the other
        // yields until the flush has begun and waits for it.
        let both = |flush: ClaimFlush| {
            let flush = Arc::new(flush);
            let attempt = {
                let flush = flush.clone();
                std::thread::spawn(move || {
                    flush.yield_to_flush(Duration::from_millis(1));
                    flush.wait().map_err(|e| e.kind())
                })
            };
            let gate = flush.wait().map_err(|e| e.kind());
            (gate, attempt.join().unwrap())
        };
        let tmp = tempfile::tempdir().unwrap();
        let dir = File::open(tmp.path()).unwrap();
        assert_eq!(both(ClaimFlush::pending(Flush::when_waited(dir, true))), (Ok(()), Ok(())));
        // A flush that fails (a pipe can't be fsync'd) fails alike for both: the attempt stops
        // before any effect.
        let (_reader, writer) = std::io::pipe().unwrap();
        let pipe = File::from(std::os::fd::OwnedFd::from(writer));
        let (gate, attempt) = both(ClaimFlush::pending(Flush::when_waited(pipe, true)));
        assert!(gate.is_err(), "fsync of a pipe succeeded");
        assert_eq!(gate, attempt);
        // A claim that needed no pending flush (made durable before it was won) answers at once.
        assert_eq!(both(ClaimFlush::done()), (Ok(()), Ok(())));
    }

    #[test]
    fn spares_are_made_in_a_quiet_moment_and_go_with_their_runs_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = RunsDir::open(tmp.path()).unwrap();
        runs.want_spares();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while temp_claim_files(&runs) < SPARES {
            assert!(std::time::Instant::now() < deadline, "no spares were made");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // Asked for, then dropped: whether or not the helper came to them, none are left.
        let other = tempfile::tempdir().unwrap();
        let gone = RunsDir::open(other.path()).unwrap();
        gone.want_spares();
        drop(gone);
        std::thread::sleep(SPARES_AFTER_QUIET * 20);
        assert_eq!(temp_claim_files(&RunsDir::open(other.path()).unwrap()), 0);
    }

    #[test]
    fn a_final_record_is_written_from_a_spare_whole_and_private() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = RunsDir::open(tmp.path()).unwrap();
        let temp_records = || temp_files(&runs, "runs", ".tmp-");
        runs.make_spares().unwrap();
        assert_eq!(temp_records(), SPARES);
        let owner = Owner::current();
        let record = RunRecord {
            schema: RUN_SCHEMA.into(),
            run_id: "run-0123456789abcdef01234567".into(),
            request_id: Some("r".into()),
            workflow: Some("w".into()),
            mode: "sandbox".into(),
            state: RunState::Finished,
            started_at: now_rfc3339(),
            finished_at: Some(now_rfc3339()),
            pid: owner.pid,
            pid_start: owner.pid_start,
            host: owner.host,
            attempt: Some(1),
            ledger_key: Some("k:1".into()),
            fingerprint: Some("f".into()),
            result: RunResult::new(crate::contract::Reason::SavedAndChecked, crate::contract::Mode::Sandbox),
        };
        runs.write_run(&record, true).unwrap();
        assert_eq!(temp_records(), SPARES - 1, "the record took a spare");
        let temp_summaries = || temp_files(&runs, "requests", ".tmp-");
        assert_eq!(temp_summaries(), SPARES);
        runs.write_request_summary("k", &[test_claim(&record.run_id)]).unwrap();
        assert_eq!(temp_summaries(), SPARES - 1, "the request summary took a spare");
        let summary: serde_json::Value = serde_json::from_slice(&fs::read(runs.root().join("requests/k.json")).unwrap()).unwrap();
        assert_eq!(summary["attempts"], serde_json::json!([record.run_id]));
        assert_eq!(runs.read_run(&record.run_id).unwrap(), Some(record.clone()));
        let path = runs.root().join(format!("runs/{}.json", record.run_id));
        assert_eq!(fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
        // A running record is only a hint: it never takes a spare.
        runs.write_run(&RunRecord { run_id: "run-ffffffffffffffffffffffff".into(), ..record }, false).unwrap();
        assert_eq!(temp_records(), SPARES - 1);
    }

    #[test]
    fn a_claims_run_id_is_keyed_from_its_name() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (runs_a, runs_b) = (RunsDir::open(a.path()).unwrap(), RunsDir::open(b.path()).unwrap());
        let id = runs_a.claim_run_id("k:1").unwrap();
        assert!(id.starts_with("run-") && id.len() == 28 && id[4..].bytes().all(|c| c.is_ascii_hexdigit()), "{id}");
        assert_eq!(RunsDir::open(a.path()).unwrap().claim_run_id("k:1").unwrap(), id, "alike in every process");
        assert_ne!(runs_a.claim_run_id("k:2").unwrap(), id);
        assert_ne!(runs_b.claim_run_id("k:1").unwrap(), id, "another directory, another key");
    }
}
