//! Writing split sets: [`split_file`] (one file → shards) and [`merge`] (shards → one file).

use std::borrow::Cow;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use sipllm_gguf::writer::Value;
use sipllm_gguf::{Gguf, ggml::align_up, writer::GgufWriter, writer::TensorDesc};

use sipllm_streaming::split::{
    KEY_COUNT, KEY_NO, KEY_TENSORS_COUNT, SPLIT_KEYS, SplitFile, SplitKeys, shard_path,
};
use sipllm_streaming::{
    GgufFile, OpenOptions, SplitSetError, StreamError, StreamErrorKind, WeightSource,
};

use crate::error::{SplitError, SplitErrorKind, SplitRefusal, WriteError, WriteErrorKind};
use crate::identity::{self, refuse_output_is_open_file};
use crate::write::{
    AtomicFile, ClosedTemp, GgufFileBuilder, TensorData, remove_stale_temps, sync_dir,
};

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

/// One shard of a planned split ([`plan_split`]): nothing is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedShard {
    /// Where it would be written.
    pub path: PathBuf,
    /// Tensors in it.
    pub tensors: usize,
    /// Its tensor data as [`SplitLimit::Size`] counts it (each tensor padded to
    /// [`SIZE_PADDING`]).
    pub data_bytes: u64,
    /// The largest tensor in it (its padded size), when it has one.
    pub largest: Option<(String, u64)>,
}

