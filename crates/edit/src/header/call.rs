//! One call per edit: [`edit_in_place`] and [`edit_out_of_place`] own the whole protocol —
//! open the model with the right lock, refuse a pending header backup, plan, write (into a
//! checked temporary that is then committed, or fitted in place with the crash-safe rewrite
//! and its backup), check, and report — so a caller parses its arguments, calls once and
//! renders the outcome or every error.
//!
//! With [`EditOptions::plan_only`] the same call stops after planning: it opens, locks,
//! refuses and plans exactly as the edit would, and writes nothing. A caller that already
//! found bad arguments of its own uses it to report, in the same run, every edit the model
//! refuses (a missing key, a missing tensor, a header that does not fit in place).

use std::fs::File;
use std::path::Path;

use sipllm_gguf::{ParseOptions, Profile};
use sipllm_streaming::lock::{self, ExclusiveLock};
use sipllm_streaming::{GgufFile, Model, OpenOptions, StreamError, StreamErrorKind};

use super::{
    Applied, Edit, EditError, EditErrors, Mode, Report, Rewritten, apply, plan_in_place,
    rewrite_planned, source_reader, write_edited_with,
};
use crate::HeaderBackup;
use crate::error::{InPlaceError, InPlaceErrorKind};
use crate::identity::same_file;
use crate::write::BuildStats;

/// The model an out-of-place edit reads.
#[derive(Debug)]
pub enum Input<'a> {
    /// A model file: the call opens it and holds a shared lock while it reads (an in-place
    /// edit of it is refused meanwhile; one running makes the call wait), and refuses it while
    /// it has an interrupted in-place edit's header backup.
    Path(&'a Path),
    /// A private copy nothing else can reach (a URL fetched into an unnamed temporary file),
    /// named `name` in errors: there is no lock to take and no backup to look for.
    Private {
        /// The open copy.
        file: File,
        /// Its name (a URL with its credentials redacted).
        name: &'a Path,
    },
}

/// How an edit call runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EditOptions {
    /// Stop after planning: open, lock, refuse and plan as the edit would, and write nothing
    /// (the outcome is `Planned`). Every problem the model finds with the edits is reported.
    pub plan_only: bool,
}

impl EditOptions {
    /// Only plan ([`EditOptions::plan_only`]).
    pub fn plan_only(mut self, plan_only: bool) -> EditOptions {
        self.plan_only = plan_only;
        self
    }
}

/// What [`edit_out_of_place`] did.
#[derive(Debug)]
#[non_exhaustive]
pub enum OutOfPlace {
    /// The edited model was written, checked and renamed over the destination.
    Written {
        /// What was written.
        report: Report,
        /// How the file was written (its size, the bytes copied, holes kept).
        stats: BuildStats,
    },
    /// [`EditOptions::plan_only`]: every edit applies; nothing was written.
    Planned(Applied),
}

/// What [`edit_in_place`] did.
#[derive(Debug)]
#[non_exhaustive]
pub enum InPlace {
    /// The header was rewritten in place and the model checked.
    Rewritten(Box<Rewritten>),
    /// The edits change nothing: nothing was written.
    Unchanged,
    /// [`EditOptions::plan_only`]: every edit applies and the header fits; nothing was
    /// written.
    Planned(Applied),
}

/// Edits the GGUF file at `path` in place, as one call: opens it read-write under an
/// exclusive lock (a second editor is refused at once; readers wait), refuses it while it has
/// an interrupted edit's header backup ([`HeaderBackup::pending`]), plans `edits` as a header
/// of exactly the old length, rewrites the changed blocks crash-safely (backed up beside the
/// model first) and re-opens the model to check it.
///
/// # Errors
///
/// Every problem at once ([`EditErrors`]): [`EditError::Open`] (the file cannot be opened or
/// parsed); [`EditError::InPlace`] with [`InPlaceErrorKind::Read`](crate::InPlaceErrorKind::Read) of
/// [`StreamErrorKind::Locked`] (another process holds the file) or [`InPlaceErrorKind::Pending`](crate::InPlaceErrorKind::Pending);
/// [`EditError::NotGguf`]; then what [`rewrite_in_place`](super::rewrite_in_place) refuses
/// (every edit that cannot apply, the fit errors) and [`EditError::InPlaceCheck`] (the model
/// was rewritten: the error says how).
pub fn edit_in_place(
    path: &Path,
    edits: Vec<Edit>,
    options: &EditOptions,
) -> Result<InPlace, EditErrors> {
    let file = lock::open_locked(path, true).map_err(open_error)?;
    let lock =
        ExclusiveLock::try_new(&file, path).map_err(|e| EditError::from(InPlaceError::from(e)))?;
    // Under the lock, a backup is an interrupted edit's, never a running one's.
    refuse_pending(path)?;
    let model = parse(&file, path)?;
    let gguf = gguf(&model)?;
    let plan = plan_in_place(gguf, edits)?;
    if options.plan_only {
        return Ok(InPlace::Planned(plan.applied));
    }
    let Some(done) = rewrite_planned(&lock, gguf, plan)? else {
        return Ok(InPlace::Unchanged);
    };
    drop(model);
    match done.check(path, &file) {
        Ok(()) => Ok(InPlace::Rewritten(Box::new(done))),
        Err(EditError::Check(source)) => {
            Err(EditError::InPlaceCheck { written: Box::new(done), source }.into())
        }
        Err(e) => Err(e.into()),
    }
}

