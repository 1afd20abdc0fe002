//! Writing split sets: [`split_file`] (one file → shards) and [`merge`] (shards → one file).

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sipllm_gguf::writer::Value;
use sipllm_gguf::{Gguf, GgufWriter, TensorDesc, align_up};

use crate::error::StreamError;
use crate::gguf_file::GgufFile;
use crate::options::OpenOptions;
use crate::source::WeightSource;
use crate::split::name::shard_path;
use crate::split::set::SplitFile;
use crate::split::{KEY_COUNT, KEY_NO, KEY_TENSORS_COUNT, SPLIT_KEYS, SplitKeys};
use crate::write::{GgufFileBuilder, TensorData};

/// The padding [`SplitLimit::Size`] measures tensors with: gguf-split counts each tensor as its
/// size rounded up to 32 bytes (`GGUF_DEFAULT_ALIGNMENT`), whatever the file's alignment.
pub const SIZE_PADDING: u64 = 32;

/// When [`split_file`] starts a new shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitLimit {
    /// At most this many tensors per shard (gguf-split's `--split-max-tensors`).
    Tensors(u64),
    /// At most this many bytes of tensor data per shard, each tensor counted with its size
    /// rounded up to [`SIZE_PADDING`] (gguf-split's `--split-max-size`). Headers are not
    /// counted, so a shard file is larger by its header. A tensor larger than the limit gets a
    /// shard of its own.
    Size(u64),
}

/// How to split a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitOptions {
    /// When to start a new shard.
    pub limit: SplitLimit,
    /// Where the shards go (default: the input's directory; created if missing). They are named
    /// `<stem>-NNNNN-of-NNNNN.gguf`, `<stem>` being the input's name without `.gguf`.
    pub out_dir: Option<PathBuf>,
    /// Make the first shard metadata-only, with no tensors (gguf-split's
    /// `--no-tensor-first-split`, gguf-py's `small_first_shard`): an engine can read the
    /// model's description without touching the weights.
    pub no_tensor_first_split: bool,
    /// How the input is opened.
    pub open: OpenOptions,
}

impl SplitOptions {
    /// Options with `limit` and every default.
    pub fn new(limit: SplitLimit) -> SplitOptions {
        SplitOptions {
            limit,
            out_dir: None,
            no_tensor_first_split: false,
            open: OpenOptions::default(),
        }
    }

    /// Sets the output directory.
    pub fn with_out_dir(mut self, dir: impl Into<PathBuf>) -> SplitOptions {
        self.out_dir = Some(dir.into());
        self
    }

    /// Sets whether the first shard is metadata-only.
    pub fn with_no_tensor_first_split(mut self, yes: bool) -> SplitOptions {
        self.no_tensor_first_split = yes;
        self
    }

    /// Sets how the input is opened.
    pub fn with_open(mut self, open: OpenOptions) -> SplitOptions {
        self.open = open;
        self
    }
}

/// A file [`split_file`] or [`merge`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// Where.
    pub path: PathBuf,
    /// Tensors in it.
    pub tensors: usize,
    /// Its size in bytes.
    pub file_size: u64,
}

/// Distributes tensors of the given byte sizes over shards as gguf-split does: greedily, in
/// their order, a new shard starting when the current one has `Tensors(n)` tensors, or when
/// the next tensor's [`SIZE_PADDING`]-padded size would take it past `Size(n)`. A shard is only
/// closed once it holds a tensor, so no shard is empty — except the first with
/// `no_tensor_first_split`, which holds none, and the single shard of an empty list.
///
/// Returns each shard's range of tensor indices.
///
/// ```
/// use sipllm_streaming::split::{SplitLimit, plan_shards};
///
/// assert_eq!(plan_shards(&[1, 2, 3, 4, 5], SplitLimit::Tensors(2), false), [0..2, 2..4, 4..5]);
/// // 40 bytes count as 64: 64 + 64 > 100, so every tensor opens a new shard.
/// assert_eq!(plan_shards(&[40, 40, 8], SplitLimit::Size(100), true), [0..0, 0..1, 1..3]);
/// ```
pub fn plan_shards(
    sizes: &[u64],
    limit: SplitLimit,
    no_tensor_first_split: bool,
) -> Vec<Range<usize>> {
    let mut shards = Vec::new();
    if no_tensor_first_split {
        shards.push(0..0);
    }
    let (mut start, mut bytes, mut count) = (0usize, 0u64, 0u64);
    for (i, &size) in sizes.iter().enumerate() {
        let padded = align_up(size, SIZE_PADDING).unwrap_or(u64::MAX);
        let full = count > 0
            && match limit {
                SplitLimit::Tensors(n) => count >= n,
                SplitLimit::Size(n) => bytes.saturating_add(padded) > n,
            };
        if full {
            shards.push(start..i);
            (start, bytes, count) = (i, 0, 0);
        }
        bytes = bytes.saturating_add(padded);
        count += 1;
    }
    shards.push(start..sizes.len());
    shards
}

