//! One wasmtime `Engine` per process: pooling allocation behind a bound, epoch deadlines,
//! a memory cap per store, WASI with nothing granted but the preopens a world documents.

use crate::cache::{CacheUse, CompileCache};
use crate::error::EngineError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// How often the epoch advances; deadlines are counted in these ticks.
const TICK: Duration = Duration::from_millis(5);
const POOL_MEMORY_MAX: usize = 256 << 20;
/// How much of a freed memory or table stays resident for the next store; more is dropped.
const KEEP_RESIDENT: usize = 2 << 20;
/// The epoch ticker stops after this many ticks without a live store, until the next one.
const IDLE_TICKS: u32 = 200;

/// Settings of the engine host. The defaults suit the MCP server.
#[derive(Clone, Debug)]
pub struct EnginesConfig {
    /// Where precompiled components are kept; `None` compiles on every start.
    pub cache_dir: Option<PathBuf>,
    /// The longest one engine call may run before it is stopped.
    pub call_deadline: Duration,
    /// The most linear memory one store may hold.
    pub memory_limit: usize,
    /// Stores alive at once; further calls wait for a slot.
    pub max_concurrent: u32,
    /// How long a call waits for a slot before giving up.
    pub slot_wait: Duration,
}

impl Default for EnginesConfig {
    fn default() -> Self {
        EnginesConfig {
            cache_dir: None,
            call_deadline: Duration::from_secs(2),
            memory_limit: 64 << 20,
            max_concurrent: 16,
            slot_wait: Duration::from_secs(30),
        }
    }
}

pub(crate) struct Runtime {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreState>,
    cache: Option<CompileCache>,
    slots: Slots,
    config: EnginesConfig,
}

impl Runtime {
    pub(crate) fn new(config: EnginesConfig) -> Result<Arc<Self>, EngineError> {
        let mut pool = PoolingAllocationConfig::new();
        let n = config.max_concurrent.max(1);
        // A std guest component holds a few core instances (program, WASI shims), one memory
        // and a few tables; size the pool for every slot with headroom.
        pool.total_component_instances(n * 2)
            .total_core_instances(n * 12)
            .total_memories(n * 2)
            .total_tables(n * 8)
            .total_stacks(n * 2)
            .max_memory_size(POOL_MEMORY_MAX.max(config.memory_limit))
            .max_core_instances_per_component(16)
            .max_memories_per_component(4)
            .max_tables_per_component(16)
            // A freed slot is put back to its initial contents page by page, only where it was
            // written (PAGEMAP_SCAN, Linux 6.7+), instead of being dropped with madvise and
            // copied on write again by the next store: no page faults, no TLB shootdowns.
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(KEEP_RESIDENT)
            .pagemap_scan(Enabled::Auto);

        let mut wasm = Config::new();
        wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true);
        let engine = Engine::new(&wasm).map_err(EngineError::setup)?;
        let slots = Slots::new(n as usize);
        spawn_epoch_ticker(&engine, slots.clone());

        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).map_err(EngineError::setup)?;

        let cache = config.cache_dir.as_deref().and_then(|dir| CompileCache::open(dir, &engine));
        Ok(Arc::new(Runtime { engine, linker, cache, slots, config }))
    }

    pub(crate) fn compile(&self, wasm: &[u8]) -> Result<(Component, CacheUse), EngineError> {
        match &self.cache {
            Some(cache) => cache.load(&self.engine, wasm),
            None => Component::new(&self.engine, wasm)
                .map(|c| (c, CacheUse::Compiled))
                .map_err(|e| EngineError::Compile { detail: format!("{e:#}") }),
        }
    }

    /// A fresh store for one call (or one sandbox session), holding a pool slot until dropped.
    pub(crate) fn store(&self, grants: Grants<'_>) -> Result<Store<StoreState>, EngineError> {
        let slot = self.slots.acquire(self.config.slot_wait)?;
        let state = StoreState {
            wasi: grants.build()?,
            table: ResourceTable::new(),
            limits: Limits { memory_max: self.config.memory_limit, memory_denied: false },
            _slot: slot,
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_trap();
        self.arm_deadline(&mut store);
        Ok(store)
    }

    /// Restarts the per-call deadline; a session calls this before each step.
    pub(crate) fn arm_deadline(&self, store: &mut Store<StoreState>) {
        let ticks = self.config.call_deadline.as_nanos().div_ceil(TICK.as_nanos()).max(1) as u64;
        store.set_epoch_deadline(ticks);
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Lets a parked epoch ticker see that its engine may be gone.
        self.slots.close();
    }
}

