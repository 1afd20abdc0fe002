//! [`SplitFile`]: one [`WeightSource`] over every shard of a split set.

#[cfg(feature = "file")]
use std::io;
use std::path::{Path, PathBuf};

use sipllm_format::NameIndex;

use crate::MetaStr;
use crate::error::{SplitSetError, StreamError, StreamErrorKind, TensorError};
use crate::gguf_file::GgufFile;
use crate::meta::Meta;
#[cfg(feature = "file")]
use crate::options::OpenOptions;
use crate::source::{SourceTensor, WeightSource};
#[cfg(feature = "file")]
use crate::split::name::ShardName;
use crate::split::{KEY_COUNT, KEY_NO, KEY_TENSORS_COUNT, SplitKeys};
use crate::window::HeaderStats;

/// A split GGUF set opened as one [`WeightSource`].
///
/// # The virtual address space
///
/// The set reads as the **concatenation of its shards**, in `split.no` order: shard `i`'s
/// bytes are mapped at the virtual base `file_size(0) + … + file_size(i - 1)`
/// ([`shard_base`](Self::shard_base)), and [`file_size`](WeightSource::file_size) is the sum
/// of the shards' sizes. So
///
/// * [`SourceTensor::abs_offset`] is virtual — the shard's base plus the tensor's absolute
///   offset in its shard file — and unique across the set, and
///   [`read_raw_at`](WeightSource::read_raw_at)`(t.abs_offset + k, …)` reads a part of `t` as
///   it does for a single file;
/// * [`read_raw_at`](WeightSource::read_raw_at) may read any range of the concatenation; a
///   range that crosses from one shard into the next is served by one read per shard
///   (it then contains the end of one file and the start of the next, which is what the
///   concatenation holds). [`locate`](Self::locate) turns a virtual offset into
///   (shard, offset in the shard file).
///
/// Errors of a read name the shard file and the offset **in that file**.
///
/// # Tensors and metadata
///
/// [`tensors`](WeightSource::tensors) lists every tensor of every shard, in shard order and
/// each shard's directory order; [`find`](WeightSource::find) searches them all (names are
/// unique across the set: checked at open). Metadata is the first shard's, as stored — the
/// split keys included: `meta("split.count")` says the model is a set of that many files,
/// and every other key is the model's.
///
/// # Opening
///
/// [`open`](Self::open) takes any shard and finds the others from its name
/// (`<prefix>-NNNNN-of-NNNNN.gguf`); [`open_paths`](Self::open_paths) takes the files
/// explicitly (names are then not consulted; the order comes from `split.no`);
/// [`from_files`](Self::from_files) takes shards already opened (from memory, say). Every
/// shard is opened like a single GGUF file — header only, every tensor checked to lie inside
/// its shard — and then the set is checked: a missing shard
/// ([`SplitSetError::MissingShard`]), a name that disagrees with `split.no` or
/// `split.count` ([`SplitSetError::NameMismatch`]), a `split.count` or
/// `split.tensors.count` that differs from the first shard's
/// ([`SplitSetError::KeyMismatch`]), a tensor name in two shards
/// ([`SplitSetError::DuplicateTensor`]), a total that differs from `split.tensors.count`
/// ([`SplitSetError::TensorCount`]), and the split keys' presence and types.
#[derive(Debug)]
pub struct SplitFile {
    shards: Vec<Shard>,
    tensors: Vec<SourceTensor>,
    /// Per tensor of `tensors`: (shard, index in the shard's `tensors()`).
    locs: Vec<(u32, u32)>,
    names: NameIndex,
    file_size: u64,
    tensors_count: i32,
}

#[derive(Debug)]
struct Shard {
    file: GgufFile,
    base: u64,
}

/// A shard opened but not yet checked against the set.
struct Opened {
    file: GgufFile,
    keys: SplitKeys,
}

