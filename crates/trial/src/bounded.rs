//! A map bounded by the bytes of its values, oldest insertion evicted first.

use std::collections::{HashMap, VecDeque};

/// Entries kept until `budget` bytes are held, then evicted oldest insertion first.
#[derive(Debug)]
pub(crate) struct Bounded<K, V> {
    pub(crate) budget: usize,
    pub(crate) held: usize,
    size: fn(&V) -> usize,
    map: HashMap<K, V>,
    order: VecDeque<K>,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> Bounded<K, V> {
    pub fn new(budget: usize, size: fn(&V) -> usize) -> Self {
        Bounded {
            budget,
            held: 0,
            size,
            map: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.held = 0;
    }

    pub fn get<Q: std::hash::Hash + Eq + ?Sized>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.get(key).cloned()
    }

    /// The entry of `key`, not cloned.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.map.get(key)
    }

    pub fn insert(&mut self, key: K, value: V) {
        self.insert_evicting(key, value, |_| {});
    }

    /// [`Bounded::insert`], handing each key it evicts (or does not keep: larger than the
    /// budget) to `evicted`.
    pub(crate) fn insert_evicting(&mut self, key: K, value: V, mut evicted: impl FnMut(K)) {
        let size = (self.size)(&value);
        if size > self.budget {
            evicted(key);
            return;
        }
        if self.map.insert(key.clone(), value).is_some() {
            return;
        }
        self.order.push_back(key);
        self.held += size;
        while self.held > self.budget {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(v) = self.map.remove(&old) {
                self.held -= (self.size)(&v);
                evicted(old);
            }
        }
    }
}
