//! [`LlmwWriter`]: writes `.llmw` files. The one module of this crate that does I/O.
//!
//! Everything is validated when it is added (unique non-empty keys and names, known dtype, 1–4
//! non-zero dims, data length equal to dtype × dims, lengths that fit the format's `u32`
//! fields), so a write fails only on I/O or on a reader that yields the wrong number of bytes.
//! The layout is computed before the first byte is written: header, metadata and directory,
//! zero padding to the data section, then each tensor's data at the next multiple of 64, in
//! the order the tensors were added. Nothing is seeked, so any [`Write`] will do.
//!
//! The writer picks the oldest version that can hold the content: version 1 without arrays
//! (readable by every `.llmw` reader), version 2 as soon as one array is added.

use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path as FsPath, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use smallvec::SmallVec;

use sipllm_gguf::{GgmlType, ggml::SizeError, ggml::align_up, ggml::tensor_nbytes};

use crate::value::MetaType;
use crate::{ALIGNMENT, MAGIC};

/// Size of the buffer tensor data from readers is copied through.
const COPY_BUF: usize = 64 * 1024;

/// Why a [`LlmwWriter`] refused an item or failed to write.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmwWriteError {
    /// Writing (or reading tensor data from a reader) failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// A metadata key is empty.
    #[error("empty metadata key")]
    EmptyKey,
    /// A metadata key was added twice.
    #[error("duplicate metadata key {key:?}")]
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A tensor name is empty.
    #[error("empty tensor name")]
    EmptyName,
    /// A tensor name was added twice.
    #[error("duplicate tensor name {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A string is longer, or an array has more elements, than a `u32` field can state.
    #[error("{what} of length {len} does not fit the format's u32 length field")]
    TooLong {
        /// What was too long.
        what: &'static str,
        /// Its length.
        len: u64,
    },
    /// More metadata entries or tensors than a `u32` count can state.
    #[error("more {what} than the format's u32 count can state")]
    TooMany {
        /// What there were too many of.
        what: &'static str,
    },
    /// A removed or unknown dtype (no defined size).
    #[error("tensor {name:?}: dtype {dtype} has no defined size")]
    UnsupportedDtype {
        /// The tensor.
        name: String,
        /// The dtype.
        dtype: GgmlType,
    },
    /// Not 1 to 4 dimensions.
    #[error("tensor {name:?}: {n_dims} dimensions; 1 to 4 allowed")]
    BadDimCount {
        /// The tensor.
        name: String,
        /// How many were given.
        n_dims: usize,
    },
    /// A dimension is 0 (`.llmw` tensors are never empty).
    #[error("tensor {name:?}: dimension {index} is 0")]
    ZeroDim {
        /// The tensor.
        name: String,
        /// Which dimension (row-major).
        index: usize,
    },
    /// dtype × dims has no valid size (row length not a multiple of the block size, or the
    /// size overflows 64 bits).
    #[error("tensor {name:?}: {source}")]
    Size {
        /// The tensor.
        name: String,
        /// What `tensor_nbytes` said.
        source: SizeError,
    },
    /// The data slice's length is not what dtype × dims requires.
    #[error("tensor {name:?}: {got} data bytes given; dtype x dims needs {expected}")]
    DataLength {
        /// The tensor.
        name: String,
        /// What dtype × dims requires.
        expected: u64,
        /// The slice length.
        got: u64,
    },
    /// A tensor's reader ended before supplying dtype × dims bytes.
    #[error("tensor {name:?}: the reader ended after {got} of {expected} bytes")]
    ReaderTooShort {
        /// The tensor.
        name: String,
        /// What dtype × dims requires.
        expected: u64,
        /// What the reader supplied.
        got: u64,
    },
    /// A tensor's reader had more than dtype × dims bytes.
    #[error("tensor {name:?}: the reader has more than the {expected} bytes dtype x dims needs")]
    ReaderTooLong {
        /// The tensor.
        name: String,
        /// What dtype × dims requires.
        expected: u64,
    },
    /// The file would be larger than 2^64 bytes.
    #[error("the file would be larger than 2^64 bytes")]
    FileTooLarge,
}

/// A metadata value as the writer holds it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    I64(i64),
    F64(f64),
    Str(String),
    I64s(Vec<i64>),
    F64s(Vec<f64>),
    Strs(Vec<String>),
}