impl Opened {
    #[cfg(feature = "file")]
    fn open(path: &Path, options: &OpenOptions) -> Result<Opened, StreamError> {
        let file = GgufFile::open(path, options)?;
        Opened::new(file)
    }

    fn new(file: GgufFile) -> Result<Opened, StreamError> {
        let keys = SplitKeys::read(file.gguf(), file.path())?;
        Ok(Opened { file, keys })
    }

    fn path(&self) -> Option<PathBuf> {
        self.file.path().map(Path::to_path_buf)
    }

    /// `split.no` and `split.count`, which every shard must have.
    fn no_and_count(&self) -> Result<(u16, u16), StreamError> {
        let missing = |key| StreamError::from(SplitSetError::KeyMissing { path: self.path(), key });
        let no = self.keys.no.ok_or_else(|| missing(KEY_NO))?;
        let count = self.keys.count.ok_or_else(|| missing(KEY_COUNT))?;
        Ok((no, count))
    }
}

impl SplitFile {
    /// Opens the split set that the file at `path` — any of its shards — belongs to.
    ///
    /// The other shards' paths come from `path`'s name, `<prefix>-NNNNN-of-NNNNN.gguf`
    /// ([`SplitSetError::BadName`] if it has another form). A file that is not a shard of a
    /// set of two or more (`split.count` absent or ≤ 1) is [`SplitSetError::NotASet`]; open
    /// it with [`Model::open`](crate::Model::open), which takes both.
    #[cfg(feature = "file")]
    pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<SplitFile, StreamError> {
        let path = path.as_ref();
        let opened = Opened::open(path, options)?;
        if !opened.keys.is_set() {
            return Err(StreamError::from(SplitSetError::NotASet {
                path: Some(path.to_path_buf()),
                count: opened.keys.count,
            }));
        }
        SplitFile::from_shard(path, opened.file, options)
    }

    /// Opens the set of an already opened shard at `path` (its `split.count` may be 1: a set of
    /// one file, which the write side's merge accepts).
    ///
    /// # Errors
    ///
    /// As [`SplitFile::open`], for the other shards.
    #[cfg(feature = "file")]
    pub fn from_shard(
        path: &Path,
        file: GgufFile,
        options: &OpenOptions,
    ) -> Result<SplitFile, StreamError> {
        let given = Opened::new(file)?;
        let (no, count) = given.no_and_count()?;
        check_index(&given, no, count)?;
        let Some(name) = ShardName::parse(path) else {
            return Err(StreamError::from(SplitSetError::BadName {
                path: path.to_path_buf(),
                split_no: no,
                count,
            }));
        };
        if name.number != u64::from(no) + 1 || name.count != u64::from(count) {
            return Err(StreamError::from(SplitSetError::NameMismatch {
                path: path.to_path_buf(),
                name_number: name.number,
                name_count: name.count,
                split_no: no,
                count,
            }));
        }
        ensure_open_files(path, count)?;
        let mut given = Some(given);
        let mut shards = Vec::with_capacity(usize::from(count));
        for i in 0..count {
            if i == no
                && let Some(g) = given.take()
            {
                shards.push(g);
                continue;
            }
            let shard_path = name.path_of(u64::from(i));
            let opened = match Opened::open(&shard_path, options) {
                Ok(o) => o,
                Err(e)
                    if matches!(e.kind(), StreamErrorKind::Open { source }
                        if source.kind() == io::ErrorKind::NotFound) =>
                {
                    return Err(StreamError::from(SplitSetError::MissingShard {
                        set: path.to_path_buf(),
                        missing: Some(shard_path),
                        split_no: i,
                        count,
                    }));
                }
                Err(e) => return Err(e),
            };
            let (shard_no, shard_count) = opened.no_and_count()?;
            check_index(&opened, shard_no, shard_count)?;
            if shard_count != count {
                return Err(StreamError::from(SplitSetError::KeyMismatch {
                    path: Some(shard_path),
                    key: KEY_COUNT,
                    expected: count.into(),
                    found: shard_count.into(),
                    reference: Some(path.to_path_buf()),
                }));
            }
            if shard_no != i {
                return Err(StreamError::from(SplitSetError::NameMismatch {
                    path: shard_path,
                    name_number: u64::from(i) + 1,
                    name_count: u64::from(count),
                    split_no: shard_no,
                    count,
                }));
            }
            shards.push(opened);
        }
        SplitFile::assemble(shards)
    }

