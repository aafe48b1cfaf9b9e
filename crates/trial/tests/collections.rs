//! Workers that saved different tensors: the trial's collections are the union over every
//! worker's collections file, whichever file is listed first (smdebug 1.0.34 takes the first
//! file `os.walk` lists, so its answer depends on the directory order).

use smdebug_config::{Collection, CollectionManager, Mode};
use smdebug_index::TensorEntry;
use smdebug_index::{collections_file_key, event_file_key, index_file_key, IndexFile, IndexMeta};
use smdebug_record::{append_record, encode_tensor_event, mode_number, Footer};
use smdebug_storage::{BlockingStore, Location};
use smdebug_trial::{create_trial, TensorFilter, TensorValue};

/// Worker `worker` saved `tensor` at step 0 and lists it in collection `c`, plus one
/// collection of its own (`only_<worker>`).
fn write_worker(store: &BlockingStore, worker: &str, tensor: &str) {
    let value = TensorValue::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn());
    let payload = encode_tensor_event(tensor, &value, 0, mode_number::TRAIN, 0, 0.0).unwrap();
    let mut events = Vec::new();
    let rec = append_record(&mut events, &payload, Footer::Magic);
    let mut index = IndexFile::new(IndexMeta {
        mode: Mode::Train,
        mode_step: 0,
        event_file_name: Some(event_file_key(0, worker).unwrap()),
    });
    index.tensors.push(TensorEntry {
        name: tensor.into(),
        start_idx: rec.offset,
        length: rec.len,
        payload_crc32c: Some(rec.payload_crc32c),
    });
    store
        .put(&event_file_key(0, worker).unwrap(), events.into())
        .unwrap();
    store
        .put(
            &index_file_key(0, worker).unwrap(),
            index.to_json().into_bytes().into(),
        )
        .unwrap();
    let mut cm = CollectionManager::new();
    cm.set_num_workers(2);
    let mut c = Collection::new("c");
    c.add_tensor_name(tensor);
    cm.add(c);
    cm.add(Collection::new(format!("only_{worker}")));
    store
        .put(
            &collections_file_key(worker).unwrap(),
            cm.to_json().into_bytes().into(),
        )
        .unwrap();
}

fn in_collection(url: &str, name: &str) -> Vec<String> {
    let trial = create_trial(url).unwrap();
    trial
        .tensor_names_filtered(&TensorFilter {
            collection: Some(name.into()),
            ..TensorFilter::default()
        })
        .unwrap()
}

#[test]
fn a_tensor_in_a_collection_of_any_worker_is_in_it() {
    // The same two workers, with the tensors swapped between them: the answer is the same.
    for (t0, t1, run) in [("a", "b", "ab"), ("b", "a", "ba")] {
        let url = format!("memory://trial-collections/{run}");
        let store = BlockingStore::open(&Location::parse(&url).unwrap()).unwrap();
        write_worker(&store, "worker_0", t0);
        write_worker(&store, "worker_1", t1);
        assert_eq!(in_collection(&url, "c"), ["a", "b"], "run {run}");
        let trial = create_trial(&url).unwrap();
        let colls = trial.collections();
        assert_eq!(
            colls["c"].tensor_names.iter().collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(colls.contains_key("only_worker_0"), "run {run}");
        assert!(colls.contains_key("only_worker_1"), "run {run}");
        assert_eq!(trial.num_workers(), 2);
    }
}

#[test]
fn a_damaged_collections_file_of_a_later_worker_is_an_error_naming_it() {
    let url = "memory://trial-collections/damaged";
    let store = BlockingStore::open(&Location::parse(url).unwrap()).unwrap();
    write_worker(&store, "worker_0", "a");
    write_worker(&store, "worker_1", "b");
    let key = collections_file_key("worker_1").unwrap();
    store
        .put(&key, b"{\"collections\": [".to_vec().into())
        .unwrap();
    let e = create_trial(url).unwrap_err();
    assert!(e.to_string().contains("worker_1_collections.json"), "{e}");
}
