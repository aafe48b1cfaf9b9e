//! The export over small hand-written trials in memory: layouts, part sizes, filters, and
//! bad records and index files (skipped and named, or fatal with `strict`).

use arrow_array::Array;
use smdebug_config::Mode;
use smdebug_export::{export_trial, ExportError, ExportOptions, Format, Layout, StepRange};
use smdebug_index::{
    collections_file_key, event_file_key, index_file_key, IndexFile, IndexMeta, TensorEntry,
};
use smdebug_record::{append_record, encode_tensor_event, mode_number, Footer, TensorValue};
use smdebug_storage::{BlockingStore, Location};

/// Writes `steps` TRAIN steps of worker 0 into `memory://NAME/run`, with the tensors
/// `values(step)` gives, the `collections` file given and the end marker.
fn write_steps(
    name: &str,
    steps: i64,
    collections: &str,
    values: impl Fn(i64) -> Vec<(&'static str, TensorValue)>,
) -> BlockingStore {
    let store =
        BlockingStore::open(&Location::parse(&format!("memory://{name}/run")).unwrap()).unwrap();
    for s in 0..steps {
        let mut events = Vec::new();
        let mut index = IndexFile::new(IndexMeta {
            mode: Mode::Train,
            mode_step: s,
            event_file_name: Some(event_file_key(s, "worker_0").unwrap()),
        });
        for (tag, v) in values(s) {
            let payload =
                encode_tensor_event(tag, &v, s, mode_number::TRAIN, s, 1.7e9 + s as f64).unwrap();
            let rec = append_record(&mut events, &payload, Footer::Magic);
            index.tensors.push(TensorEntry {
                name: tag.into(),
                start_idx: rec.offset,
                length: rec.len,
                payload_crc32c: Some(rec.payload_crc32c),
            });
        }
        store
            .put(&event_file_key(s, "worker_0").unwrap(), events.into())
            .unwrap();
        store
            .put(
                &index_file_key(s, "worker_0").unwrap(),
                index.to_json().into_bytes().into(),
            )
            .unwrap();
    }
    store
        .put(
            &collections_file_key("worker_0").unwrap(),
            collections.to_owned().into_bytes().into(),
        )
        .unwrap();
    store
        .put("training_job_end.ts", Default::default())
        .unwrap();
    store
}

/// Writes `steps` TRAIN steps of tensors `w` (4 floats) and `loss` into `memory://NAME/run`.
fn write_trial(name: &str, steps: i64) -> BlockingStore {
    let collections = r#"{"collections": {"losses": {"name": "losses", "include_regex": ["loss"], "tensor_names": [], "reduction_config": null, "save_config": null, "save_histogram": true}}, "_meta": {"num_workers": 1}}"#;
    write_steps(name, steps, collections, |s| {
        vec![
            (
                "w",
                TensorValue::from(ndarray::arr1(&[s as f32, 0.0, -1.0, 2.5]).into_dyn()),
            ),
            (
                "loss",
                TensorValue::from(ndarray::arr0(1.0f32 / (s + 1) as f32).into_dyn()),
            ),
        ]
    })
}

fn keys(out: &str) -> Vec<String> {
    let store = BlockingStore::open(&Location::parse(out).unwrap()).unwrap();
    store
        .list("", None)
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect()
}

#[test]
fn a_small_trial_is_one_file_per_table() {
    write_trial("single", 3);
    let s = export_trial(
        "memory://single/run",
        "memory://single/out",
        &ExportOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        keys("memory://single/out"),
        [
            "_SUCCESS",
            "reductions.parquet",
            "scalars.parquet",
            "steps.parquet",
            "tensors.parquet"
        ]
    );
    assert_eq!(s.tables["tensors"].rows, 6);
    assert_eq!(
        s.tables["scalars"].rows, 3,
        "loss is in the losses collection"
    );
    assert_eq!(s.tables["steps"].rows, 3);
    assert_eq!(s.tables["reductions"].rows, 0);
    assert_eq!(s.value_bytes, 3 * (16 + 4));
}

#[test]
fn partitions_follow_step_buckets_and_parts_stay_small() {
    write_trial("parts", 6);
    let options = ExportOptions {
        layout: Layout::Partitioned,
        bucket_steps: 2,
        format: Format::Csv,
        row_group_rows: 1,
        part_bytes: 1,
        ..ExportOptions::default()
    };
    let s = export_trial(
        "memory://parts/run",
        "memory://parts/out",
        &options,
        &mut |_| {},
    )
    .unwrap();
    let files = &s.tables["tensors"].files;
    // One row per file (each file passes 1 byte with its first row), in its step's bucket.
    assert_eq!(files.len(), 12);
    for b in 0..3 {
        let n = files
            .iter()
            .filter(|f| f.starts_with(&format!("tensors/step_bucket={b}/part-")))
            .count();
        assert_eq!(n, 4, "{files:?}");
    }
    let all = keys("memory://parts/out");
    assert!(files.iter().all(|f| all.contains(f)));
}

/// A partition folder (a fleet's `run=NAME`) goes between each table and its files, in
/// both layouts.
#[test]
fn a_partition_folder_goes_between_table_and_files() {
    write_trial("partition", 3);
    for (layout, want) in [
        (Layout::Partitioned, "tensors/run=a%2Fb/step_bucket=0/part-"),
        (Layout::Single, "tensors/run=a%2Fb/part-00000.csv"),
    ] {
        let out = format!("memory://partition/out-{layout:?}");
        let options = ExportOptions {
            layout,
            format: Format::Csv,
            partition: Some("run=a%2Fb".into()),
            ..ExportOptions::default()
        };
        let s = export_trial("memory://partition/run", &out, &options, &mut |_| {}).unwrap();
        let files = &s.tables["tensors"].files;
        assert!(!files.is_empty());
        assert!(files.iter().all(|f| f.starts_with(want)), "{files:?}");
        let all = keys(&out);
        assert!(files.iter().all(|f| all.contains(f)), "{all:?}");
    }
}

#[test]
fn filters_keep_the_rows_asked_for() {
    write_trial("filters", 5);
    let options = ExportOptions {
        tensors: Some("^w$".into()),
        steps: "1:4".parse::<StepRange>().unwrap(),
        mode: Some(Mode::Train),
        ..ExportOptions::default()
    };
    let s = export_trial(
        "memory://filters/run",
        "memory://filters/out",
        &options,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.tables["tensors"].rows, 3);
    assert_eq!(s.tables["scalars"].rows, 0);
    assert_eq!(s.tables["steps"].rows, 3, "steps describe every tensor");
    let eval_only = ExportOptions {
        mode: Some(Mode::Eval),
        ..ExportOptions::default()
    };
    let s = export_trial(
        "memory://filters/run",
        "memory://filters/out2",
        &eval_only,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.tables["tensors"].rows, 0);
}

#[test]
fn a_bad_record_is_skipped_and_named_or_fatal_when_strict() {
    let store = write_trial("badrec", 3);
    let key = event_file_key(1, "worker_0").unwrap();
    let mut bytes = store.get(&key).unwrap().to_vec();
    bytes[20] ^= 0xff; // inside the first record's payload: its CRC no longer matches
    store.put(&key, bytes.into()).unwrap();
    let s = export_trial(
        "memory://badrec/run",
        "memory://badrec/out",
        &ExportOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.tables["tensors"].rows, 5);
    assert!(!s.skipped_records.is_empty());
    assert!(
        s.skipped_records[0].message.contains(&key),
        "names the file: {:?}",
        s.skipped_records
    );
    let strict = ExportOptions {
        strict: true,
        ..ExportOptions::default()
    };
    let err = export_trial(
        "memory://badrec/run",
        "memory://badrec/out2",
        &strict,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, ExportError::BadRecord { step: 1, .. }),
        "{err}"
    );
    assert!(
        !keys("memory://badrec/out2").contains(&"_SUCCESS".to_string()),
        "a failed export is not marked complete"
    );
}

