//! Metadata edits and tensor renames on a GGUF file, without touching tensor data.
//!
//! 1. **Edits** ([`Edit`]) are values: set a pair, delete one, rename a tensor. Constructors
//!    that can fail ([`Edit::rename`], [`Edit::set_file`]) check their argument alone.
//! 2. **Plan** ([`apply`]): a [`GgufWriter::from_gguf`] over the source's whole header, then
//!    each edit in order: a set replaces a value in place or appends the key; deleting a
//!    missing key, renaming a missing tensor or onto an existing name are errors;
//!    `general.alignment` must stay a `u32` power of two (and unchanged in place);
//!    [`PADDING_KEY`] is reserved. Every edit is tried, and **every** one that cannot apply
//!    is reported ([`EditErrors`]), not only the first.
//! 3. **Out of place** ([`write_edited`] then [`Pending::check_and_commit`]): the padding pair
//!    of an earlier in-place edit is removed (the output is canonical), and the
//!    [`GgufFileBuilder`] writes the new header and copies every tensor's bytes from the
//!    source (kernel copies, holes kept) into a temporary beside the destination. The
//!    temporary is re-opened and checked ([`check::check_written`]) and only then renamed over
//!    the destination. Between the two steps the caller drops the source's parsed header, so
//!    the check's re-open does not hold a second copy beside it.
//! 4. **In place** ([`rewrite_in_place`] then [`Rewritten::check`]): [`GgufWriter::pad_to`]
//!    makes the new header end exactly at the data offset (adding a padding pair if it shrank)
//!    or says how many bytes are missing; the tensors must already lie where the new header
//!    puts them. The padding pair goes right after the last edited pair ([`place_padding`]),
//!    so only the blocks between the first edit and the padding change; then the crash-safe
//!    rewrite of [`crate::in_place`], under the caller's exclusive lock.
//!
//! # One call per edit
//!
//! A caller that does not need the steps apart calls [`edit_in_place`] or
//! [`edit_out_of_place`]: each opens the model with the right lock (exclusive in place, shared
//! out of place), refuses a pending header backup, plans, writes and checks, and returns a
//! typed outcome or every error. [`EditOptions::plan_only`] stops after the plan.

mod call;
mod check;
mod error;
mod value;

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use sipllm_gguf::writer::Value;
use sipllm_gguf::{
    GgmlType, Gguf, Limits, ValueType, writer::GgufWriter, writer::HeaderWriteError,
    writer::PADDING_KEY,
};
use sipllm_streaming::lock::ExclusiveLock;
use sipllm_streaming::{GgufFile, ReadAt};

pub use call::{
    EditOptions, InPlace, Input, OutOfPlace, edit_in_place, edit_out_of_place, refuse_pending,
};
pub use check::{SAMPLE, check_in_place, check_tensors, check_written, source_reader};
pub use error::{CheckError, EditError, EditErrors, NameDefect, TensorMismatch, type_label};
pub use value::ValueSummary;

use crate::in_place::rewrite_header_locked;
use crate::write::{AtomicFile, BuildStats, GgufFileBuilder, TensorData};

/// GGUF tensor names must be shorter than this (llama.cpp's `GGML_MAX_NAME`, NUL included).
pub const MAX_NAME: usize = 64;

/// One edit.
#[derive(Debug, Clone, PartialEq)]
pub enum Edit {
    /// Replace or append a pair.
    Set {
        /// The key.
        key: String,
        /// The new value.
        value: Value<'static>,
        /// The file the value was read from ([`Edit::set_file`]).
        from: Option<PathBuf>,
    },
    /// Delete a pair.
    Delete {
        /// The key.
        key: String,
    },
    /// Rename a tensor.
    RenameTensor {
        /// The current name.
        old: String,
        /// The new name.
        new: String,
    },
}

impl Edit {
    /// A tensor rename, once the new name is a valid GGUF tensor name (not empty, shorter
    /// than [`MAX_NAME`] bytes, no NUL).
    ///
    /// # Errors
    ///
    /// [`EditError::BadName`].
    pub fn rename(old: &str, new: &str) -> Result<Edit, EditError> {
        let defect = if new.is_empty() {
            Some(NameDefect::Empty)
        } else if new.len() >= MAX_NAME {
            Some(NameDefect::TooLong(new.len()))
        } else if new.contains('\0') {
            Some(NameDefect::Nul)
        } else {
            None
        };
        match defect {
            Some(defect) => {
                Err(EditError::BadName { old: old.to_owned(), new: new.to_owned(), defect })
            }
            None => Ok(Edit::RenameTensor { old: old.to_owned(), new: new.to_owned() }),
        }
    }