/// Splits the GGUF file at `src` into a set of shards and returns them in order.
///
/// The tensors are distributed by [`plan_shards`]. The first shard holds every metadata pair
/// of `src` — in order, with `general.alignment` if any — followed by `split.no`,
/// `split.count` and `split.tensors.count` (gguf-py's order); the others hold only the three
/// split keys. Each shard keeps `src`'s byte order and version (v1 is written as v3) and is laid
/// out canonically: the first with `src`'s alignment, the others with 32 (they have no
/// `general.alignment`), so every shard is self-consistent (gguf-split pads every shard to 32
/// even when the first declares another alignment).
///
/// Memory stays bounded: headers are serialized from `src`'s parsed header (arrays copied
/// verbatim), and tensor data is copied file to file in the kernel (`copy_range`), holes kept.
/// Each shard is written to a temporary file and renamed into place once complete; if a shard
/// fails, the shards this call already wrote are removed again.
///
/// Refused: a file that is already a shard of a set ([`StreamError::SplitAlreadySplit`]); a
/// limit of 0, a file without tensors, a tensor of unknown size, a plan of more than 65,535
/// shards, and an empty shard other than a metadata-only first ([`StreamError::SplitRefused`]).
pub fn split_file(src: &Path, options: &SplitOptions) -> Result<Vec<WrittenFile>, StreamError> {
    let refuse = |reason: String| StreamError::SplitRefused { path: src.to_path_buf(), reason };
    let input = GgufFile::open(src, &options.open)?;
    let keys = SplitKeys::read(input.gguf(), Some(src))?;
    if keys.is_set() {
        return Err(StreamError::SplitAlreadySplit {
            path: src.to_path_buf(),
            split_no: keys.no.unwrap_or(0),
            count: keys.count.unwrap_or(0),
        });
    }
    match options.limit {
        SplitLimit::Tensors(0) => return Err(refuse("the tensor limit must be at least 1".into())),
        SplitLimit::Size(0) => return Err(refuse("the size limit must be at least 1 byte".into())),
        _ => {}
    }
    let gguf = input.gguf();
    let mut sizes = Vec::with_capacity(gguf.tensor_infos().len());
    for t in gguf.tensors() {
        let size = t.info.nbytes().ok_or_else(|| {
            refuse(format!(
                "tensor {:?} has a type of unknown size ({}), so its bytes cannot be located",
                t.name.to_string_lossy(),
                t.info.ggml_type()
            ))
        })?;
        sizes.push(size);
    }
    if sizes.is_empty() {
        return Err(refuse("the file has no tensors: there is nothing to split".into()));
    }
    let total = i32::try_from(sizes.len()).map_err(|_| {
        refuse(format!("{} tensors do not fit split.tensors.count (INT32)", sizes.len()))
    })?;
    let plan = plan_shards(&sizes, options.limit, options.no_tensor_first_split);
    let count = u16::try_from(plan.len()).map_err(|_| {
        refuse(format!(
            "the limit gives {} shards, but split.count (UINT16) numbers at most 65,535: raise \
             the limit",
            plan.len()
        ))
    })?;
    if let Some(k) = plan.iter().enumerate().position(|(k, r)| r.is_empty() && k > 0) {
        return Err(refuse(format!("shard {} would have no tensors", k + 1)));
    }

    let dir = match &options.out_dir {
        Some(d) => d.clone(),
        // Beside the input; a bare file name has an empty parent, and stays a bare name.
        None => src.parent().unwrap_or(Path::new("")).to_path_buf(),
    };
    let stem = match src.extension() {
        Some(ext) if ext == "gguf" => src.file_stem(),
        _ => src.file_name(),
    }
    .ok_or_else(|| refuse("the path has no file name".into()))?;
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(&dir)
            .map_err(|source| StreamError::Create { path: dir.clone(), source })?;
    }
    let prefix = dir.join(stem);
    let data =
        File::open(src).map_err(|source| StreamError::Open { path: src.to_path_buf(), source })?;

    let mut written: Vec<WrittenFile> = Vec::with_capacity(plan.len());
    let result = (|| {
        for (k, range) in plan.iter().enumerate() {
            let no = u16::try_from(k).unwrap_or(u16::MAX);
            let dest = shard_path(&prefix, no, count);
            if same_file(&dest, src) {
                return Err(refuse(format!("shard {} would overwrite the input", k + 1)));
            }
            let mut w = if k == 0 {
                let mut w = GgufWriter::from_gguf(gguf).pad_tensorless(true);
                w.tensors_mut().clear();
                w
            } else {
                GgufWriter::new().endian(gguf.endian()).version(written_version(gguf))
            };
            w.set(KEY_NO.as_bytes(), Value::Uint16(no));
            w.set(KEY_COUNT.as_bytes(), Value::Uint16(count));
            w.set(KEY_TENSORS_COUNT.as_bytes(), Value::Int32(total));
            let mut offsets = Vec::with_capacity(range.len());
            for t in gguf.tensors().skip(range.start).take(range.len()) {
                w.add_tensor(desc(t.name.as_bytes(), t.info.dims(), t.info.ggml_type()));
                offsets.push(t.info.abs_offset());
            }
            let file_size = write(w, &offsets, &[&data], &dest)?;
            written.push(WrittenFile { path: dest, tensors: range.len(), file_size });
        }
        Ok(())
    })();
    if let Err(e) = result {
        for f in &written {
            // Best effort: a failed split should not leave a partial set behind.
            let _ = std::fs::remove_file(&f.path);
        }
        return Err(e);
    }
    Ok(written)
}