#[test]
fn a_bad_index_file_is_skipped_and_named_or_fatal_when_strict() {
    let store = write_trial("badindex", 3);
    let key = index_file_key(2, "worker_0").unwrap();
    store.put(&key, "{not json".into()).unwrap();
    let s = export_trial(
        "memory://badindex/run",
        "memory://badindex/out",
        &ExportOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.tables["tensors"].rows, 4);
    assert_eq!(s.skipped_index_files.len(), 1);
    assert!(s.skipped_index_files[0].what.contains("step 2"));
    let strict = ExportOptions {
        strict: true,
        ..ExportOptions::default()
    };
    let err = export_trial(
        "memory://badindex/run",
        "memory://badindex/out2",
        &strict,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(err, ExportError::BadIndexFile { step: 2, .. }),
        "{err}"
    );
}

/// Writes `steps` TRAIN steps of one tensor `big` of `len` floats into `memory://NAME/run`.
fn write_big_trial(name: &str, steps: i64, len: usize) {
    let collections = r#"{"collections": {}, "_meta": {"num_workers": 1}}"#;
    write_steps(name, steps, collections, |s| {
        let v = ndarray::Array1::from_iter((0..len).map(|i| (i as f32) * 0.5 + s as f32));
        vec![("big", TensorValue::from(v.into_dyn()))]
    });
}