    /// A string value read from the file or stream at `path` (`/dev/stdin`, a FIFO and a
    /// shell's `<(…)` included): at most the parser's string limit
    /// ([`Limits::max_string_len`]) + 1 bytes are read ([`read_capped`](crate::read_capped)),
    /// and they must be UTF-8, so the edited file re-opens.
    ///
    /// # Errors
    ///
    /// [`EditError::ValueFile`], [`EditError::ValueFileNotUtf8`].
    pub fn set_file(key: &str, path: &Path) -> Result<Edit, EditError> {
        let max = Limits::default().max_string_len;
        let bytes = crate::read_capped(path, max).map_err(|source| EditError::ValueFile {
            key: key.to_owned(),
            source: Box::new(source),
        })?;
        if let Err(e) = std::str::from_utf8(&bytes) {
            return Err(EditError::ValueFileNotUtf8 {
                key: key.to_owned(),
                path: path.to_path_buf(),
                valid_up_to: e.valid_up_to(),
            });
        }
        Ok(Edit::Set {
            key: key.to_owned(),
            value: Value::String(Cow::Owned(bytes)),
            from: Some(path.to_path_buf()),
        })
    }
}

/// Where the edited header goes: a new file, or over the old header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A new file: anything goes, the data moves with the header.
    OutOfPlace,
    /// The header is rewritten in place: the alignment (so every tensor's offset) must stay.
    InPlace {
        /// The file's alignment.
        alignment: u32,
    },
}

/// What one edit did (in the order applied).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// A pair was set.
    Set {
        /// The key.
        key: String,
        /// The new value (long strings and arrays summarized).
        value: ValueSummary,
        /// Its type.
        value_type: ValueType,
        /// Its element type, for an array.
        elem_type: Option<ValueType>,
        /// The old value, `None` for a new key.
        was: Option<ValueSummary>,
        /// The file the value was read from.
        from: Option<PathBuf>,
    },
    /// A pair was deleted.
    Deleted {
        /// The key.
        key: String,
    },
    /// A tensor was renamed.
    Renamed {
        /// The old name.
        old: String,
        /// The new name.
        new: String,
    },
    /// An out-of-place edit removed the padding pair an earlier in-place edit added
    /// ([`PADDING_KEY`]): the output is canonical.
    RemovedPadding,
}

/// What applying the edits did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// One change per edit, in order.
    pub changes: Vec<Change>,
    /// `general.architecture` after the edits (what a key's expected type depends on).
    pub architecture: Option<String>,
}