impl Value {
    fn meta_type(&self) -> MetaType {
        match self {
            Value::I64(_) => MetaType::I64,
            Value::F64(_) => MetaType::F64,
            Value::Str(_) => MetaType::Str,
            Value::I64s(_) => MetaType::I64Array,
            Value::F64s(_) => MetaType::F64Array,
            Value::Strs(_) => MetaType::StrArray,
        }
    }
}

enum Data<'d> {
    Slice(&'d [u8]),
    Reader(Box<dyn Read + 'd>),
}

struct Tensor<'d> {
    name: String,
    dtype: GgmlType,
    dims: SmallVec<[u64; 4]>,
    nbytes: u64,
    data: Data<'d>,
}

/// Where everything will go, computed before anything is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteLayout {
    /// The format version that will be written (1 without arrays, else 2).
    pub version: u32,
    /// End of the tensor directory.
    pub directory_end: u64,
    /// Start of the data section (`directory_end` rounded up to 64).
    pub data_start: u64,
    /// Each tensor's absolute offset and byte size, in the order added.
    pub tensors: Vec<(u64, u64)>,
    /// Total file size: the end of the last tensor's data (no trailing padding), or
    /// `directory_end` without tensors.
    pub file_size: u64,
}

/// Builds and writes a `.llmw` file.
///
/// ```
/// use sipllm_llmw::{GgmlType, LlmwWriter, parse};
///
/// let weights: Vec<u8> = (0..24).collect(); // 2 x 3 F32
/// let mut w = LlmwWriter::new();
/// w.add_meta_str("general.architecture", "toy")?
///     .add_meta_i64("toy.context_length", 128)?
///     .add_meta_strs("tokenizer.tokens", ["<s>", "</s>", "hi"])?
///     .add_tensor("w", GgmlType::F32, &[2, 3], &weights)?;
/// let bytes = w.to_vec()?;
///
/// let file = parse(&bytes)?;
/// assert_eq!(file.version(), 2); // an array is present
/// assert_eq!(file.get_str("general.architecture"), Some("toy"));
/// let t = file.tensor("w").unwrap();
/// assert_eq!(t.info.dims(), &[2, 3]);
/// assert_eq!(file.tensor_data(t.info), Some(&weights[..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Default)]
pub struct LlmwWriter<'d> {
    meta: Vec<(String, Value)>,
    keys: HashSet<String>,
    tensors: Vec<Tensor<'d>>,
    names: HashSet<String>,
}

impl fmt::Debug for LlmwWriter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmwWriter")
            .field("meta", &self.meta.len())
            .field("tensors", &self.tensors.iter().map(|t| &t.name).collect::<Vec<_>>())
            .finish()
    }
}

fn len_u32(what: &'static str, len: usize) -> Result<u32, LlmwWriteError> {
    u32::try_from(len).map_err(|_| LlmwWriteError::TooLong { what, len: len as u64 })
}

/// Serialized size of a string: the `u32` length and the bytes.
fn str_size(s: &str) -> u64 {
    4 + s.len() as u64
}