    /// Opens a set from an explicit list of its files, in any order: the order is taken from
    /// each file's `split.no`, and the names are not consulted (content-addressed caches store
    /// shards under hashes). Every `split.no` from 0 to `split.count - 1` must be given once.
    #[cfg(feature = "file")]
    pub fn open_paths<P: AsRef<Path>>(
        paths: &[P],
        options: &OpenOptions,
    ) -> Result<SplitFile, StreamError> {
        if let Some(first) = paths.first() {
            let count = u16::try_from(paths.len()).unwrap_or(u16::MAX);
            ensure_open_files(first.as_ref(), count)?;
        }
        let files =
            paths.iter().map(|p| GgufFile::open(p, options)).collect::<Result<Vec<_>, _>>()?;
        SplitFile::from_files(files)
    }

    /// Makes a set of shards already opened (files or memory sources), in any order; checked
    /// as [`open_paths`](Self::open_paths). The first file given is the reference for
    /// `split.count`, and names the set in errors.
    pub fn from_files(files: Vec<GgufFile>) -> Result<SplitFile, StreamError> {
        let mut opened = files.into_iter().map(Opened::new).collect::<Result<Vec<_>, _>>()?;
        let Some(first) = opened.first() else {
            return Err(StreamError::from(SplitSetError::NotASet { path: None, count: None }));
        };
        let reference = first.path();
        let (_, count) = first.no_and_count()?;
        if count == 0 {
            return Err(StreamError::from(SplitSetError::NotASet {
                path: reference,
                count: Some(count),
            }));
        }
        let mut slots: Vec<Option<Opened>> = (0..count).map(|_| None).collect();
        for o in opened.drain(..) {
            let (no, c) = o.no_and_count()?;
            if c != count {
                return Err(StreamError::from(SplitSetError::KeyMismatch {
                    path: o.path(),
                    key: KEY_COUNT,
                    expected: count.into(),
                    found: c.into(),
                    reference,
                }));
            }
            let bad_index = || {
                StreamError::from(SplitSetError::BadIndex { path: o.path(), split_no: no, count })
            };
            let slot = slots.get_mut(usize::from(no)).ok_or_else(bad_index)?;
            if let Some(earlier) = slot {
                return Err(StreamError::from(SplitSetError::DuplicateShard {
                    first: earlier.path(),
                    second: o.path(),
                    split_no: no,
                }));
            }
            *slot = Some(o);
        }
        let mut shards = Vec::with_capacity(slots.len());
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Some(o) => shards.push(o),
                None => {
                    return Err(StreamError::from(SplitSetError::MissingShard {
                        set: reference.unwrap_or_default(),
                        missing: None,
                        split_no: u16::try_from(i).unwrap_or(u16::MAX),
                        count,
                    }));
                }
            }
        }
        SplitFile::assemble(shards)
    }

    /// Checks the whole set (shards in `split.no` order) and builds the combined tensor list.
    fn assemble(shards: Vec<Opened>) -> Result<SplitFile, StreamError> {
        let first = shards
            .first()
            .ok_or(StreamError::from(SplitSetError::NotASet { path: None, count: None }))?;
        let first_path = first.path();
        let tensors_count = first.keys.tensors_count.ok_or_else(|| {
            StreamError::from(SplitSetError::KeyMissing {
                path: first_path.clone(),
                key: KEY_TENSORS_COUNT,
            })
        })?;
        let endian = first.file.gguf().endian();
        for s in shards.iter().skip(1) {
            let found = s.file.gguf().endian();
            if found != endian {
                return Err(StreamError::from(SplitSetError::EndianMismatch {
                    path: s.path(),
                    expected: endian,
                    found,
                    reference: first_path.clone(),
                }));
            }
            if let Some(n) = s.keys.tensors_count
                && n != tensors_count
            {
                return Err(StreamError::from(SplitSetError::KeyMismatch {
                    path: s.path(),
                    key: KEY_TENSORS_COUNT,
                    expected: tensors_count.into(),
                    found: n.into(),
                    reference: first_path.clone(),
                }));
            }
        }
        let total: usize = shards.iter().map(|s| s.file.tensors().len()).sum();
        if u32::try_from(total).is_err() || u32::try_from(shards.len()).is_err() {
            return Err(StreamError::from(StreamErrorKind::TooLarge {
                what: "tensor list".into(),
                bytes: total as u64,
            }));
        }
        let mut tensors: Vec<SourceTensor> = Vec::with_capacity(total);
        let mut locs: Vec<(u32, u32)> = Vec::with_capacity(total);
        let mut names = NameIndex::new();
        let mut base = 0u64;
        let mut out: Vec<Shard> = Vec::with_capacity(shards.len());
        for (s, shard) in shards.into_iter().enumerate() {
            for (j, t) in shard.file.tensors().iter().enumerate() {
                let abs_offset = base.checked_add(t.abs_offset).ok_or_else(|| too_large(base))?;
                let resolve =
                    |k: u32| tensors.get(k as usize).map_or(&[][..], |t| t.name.as_bytes());
                if let Some(k) = names.find(t.name.as_bytes(), resolve) {
                    // The earlier holder is a shard already moved to `out`, or this one.
                    let earlier = locs.get(k as usize).and_then(|&(e, _)| out.get(e as usize));
                    let first = match earlier {
                        Some(e) => e.file.path().map(Path::to_path_buf),
                        None => shard.path(),
                    };
                    let tensor = t.name.clone();
                    return Err(StreamError::from(SplitSetError::DuplicateTensor {
                        tensor,
                        first,
                        second: shard.path(),
                    }));
                }
                let index = tensors.len() as u32;
                names.insert(t.name.as_bytes(), index, |k| {
                    tensors.get(k as usize).map_or(&[][..], |t| t.name.as_bytes())
                });
                tensors.push(SourceTensor { abs_offset, ..t.clone() });
                locs.push((s as u32, j as u32));
            }
            let size = shard.file.file_size();
            out.push(Shard { file: shard.file, base });
            base = base.checked_add(size).ok_or_else(|| too_large(base))?;
        }
        if i64::from(tensors_count) != tensors.len() as i64 {
            return Err(StreamError::from(SplitSetError::TensorCount {
                path: first_path,
                declared: tensors_count.into(),
                found: tensors.len() as u64,
                shards: u16::try_from(out.len()).unwrap_or(u16::MAX),
            }));
        }
        Ok(SplitFile { shards: out, tensors, locs, names, file_size: base, tensors_count })
    }

    /// The shards, in `split.no` order.
    pub fn shards(&self) -> impl ExactSizeIterator<Item = &GgufFile> + '_ {
        self.shards.iter().map(|s| &s.file)
    }

    /// Shard `i` (its `split.no`).
    pub fn shard(&self, i: usize) -> Option<&GgufFile> {
        self.shards.get(i).map(|s| &s.file)
    }

    /// The number of shards (`split.count`).
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// The first shard: the model's metadata.
    pub fn first(&self) -> &GgufFile {
        // A set has at least one shard: `assemble` refuses an empty list.
        &self.shards[0].file
    }

    /// The shards' paths, in order (`None` for shards from memory sources).
    pub fn paths(&self) -> impl ExactSizeIterator<Item = Option<&Path>> + '_ {
        self.shards.iter().map(|s| s.file.path())
    }

    /// The path of the first shard, which names the set.
    pub fn path(&self) -> Option<&Path> {
        self.first().path()
    }

    /// Where shard `i`'s bytes start in the set's virtual address space.
    pub fn shard_base(&self, i: usize) -> Option<u64> {
        self.shards.get(i).map(|s| s.base)
    }

    /// `split.tensors.count` of the first shard.
    pub fn declared_tensors(&self) -> i32 {
        self.tensors_count
    }

    /// The shard holding virtual offset `abs_offset`, and the offset in that shard's file.
    pub fn locate(&self, abs_offset: u64) -> Option<(usize, u64)> {
        if abs_offset >= self.file_size {
            return None;
        }
        let i = self.shards.partition_point(|s| s.base <= abs_offset).checked_sub(1)?;
        let base = self.shards.get(i)?.base;
        Some((i, abs_offset - base))
    }

    /// The shard holding `tensor` (one of this set's [`tensors`](WeightSource::tensors)) and
    /// the shard's own description of it (offsets in the shard file).
    pub fn shard_tensor(&self, tensor: &SourceTensor) -> Option<(usize, &SourceTensor)> {
        let i = self.names.find(tensor.name.as_bytes(), |k| name_of(&self.tensors, k))? as usize;
        if self.tensors.get(i) != Some(tensor) {
            return None;
        }
        let &(s, j) = self.locs.get(i)?;
        let shard = self.shards.get(s as usize)?;
        Some((s as usize, shard.file.tensors().get(j as usize)?))
    }

    /// What opening read, over all shards: reads, bytes and buffer capacity summed; the data
    /// offset is the first shard's.
    pub fn header_stats(&self) -> HeaderStats {
        let mut stats = self.first().header_stats();
        for s in self.shards.iter().skip(1) {
            let h = s.file.header_stats();
            stats.reads = stats.reads.saturating_add(h.reads);
            stats.bytes_read = stats.bytes_read.saturating_add(h.bytes_read);
            stats.capacity = stats.capacity.saturating_add(h.capacity);
        }
        stats
    }

    fn not_in_source(tensor: &SourceTensor) -> StreamError {
        StreamError::from(TensorError::NotInSource {
            tensor: tensor.name.clone(),
            offset: tensor.abs_offset,
        })
    }
}

