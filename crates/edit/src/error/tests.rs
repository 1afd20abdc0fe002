//! The write side's errors: codes, helps, paths.

use super::*;
use crate::input::InputError;
use sipllm_streaming::{FileKind, StreamErrorKind};

fn boxed(e: impl Kind + 'static) -> Box<dyn Kind> {
    Box::new(e)
}

#[test]
fn every_variant_has_a_distinct_stable_code_and_help() {
    let io = || io::Error::from(io::ErrorKind::PermissionDenied);
    let cases: Vec<(Box<dyn Kind>, &str)> = vec![
        (
            boxed(WriteError::at("m.gguf", WriteErrorKind::Create { source: io() })),
            "edit::write::create",
        ),
        (boxed(WriteError::write("m.gguf", 5, io())), "edit::write::io"),
        (
            boxed(WriteError::from(WriteErrorKind::Header {
                source: sipllm_gguf::writer::HeaderWriteError::BadAlignment,
            })),
            "edit::write::header",
        ),
        (
            boxed(WriteError::at(
                "m.llmw",
                WriteErrorKind::Llmw { source: sipllm_llmw::LlmwWriteError::EmptyKey },
            )),
            "edit::write::llmw",
        ),
        (
            boxed(WriteError::from(WriteErrorKind::MissingData { tensor: "t".into() })),
            "edit::write::missing_data",
        ),
        (
            boxed(WriteError::from(WriteErrorKind::DataLength {
                tensor: "t".into(),
                expected: 4,
                got: 5,
            })),
            "edit::write::data_length",
        ),
        (
            boxed(SplitError::at("m.gguf", SplitErrorKind::AlreadySplit { split_no: 0, count: 2 })),
            "edit::split::already_split",
        ),
        (
            boxed(SplitError::at(
                "m.gguf",
                SplitErrorKind::Refused { reason: SplitRefusal::NoTensors },
            )),
            "edit::split::refused",
        ),
        (
            boxed(SplitError::at("m.gguf", SplitErrorKind::Busy { dir: "out".into() })),
            "edit::split::busy",
        ),
        (
            boxed(InPlaceError::at("m.gguf", InPlaceErrorKind::Length { old: 576, new: 608 })),
            "edit::in_place::length_mismatch",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::BackupWrite { source: io() },
            )),
            "edit::in_place::backup_write",
        ),
        (
            boxed(InPlaceError::at(
                "m.gguf",
                InPlaceErrorKind::RolledBack { offset: 0, source: io() },
            )),
            "edit::in_place::rolled_back",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::Torn { offset: 4096, source: io() },
            )),
            "edit::in_place::torn",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::BackupRemove { recovered: false, source: io() },
            )),
            "edit::in_place::backup_remove",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::NoBackup,
            )),
            "edit::in_place::no_backup",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::BackupRead { source: io() },
            )),
            "edit::in_place::backup_read",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::BadBackup { defect: BackupDefect::NotARecord },
            )),
            "edit::in_place::bad_backup",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::WrongModel { len: 2432, recorded_len: 2433 },
            )),
            "edit::in_place::wrong_model",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::RestoreWrite { source: io() },
            )),
            "edit::in_place::restore_write",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::RestoreMismatch,
            )),
            "edit::in_place::restore_mismatch",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::RestoredInvalid {
                    source: Box::new(StreamError::new(
                        Some("m.gguf".into()),
                        StreamErrorKind::TooShort { len: 0 },
                    )),
                },
            )),
            "edit::in_place::restored_invalid",
        ),
        (
            boxed(InputError::TooLarge { path: "/dev/zero".into(), max: 1 << 26 }),
            "edit::input::too_large",
        ),
        (
            boxed(InputError::EmptyStream { path: "t.fifo".into(), kind: FileKind::Fifo }),
            "edit::input::empty_stream",
        ),
        (
            boxed(WriteError::at(
                "link.gguf",
                WriteErrorKind::OutputIsInput { input: "m.gguf".into(), what: "the manifest" },
            )),
            "edit::write::output_is_input",
        ),
        (boxed(InPlaceError::at("m.gguf", InPlaceErrorKind::Changed)), "edit::in_place::changed"),
        (
            boxed(InPlaceError::at(
                "m.gguf",
                InPlaceErrorKind::FileTooShort { len: 10, header_len: 64 },
            )),
            "edit::in_place::file_too_short",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::Pending,
            )),
            "edit::in_place::pending",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::OtherFile,
            )),
            "edit::in_place::other_file",
        ),
        (
            boxed(InPlaceError::with_backup(
                "m.gguf",
                ".m.gguf.header-backup",
                InPlaceErrorKind::BackupMismatch,
            )),
            "edit::in_place::backup_mismatch",
        ),
    ];
    let mut codes: Vec<&str> = cases.iter().map(|(e, _)| e.code()).collect();
    for (err, code) in &cases {
        assert_eq!(err.code(), *code);
        assert!(!err.help().is_empty(), "{code}");
        assert!(!err.to_string().is_empty(), "{code}");
    }
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), cases.len(), "codes are distinct");
    let split =
        |code: &str| cases.iter().map(|(e, _)| e).find(|e| e.code() == code).map(|e| e.to_string());
    assert_eq!(
        split("edit::write::output_is_input").unwrap(),
        "the manifest link.gguf is the input m.gguf (another name for it): writing it would \
         destroy the input; nothing was written"
    );
}