impl PlannedShard {
    /// True when the shard holds more tensor data than a [`SplitLimit::Size`] limit: only a
    /// tensor larger than the limit does that (a tensor is never split across shards).
    pub fn over(&self, limit: SplitLimit) -> bool {
        matches!(limit, SplitLimit::Size(n) if self.data_bytes > n)
    }
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
/// use sipllm_edit::split::{SplitLimit, plan_shards};
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

/// What every split does before it writes: the input opened and checked, the plan made.
struct Prepared {
    input: GgufFile,
    sizes: Vec<u64>,
    plan: Vec<Range<usize>>,
    count: u16,
    total: i32,
    dir: PathBuf,
    prefix: PathBuf,
}

fn prepare(src: &Path, options: &SplitOptions) -> Result<Prepared, SplitError> {
    let refuse = |reason: SplitRefusal| SplitError::at(src, SplitErrorKind::Refused { reason });
    let input = GgufFile::open(src, &options.open)?;
    let keys = SplitKeys::read(input.gguf(), Some(src))?;
    if keys.is_set() {
        return Err(SplitError::at(
            src,
            SplitErrorKind::AlreadySplit {
                split_no: keys.no.unwrap_or(0),
                count: keys.count.unwrap_or(0),
            },
        ));
    }
    match options.limit {
        SplitLimit::Tensors(0) => return Err(refuse(SplitRefusal::ZeroTensorLimit)),
        SplitLimit::Size(0) => return Err(refuse(SplitRefusal::ZeroSizeLimit)),
        _ => {}
    }
    let gguf = input.gguf();
    let mut sizes = Vec::with_capacity(gguf.tensor_infos().len());
    for t in gguf.tensors() {
        let size = t.info.nbytes().ok_or_else(|| {
            refuse(SplitRefusal::UnknownSize {
                tensor: t.name.to_string_lossy().into_owned(),
                ggml_type: t.info.ggml_type(),
            })
        })?;
        sizes.push(size);
    }
    if sizes.is_empty() {
        return Err(refuse(SplitRefusal::NoTensors));
    }
    let total = i32::try_from(sizes.len())
        .map_err(|_| refuse(SplitRefusal::TooManyTensors { tensors: sizes.len() }))?;
    let plan = plan_shards(&sizes, options.limit, options.no_tensor_first_split);
    let count = u16::try_from(plan.len())
        .map_err(|_| refuse(SplitRefusal::TooManyShards { shards: plan.len() }))?;
    if let Some(k) = plan.iter().enumerate().position(|(k, r)| r.is_empty() && k > 0) {
        return Err(refuse(SplitRefusal::EmptyShard { shard: k + 1 }));
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
    .ok_or_else(|| refuse(SplitRefusal::NoFileName))?;
    let prefix = dir.join(stem);
    Ok(Prepared { input, sizes, plan, count, total, dir, prefix })
}

/// Plans the split of `src` as [`split_file`] would make it — the same checks and refusals,
/// the same shard names and contents — and writes nothing (`sipllm split --dry-run`).
///
/// # Errors
///
/// As [`split_file`]'s refusals.
pub fn plan_split(src: &Path, options: &SplitOptions) -> Result<Vec<PlannedShard>, SplitError> {
    let p = prepare(src, options)?;
    let gguf = p.input.gguf();
    let shards = p.plan.iter().enumerate().map(|(k, range)| {
        let padded = |n: u64| align_up(n, SIZE_PADDING).unwrap_or(u64::MAX);
        let mut largest: Option<(String, u64)> = None;
        let mut data_bytes = 0u64;
        for (t, &size) in gguf
            .tensors()
            .skip(range.start)
            .take(range.len())
            .zip(p.sizes.get(range.clone()).unwrap_or_default())
        {
            let n = padded(size);
            data_bytes = data_bytes.saturating_add(n);
            if largest.as_ref().is_none_or(|(_, m)| n > *m) {
                largest = Some((t.name.to_string_lossy().into_owned(), n));
            }
        }
        let no = u16::try_from(k).unwrap_or(u16::MAX);
        PlannedShard {
            path: shard_path(&p.prefix, no, p.count),
            tensors: range.len(),
            data_bytes,
            largest,
        }
    });
    Ok(shards.collect())
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
/// verbatim), and tensor data is copied file to file in the kernel (`copy_range`), holes kept,
/// from the descriptor `src` was parsed through.
///
/// The set is replaced atomically as a set: every shard is first written complete to a
/// temporary (synced, closed); only then is an old first shard of the same name removed and
/// the temporaries renamed, the last shard first and the first shard last. At no instant does
/// a first shard stand beside shards of another run, so a kill leaves the old set, the new
/// set, or a set without its first shard (refused as incomplete) — never a mix that
/// validates. One split writes into a directory at a time (it holds the directory's `flock`
/// throughout; a second is [`SplitErrorKind::Busy`] before it touches a file), so the removals
/// below only ever take this run's own files. Temporaries a killed earlier run left for these
/// names are removed first ([`crate::write::remove_stale_temps`]: those of dead processes
/// that nobody holds locked). If a shard fails, nothing is renamed; if a rename fails, the
/// shards already renamed are removed again.
///
/// Refused: a shard name that is the input ([`WriteErrorKind::OutputIsInput`], by file
/// identity); a file that is already a shard of a set ([`SplitErrorKind::AlreadySplit`]); a
/// limit of 0, a file without tensors, a tensor of unknown size, a plan of more than 65,535
/// shards, and an empty shard other than a metadata-only first ([`SplitErrorKind::Refused`]).
pub fn split_file(src: &Path, options: &SplitOptions) -> Result<Vec<WrittenFile>, SplitError> {
    split_file_with(src, options, &mut |_, _| {})
}

/// [`split_file`], calling `progress(done, total)` with the bytes of tensor data written so
/// far over every shard and their total (as [`GgufFileBuilder::write_into_with`](crate::GgufFileBuilder::write_into_with)).
pub fn split_file_with(
    src: &Path,
    options: &SplitOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<WrittenFile>, SplitError> {
    let refuse = |reason: SplitRefusal| SplitError::at(src, SplitErrorKind::Refused { reason });
    let Prepared { input, sizes: _, plan, count, total, dir, prefix } = prepare(src, options)?;
    let gguf = input.gguf();
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(&dir)
            .map_err(|source| WriteError::at(dir.clone(), WriteErrorKind::Create { source }))?;
    }
    // The bytes copied are those of the file whose header was parsed (held open since).
    let data = input.file().ok_or_else(|| refuse(SplitRefusal::NotAFile))?;
    let dests: Vec<PathBuf> = (0..count).map(|no| shard_path(&prefix, no, count)).collect();
    for (k, dest) in dests.iter().enumerate() {
        refuse_output_is_open_file(data, src, dest, shard_what(k))?;
    }
    // One split into a directory at a time: held until the set is in place, so no other
    // split's sweep or rename touches this one's temporaries and shards, nor this one theirs.
    let _set_lock = lock_output_dir(&dir, src)?;
    // Temporaries a killed earlier run left for these names (nobody holds them locked).
    let names: Vec<&std::ffi::OsStr> = dests.iter().filter_map(|d| d.file_name()).collect();
    remove_stale_temps(&dir, &names);

    // Phase 1: every shard complete, synced and closed under a temporary name; the old set,
    // if any, untouched.
    let mut pending: Vec<(ClosedTemp, WrittenFile)> = Vec::with_capacity(plan.len());
    let all = gguf.tensor_infos().iter().filter_map(|t| t.nbytes());
    let data_total = all.fold(0u64, u64::saturating_add);
    let mut before = 0u64;
    for ((k, range), dest) in plan.iter().enumerate().zip(&dests) {
        let no = u16::try_from(k).unwrap_or(u16::MAX);
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
            offsets.push((0, t.info.abs_offset()));
        }
        // Swept above, once for every shard name.
        let mut shard_done = 0u64;
        let (tmp, file_size) = {
            let mut report = |done: u64, _: u64| {
                shard_done = done;
                progress(before.saturating_add(done), data_total);
            };
            write_temp(w, &offsets, &[data], dest, false, &mut report)?
        };
        before = before.saturating_add(shard_done);
        pending.push((tmp, WrittenFile { path: dest.clone(), tensors: range.len(), file_size }));
    }
    rename_set(pending)
}

/// The output directory, open and exclusively locked (`flock`, released when the split ends
/// or dies), or [`SplitErrorKind::Busy`] when another split holds it. Where a directory cannot be
/// opened or locked (no `flock` on the file system), the split goes on unlocked.
fn lock_output_dir(dir: &Path, src: &Path) -> Result<Option<File>, SplitError> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let Ok(handle) = File::open(dir) else { return Ok(None) };
    match sipllm_streaming::lock::try_lock_exclusive(&handle, dir) {
        Ok(()) => Ok(Some(handle)),
        Err(_) => Err(SplitError::at(src, SplitErrorKind::Busy { dir: dir.to_path_buf() })),
    }
}

/// What an output of a split is called in errors.
fn shard_what(k: usize) -> &'static str {
    if k == 0 { "shard 1" } else { "a shard" }
}

