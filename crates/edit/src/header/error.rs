//! What an edit refuses or fails with: [`EditError`] (`edit::header::…`), and [`EditErrors`], every
//! one of them at once.

use std::fmt;
use std::io;
use std::path::PathBuf;

use sipllm_format::Kind;
use sipllm_gguf::{GgmlType, ValueType};
use sipllm_streaming::StreamError;

use crate::error::{InPlaceError, WriteError};
use crate::input::InputError;

/// What is wrong with a new tensor name ([`Edit::rename`](super::Edit::rename)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameDefect {
    /// The name is empty.
    Empty,
    /// The name is this many bytes: GGUF tensor names are at most
    /// [`MAX_NAME`](super::MAX_NAME)` - 1` bytes (llama.cpp's `GGML_MAX_NAME`, NUL included).
    TooLong(usize),
    /// The name contains a NUL byte.
    Nul,
}

/// One edit that cannot be applied, or an edited file that cannot be written or does not
/// check out. Nothing was changed when an edit returns one (a failed post-write check leaves
/// the destination as it was, too).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The new name of a tensor rename is not a valid GGUF tensor name.
    #[error("{}", bad_name(*defect))]
    BadName {
        /// The tensor's current name.
        old: String,
        /// The new name given.
        new: String,
        /// What is wrong with it.
        defect: NameDefect,
    },
    /// A value file (`--set-file`) cannot be read, or is too large for a GGUF string (the
    /// file is the [`InputError`]'s [`path`](InputError::path)).
    #[error("{}", source.located())]
    ValueFile {
        /// The key.
        key: String,
        /// Why.
        source: Box<InputError>,
    },
    /// A value file is not UTF-8 text.
    #[error(
        "{}: not UTF-8 text (invalid byte at offset {valid_up_to}); GGUF strings are UTF-8",
        path.display()
    )]
    ValueFileNotUtf8 {
        /// The key.
        key: String,
        /// The file.
        path: PathBuf,
        /// The length of its valid UTF-8 prefix.
        valid_up_to: usize,
    },
    /// The key is the one this crate pads in-place edits with.
    #[error("the key {key:?} is reserved: sipllm uses it to pad headers edited in place")]
    ReservedKey {
        /// The key.
        key: String,
    },
    /// `general.alignment` set to something that is not a `u32`.
    #[error(
        "general.alignment must be a u32 power of two (e.g. general.alignment=u32:64), not {}",
        type_label(*found, *elem)
    )]
    AlignmentType {
        /// The type given.
        found: ValueType,
        /// Its element type, for an array.
        elem: Option<ValueType>,
    },
    /// `general.alignment` set to a `u32` that is not a power of two.
    #[error("general.alignment must be a power of two, not {value}")]
    AlignmentNotPowerOfTwo {
        /// The value given.
        value: u32,
    },
    /// An in-place edit would change the alignment (by setting or deleting
    /// `general.alignment`), which moves every tensor's data.
    #[error(
        "{} general.alignment from {from} to {to} moves every tensor's data; in place only the \
         header is rewritten",
        if *deleted { "deleting" } else { "changing" }
    )]
    AlignmentInPlace {
        /// The file's alignment.
        from: u32,
        /// The alignment the edit would give.
        to: u32,
        /// True when the edit deletes the key (so the default alignment applies).
        deleted: bool,
    },
    /// A delete names a key the file does not have.
    #[error("the file has no metadata key {key:?}")]
    NoSuchKey {
        /// The key.
        key: String,
    },
    /// A rename names a tensor the file does not have.
    #[error("the file has no tensor named {old:?}")]
    NoSuchTensor {
        /// The name given.
        old: String,
        /// The new name.
        new: String,
    },
    /// A rename's new name is taken.
    #[error("a tensor named {new:?} already exists")]
    TensorExists {
        /// The current name.
        old: String,
        /// The new name.
        new: String,
    },
    /// The file to edit is not a GGUF file (a `.llmw` file: convert it first).
    #[error("the file is a .llmw file; only GGUF files are edited (convert it first)")]
    NotGguf,
    /// The edited header is not a valid GGUF header (the writer's reason).
    #[error("the edited header is invalid: {source}")]
    Invalid {
        /// Why.
        source: sipllm_gguf::writer::HeaderWriteError,
    },
    /// In place: the file has no tensors, so there is no data to keep where it is.
    #[error(
        "the file has no tensors: it is all header, so there is nothing to keep in place (an \
         out-of-place edit is cheap: there is no tensor data to copy)"
    )]
    NoTensors,
    /// In place: the edited header is longer than the room before the data section.
    #[error(
        "the edited header does not fit in place: it needs {missing} more bytes than the \
         {data_offset} before the data section"
    )]
    DoesNotFit {
        /// Bytes missing.
        missing: u64,
        /// The file's data offset.
        data_offset: u64,
    },
    /// In place: the edited header leaves a gap too large for the alignment to absorb and too
    /// small for a padding pair.
    #[error(
        "the edited header ends {slack} bytes before the data section: too many for the \
         alignment to absorb and too few for a padding pair ({min} bytes at least) to keep the \
         data in place"
    )]
    NoRoomForPadding {
        /// Bytes between the header's end and the data section.
        slack: u64,
        /// The smallest padding pair.
        min: u64,
    },
    /// In place: the padding string needed is longer than a GGUF string may be.
    #[error(
        "the edited header would need a padding string of {len} bytes to keep the data in \
         place, more than the {max} a GGUF string may hold"
    )]
    PaddingTooLarge {
        /// The padding string's length.
        len: u64,
        /// The longest string.
        max: u64,
    },
    /// In place: the tensor data is not where the canonical layout puts it, so a rewritten
    /// header cannot describe it.
    #[error(
        "the tensor data is not in canonical layout (tensor {index} {tensor:?} is at byte {at}; \
         the canonical place is {canonical}), so a rewritten header cannot describe it in place"
    )]
    NotCanonical {
        /// The tensor's index.
        index: usize,
        /// Its name.
        tensor: String,
        /// Where its data is.
        at: u64,
        /// Where the canonical layout puts it.
        canonical: u64,
    },
    /// The written file (still the temporary, or the model after an in-place rewrite) failed
    /// its check against the plan.
    #[error("the written file failed its check: {0}")]
    Check(Box<CheckError>),
    /// In place: the header was rewritten, but the model does not read back as written (it
    /// is changed: `written` says how).
    #[error("the header was rewritten in place, but the file failed its check: {source}")]
    InPlaceCheck {
        /// What was written.
        written: Box<super::Rewritten>,
        /// How the model differs from it.
        source: Box<CheckError>,
    },
    /// Moving the checked temporary over the destination failed; the destination is as it was.
    #[error("cannot move the new file into place: {source}")]
    Commit {
        /// The operating system's error.
        source: io::Error,
    },
    /// Writing the edited file failed (the temporary is removed; the destination is as it
    /// was).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The in-place rewrite failed or was refused (the error says what state the model is in).
    #[error(transparent)]
    InPlace(Box<InPlaceError>),
    /// Reading the model failed.
    #[error(transparent)]
    Read(#[from] StreamError),
    /// Opening the model to edit failed, or it does not parse (the read side's error; nothing
    /// was written).
    #[error(transparent)]
    Open(StreamError),
}

