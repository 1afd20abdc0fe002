//! [`BackupDefect`]: what is wrong with a header backup recovery refuses, and how it is said.

/// What is wrong with a header backup that [`recover`](crate::in_place::recover) refuses to use
/// ([`InPlaceErrorKind::BadBackup`](crate::InPlaceErrorKind::BadBackup)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BackupDefect {
    /// The file is larger than any backup of a header within the parser's limit can be.
    TooLarge,
    /// The magic, version, layout or checksum is wrong: not a record `sipllm` wrote, or a
    /// damaged one.
    NotARecord,
    /// The recorded header region ends past the model or the parser's header limit.
    HeaderPastEnd,
    /// A recorded run reaches past the recorded header region.
    RunPastHeader,
    /// Not a regular file (a FIFO, a device, a socket): refused before reading a byte, so a
    /// FIFO never hangs recovery and `/dev/zero` is never read without bound.
    NotAFile,
}

/// The message of [`InPlaceErrorKind::BadBackup`](super::InPlaceErrorKind::BadBackup), of model `m` and backup `b`.
pub(super) fn bad_backup(m: &str, b: &str, defect: BackupDefect) -> String {
    match defect {
        BackupDefect::TooLarge => {
            format!("{b} is too large to be a header backup; {m} was not changed")
        }
        BackupDefect::HeaderPastEnd => format!(
            "{b} is damaged (its header would end past {m} or the header limit); {m} was not \
             changed"
        ),
        BackupDefect::RunPastHeader => {
            format!("{b} is damaged (a run past the header); {m} was not changed")
        }
        BackupDefect::NotARecord => format!(
            "{b} is not a header backup sipllm wrote (or it is damaged); {m} was not changed"
        ),
        BackupDefect::NotAFile => format!(
            "{b} is not a regular file (a FIFO, a device or a socket), so it is no header \
             backup; {m} was not changed"
        ),
    }
}
