//! 1,000 small ranged reads from one object, three ways: one after another, all at once
//! (one request each, concurrently), and coalesced (close ranges merged into few requests).
//!
//! Runs against the S3 test server when `SMDEBUG_TEST_S3_ENDPOINT` and
//! `SMDEBUG_TEST_S3_BUCKET` are set (as `cargo xtask bench` does), else against local disk;
//! it prints which. Benchmark IDs: `ranged_reads_1000/sequential`,
//! `ranged_reads_1000/concurrent`, `ranged_reads_1000/coalesced`.

use std::ops::Range;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use smdebug_storage::{
    get_ranges_with, testsuite, Location, ObjectStoreOptions, ReadOptions, Storage, StorageOptions,
};

const READS: u64 = 1000;
/// Like the records of an event file: small reads spread over a few MiB.
const READ_LEN: u64 = 200;
const STRIDE: u64 = 4096;

fn store() -> (tempfile::TempDir, Arc<dyn Storage>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let s3 = std::env::var("SMDEBUG_TEST_S3_ENDPOINT")
        .ok()
        .zip(std::env::var("SMDEBUG_TEST_S3_BUCKET").ok());
    let (location, options) = match s3 {
        Some((endpoint, bucket)) => {
            let location = format!("s3://{bucket}/storage-bench/{}", std::process::id());
            let options = StorageOptions {
                object_store: ObjectStoreOptions {
                    endpoint: Some(endpoint),
                    ..ObjectStoreOptions::default()
                },
                ..StorageOptions::default()
            };
            (location, options)
        }
        None => (
            dir.path().to_str().expect("utf-8 temp dir").to_owned(),
            StorageOptions::default(),
        ),
    };
    let store = Location::parse(&location)
        .and_then(|l| l.open_with(&options))
        .expect("open the benchmark store");
    (dir, store, location)
}

fn ranged_reads(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (_dir, store, location) = store();
    eprintln!("storage benchmark: {READS} ranged reads of {READ_LEN} bytes from {location}");
    let key = "events/000000000001/000000000001_worker_0.tfevents";
    let data = testsuite::pattern((READS * STRIDE) as usize, 9);
    runtime
        .block_on(store.put(key, data.clone()))
        .expect("put the benchmark object");
    let ranges: Vec<Range<u64>> = (0..READS)
        .map(|i| i * STRIDE + 17..i * STRIDE + 17 + READ_LEN)
        .collect();
    let check = |parts: &[smdebug_storage::Bytes]| {
        assert_eq!(parts.len(), ranges.len());
        let last = &ranges[ranges.len() - 1];
        assert_eq!(
            parts[parts.len() - 1],
            data.slice(last.start as usize..last.end as usize)
        );
    };

    let mut group = c.benchmark_group("ranged_reads_1000");
    group.sample_size(10);
    group.throughput(Throughput::Elements(READS));
    group.bench_function("sequential", |b| {
        b.iter(|| {
            let parts = runtime.block_on(async {
                let mut parts = Vec::with_capacity(ranges.len());
                for r in &ranges {
                    parts.push(store.get_range(key, r.clone()).await.expect("get_range"));
                }
                parts
            });
            check(&parts);
        })
    });
    let concurrent = ReadOptions {
        coalesce_gap: None,
        concurrency: 32,
        ..ReadOptions::default()
    };
    group.bench_function("concurrent", |b| {
        b.iter(|| {
            let parts = runtime
                .block_on(get_ranges_with(store.as_ref(), key, &ranges, &concurrent))
                .expect("get_ranges");
            check(&parts);
        })
    });
    let coalesced = ReadOptions::default();
    group.bench_function("coalesced", |b| {
        b.iter(|| {
            let parts = runtime
                .block_on(get_ranges_with(store.as_ref(), key, &ranges, &coalesced))
                .expect("get_ranges");
            check(&parts);
        })
    });
    group.finish();
    let _ = runtime.block_on(store.delete(key));
}

criterion_group!(benches, ranged_reads);
criterion_main!(benches);