/// Merges the split set that `shard` (any of its shards, normally the first) belongs to into
/// one GGUF file at `out`.
///
/// The output holds the first shard's metadata without the three split keys, and every
/// tensor of every shard in shard order, laid out canonically with the first shard's
/// alignment. For a canonical file `f` without split keys, `merge(split(f)) == f` byte for
/// byte. (gguf-split's merge instead keeps `split.no` and `split.tensors.count` and sets
/// `split.count` to 0.) A set of one file (`split.count = 1`) is accepted.
///
/// The set is opened and checked as [`SplitFile::open`] does; tensor data is copied file to
/// file in bounded memory, and `out` is written to a temporary and renamed into place. `out`
/// must not be one of the shards.
pub fn merge(shard: &Path, out: &Path, options: &OpenOptions) -> Result<WrittenFile, StreamError> {
    let first = GgufFile::open(shard, options)?;
    let keys = SplitKeys::read(first.gguf(), Some(shard))?;
    if keys.count.is_none_or(|c| c == 0) {
        return Err(StreamError::SplitNotASet {
            path: Some(shard.to_path_buf()),
            count: keys.count,
        });
    }
    let set = SplitFile::from_shard(shard, first, options)?;
    let mut files = Vec::with_capacity(set.shard_count());
    for path in set.paths().flatten() {
        if same_file(path, out) {
            return Err(StreamError::SplitRefused {
                path: shard.to_path_buf(),
                reason: format!("the output {} is one of the shards", out.display()),
            });
        }
        files.push(
            File::open(path)
                .map_err(|source| StreamError::Open { path: path.to_path_buf(), source })?,
        );
    }
    let mut w = GgufWriter::from_gguf(set.first().gguf()).pad_tensorless(true);
    for key in SPLIT_KEYS {
        w.remove(key.as_bytes());
    }
    w.tensors_mut().clear();
    let mut sources = Vec::with_capacity(set.tensors().len());
    for (s, file) in set.shards().enumerate() {
        for t in file.gguf().tensors() {
            w.add_tensor(desc(t.name.as_bytes(), t.info.dims(), t.info.ggml_type()));
            sources.push((s, t.info.abs_offset()));
        }
    }
    let refs: Vec<&File> = files.iter().collect();
    let file_size = write_from(w, &sources, &refs, out)?;
    Ok(WrittenFile { path: out.to_path_buf(), tensors: sources.len(), file_size })
}

/// The version a shard other than the first is written with: the input's (v1 becomes v3, as
/// [`GgufWriter::from_gguf`] does).
fn written_version<B: AsRef<[u8]>>(gguf: &Gguf<B>) -> u32 {
    if gguf.version() == 2 { 2 } else { 3 }
}

fn desc<'a>(name: &'a [u8], dims: &[u64], ggml_type: sipllm_gguf::GgmlType) -> TensorDesc<'a> {
    TensorDesc { name: Cow::Borrowed(name), dims: dims.to_vec(), ggml_type }
}

/// Writes `w`'s header and each tensor's data from `files[0]` at `offsets[i]`.
fn write(
    w: GgufWriter<'_>,
    offsets: &[u64],
    files: &[&File],
    dest: &Path,
) -> Result<u64, StreamError> {
    let sources: Vec<(usize, u64)> = offsets.iter().map(|&o| (0, o)).collect();
    write_from(w, &sources, files, dest)
}

/// Writes `w`'s header and each tensor's data from `files[s]` at offset `o`, for `(s, o)` in
/// `sources` (the writer's tensor order).
fn write_from(
    w: GgufWriter<'_>,
    sources: &[(usize, u64)],
    files: &[&File],
    dest: &Path,
) -> Result<u64, StreamError> {
    let mut builder = GgufFileBuilder::new(w);
    for (i, &(s, offset)) in sources.iter().enumerate() {
        if let Some(&file) = files.get(s) {
            builder.set_data(i, TensorData::File { file, offset });
        }
    }
    Ok(builder.write_to_path(dest)?.file_size)
}

/// True when both paths name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
