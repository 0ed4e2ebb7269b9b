//! Engine costs: `cargo bench -p openadapt-engines`. Figures go to the README.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use openadapt_engines::{Engines, EnginesConfig, FaultCase};
use std::time::Duration;

fn host(cache: &std::path::Path) -> Engines {
    Engines::new(EnginesConfig { cache_dir: Some(cache.to_path_buf()), ..Default::default() }).unwrap()
}

fn guard(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let guard = host(tmp.path()).identifier_guard().unwrap();
    // 1 KiB of clinic-like prose with one phone number in it.
    let mut text = String::new();
    while text.len() < 1000 {
        text.push_str("Patient seen for follow-up; vitals stable, call back at 555-123-4567 if worse. ");
    }
    text.truncate(1024);
    c.bench_function("identifier_guard/fresh_instance_scan_1KiB", |b| b.iter(|| guard.scan(&text).unwrap()));
}

fn loading(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    host(&cache).preload().unwrap();
    c.bench_function("load/all_defaults_from_cache", |b| {
        b.iter_batched(|| host(&cache), |engines| engines.preload().unwrap(), BatchSize::PerIteration)
    });
    let mut g = c.benchmark_group("load");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("all_defaults_uncached_compile", |b| {
        b.iter_batched(
            || (tempfile::tempdir().unwrap(), ()),
            |(dir, ())| {
                host(&dir.path().join("cache")).preload().unwrap();
                dir
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    c.bench_function("load/engine_host_new", |b| b.iter(|| host(&cache)));
}

fn mockmed(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let mockmed = host(tmp.path()).mockmed().unwrap();
    let mut n = 0u64;
    c.bench_function("mockmed/full_session_open_to_read_back", |b| {
        b.iter_batched(
            || {
                let store = tempfile::tempdir_in(tmp.path()).unwrap();
                n += 1;
                (store, format!("bench-{n}"))
            },
            |(store, session)| {
                let mut s = mockmed.open(store.path(), FaultCase::Normal, &session).unwrap();
                assert!(s.reachable().unwrap());
                let r = s.open_first_referral().unwrap().unwrap();
                assert!(s.confirm_right_record().unwrap().unwrap());
                s.enter_note("Synthetic triage note").unwrap().unwrap();
                s.save().unwrap().unwrap();
                s.read_banner().unwrap().unwrap();
                assert!(s.note_saved(&r.record_id, "Synthetic triage note").unwrap().unwrap());
                store
            },
            BatchSize::PerIteration,
        )
    });
}

criterion_group!(benches, guard, loading, mockmed);
criterion_main!(benches);
