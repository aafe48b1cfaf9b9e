//! The trial's collections: the union over every worker's collections file.
//!
//! smdebug 1.0.34 reads only the first collections file `os.walk` lists, so when workers
//! saved different tensors, which tensors a collection holds depends on the directory order.
//! Here a tensor belongs to a collection when any worker's file says so
//! (docs/src/semantics.md §8.2, crates/trial/README.md).

use smdebug_config::{CollectionManager, ConfigError};

/// Adds what `other` (another worker's collections file) says to `into`: its collections
/// that `into` lacks, and to the collections both have, its tensor names and its include
/// regexes that `into` lacks. Everything else — reduction and save configs, histograms,
/// `_meta` — stays as `into` has it (the first file in key order), since a collection's
/// membership is what differs between workers.
///
/// An include regex that cannot be compiled is an error (for the caller to name the file).
pub(crate) fn merge_collections(
    into: &mut CollectionManager,
    other: &CollectionManager,
) -> Result<(), ConfigError> {
    for c in other.collections() {
        let Some(mine) = into.get_mut(&c.name) else {
            into.add(c.clone());
            continue;
        };
        mine.tensor_names.extend(c.tensor_names.iter().cloned());
        for rx in c.include_regex() {
            if !mine.include_regex().contains(rx) {
                mine.include(rx)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use smdebug_config::Collection;

    fn manager(colls: &[(&str, &[&str], &[&str])]) -> CollectionManager {
        let mut cm = CollectionManager::new();
        for (name, names, regexes) in colls {
            let mut c = Collection::new(*name);
            for n in *names {
                c.add_tensor_name(*n);
            }
            for r in *regexes {
                c.include(r).unwrap();
            }
            cm.add(c);
        }
        cm
    }

    #[test]
    fn a_tensor_in_a_collection_of_any_worker_is_in_it() {
        let mut w0 = manager(&[
            ("weights", &["fc1.weight"], &["weight$"]),
            ("a", &["x"], &[]),
        ]);
        let w1 = manager(&[
            ("weights", &["fc2.weight"], &["weight$", "^w/"]),
            ("b", &["y"], &["^y"]),
        ]);
        merge_collections(&mut w0, &w1).unwrap();
        let weights = w0.get("weights").unwrap();
        assert_eq!(
            weights.tensor_names.iter().collect::<Vec<_>>(),
            ["fc1.weight", "fc2.weight"]
        );
        // Regexes once each, the first file's first.
        assert_eq!(weights.include_regex(), ["weight$", "^w/"]);
        assert!(weights.contains("w/z").unwrap());
        assert_eq!(w0.get("a").unwrap().tensor_names.len(), 1);
        assert!(w0.get("b").unwrap().contains("y").unwrap());
        assert_eq!(w0.len(), 3);
    }

    #[test]
    fn the_union_does_not_depend_on_the_order_of_the_files() {
        let w0 = manager(&[("c", &["p"], &["^q"])]);
        let w1 = manager(&[("c", &["r"], &[]), ("d", &["s"], &[])]);
        let mut a = w0.clone();
        merge_collections(&mut a, &w1).unwrap();
        let mut b = w1.clone();
        merge_collections(&mut b, &w0).unwrap();
        assert_eq!(a, b);
    }
}