/// Edits the GGUF model `input` into a new file at `out` (which may be the input itself), as
/// one call: refuses an `out` with an interrupted in-place edit's header backup, opens the
/// input under a shared lock and refuses it too while it has one, plans `edits`, writes the
/// edited model into a temporary beside `out` (calling `progress(done, total)` with the bytes
/// of tensor data copied), re-opens and checks the temporary, and only then renames it over
/// `out`. The source's parsed header is dropped before the check, so the check's re-open does
/// not hold a second copy beside it.
///
/// # Errors
///
/// Every problem at once ([`EditErrors`]): [`EditError::InPlace`] with
/// [`InPlaceErrorKind::Pending`](crate::InPlaceErrorKind::Pending); [`EditError::Open`]; [`EditError::NotGguf`]; every edit that
/// cannot apply ([`apply`]); [`EditError::Invalid`]; [`EditError::Write`];
/// [`EditError::Check`] (the destination untouched); [`EditError::Commit`].
pub fn edit_out_of_place(
    input: Input<'_>,
    out: &Path,
    edits: Vec<Edit>,
    options: &EditOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<OutOfPlace, EditErrors> {
    // An output that is the input is checked with it, under its lock, below.
    let out_is_input = matches!(input, Input::Path(path) if same_file(out, path));
    if !out_is_input {
        refuse_pending(out)?;
    }
    let (file, name) = match input {
        Input::Path(path) => {
            let file = lock::open_locked(path, false).map_err(open_error)?;
            refuse_pending(path)?;
            (file, path)
        }
        Input::Private { file, name } => (file, name),
    };
    let model = parse(&file, name)?;
    let gguf = gguf(&model)?;
    if options.plan_only {
        let mut writer = sipllm_gguf::writer::GgufWriter::from_gguf(gguf.gguf());
        let applied = apply(&mut writer, edits, Mode::OutOfPlace)?;
        writer.layout().map_err(|source| EditError::Invalid { source })?;
        return Ok(OutOfPlace::Planned(applied));
    }
    let pending = write_edited_with(gguf, &file, edits, out, progress)?;
    // The source's header is not needed any more: the check's re-open must not hold a second
    // copy beside it (peak memory stays about one header).
    drop(model);
    let stats = pending.stats;
    let source = source_reader(&file, name).map_err(EditError::from)?;
    let report = pending.check_and_commit(&source)?;
    Ok(OutOfPlace::Written { report, stats })
}

/// [`InPlaceErrorKind::Pending`](crate::InPlaceErrorKind::Pending) when `model` has an interrupted in-place edit's header backup.
///
/// # Errors
///
/// [`EditError::InPlace`] with [`InPlaceErrorKind::Pending`](crate::InPlaceErrorKind::Pending).
pub fn refuse_pending(model: &Path) -> Result<(), EditError> {
    match HeaderBackup::pending(model) {
        Some(backup) => {
            Err(InPlaceError::with_backup(model.to_path_buf(), backup, InPlaceErrorKind::Pending)
                .into())
        }
        None => Ok(()),
    }
}

/// An open error: another process's lock is the in-place protocol's refusal (with its help),
/// anything else the read side's.
fn open_error(e: StreamError) -> EditError {
    match e.kind() {
        StreamErrorKind::Locked { .. } => InPlaceError::from(e).into(),
        _ => EditError::Open(e),
    }
}

/// Parses the model open as `file` (strict profile, pread), named `name`.
fn parse(file: &File, name: &Path) -> Result<Model, EditError> {
    let options = OpenOptions::default().with_parse(ParseOptions::new(Profile::default()));
    Model::from_file(file, name, &options).map_err(EditError::Open)
}

fn gguf(model: &Model) -> Result<&GgufFile, EditError> {
    model.gguf().ok_or(EditError::NotGguf)
}