/// How a written file differs from its plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// It does not re-open under the strict profile.
    #[error("it does not re-open: {0}")]
    Reopen(StreamError),
    /// Its header bytes are not the ones written.
    #[error("its header differs from the one written")]
    Header,
    /// It lists another number of tensors.
    #[error("{found} tensors instead of {planned}")]
    TensorCount {
        /// Tensors found.
        found: usize,
        /// Tensors planned.
        planned: usize,
    },
    /// A tensor's name, type, shape, size or offset is not the planned one.
    #[error("{0}")]
    Tensor(Box<TensorMismatch>),
    /// A tensor's sampled bytes differ from the source's.
    #[error("tensor {tensor:?}: the bytes at +{at} differ from the source's")]
    Data {
        /// The tensor.
        tensor: String,
        /// Offset within the tensor.
        at: u64,
    },
    /// A converted file lists another number of keys than were kept.
    #[error("{found} keys instead of {kept}")]
    KeyCount {
        /// Keys found.
        found: usize,
        /// Keys written.
        kept: usize,
    },
    /// A converted file's key does not have its source's value (through the read side).
    #[error("key {key:?} does not have its value")]
    Value {
        /// The key.
        key: String,
    },
    /// A tensor's offset overflows.
    #[error("tensor {tensor:?}: its offset overflows")]
    Overflow {
        /// The tensor.
        tensor: String,
    },
    /// Reading the source or the written file for the comparison failed.
    #[error("reading {}: {source}", if *written { "it back" } else { "the source" })]
    Read {
        /// True for the written file, false for the source.
        written: bool,
        /// Why.
        source: StreamError,
    },
}