impl<'d> LlmwWriter<'d> {
    /// An empty writer.
    pub fn new() -> LlmwWriter<'d> {
        LlmwWriter::default()
    }

    /// The version [`write_to`](Self::write_to) will write: 1 unless an array was added.
    pub fn version(&self) -> u32 {
        self.meta.iter().map(|(_, v)| v.meta_type().min_version()).max().unwrap_or(1)
    }

    fn add_meta(&mut self, key: &str, value: Value) -> Result<&mut Self, LlmwWriteError> {
        if key.is_empty() {
            return Err(LlmwWriteError::EmptyKey);
        }
        len_u32("metadata key", key.len())?;
        if self.keys.contains(key) {
            return Err(LlmwWriteError::DuplicateKey { key: key.to_owned() });
        }
        if self.meta.len() >= u32::MAX as usize {
            return Err(LlmwWriteError::TooMany { what: "metadata entries" });
        }
        match &value {
            Value::Str(s) => {
                len_u32("string value", s.len())?;
            }
            Value::I64s(v) => {
                len_u32("i64 array", v.len())?;
            }
            Value::F64s(v) => {
                len_u32("f64 array", v.len())?;
            }
            Value::Strs(v) => {
                len_u32("string array", v.len())?;
                for s in v {
                    len_u32("string array element", s.len())?;
                }
            }
            Value::I64(_) | Value::F64(_) => {}
        }
        self.keys.insert(key.to_owned());
        self.meta.push((key.to_owned(), value));
        Ok(self)
    }

    /// Adds an `i64` entry.
    pub fn add_meta_i64(&mut self, key: &str, value: i64) -> Result<&mut Self, LlmwWriteError> {
        self.add_meta(key, Value::I64(value))
    }

    /// Adds an `f64` entry.
    pub fn add_meta_f64(&mut self, key: &str, value: f64) -> Result<&mut Self, LlmwWriteError> {
        self.add_meta(key, Value::F64(value))
    }

    /// Adds a string entry.
    pub fn add_meta_str(&mut self, key: &str, value: &str) -> Result<&mut Self, LlmwWriteError> {
        self.add_meta(key, Value::Str(value.to_owned()))
    }

    /// Adds an `i64` array entry (makes the file version 2).
    pub fn add_meta_i64s(
        &mut self,
        key: &str,
        values: impl IntoIterator<Item = i64>,
    ) -> Result<&mut Self, LlmwWriteError> {
        self.add_meta(key, Value::I64s(values.into_iter().collect()))
    }

    /// Adds an `f64` array entry (makes the file version 2).
    pub fn add_meta_f64s(
        &mut self,
        key: &str,
        values: impl IntoIterator<Item = f64>,
    ) -> Result<&mut Self, LlmwWriteError> {
        self.add_meta(key, Value::F64s(values.into_iter().collect()))
    }

    /// Adds a string array entry (makes the file version 2).
    pub fn add_meta_strs<S: AsRef<str>>(
        &mut self,
        key: &str,
        values: impl IntoIterator<Item = S>,
    ) -> Result<&mut Self, LlmwWriteError> {
        let values = values.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.add_meta(key, Value::Strs(values))
    }

    /// Validates a tensor's name, dtype and dims; returns its byte size.
    fn check_tensor(
        &self,
        name: &str,
        dtype: GgmlType,
        dims: &[u64],
    ) -> Result<u64, LlmwWriteError> {
        if name.is_empty() {
            return Err(LlmwWriteError::EmptyName);
        }
        len_u32("tensor name", name.len())?;
        if self.names.contains(name) {
            return Err(LlmwWriteError::DuplicateName { name: name.to_owned() });
        }
        if self.tensors.len() >= u32::MAX as usize {
            return Err(LlmwWriteError::TooMany { what: "tensors" });
        }
        if !dtype.is_known() {
            return Err(LlmwWriteError::UnsupportedDtype { name: name.to_owned(), dtype });
        }
        if !(1..=4).contains(&dims.len()) {
            return Err(LlmwWriteError::BadDimCount { name: name.to_owned(), n_dims: dims.len() });
        }
        if let Some(index) = dims.iter().position(|&d| d == 0) {
            return Err(LlmwWriteError::ZeroDim { name: name.to_owned(), index });
        }
        // The one size helper takes GGUF order (row length first): reverse the row-major dims.
        let gguf_dims: SmallVec<[u64; 4]> = dims.iter().rev().copied().collect();
        tensor_nbytes(dtype, &gguf_dims)
            .map_err(|source| LlmwWriteError::Size { name: name.to_owned(), source })
    }

    fn push_tensor(
        &mut self,
        name: &str,
        dtype: GgmlType,
        dims: &[u64],
        nbytes: u64,
        data: Data<'d>,
    ) {
        self.names.insert(name.to_owned());
        self.tensors.push(Tensor {
            name: name.to_owned(),
            dtype,
            dims: dims.iter().copied().collect(),
            nbytes,
            data,
        });
    }

    /// Adds a tensor whose data is `data` (borrowed until the write). `dims` are row-major,
    /// outermost first; `data.len()` must be what `dtype` × `dims` requires.
    pub fn add_tensor(
        &mut self,
        name: &str,
        dtype: GgmlType,
        dims: &[u64],
        data: &'d [u8],
    ) -> Result<&mut Self, LlmwWriteError> {
        let nbytes = self.check_tensor(name, dtype, dims)?;
        if data.len() as u64 != nbytes {
            return Err(LlmwWriteError::DataLength {
                name: name.to_owned(),
                expected: nbytes,
                got: data.len() as u64,
            });
        }
        self.push_tensor(name, dtype, dims, nbytes, Data::Slice(data));
        Ok(self)
    }

    /// Adds a tensor whose data is read from `reader` during the write, through a fixed 64 KiB
    /// buffer (memory stays bounded whatever the tensor size). The reader must yield exactly
    /// the bytes `dtype` × `dims` requires (the length is implied, so it is not a parameter):
    /// fewer is [`LlmwWriteError::ReaderTooShort`], more is [`LlmwWriteError::ReaderTooLong`] (one
    /// byte past the end is read to find out).
    pub fn add_tensor_from_reader<R: Read + 'd>(
        &mut self,
        name: &str,
        dtype: GgmlType,
        dims: &[u64],
        reader: R,
    ) -> Result<&mut Self, LlmwWriteError> {
        let nbytes = self.check_tensor(name, dtype, dims)?;
        self.push_tensor(name, dtype, dims, nbytes, Data::Reader(Box::new(reader)));
        Ok(self)
    }

    /// Where everything will go. Fails only with [`LlmwWriteError::FileTooLarge`].
    pub fn layout(&self) -> Result<WriteLayout, LlmwWriteError> {
        let too_large = || LlmwWriteError::FileTooLarge;
        let mut end: u64 = 16;
        for (key, value) in &self.meta {
            let value_size = match value {
                Value::I64(_) | Value::F64(_) => 8,
                Value::Str(s) => str_size(s),
                Value::I64s(v) => 4 + 8 * v.len() as u64,
                Value::F64s(v) => 4 + 8 * v.len() as u64,
                Value::Strs(v) => v
                    .iter()
                    .try_fold(4u64, |acc, s| acc.checked_add(str_size(s)))
                    .ok_or_else(too_large)?,
            };
            end = end
                .checked_add(str_size(key) + 1)
                .and_then(|e| e.checked_add(value_size))
                .ok_or_else(too_large)?;
        }
        for t in &self.tensors {
            let info = str_size(&t.name) + 4 + 4 + 8 * t.dims.len() as u64 + 8 + 8;
            end = end.checked_add(info).ok_or_else(too_large)?;
        }
        let directory_end = end;
        let data_start = align_up(directory_end, ALIGNMENT).ok_or_else(too_large)?;
        let mut tensors = Vec::with_capacity(self.tensors.len());
        let mut next = data_start;
        let mut file_size = directory_end;
        for t in &self.tensors {
            let offset = next;
            file_size = offset.checked_add(t.nbytes).ok_or_else(too_large)?;
            next = align_up(file_size, ALIGNMENT).ok_or_else(too_large)?;
            tensors.push((offset, t.nbytes));
        }
        Ok(WriteLayout { version: self.version(), directory_end, data_start, tensors, file_size })
    }

    /// The header bytes: fixed header, metadata, directory, and (with tensors) the padding
    /// up to the data section.
    fn header_bytes(&self, layout: &WriteLayout) -> Vec<u8> {
        let cap = usize::try_from(layout.data_start).unwrap_or(0);
        let mut out = Vec::with_capacity(cap);
        let put_str = |out: &mut Vec<u8>, s: &str| {
            // Lengths were checked to fit u32 when the item was added.
            out.extend((s.len() as u32).to_le_bytes());
            out.extend(s.as_bytes());
        };
        out.extend(MAGIC);
        out.extend(layout.version.to_le_bytes());
        out.extend((self.tensors.len() as u32).to_le_bytes());
        out.extend((self.meta.len() as u32).to_le_bytes());
        for (key, value) in &self.meta {
            put_str(&mut out, key);
            out.push(value.meta_type().tag());
            match value {
                Value::I64(v) => out.extend(v.to_le_bytes()),
                Value::F64(v) => out.extend(v.to_le_bytes()),
                Value::Str(s) => put_str(&mut out, s),
                Value::I64s(v) => {
                    out.extend((v.len() as u32).to_le_bytes());
                    v.iter().for_each(|x| out.extend(x.to_le_bytes()));
                }
                Value::F64s(v) => {
                    out.extend((v.len() as u32).to_le_bytes());
                    v.iter().for_each(|x| out.extend(x.to_le_bytes()));
                }
                Value::Strs(v) => {
                    out.extend((v.len() as u32).to_le_bytes());
                    v.iter().for_each(|s| put_str(&mut out, s));
                }
            }
        }
        for (t, &(offset, nbytes)) in self.tensors.iter().zip(&layout.tensors) {
            put_str(&mut out, &t.name);
            out.extend(t.dtype.code().to_le_bytes());
            out.extend((t.dims.len() as u32).to_le_bytes());
            t.dims.iter().for_each(|d| out.extend(d.to_le_bytes()));
            out.extend(offset.to_le_bytes());
            out.extend(nbytes.to_le_bytes());
        }
        if !self.tensors.is_empty() {
            out.resize(cap.max(out.len()), 0);
        }
        out
    }

    /// Writes the file to `w` and flushes it; returns the number of bytes written.
    ///
    /// Offsets are absolute from the first byte written, so `w` should be at the start of
    /// the file. Tensor data is written in the order the tensors were added. On error, `w` has
    /// received a prefix of the file: use [`write_to_path`](Self::write_to_path) to never
    /// leave a half-written file behind.
    pub fn write_to<W: Write>(self, mut w: W) -> Result<u64, LlmwWriteError> {
        let layout = self.layout()?;
        let header = self.header_bytes(&layout);
        w.write_all(&header)?;
        let mut pos = header.len() as u64;
        let mut copy_buf = Vec::new();
        let zeros = [0u8; ALIGNMENT as usize];
        for (t, &(offset, nbytes)) in self.tensors.into_iter().zip(&layout.tensors) {
            // Zero padding up to this tensor's offset (less than 64 bytes).
            let pad = usize::try_from(offset.saturating_sub(pos)).unwrap_or(0);
            w.write_all(zeros.get(..pad).unwrap_or_default())?;
            match t.data {
                Data::Slice(data) => w.write_all(data)?,
                Data::Reader(mut reader) => {
                    if copy_buf.is_empty() {
                        copy_buf = vec![0u8; COPY_BUF];
                    }
                    copy_exact(&t.name, &mut reader, &mut w, nbytes, &mut copy_buf)?;
                }
            }
            pos = offset + nbytes;
        }
        w.flush()?;
        Ok(pos)
    }

    /// Writes the file into a new `Vec`.
    pub fn to_vec(self) -> Result<Vec<u8>, LlmwWriteError> {
        let mut out = Vec::new();
        self.write_to(&mut out)?;
        Ok(out)
    }

    /// Writes the file to `path` atomically: into a new temporary file in the same directory,
    /// which is flushed, synced to disk, and then renamed over `path`. On any error the
    /// temporary file is removed, so `path` is either untouched or the complete new file —
    /// never a half-written one (and a reader that has the old file mapped keeps its bytes).
    /// Returns the number of bytes written.
    pub fn write_to_path(self, path: impl AsRef<FsPath>) -> Result<u64, LlmwWriteError> {
        let dest = path.as_ref();
        let (tmp_path, file) = create_temp(dest)?;
        let result = (|| {
            let mut out = BufWriter::with_capacity(COPY_BUF, &file);
            let n = self.write_to(&mut out)?;
            out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            fs::rename(&tmp_path, dest)?;
            Ok(n)
        })();
        drop(file);
        match result {
            Ok(n) => {
                sync_parent(dest);
                Ok(n)
            }
            Err(e) => {
                // Best effort: the write already failed, and that error is the one to report.
                let _ = fs::remove_file(&tmp_path);
                Err(e)
            }
        }
    }
}