/// Phase 2 of a split: the complete temporaries become the set. The old first shard (if a set
/// of this name and count exists) is removed first and the new first shard renamed last, so at
/// every instant a set whose first shard is present is wholly old or wholly new: a kill in
/// between leaves a set without its first shard (refused as incomplete), never a mix that
/// validates. A failure removes the new shards already renamed.
fn rename_set(pending: Vec<(ClosedTemp, WrittenFile)>) -> Result<Vec<WrittenFile>, SplitError> {
    let Some(first_dest) = pending.first().map(|(t, _)| t.dest().to_path_buf()) else {
        return Ok(Vec::new());
    };
    let create_err =
        |path: &Path, source| WriteError::at(path.to_path_buf(), WriteErrorKind::Create { source });
    match std::fs::remove_file(&first_dest) {
        Ok(()) => sync_dir(&first_dest),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(create_err(&first_dest, e).into()),
    }
    let mut written: Vec<Option<WrittenFile>> = Vec::with_capacity(pending.len());
    let mut temps: Vec<Option<ClosedTemp>> = Vec::with_capacity(pending.len());
    for (t, w) in pending {
        temps.push(Some(t));
        written.push(Some(w));
    }
    let mut renamed: Vec<PathBuf> = Vec::new();
    // The last shard first, the first shard last.
    for k in (0..temps.len()).rev() {
        let Some(tmp) = temps.get_mut(k).and_then(Option::take) else { continue };
        let dest = tmp.dest().to_path_buf();
        if let Err(source) = tmp.rename() {
            for p in &renamed {
                // Best effort: a failed split should not leave a partial set behind.
                let _ = std::fs::remove_file(p);
            }
            let offset = written.get(k).and_then(Option::as_ref).map_or(0, |w| w.file_size);
            return Err(WriteError::write(dest, offset, source).into());
        }
        if k == 1 {
            // Every other shard is in place before the first appears.
            sync_dir(&dest);
        }
        renamed.push(dest);
    }
    sync_dir(&first_dest);
    Ok(written.into_iter().flatten().collect())
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
/// file in bounded memory from the descriptors the shards were parsed through (each shard is
/// opened once and held), and `out` is written to a temporary and renamed into place (through
/// a symlink: over the file it points at). `out` must not be one of the shards, by file
/// identity ([`WriteErrorKind::OutputIsInput`]).
pub fn merge(shard: &Path, out: &Path, options: &OpenOptions) -> Result<WrittenFile, SplitError> {
    merge_with(shard, out, options, &mut |_, _| {})
}

/// [`merge`], calling `progress(done, total)` with the bytes of tensor data written so far
/// and their total (as [`GgufFileBuilder::write_into_with`](crate::GgufFileBuilder::write_into_with)).
pub fn merge_with(
    shard: &Path,
    out: &Path,
    options: &OpenOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WrittenFile, SplitError> {
    let first = GgufFile::open(shard, options)?;
    let keys = SplitKeys::read(first.gguf(), Some(shard))?;
    if keys.count.is_none_or(|c| c == 0) {
        return Err(StreamError::from(SplitSetError::NotASet {
            path: Some(shard.to_path_buf()),
            count: keys.count,
        })
        .into());
    }
    let set = SplitFile::from_shard(shard, first, options)?;
    merge_set_with(&set, out, progress)
}

/// [`merge`] of a set already opened ([`SplitFile::open`], [`SplitFile::open_paths`], or
/// [`SplitFile::from_files`] over files): every shard's data is copied from the descriptor its
/// header was read through, held since the set was opened, so a shard replaced on disk
/// meanwhile cannot put its bytes under the old header.
///
/// # Errors
///
/// [`WriteErrorKind::OutputIsInput`] when `out` is one of the shards; [`StreamErrorKind::Open`] for a
/// shard held in memory (not a file); the write's errors.
pub fn merge_set(set: &SplitFile, out: &Path) -> Result<WrittenFile, SplitError> {
    merge_set_with(set, out, &mut |_, _| {})
}

/// [`merge_set`], calling `progress(done, total)` with the bytes of tensor data written so
/// far and their total (as [`GgufFileBuilder::write_into_with`](crate::GgufFileBuilder::write_into_with)).
pub fn merge_set_with(
    set: &SplitFile,
    out: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<WrittenFile, SplitError> {
    let shard = set.path().unwrap_or(Path::new("the set"));
    let mut files: Vec<&File> = Vec::with_capacity(set.shard_count());
    for s in set.shards() {
        let path = s.path().unwrap_or(shard);
        let file = s.file().ok_or_else(|| {
            StreamError::at(
                path.to_path_buf(),
                StreamErrorKind::Open {
                    source: io::Error::new(
                        io::ErrorKind::Unsupported,
                        "the shard is not a local file",
                    ),
                },
            )
        })?;
        refuse_output_is_open_file(file, path, out, "the output")?;
        files.push(file);
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
    let real_out = identity::resolve(out);
    // (`AtomicFile::create` removes what a killed merge into `out` left.)
    let (tmp, file_size) = write_temp(w, &sources, &files, out, true, progress)?;
    tmp.rename().map_err(|source| WriteError::write(out.to_path_buf(), file_size, source))?;
    sync_dir(&real_out);
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

/// Writes `w`'s header and each tensor's data from `files[s]` at offset `o`, for `(s, o)` in
/// `sources` (the writer's tensor order), into a temporary beside `dest`, synced and closed.
fn write_temp(
    w: GgufWriter<'_>,
    sources: &[(usize, u64)],
    files: &[&File],
    dest: &Path,
    sweep: bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(ClosedTemp, u64), SplitError> {
    let mut builder = GgufFileBuilder::new(w);
    for (i, &(s, offset)) in sources.iter().enumerate() {
        if let Some(&file) = files.get(s) {
            builder.set_data(i, TensorData::File { file, offset });
        }
    }
    let out = if sweep { AtomicFile::create(dest) } else { AtomicFile::create_unswept(dest) }
        .map_err(|source| WriteError::at(dest.to_path_buf(), WriteErrorKind::Create { source }))?;
    let stats = builder.write_into_with(&out, progress)?;
    let tmp = out
        .close()
        .map_err(|source| WriteError::write(dest.to_path_buf(), stats.file_size, source))?;
    Ok((tmp, stats.file_size))
}