/// A tensor of the written file as found, and as planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMismatch {
    /// Its name.
    pub name: String,
    /// Its type.
    pub ggml_type: GgmlType,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its offset.
    pub offset: u64,
    /// Its size.
    pub nbytes: Option<u64>,
    /// The plan.
    pub planned: super::Planned,
}

impl fmt::Display for TensorMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.planned;
        write!(
            f,
            "tensor {:?} is {} {:?} at {} ({:?} bytes); planned: {:?} {} {:?} at {} ({} bytes)",
            self.name,
            self.ggml_type,
            self.shape,
            self.offset,
            self.nbytes,
            p.name,
            p.ggml_type,
            p.shape,
            p.to,
            p.nbytes
        )
    }
}

/// Every [`EditError`] of one edit: arguments are all checked before one is reported.
#[derive(Debug)]
pub struct EditErrors(pub Vec<EditError>);

impl EditErrors {
    /// The errors, in the order of the edits.
    pub fn iter(&self) -> std::slice::Iter<'_, EditError> {
        self.0.iter()
    }
}

impl From<InPlaceError> for EditError {
    fn from(e: InPlaceError) -> EditError {
        EditError::InPlace(Box::new(e))
    }
}

impl From<CheckError> for EditError {
    fn from(e: CheckError) -> EditError {
        EditError::Check(Box::new(e))
    }
}

impl From<EditError> for EditErrors {
    fn from(e: EditError) -> EditErrors {
        EditErrors(vec![e])
    }
}

impl<E: Into<EditError>> FromIterator<E> for EditErrors {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> EditErrors {
        EditErrors(iter.into_iter().map(Into::into).collect())
    }
}

impl fmt::Display for EditErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for EditErrors {}

fn bad_name(defect: NameDefect) -> String {
    match defect {
        NameDefect::Empty => "the new name is empty".to_owned(),
        NameDefect::TooLong(len) => format!(
            "the new name is {len} bytes; GGUF tensor names are at most {} bytes (llama.cpp's \
             limit)",
            super::MAX_NAME - 1
        ),
        NameDefect::Nul => "the new name contains a NUL byte".to_owned(),
    }
}

/// `UINT32`, `ARRAY of STRING`.
pub fn type_label(ty: ValueType, elem: Option<ValueType>) -> String {
    match elem {
        Some(e) => format!("ARRAY of {}", e.name()),
        None => ty.name().to_owned(),
    }
}