/// Applies `edits` to `writer` in order, trying every edit: the error lists each one that
/// cannot apply.
///
/// # Errors
///
/// [`EditErrors`]: [`EditError::ReservedKey`], the alignment errors, [`EditError::NoSuchKey`],
/// [`EditError::NoSuchTensor`], [`EditError::TensorExists`].
pub fn apply(
    writer: &mut GgufWriter<'_>,
    edits: Vec<Edit>,
    mode: Mode,
) -> Result<Applied, EditErrors> {
    let mut applied = Applied::default();
    let mut errors = Vec::new();
    for edit in edits {
        match apply_one(writer, edit, mode) {
            Ok(change) => applied.changes.push(change),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(EditErrors(errors));
    }
    applied.architecture = match writer.get(b"general.architecture") {
        Some(Value::String(s)) => std::str::from_utf8(s).ok().map(str::to_owned),
        _ => None,
    };
    Ok(applied)
}

fn apply_one(writer: &mut GgufWriter<'_>, edit: Edit, mode: Mode) -> Result<Change, EditError> {
    match edit {
        Edit::Set { key, value, from } => {
            if key == PADDING_KEY {
                return Err(EditError::ReservedKey { key });
            }
            if key == "general.alignment" {
                check_alignment(&value, mode)?;
            }
            let was = writer.get(key.as_bytes()).map(ValueSummary::of);
            let change = Change::Set {
                key: key.clone(),
                value: ValueSummary::of(&value),
                value_type: value.value_type(),
                elem_type: elem_type(&value),
                was,
                from,
            };
            writer.set(key.into_bytes(), value);
            Ok(change)
        }
        Edit::Delete { key } => {
            if key == "general.alignment"
                && let Mode::InPlace { alignment } = mode
                && alignment != sipllm_gguf::decoder::DEFAULT_ALIGNMENT
            {
                return Err(EditError::AlignmentInPlace {
                    from: alignment,
                    to: sipllm_gguf::decoder::DEFAULT_ALIGNMENT,
                    deleted: true,
                });
            }
            if !writer.remove(key.as_bytes()) {
                return Err(EditError::NoSuchKey { key });
            }
            Ok(Change::Deleted { key })
        }
        Edit::RenameTensor { old, new } => {
            let tensors = writer.tensors_mut();
            if tensors.iter().any(|t| t.name.as_ref() == new.as_bytes()) {
                return Err(EditError::TensorExists { old, new });
            }
            let Some(t) = tensors.iter_mut().find(|t| t.name.as_ref() == old.as_bytes()) else {
                return Err(EditError::NoSuchTensor { old, new });
            };
            t.name = Cow::Owned(new.clone().into_bytes());
            Ok(Change::Renamed { old, new })
        }
    }
}

fn check_alignment(value: &Value<'_>, mode: Mode) -> Result<(), EditError> {
    let Value::Uint32(a) = value else {
        return Err(EditError::AlignmentType { found: value.value_type(), elem: elem_type(value) });
    };
    if !a.is_power_of_two() {
        return Err(EditError::AlignmentNotPowerOfTwo { value: *a });
    }
    if let Mode::InPlace { alignment } = mode
        && *a != alignment
    {
        return Err(EditError::AlignmentInPlace { from: alignment, to: *a, deleted: false });
    }
    Ok(())
}

/// The element type of an array value.
pub fn elem_type(v: &Value<'_>) -> Option<ValueType> {
    match v {
        Value::Array { elem_type, .. } => Some(*elem_type),
        Value::View(a) => Some(a.elem_type()),
        _ => None,
    }
}

/// One tensor of the plan: where its bytes come from and where they must end up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Name in the output.
    pub name: String,
    /// Type.
    pub ggml_type: GgmlType,
    /// Row-major shape.
    pub shape: Vec<u64>,
    /// Byte size.
    pub nbytes: u64,
    /// Absolute offset in the source.
    pub from: u64,
    /// Absolute offset in the output.
    pub to: u64,
}

fn plan_tensors(
    writer: &GgufWriter<'_>,
    source: &Gguf<impl AsRef<[u8]>>,
    layout: &sipllm_gguf::writer::Layout,
) -> Vec<Planned> {
    writer
        .tensors()
        .iter()
        .zip(source.tensor_infos())
        .zip(&layout.tensors)
        .map(|((t, src), &(to, nbytes))| Planned {
            name: String::from_utf8_lossy(&t.name).into_owned(),
            ggml_type: t.ggml_type,
            shape: t.dims.iter().rev().copied().collect(),
            nbytes,
            from: src.abs_offset(),
            to,
        })
        .collect()
}

/// What an edit wrote, for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// What each edit did.
    pub applied: Applied,
    /// The header's length before and after.
    pub header: (u64, u64),
    /// The key count before and after.
    pub keys: (usize, usize),
    /// The tensors, as planned (and checked).
    pub planned: Vec<Planned>,
}

/// An out-of-place edit written into a temporary beside its destination, not yet checked
/// nor committed. Dropped, the temporary is removed.
#[derive(Debug)]
pub struct Pending {
    tmp: AtomicFile,
    /// Header length and XXH3 of the header as the writer produced it.
    header_hash: (u64, u64),
    /// What was written.
    pub report: Report,
    /// How the data was copied.
    pub stats: BuildStats,
}

/// Plans `edits` on `src`'s header and writes the result into a temporary beside `out`,
/// copying every tensor's bytes from `file` (the descriptor `src` was parsed through).
/// Nothing is created until every edit has applied and the edited header is valid.
///
/// # Errors
///
/// Every edit that cannot apply ([`apply`]); [`EditError::Invalid`]; [`EditError::Write`].
pub fn write_edited(
    src: &GgufFile,
    file: &File,
    edits: Vec<Edit>,
    out: &Path,
) -> Result<Pending, EditErrors> {
    write_edited_with(src, file, edits, out, &mut |_, _| {})
}

