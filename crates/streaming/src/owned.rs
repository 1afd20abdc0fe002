//! [`OwnedStrs`]: a string list (a vocabulary) kept in one struct with the source it borrows from.

use std::fmt;

use crate::MetaStr;
use crate::error::StreamError;
use crate::meta::StrList;
use crate::source::WeightSource;

/// A string-array metadata value (a vocabulary) kept in one struct with the source whose
/// bytes it borrows: `get` in O(1), no string copied.
///
/// The metadata views ([`StrList`] and friends) borrow from the source's header, so a struct
/// holding both a source and a view of it cannot be written in safe Rust:
///
/// ```compile_fail
/// use sipllm_streaming::{GgufFile, StrList, WeightSource};
///
/// struct Tokenizer<'a> {
///     file: GgufFile,
///     tokens: StrList<'a>, // borrows `file`: a self-referential struct
/// }
///
/// fn load(file: GgufFile) -> Tokenizer<'static> {
///     let tokens = file.meta_strs("tokenizer.ggml.tokens").unwrap(); // E0597: `file` dropped
///     Tokenizer { file, tokens } // E0505: `file` moved while borrowed
/// }
/// ```
///
/// Two ways out, both without `unsafe` or a copy of the strings:
///
/// 1. **Keep the source, borrow on demand.** Store the source and look the list up in a method
///    (`meta` is a hash lookup; the view is a few words): `fn tokens(&self) -> StrList<'_>`.
/// 2. **[`OwnedStrs`]**, which does that for one key and adds what a tokenizer needs on top: the
///    list validated once, and an index of where each string is, so [`OwnedStrs::get`] is O(1)
///    instead of [`StrList::get`]'s O(index) walk over variable-length strings.
///
/// ```
/// use sipllm_testkit::{GgufBuilder, Value};
/// use sipllm_streaming::{GgufFile, MemSource, OpenOptions, OwnedStrs};
///
/// struct Tokenizer {
///     tokens: OwnedStrs, // owns the file: no lifetime parameter
/// }
///
/// impl Tokenizer {
///     fn new(file: GgufFile) -> Result<Tokenizer, sipllm_streaming::StreamError> {
///         Ok(Tokenizer { tokens: OwnedStrs::new(file, "tokenizer.ggml.tokens")? })
///     }
///
///     fn decode(&self, ids: &[usize]) -> String {
///         ids.iter().filter_map(|&i| self.tokens.get_str(i)).collect()
///     }
/// }
///
/// let bytes = GgufBuilder::new()
///     .kv("tokenizer.ggml.tokens", Value::strings(["<s>", "hel", "lo"]))
///     .build();
/// let file = GgufFile::from_source(MemSource::new(bytes), &OpenOptions::default())?;
/// let tok = Tokenizer::new(file)?;
/// assert_eq!(tok.decode(&[1, 2]), "hello");
/// assert_eq!(tok.tokens.len(), 3);
/// // The source stays reachable, for the tensors.
/// assert!(tok.tokens.source().tensors().is_empty());
/// # Ok::<(), sipllm_streaming::StreamError>(())
/// ```
pub struct OwnedStrs {
    source: Box<dyn WeightSource>,
    key: String,
    /// Where each string lies in the list's stored bytes (start, length), when the list has
    /// stored bytes (a GGUF or `.llmw` array); `None` for lists over slices, which index in
    /// O(1) anyway.
    spans: Option<Vec<(usize, usize)>>,
    len: usize,
}

impl fmt::Debug for OwnedStrs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedStrs")
            .field("key", &self.key)
            .field("len", &self.len)
            .field("indexed", &self.spans.is_some())
            .finish()
    }
}

impl OwnedStrs {
    /// Takes `source` and the string array under `key` in it (`MetaMissing` / `MetaType` when
    /// there is none), indexing where each string lies: one pass over the list, 16 bytes per
    /// string.
    pub fn new(source: impl WeightSource + 'static, key: &str) -> Result<OwnedStrs, StreamError> {
        OwnedStrs::from_boxed(Box::new(source), key)
    }

    /// [`new`](Self::new) for a source already boxed (what
    /// [`open_model`](crate::open_model) returns).
    pub fn from_boxed(source: Box<dyn WeightSource>, key: &str) -> Result<OwnedStrs, StreamError> {
        let list = source.meta_strs(key)?;
        let len = list.len();
        let spans = index(&list);
        Ok(OwnedStrs { source, key: key.to_owned(), spans, len })
    }

    /// The list, borrowed from the source (iterate it without allocating).
    pub fn list(&self) -> StrList<'_> {
        // The source is immutable and was checked to hold a string array under `key`.
        self.source
            .meta(&self.key)
            .and_then(|m| m.as_strs())
            .unwrap_or_else(|| StrList::from_strs("", &[]))
    }

    /// Element `index`, as stored, in O(1).
    pub fn get(&self, index: usize) -> Option<MetaStr<'_>> {
        let list = self.list();
        match (&self.spans, payload(&list)) {
            (Some(spans), Some(bytes)) => {
                let &(start, len) = spans.get(index)?;
                bytes.get(start..start.checked_add(len)?).map(MetaStr::from_bytes)
            }
            _ => list.get(index),
        }
    }

    /// Element `index` when it is UTF-8.
    pub fn get_str(&self, index: usize) -> Option<&str> {
        self.get(index).and_then(|s| s.as_str())
    }

    /// Number of strings.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The key the list is stored under.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The source (for its tensors and other metadata).
    pub fn source(&self) -> &dyn WeightSource {
        &*self.source
    }

    /// Gives the source back.
    pub fn into_source(self) -> Box<dyn WeightSource> {
        self.source
    }
}

/// The list's stored bytes, for the lists that have them.
fn payload<'a>(list: &StrList<'a>) -> Option<&'a [u8]> {
    list.as_gguf().map(|a| a.payload()).or_else(|| list.as_llmw().map(|a| a.payload()))
}

/// Where each string of `list` lies in its stored bytes. Each string the iterator yields is a
/// slice of those bytes; its position is its address minus theirs (plain arithmetic on
/// addresses, checked: every span must hold exactly that string, else no index is kept and
/// `get` walks the list instead).
fn index(list: &StrList<'_>) -> Option<Vec<(usize, usize)>> {
    let bytes = payload(list)?;
    let base = bytes.as_ptr() as usize;
    let mut spans = Vec::with_capacity(list.len());
    for s in list.iter() {
        let s = s.as_bytes();
        let start = (s.as_ptr() as usize).checked_sub(base)?;
        if bytes.get(start..start.checked_add(s.len())?) != Some(s) {
            return None;
        }
        spans.push((start, s.len()));
    }
    (spans.len() == list.len()).then_some(spans)
}