impl Kind for EditError {
    fn code(&self) -> &'static str {
        match self {
            EditError::BadName { .. } => "edit::header::bad_name",
            EditError::ValueFile { source, .. } => source.code(),
            EditError::ValueFileNotUtf8 { .. } => "edit::header::value_file_not_utf8",
            EditError::ReservedKey { .. } => "edit::header::reserved_key",
            EditError::AlignmentType { .. } => "edit::header::alignment_type",
            EditError::AlignmentNotPowerOfTwo { .. } => "edit::header::alignment_not_power_of_two",
            EditError::AlignmentInPlace { .. } => "edit::header::alignment_in_place",
            EditError::NoSuchKey { .. } => "edit::header::no_such_key",
            EditError::NoSuchTensor { .. } => "edit::header::no_such_tensor",
            EditError::TensorExists { .. } => "edit::header::tensor_exists",
            EditError::NotGguf => "edit::header::not_gguf",
            EditError::Invalid { .. } => "edit::header::invalid_header",
            EditError::NoTensors => "edit::header::in_place_no_tensors",
            EditError::DoesNotFit { .. } => "edit::header::in_place_does_not_fit",
            EditError::NoRoomForPadding { .. } => "edit::header::in_place_no_room_for_padding",
            EditError::PaddingTooLarge { .. } => "edit::header::in_place_padding_too_large",
            EditError::NotCanonical { .. } => "edit::header::in_place_not_canonical",
            EditError::Check(_) => "edit::header::check_failed",
            EditError::InPlaceCheck { .. } => "edit::header::in_place_check_failed",
            EditError::Commit { .. } => "edit::header::commit",
            EditError::Write(e) => e.code(),
            EditError::InPlace(e) => e.code(),
            EditError::Read(e) | EditError::Open(e) => e.code(),
        }
    }

    fn help(&self) -> &'static str {
        match self {
            EditError::BadName { .. } => {
                "give a name of 1 to 63 bytes without NUL bytes (llama.cpp refuses longer ones)."
            }
            EditError::ValueFile { source, .. } => source.help(),
            EditError::ValueFileNotUtf8 { .. } => {
                "convert the file to UTF-8 (e.g. `iconv -t UTF-8`); GGUF strings are UTF-8."
            }
            EditError::ReservedKey { .. } => "choose another key.",
            EditError::AlignmentType { .. } | EditError::AlignmentNotPowerOfTwo { .. } => {
                "give a u32 power of two, e.g. general.alignment=u32:64."
            }
            EditError::AlignmentInPlace { .. }
            | EditError::NoTensors
            | EditError::DoesNotFit { .. }
            | EditError::PaddingTooLarge { .. }
            | EditError::NotCanonical { .. } => {
                "write a new file instead (`-o OUT`): only an out-of-place edit can move the data."
            }
            EditError::NoRoomForPadding { .. } => {
                "write a new file instead (`-o OUT`), or make the new value a few bytes longer or \
                 shorter."
            }
            EditError::NoSuchKey { .. } => {
                "list the keys with `sipllm inspect --no-tensors FILE` (keys are case-sensitive)."
            }
            EditError::NoSuchTensor { .. } => "list the tensors with `sipllm tensors FILE`.",
            EditError::TensorExists { .. } => "choose a name no other tensor has.",
            EditError::NotGguf => {
                "convert it (`sipllm convert FILE model.gguf`), edit that, and convert back if \
                 needed."
            }
            EditError::Invalid { .. } => "the edits make an invalid header; nothing was written.",
            EditError::Check(_) => {
                "the destination was not replaced; the disk or the file system may be failing \
                 (or another process changed the file): check it and edit again."
            }
            EditError::InPlaceCheck { .. } => {
                "the file was changed but does not read back as written (a failing disk or file \
                 system, or a process that ignored the lock): run `sipllm validate FILE`; if it \
                 fails, restore FILE from a copy."
            }
            EditError::Commit { .. } => {
                "the destination's directory must be writable; the destination was not changed."
            }
            EditError::Write(e) => e.help(),
            EditError::InPlace(e) => e.help(),
            EditError::Read(e) | EditError::Open(e) => e.help(),
        }
    }
}

impl EditError {
    /// The stable code ([`Kind::code`], without importing the trait).
    pub fn code(&self) -> &'static str {
        Kind::code(self)
    }

    /// What to check or change ([`Kind::help`], without importing the trait).
    pub fn help(&self) -> &'static str {
        Kind::help(self)
    }
}