#[test]
fn large_values_are_written_in_row_groups_of_bounded_bytes() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    // 8 rows of 400 000 values (3.2 MB each as float64): a row group of the usual 8192
    // rows would hold them all; bounded by bytes, they take several.
    write_big_trial("bigvalues", 8, 400_000);
    let s = export_trial(
        "memory://bigvalues/run",
        "memory://bigvalues/out",
        &ExportOptions {
            values: smdebug_export::ValuesMode::All,
            ..ExportOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(s.tables["tensors"].rows, 8);
    let out = BlockingStore::open(&Location::parse("memory://bigvalues/out").unwrap()).unwrap();
    let file = SerializedFileReader::new(out.get("tensors.parquet").unwrap()).unwrap();
    let meta = file.metadata();
    let groups: Vec<i64> = meta.row_groups().iter().map(|g| g.num_rows()).collect();
    assert!(groups.len() >= 3, "row groups {groups:?}");
    assert_eq!(groups.iter().sum::<i64>(), 8);
    // Every value is there: each row's last element, read back.
    let bytes = out.get("tensors.parquet").unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
        .unwrap()
        .build()
        .unwrap();
    let mut last = Vec::new();
    for batch in reader {
        let batch = batch.unwrap();
        let values = batch
            .column_by_name("values")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::ListArray>()
            .unwrap()
            .clone();
        for i in 0..values.len() {
            let v = values.value(i);
            let v = v
                .as_any()
                .downcast_ref::<arrow_array::Float64Array>()
                .unwrap();
            assert_eq!(v.len(), 400_000);
            last.push(v.value(v.len() - 1));
        }
    }
    let want: Vec<f64> = (0..8).map(|s| 399_999.0 * 0.5 + s as f64).collect();
    assert_eq!(last, want);
}

/// The batches of `export_batches`, per table, concatenated (empty tables: no batch).
fn batches_of(
    trial: &str,
    options: &ExportOptions,
) -> std::collections::BTreeMap<&'static str, Vec<arrow_array::RecordBatch>> {
    let trial = smdebug_trial::Trial::open(trial, smdebug_export::trial_options()).unwrap();
    let mut out = std::collections::BTreeMap::<_, Vec<_>>::new();
    let s = smdebug_export::export_batches(&trial, options, &mut |_| {}, &mut |t, b| {
        assert_eq!(b.schema(), t.schema(false), "{}", t.name());
        assert!(b.num_rows() <= options.row_group_rows);
        out.entry(t.name()).or_default().push(b);
        Ok(())
    })
    .unwrap();
    for (name, batches) in &out {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(s.tables[name].rows, rows as u64, "{name}");
        assert!(s.tables[name].files.is_empty());
    }
    out
}

#[test]
fn record_batches_hold_the_rows_the_files_hold() {
    write_trial("batches", 5);
    for format in [Format::Arrow, Format::Csv] {
        let options = ExportOptions {
            // Several batches per table; the format does not change the batches' schema.
            row_group_rows: 3,
            format,
            ..ExportOptions::default()
        };
        let got = batches_of("memory://batches/run", &options);
        assert_eq!(got["tensors"].len(), 4, "10 rows in batches of 3");
        let file = ExportOptions {
            format: Format::Arrow,
            layout: Layout::Single,
            ..options.clone()
        };
        export_trial(
            "memory://batches/run",
            "memory://batches/out",
            &file,
            &mut |_| {},
        )
        .unwrap();
        let out = BlockingStore::open(&Location::parse("memory://batches/out").unwrap()).unwrap();
        for table in ["tensors", "scalars", "steps"] {
            let bytes = out.get(&format!("{table}.arrow")).unwrap();
            let reader =
                arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
            let schema = reader.schema();
            let want: Vec<_> = reader.map(Result::unwrap).collect();
            let want = arrow_select::concat::concat_batches(&schema, &want).unwrap();
            let have = arrow_select::concat::concat_batches(&schema, &got[table]).unwrap();
            assert_eq!(have, want, "{table}");
        }
        assert!(!got.contains_key("reductions"), "no reduction was saved");
    }
}

#[test]
fn an_error_of_the_batch_consumer_stops_the_export() {
    write_trial("batches-stop", 4);
    let trial =
        smdebug_trial::Trial::open("memory://batches-stop/run", smdebug_export::trial_options())
            .unwrap();
    let options = ExportOptions {
        row_group_rows: 1,
        ..ExportOptions::default()
    };
    let mut calls = 0;
    let err = smdebug_export::export_batches(&trial, &options, &mut |_| {}, &mut |_, _| {
        calls += 1;
        Err(ExportError::InvalidOption("consumer gave up".into()))
    })
    .unwrap_err();
    assert!(err.to_string().contains("consumer gave up"), "{err}");
    assert_eq!(calls, 1);
}