/// The directory access a world documents. Everything else WASI could grant stays off.
pub(crate) enum Grants<'a> {
    Nothing,
    ReadOnlyDir { host: &'a Path, guest: &'static str },
    ReadWriteDir { host: &'a Path, guest: &'static str },
}

impl Grants<'_> {
    fn build(&self) -> Result<WasiCtx, EngineError> {
        let mut b = WasiCtxBuilder::new();
        // No env, args, stdio, network or name lookup: the builder starts with none of them
        // except the network switches, which are turned off explicitly.
        b.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .allow_blocking_current_thread(true)
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock);
        let dir = |b: &mut WasiCtxBuilder, host: &Path, guest: &str, perms| {
            b.preopened_dir(host, guest, perms)
                .map(|_| ())
                .map_err(|e| EngineError::setup(format!("cannot grant {guest}: {e}")))
        };
        match *self {
            Grants::Nothing => {}
            Grants::ReadOnlyDir { host, guest } => dir(&mut b, host, guest, FsPerms::ReadOnly)?,
            Grants::ReadWriteDir { host, guest } => dir(&mut b, host, guest, FsPerms::ReadWrite)?,
        }
        Ok(b.build())
    }
}

/// Time stands still inside an engine: nothing it computes may depend on when it runs.
struct FrozenClock;

impl wasmtime_wasi::HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: Limits,
    _slot: SlotGuard,
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A memory cap that remembers it said no, so the failure is reported as what it was.
struct Limits {
    memory_max: usize,
    memory_denied: bool,
}

impl wasmtime::ResourceLimiter for Limits {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_max {
            self.memory_denied = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// Maps a failed call to a typed error. A store that failed this way is never called again.
pub(crate) fn call_error(store: &Store<StoreState>, err: wasmtime::Error) -> EngineError {
    if store.data().limits.memory_denied {
        return EngineError::MemoryExceeded;
    }
    match err.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => EngineError::DeadlineExceeded,
        _ => EngineError::Trapped,
    }
}

/// Advances the epoch every tick while the engine lives and stores are about. After a second
/// with none it sleeps until a store is made, so an idle server does not wake 200 times a second.
fn spawn_epoch_ticker(engine: &Engine, slots: Slots) {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("engines-epoch".into())
        .spawn(move || {
            let mut idle = 0;
            loop {
                std::thread::sleep(TICK);
                let Some(engine) = weak.upgrade() else { break };
                engine.increment_epoch();
                drop(engine);
                idle = if slots.in_use() { 0 } else { idle + 1 };
                if idle >= IDLE_TICKS {
                    slots.wait_for_use();
                    idle = 0;
                }
            }
        })
        .expect("spawn the epoch ticker thread");
}

/// A counting semaphore in front of the pooling allocator: a full pool fails to instantiate,
/// a full set of slots makes callers wait.
#[derive(Clone)]
struct Slots(Arc<SlotState>);

struct SlotState {
    total: usize,
    free: Mutex<usize>,
    freed: Condvar,
    /// Signalled when a slot is taken, for the parked epoch ticker, or when the runtime goes.
    taken: Condvar,
    closed: AtomicBool,
}

pub(crate) struct SlotGuard(Arc<SlotState>);

impl Slots {
    fn new(n: usize) -> Self {
        Slots(Arc::new(SlotState { total: n, free: Mutex::new(n), freed: Condvar::new(), taken: Condvar::new(), closed: AtomicBool::new(false) }))
    }

    fn acquire(&self, wait: Duration) -> Result<SlotGuard, EngineError> {
        let state = &*self.0;
        let free = state.free.lock().unwrap_or_else(|p| p.into_inner());
        let (mut free, timeout) = state
            .freed
            .wait_timeout_while(free, wait, |free| *free == 0)
            .unwrap_or_else(|p| p.into_inner());
        if timeout.timed_out() && *free == 0 {
            return Err(EngineError::Busy);
        }
        if *free == state.total {
            state.taken.notify_all();
        }
        *free -= 1;
        Ok(SlotGuard(self.0.clone()))
    }

    fn in_use(&self) -> bool {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) < self.0.total
    }

    /// Blocks until some slot is taken or the runtime is dropped.
    fn wait_for_use(&self) {
        let state = &*self.0;
        let free = state.free.lock().unwrap_or_else(|p| p.into_inner());
        let idle = |free: &mut usize| *free == state.total && !state.closed.load(Ordering::Relaxed);
        drop(state.taken.wait_while(free, idle).unwrap_or_else(|p| p.into_inner()));
    }

    fn close(&self) {
        let _free = self.0.free.lock().unwrap_or_else(|p| p.into_inner());
        self.0.closed.store(true, Ordering::Relaxed);
        self.0.taken.notify_all();
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}