/// Copies exactly `nbytes` from `reader` to `w` through `buf`, and checks that the reader
/// has nothing more.
fn copy_exact(
    name: &str,
    reader: &mut dyn Read,
    w: &mut impl Write,
    nbytes: u64,
    buf: &mut [u8],
) -> Result<(), LlmwWriteError> {
    let mut done = 0u64;
    while done < nbytes {
        let want = usize::try_from(nbytes - done).unwrap_or(usize::MAX).min(buf.len());
        let chunk = buf.get_mut(..want).unwrap_or_default();
        let n = match reader.read(chunk) {
            Ok(0) => {
                return Err(LlmwWriteError::ReaderTooShort {
                    name: name.to_owned(),
                    expected: nbytes,
                    got: done,
                });
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        w.write_all(chunk.get(..n).unwrap_or_default())?;
        done += n as u64;
    }
    let mut probe = [0u8; 1];
    loop {
        match reader.read(&mut probe) {
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(LlmwWriteError::ReaderTooLong {
                    name: name.to_owned(),
                    expected: nbytes,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Creates a new, uniquely named temporary file next to `dest`.
fn create_temp(dest: &FsPath) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let file_name = dest.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the destination path has no file name")
    })?;
    let dir = dest.parent().unwrap_or_else(|| FsPath::new(""));
    let pid = std::process::id();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut name = std::ffi::OsString::from(".");
        name.push(file_name);
        name.push(format!(".{pid}-{n}.tmp"));
        let tmp = dir.join(name);
        match File::options().write(true).create_new(true).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Makes the rename durable: syncs the destination's directory (Unix; best effort — the file
/// itself is complete and synced either way).
fn sync_parent(dest: &FsPath) {
    #[cfg(unix)]
    {
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => FsPath::new("."),
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = dest;
}