impl WeightSource for SplitFile {
    fn tensors(&self) -> &[SourceTensor] {
        &self.tensors
    }

    fn find(&self, name: &str) -> Option<&SourceTensor> {
        let i = self.names.find(name.as_bytes(), |k| name_of(&self.tensors, k))?;
        self.tensors.get(i as usize)
    }

    fn read_raw(&self, tensor: &SourceTensor, dst: &mut [u8]) -> Result<usize, StreamError> {
        let (s, local) = self.shard_tensor(tensor).ok_or_else(|| Self::not_in_source(tensor))?;
        let shard = self.shards.get(s).ok_or_else(|| Self::not_in_source(tensor))?;
        shard.file.read_raw(local, dst)
    }

    fn read_raw_at(&self, abs_offset: u64, dst: &mut [u8]) -> Result<(), StreamError> {
        let len = dst.len() as u64;
        if abs_offset.checked_add(len).is_none_or(|end| end > self.file_size) {
            return Err(StreamError::new(
                self.path().map(Path::to_path_buf),
                StreamErrorKind::OutOfBounds { offset: abs_offset, len, file_size: self.file_size },
            ));
        }
        let mut pos = abs_offset;
        let mut rest = dst;
        while !rest.is_empty() {
            let Some((s, local)) = self.locate(pos) else { break };
            let Some(shard) = self.shards.get(s) else { break };
            let room = shard.file.file_size().saturating_sub(local);
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(rest.len());
            if n == 0 {
                break;
            }
            let (piece, tail) = rest.split_at_mut(n);
            shard.file.read_raw_at(local, piece)?;
            rest = tail;
            pos += n as u64;
        }
        if !rest.is_empty() {
            // Unreachable with the bounds check above; kept so a logic error cannot return
            // unfilled bytes as data.
            return Err(StreamError::new(
                self.path().map(Path::to_path_buf),
                StreamErrorKind::OutOfBounds { offset: abs_offset, len, file_size: self.file_size },
            ));
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        self.first().meta(key)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        self.first().metadata()
    }

    fn prefetch(&self, tensor: &SourceTensor) -> Result<(), StreamError> {
        let (s, local) = self.shard_tensor(tensor).ok_or_else(|| Self::not_in_source(tensor))?;
        let shard = self.shards.get(s).ok_or_else(|| Self::not_in_source(tensor))?;
        shard.file.prefetch(local)
    }

    /// Each shard's part of the range, in its own file's offsets.
    fn prefetch_range(&self, abs_offset: u64, len: u64) -> Result<(), StreamError> {
        let end = abs_offset.saturating_add(len).min(self.file_size);
        let mut pos = abs_offset;
        while pos < end {
            let Some((s, local)) = self.locate(pos) else { break };
            let Some(shard) = self.shards.get(s) else { break };
            let room = shard.file.file_size().saturating_sub(local);
            if room == 0 {
                break;
            }
            let n = room.min(end - pos);
            shard.file.prefetch_range(local, n)?;
            pos += n;
        }
        Ok(())
    }

    fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Every shard's: opening refuses a set of mixed byte orders.
    fn endian(&self) -> sipllm_gguf::Endian {
        self.first().gguf().endian()
    }
}

/// Descriptors kept free beside a set's shards (standard streams, an output and its
/// temporary, directories synced, the engine's own files).
#[cfg(all(feature = "file", unix))]
const SPARE_FILES: u64 = 64;

/// Makes room for a set of `count` shards, each held open while the set is (so a shard
/// replaced on disk meanwhile cannot change what is read): raises the soft open-file limit
/// (`RLIMIT_NOFILE`) toward the hard one where it is too low, as Go's runtime does at
/// start-up. A process-wide change, made only when needed and only upward.
///
/// # Errors
///
/// [`SplitSetError::TooManyFiles`] when even the hard limit is too low; nothing is opened.
#[cfg(feature = "file")]
fn ensure_open_files(set: &Path, count: u16) -> Result<(), StreamError> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let needed = u64::from(count).saturating_add(SPARE_FILES);
        let limit = getrlimit(Resource::Nofile);
        let Some(current) = limit.current else { return Ok(()) };
        if current >= needed {
            return Ok(());
        }
        let raised = limit.maximum.map_or(needed, |max| max.min(needed));
        if raised > current {
            let _ = setrlimit(
                Resource::Nofile,
                Rlimit { current: Some(raised), maximum: limit.maximum },
            );
        }
        let now = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
        if now < needed {
            return Err(StreamError::from(SplitSetError::TooManyFiles {
                set: set.to_path_buf(),
                count,
                limit: now,
            }));
        }
    }
    #[cfg(not(unix))]
    let _ = (set, count);
    Ok(())
}

#[cfg(feature = "file")]
fn check_index(o: &Opened, no: u16, count: u16) -> Result<(), StreamError> {
    if no >= count {
        return Err(StreamError::from(SplitSetError::BadIndex {
            path: o.path(),
            split_no: no,
            count,
        }));
    }
    Ok(())
}

fn too_large(base: u64) -> StreamError {
    StreamError::from(StreamErrorKind::TooLarge {
        what: "split set address space".into(),
        bytes: base,
    })
}

fn name_of(tensors: &[SourceTensor], i: u32) -> &[u8] {
    tensors.get(i as usize).map_or(&[], |t| t.name.as_bytes())
}
