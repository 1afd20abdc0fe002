//! O(1) lookup of keys and tensor names without copying them.
//!
//! The table stores `(hash, item index)` pairs; names are compared by resolving the index back
//! to its span in the header bytes. Hashing uses std's randomly keyed SipHash, so a crafted
//! file cannot force collisions. Both formats' decoders index their keys and tensor names with
//! it, and the read side its merged tensor tables.

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

/// A hash index from names (byte strings stored elsewhere) to item indices.
///
/// The caller keeps the names; every operation takes a `resolve` closure mapping an item index
/// back to its name bytes, so the index holds no copies.
#[derive(Clone, Default)]
pub struct NameIndex {
    table: HashTable<(u64, u32)>,
    state: RandomState,
}

impl NameIndex {
    fn hash(&self, name: &[u8]) -> u64 {
        self.state.hash_one(name)
    }

    /// The index of the item named `name`; `resolve` maps an item index to its name bytes.
    pub fn find<'b>(&self, name: &[u8], resolve: impl Fn(u32) -> &'b [u8]) -> Option<u32> {
        let hash = self.hash(name);
        self.table.find(hash, |&(h, idx)| h == hash && resolve(idx) == name).map(|&(_, idx)| idx)
    }

    /// Records `idx` under `name`, replacing an earlier item of the same name ("last wins").
    pub fn insert<'b>(&mut self, name: &[u8], idx: u32, resolve: impl Fn(u32) -> &'b [u8]) {
        let hash = self.hash(name);
        match self.table.find_mut(hash, |&(h, i)| h == hash && resolve(i) == name) {
            Some(slot) => slot.1 = idx,
            None => {
                self.table.insert_unique(hash, (hash, idx), |&(h, _)| h);
            }
        }
    }
}

impl NameIndex {
    /// An empty index.
    pub fn new() -> NameIndex {
        NameIndex::default()
    }

    /// Number of distinct names.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no name was inserted.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameIndex").field("len", &self.table.len()).finish()
    }
}
