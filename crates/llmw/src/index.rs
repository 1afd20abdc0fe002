//! O(1) lookup of keys and tensor names without copying them.
//!
//! The table stores `(hash, item index)` pairs; names are compared by resolving the index back
//! to its span in the header bytes. Hashing uses std's randomly keyed SipHash, so a crafted
//! file cannot force collisions. (The same design as `sipllm-gguf`'s private index.)

use std::hash::{BuildHasher, RandomState};

use hashbrown::HashTable;

#[derive(Clone, Default)]
pub(crate) struct NameIndex {
    table: HashTable<(u64, u32)>,
    state: RandomState,
}

impl NameIndex {
    fn hash(&self, name: &[u8]) -> u64 {
        self.state.hash_one(name)
    }

    /// The index of the item named `name`; `resolve` maps an item index to its name bytes.
    pub(crate) fn find<'b>(&self, name: &[u8], resolve: impl Fn(u32) -> &'b [u8]) -> Option<u32> {
        let hash = self.hash(name);
        self.table.find(hash, |&(h, idx)| h == hash && resolve(idx) == name).map(|&(_, idx)| idx)
    }

    /// Records `idx` under `name`. The decoder rejects duplicates before inserting, so an
    /// existing entry is only replaced if the caller skipped that check.
    pub(crate) fn insert<'b>(&mut self, name: &[u8], idx: u32, resolve: impl Fn(u32) -> &'b [u8]) {
        let hash = self.hash(name);
        match self.table.find_mut(hash, |&(h, i)| h == hash && resolve(i) == name) {
            Some(slot) => slot.1 = idx,
            None => {
                self.table.insert_unique(hash, (hash, idx), |&(h, _)| h);
            }
        }
    }
}

impl std::fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NameIndex").field("len", &self.table.len()).finish()
    }
}