#[test]
fn in_place_errors_name_the_model_and_the_backup() {
    let model = PathBuf::from("m.gguf");
    let backup = PathBuf::from(".m.gguf.header-backup");
    let bad = |defect| {
        InPlaceError::with_backup(
            model.clone(),
            backup.clone(),
            InPlaceErrorKind::BadBackup { defect },
        )
    };
    assert_eq!(
        bad(BackupDefect::NotARecord).to_string(),
        ".m.gguf.header-backup is not a header backup sipllm wrote (or it is damaged); m.gguf \
         was not changed"
    );
    assert_eq!(
        bad(BackupDefect::TooLarge).to_string(),
        ".m.gguf.header-backup is too large to be a header backup; m.gguf was not changed"
    );
    assert_eq!(
        bad(BackupDefect::HeaderPastEnd).to_string(),
        ".m.gguf.header-backup is damaged (its header would end past m.gguf or the header \
         limit); m.gguf was not changed"
    );
    assert_eq!(
        bad(BackupDefect::RunPastHeader).to_string(),
        ".m.gguf.header-backup is damaged (a run past the header); m.gguf was not changed"
    );
    let removed = |recovered| {
        InPlaceError::with_backup(
            model.clone(),
            backup.clone(),
            InPlaceErrorKind::BackupRemove {
                recovered,
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            },
        )
    };
    assert_eq!(
        removed(false).to_string(),
        "the new header is written, but the backup .m.gguf.header-backup could not be \
         removed: permission denied; remove it by hand"
    );
    assert_eq!(
        removed(true).to_string(),
        "m.gguf is restored, but the backup .m.gguf.header-backup could not be removed: \
         permission denied"
    );
    let wrong = InPlaceError::with_backup(
        model.clone(),
        backup.clone(),
        InPlaceErrorKind::WrongModel { len: 2432, recorded_len: 2433 },
    );
    assert_eq!(
        wrong.to_string(),
        "m.gguf is 2,432 bytes, but it was 2,433 when .m.gguf.header-backup was made: it is \
         not the file the backup belongs to, so it was not changed"
    );
    assert_eq!(wrong.path(), Some(model.as_path()));
    assert_eq!(wrong.offset(), None);
    let torn = InPlaceError::with_backup(
        model.clone(),
        backup.clone(),
        InPlaceErrorKind::Torn {
            offset: 4096,
            source: io::Error::from(io::ErrorKind::StorageFull),
        },
    );
    assert_eq!(torn.offset(), Some(4096));
    assert!(torn.help().contains("sipllm edit --recover"), "{}", torn.help());
    let invalid = InPlaceError::with_backup(
        model.clone(),
        backup,
        InPlaceErrorKind::RestoredInvalid {
            source: Box::new(StreamError::new(None, StreamErrorKind::TooShort { len: 0 })),
        },
    );
    let chained = std::error::Error::source(&invalid).map(|s| s.to_string());
    assert!(chained.is_some_and(|s| s.contains("too short")));
    assert!(invalid.to_string().ends_with("the backup .m.gguf.header-backup is kept"));
}