/// [`write_edited`], calling `progress(done, total)` with the bytes of tensor data copied so
/// far and their total (as [`GgufFileBuilder::write_into_with`]).
pub fn write_edited_with(
    src: &GgufFile,
    file: &File,
    edits: Vec<Edit>,
    out: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Pending, EditErrors> {
    let gguf = src.gguf();
    let file_size = src.store().file_size();
    let mut writer = GgufWriter::from_gguf(gguf).pad_tensorless(file_size >= gguf.data_offset());
    let mut applied = apply(&mut writer, edits, Mode::OutOfPlace)?;
    if writer.remove(PADDING_KEY.as_bytes()) {
        applied.changes.push(Change::RemovedPadding);
    }
    let layout = writer.layout().map_err(|source| EditError::Invalid { source })?;
    let planned = plan_tensors(&writer, gguf, &layout);
    let mut hasher = HashWriter::default();
    // Hashed as it streams out (no second copy of a multi-MB header); the hasher never fails,
    // and the layout above has validated the header.
    writer.write_header(&mut hasher).map_err(|source| {
        EditError::Write(crate::WriteError::write(out.to_path_buf(), 0, source))
    })?;
    let header_hash = (layout.header_len, hasher.0.digest());
    let report = Report {
        applied,
        header: (gguf.data_offset(), layout.header_len),
        keys: (gguf.kv_len(), writer.kvs().len()),
        planned,
    };
    // Nothing has been created so far; from here on, only a temporary beside OUT.
    let tmp = AtomicFile::create(out).map_err(|source| {
        EditError::Write(crate::WriteError::at(
            out.to_path_buf(),
            crate::WriteErrorKind::Create { source },
        ))
    })?;
    let mut builder = GgufFileBuilder::new(writer);
    for (i, t) in gguf.tensor_infos().iter().enumerate() {
        builder.set_data(i, TensorData::File { file, offset: t.abs_offset() });
    }
    let stats = builder.write_into_with(&tmp, progress).map_err(EditError::Write)?;
    Ok(Pending { tmp, header_hash, report, stats })
}

impl Pending {
    /// Re-opens the temporary (strict profile) and checks it against the plan
    /// ([`check_written`]), comparing tensor bytes with `source` (the source file's bytes:
    /// [`source_reader`]); only then renames it over the destination.
    ///
    /// # Errors
    ///
    /// [`EditError::Check`] (the temporary is removed, the destination untouched);
    /// [`EditError::Commit`].
    pub fn check_and_commit(self, source: &dyn ReadAt) -> Result<Report, EditError> {
        check_written(&self.tmp, self.header_hash, &self.report.planned, source)?;
        self.tmp.commit().map_err(|source| EditError::Commit { source })?;
        Ok(self.report)
    }

    /// The destination.
    pub fn dest(&self) -> &Path {
        self.tmp.dest()
    }
}

/// An in-place rewrite done, for its check and the report.
#[derive(Debug)]
pub struct Rewritten {
    /// What was written.
    pub report: Report,
    /// Header length and XXH3 of the header written.
    header_hash: (u64, u64),
    /// Bytes actually rewritten (the changed 4 KiB blocks).
    pub rewritten: u64,
    /// The padding pair's size (0: none).
    pub padding: u64,
}

impl Rewritten {
    /// Re-opens the model through `file` (the descriptor the rewrite wrote to) and checks it:
    /// the header is the one written and every tensor is where it was ([`check_in_place`]).
    ///
    /// # Errors
    ///
    /// [`EditError::Check`].
    pub fn check(&self, path: &Path, file: &File) -> Result<(), EditError> {
        check_in_place(path, self.header_hash, &self.report.planned, file).map_err(Into::into)
    }
}

/// Plans `edits` on `src`'s header as a header of exactly the old length and rewrites it in
/// place, crash-safely ([`rewrite_header_locked`], under `lock`, the exclusive lock on the
/// model `src` was parsed from). `Ok(None)`: the edits change nothing, nothing was written.
///
/// # Errors
///
/// [`EditError::NoTensors`]; every edit that cannot apply ([`apply`]); the fit errors
/// ([`EditError::DoesNotFit`], [`EditError::NoRoomForPadding`],
/// [`EditError::PaddingTooLarge`], [`EditError::NotCanonical`]); [`EditError::Invalid`];
/// [`EditError::InPlace`].
pub fn rewrite_in_place(
    lock: &ExclusiveLock<'_>,
    src: &GgufFile,
    edits: Vec<Edit>,
) -> Result<Option<Rewritten>, EditErrors> {
    let plan = plan_in_place(src, edits)?;
    rewrite_planned(lock, src, plan).map_err(Into::into)
}

/// An in-place edit planned and fitted, not yet written.
#[derive(Debug)]
pub(crate) struct InPlacePlan {
    /// What the edits do.
    pub(crate) applied: Applied,
    /// The new header, exactly the old one's length.
    new_header: Vec<u8>,
    /// Pairs after the edits.
    keys: usize,
    planned: Vec<Planned>,
    padding: u64,
}

/// Plans `edits` on `src`'s header as a header of exactly the old length: every refusal of
/// [`rewrite_in_place`] but the rewrite's own.
pub(crate) fn plan_in_place(src: &GgufFile, edits: Vec<Edit>) -> Result<InPlacePlan, EditErrors> {
    let gguf = src.gguf();
    let data_offset = gguf.data_offset();
    if gguf.tensor_infos().is_empty() {
        return Err(EditError::NoTensors.into());
    }
    let mut writer = GgufWriter::from_gguf(gguf);
    let applied = apply(&mut writer, edits, Mode::InPlace { alignment: gguf.alignment() })?;
    let padding = fit_in_place(&mut writer, gguf).map_err(|e| fit_error(e, data_offset))?;
    place_padding(&mut writer, gguf);
    let invalid = |source| EditError::Invalid { source };
    let layout = writer.layout().map_err(invalid)?;
    // The new header describes the data where the canonical layout puts it: that must be where
    // it already is (true for every file written by ggml, gguf-py or this writer).
    for (index, (t, &(abs, _))) in gguf.tensors().zip(&layout.tensors).enumerate() {
        if t.info.abs_offset() != abs || layout.header_len != data_offset {
            return Err(EditError::NotCanonical {
                index,
                tensor: t.name.to_string_lossy().into_owned(),
                at: t.info.abs_offset(),
                canonical: abs,
            }
            .into());
        }
    }
    let planned = plan_tensors(&writer, gguf, &layout);
    let new_header = writer.header_bytes().map_err(invalid)?;
    if gguf.bytes().len() < new_header.len() {
        return Err(EditError::DoesNotFit {
            missing: (new_header.len() as u64).saturating_sub(data_offset),
            data_offset,
        }
        .into());
    }
    Ok(InPlacePlan { applied, new_header, keys: writer.kvs().len(), planned, padding })
}

/// Writes a [`plan_in_place`] plan over `src`'s header ([`rewrite_header_locked`], under
/// `lock`). `Ok(None)`: the plan changes nothing, nothing was written.
pub(crate) fn rewrite_planned(
    lock: &ExclusiveLock<'_>,
    src: &GgufFile,
    plan: InPlacePlan,
) -> Result<Option<Rewritten>, EditError> {
    let gguf = src.gguf();
    let data_offset = gguf.data_offset();
    let new_header = plan.new_header;
    let old_header = gguf.bytes().get(..new_header.len()).ok_or(EditError::DoesNotFit {
        missing: (new_header.len() as u64).saturating_sub(data_offset),
        data_offset,
    })?;
    let stats = rewrite_header_locked(lock, old_header, &new_header).map_err(EditError::from)?;
    if stats.runs.is_empty() {
        return Ok(None);
    }
    Ok(Some(Rewritten {
        report: Report {
            applied: plan.applied,
            header: (data_offset, new_header.len() as u64),
            keys: (gguf.kv_len(), plan.keys),
            planned: plan.planned,
        },
        header_hash: (new_header.len() as u64, xxhash_rust::xxh3::xxh3_64(&new_header)),
        rewritten: stats.rewritten,
        padding: plan.padding,
    }))
}

fn fit_error(e: HeaderWriteError, data_offset: u64) -> EditError {
    match e {
        HeaderWriteError::HeaderTooLarge { missing } => {
            EditError::DoesNotFit { missing, data_offset }
        }
        HeaderWriteError::NoRoomForPadding { slack, min } => {
            EditError::NoRoomForPadding { slack, min }
        }
        HeaderWriteError::PaddingTooLarge { len, max } => EditError::PaddingTooLarge { len, max },
        source => EditError::Invalid { source },
    }
}

/// [`GgufWriter::pad_to`] for an in-place edit: the header is made to end where the source's
/// directory ended (so, with [`place_padding`], every byte after the edits stays where it was)
/// when a padding pair can do that; otherwise at the source's data offset (absorbing its
/// alignment padding). Returns the padding pair's size (0: none).
///
/// # Errors
///
/// The writer's [`HeaderWriteError::HeaderTooLarge`], [`HeaderWriteError::NoRoomForPadding`],
/// [`HeaderWriteError::PaddingTooLarge`].
pub fn fit_in_place(
    writer: &mut GgufWriter<'_>,
    source: &Gguf<impl AsRef<[u8]>>,
) -> Result<u64, HeaderWriteError> {
    let dir_end = source.directory().directory_end();
    let data_offset = source.data_offset();
    if dir_end < data_offset {
        let mut exact = writer.clone();
        if let Ok(p) = exact.pad_to(dir_end)
            && p > 0
            && exact.layout().map(|l| l.header_len) == Ok(data_offset)
        {
            *writer = exact;
            return Ok(p);
        }
    }
    writer.pad_to(data_offset)
}

/// Moves the padding pair [`GgufWriter::pad_to`] appended to just before the pairs the edits
/// left as they were at the end (the longest common suffix with the source's pairs), or to
/// where an earlier padding pair was if that lies in the suffix, so the bytes that change —
/// and must be backed up and rewritten — are only those between the first edit and the
/// padding, not the whole vocabulary after it. (Where it goes does not change the header's
/// length.)
pub fn place_padding(writer: &mut GgufWriter<'_>, source: &Gguf<impl AsRef<[u8]>>) {
    let pad = PADDING_KEY.as_bytes();
    let old: Vec<(&[u8], Value<'_>)> = source
        .metadata()
        .filter(|e| e.key.as_bytes() != pad)
        .map(|e| (e.key.as_bytes(), Value::from(e.value)))
        .collect();
    let kvs = writer.kvs_mut();
    let Some(at) = kvs.iter().position(|(k, _)| k.as_ref() == pad) else { return };
    let pair = kvs.remove(at);
    let same = old
        .iter()
        .rev()
        .zip(kvs.iter().rev())
        .take_while(|((ok, ov), (nk, nv))| *ok == nk.as_ref() && ov == nv)
        .count();
    let mut to = kvs.len().saturating_sub(same);
    // An earlier padding pair inside the unchanged suffix: keep the new one in its place.
    if let Some(q) = source.metadata().position(|e| e.key.as_bytes() == pad) {
        let tail = old.len().saturating_sub(q);
        if same >= tail {
            to = kvs.len().saturating_sub(tail);
        }
    }
    kvs.insert(to, pair);
}

/// An `io::Write` that hashes (XXH3-64) what it is given.
#[derive(Default)]
struct HashWriter(xxhash_rust::xxh3::Xxh3);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // runs of bytes, one on purpose
mod tests {
    use super::*;
    use crate::in_place::{BLOCK, changed_runs};
    use sipllm_testkit::{GgufBuilder, Value as B};

    /// An edit near the start of a large header touches a block or two: the padding pair goes
    /// right after the edited pair, not after the vocabulary.
    #[test]
    fn an_in_place_edit_near_the_start_changes_a_few_blocks() {
        let tokens: Vec<String> = (0..20_000).map(|i| format!("token{i}")).collect();
        let bytes = GgufBuilder::new()
            .kv("general.architecture", B::str("llama"))
            .kv("general.name", B::str("a name long enough to shrink by more than 41 bytes!!"))
            .kv("tokenizer.ggml.tokens", B::strings(&tokens))
            .kv(
                "tokenizer.chat_template",
                B::str("{{ x }} and a tail long enough to cut: 41+ bytes"),
            )
            .tensor("t", GgmlType::F32, &[8])
            .build();
        let g =
            sipllm_gguf::parse_with(bytes.clone(), &sipllm_gguf::ParseOptions::default()).unwrap();
        let header = &bytes[..g.data_offset() as usize];
        assert!(header.len() > 50 * BLOCK);
        let edit = |key: &str, value: &'static str| {
            let mut w = GgufWriter::from_gguf(&g);
            w.set(key.as_bytes().to_vec(), Value::str(value));
            assert!(fit_in_place(&mut w, &g).unwrap() > 0);
            place_padding(&mut w, &g);
            w.header_bytes().unwrap()
        };
        let new = edit("general.name", "x");
        assert_eq!(new.len(), header.len());
        assert_eq!(changed_runs(header, &new), [0..BLOCK]);
        let parsed = sipllm_gguf::parse_with(&new[..], &Default::default()).unwrap();
        let keys: Vec<&[u8]> = parsed.metadata().map(|e| e.key.as_bytes()).collect();
        assert_eq!(keys[2], PADDING_KEY.as_bytes(), "right after the edited pair");
        // Editing a pair after the vocabulary changes the count field and the tail only.
        let new = edit("tokenizer.chat_template", "{{ y }}");
        let runs = changed_runs(header, &new);
        assert_eq!(runs.first(), Some(&(0..BLOCK)));
        assert!(runs.iter().map(|r| r.len()).sum::<usize>() <= 3 * BLOCK, "{runs:?}");
    }

    /// Every edit that cannot apply is reported, in order, not only the first.
    #[test]
    fn every_bad_edit_is_reported_at_once() {
        let bytes = GgufBuilder::new()
            .kv("general.architecture", B::str("llama"))
            .kv("general.name", B::str("m"))
            .tensor("a", GgmlType::F32, &[4])
            .tensor("b", GgmlType::F32, &[4])
            .build();
        let g = sipllm_gguf::parse_with(bytes, &sipllm_gguf::ParseOptions::default()).unwrap();
        let mut w = GgufWriter::from_gguf(&g);
        let edits = vec![
            Edit::Delete { key: "no.such.key".into() },
            Edit::Set { key: "general.name".into(), value: Value::string("ok"), from: None },
            Edit::RenameTensor { old: "nope".into(), new: "x".into() },
            Edit::RenameTensor { old: "a".into(), new: "b".into() },
            Edit::Set { key: PADDING_KEY.into(), value: Value::string(""), from: None },
            Edit::Set { key: "general.alignment".into(), value: Value::Uint32(48), from: None },
            Edit::Delete { key: "also.missing".into() },
        ];
        let errors = apply(&mut w, edits, Mode::OutOfPlace).unwrap_err();
        let codes: Vec<&str> = errors.iter().map(EditError::code).collect();
        assert_eq!(
            codes,
            [
                "edit::header::no_such_key",
                "edit::header::no_such_tensor",
                "edit::header::tensor_exists",
                "edit::header::reserved_key",
                "edit::header::alignment_not_power_of_two",
                "edit::header::no_such_key",
            ]
        );
        assert!(errors.iter().all(|e| !e.help().is_empty()));
        assert_eq!(errors.0[0].to_string(), "the file has no metadata key \"no.such.key\"");
        assert_eq!(errors.0[5].to_string(), "the file has no metadata key \"also.missing\"");
    }

    /// An in-place rewrite that does not read back as written keeps what was written, for the
    /// caller to show, and has its own code and help (the file was changed).
    #[test]
    fn a_failed_in_place_check_keeps_what_was_written() {
        let written = Rewritten {
            report: Report {
                applied: Applied::default(),
                header: (64, 64),
                keys: (1, 1),
                planned: Vec::new(),
            },
            header_hash: (64, 0),
            rewritten: 4096,
            padding: 0,
        };
        let e = EditError::InPlaceCheck {
            written: Box::new(written),
            source: Box::new(CheckError::Header),
        };
        assert_eq!(e.code(), "edit::header::in_place_check_failed");
        assert!(e.help().contains("sipllm validate FILE"), "{}", e.help());
        assert_eq!(
            e.to_string(),
            "the header was rewritten in place, but the file failed its check: its header \
             differs from the one written"
        );
        let EditError::InPlaceCheck { written, .. } = e else { unreachable!() };
        assert_eq!(written.rewritten, 4096);
    }

    #[test]
    fn renames_check_the_new_name() {
        assert!(matches!(Edit::rename("a", "b"), Ok(Edit::RenameTensor { .. })));
        let long = "x".repeat(MAX_NAME);
        for (new, defect) in [
            ("", NameDefect::Empty),
            (long.as_str(), NameDefect::TooLong(64)),
            ("a\0b", NameDefect::Nul),
        ] {
            let e = Edit::rename("a", new).unwrap_err();
            assert!(matches!(e, EditError::BadName { defect: d, .. } if d == defect), "{e:?}");
            assert_eq!(e.code(), "edit::header::bad_name");
        }
        assert_eq!(
            Edit::rename("a", &long).unwrap_err().to_string(),
            "the new name is 64 bytes; GGUF tensor names are at most 63 bytes (llama.cpp's limit)"
        );
    }
}
