//! One call per edit (`sipllm_edit::header::{edit_in_place, edit_out_of_place}`): the lock, the
//! backup refusal, every problem at once, the plan-only run; then each refusal of an edit's
//! values and of an in-place fit, and the post-write failures, with their codes.

use std::os::unix::fs::FileExt;
use std::path::Path;

use sipllm_edit::header::{
    CheckError, Edit, EditError, EditOptions, InPlace, Input, OutOfPlace, edit_in_place,
    edit_out_of_place,
};
use sipllm_edit::{HeaderBackup, InPlaceErrorKind};
use sipllm_gguf::writer::Value;
use sipllm_gguf::{GgmlType, ValueType};
use sipllm_streaming::StreamErrorKind;
use sipllm_streaming::lock::open_locked;
use sipllm_testkit::{GgufBuilder, Tensor, Value as B};

use crate::support::TempDir;

/// A model with room in its header for short in-place edits.
fn model(dir: &TempDir) -> std::path::PathBuf {
    let bytes = GgufBuilder::new()
        .kv("general.architecture", B::str("llama"))
        .kv("general.name", B::str("a model name with some room to shrink in place"))
        .tensor("a", GgmlType::F32, &[4])
        .tensor("b", GgmlType::F32, &[4])
        .build();
    let path = dir.join("m.gguf");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn set_name(value: &str) -> Vec<Edit> {
    vec![Edit::Set { key: "general.name".into(), value: Value::string(value), from: None }]
}

fn codes(errors: &sipllm_edit::header::EditErrors) -> Vec<&'static str> {
    errors.iter().map(EditError::code).collect()
}

/// A backup beside `model` as an interrupted rewrite leaves it.
#[allow(clippy::single_range_in_vec_init)] // one run of bytes, on purpose
fn leave_backup(model: &Path) -> std::path::PathBuf {
    let bytes = std::fs::read(model).unwrap();
    let file = std::fs::File::open(model).unwrap();
    let backup =
        HeaderBackup::write(model, &file, bytes.len() as u64, &bytes[..64], &[0..64]).unwrap();
    let path = backup.path().to_path_buf();
    drop(backup); // the crash: the backup stays
    path
}

#[test]
fn in_place_rewrites_and_checks_in_one_call() {
    let dir = TempDir::new("edit-call-in-place");
    let path = model(&dir);
    let opts = EditOptions::default();
    match edit_in_place(&path, set_name("short"), &opts).unwrap() {
        InPlace::Rewritten(done) => assert_eq!(done.report.applied.changes.len(), 1),
        other => panic!("{other:?}"),
    }
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(sipllm_gguf::parse(&bytes).unwrap().get_str("general.name"), Some("short"));
    // The same edit again changes nothing.
    assert!(matches!(edit_in_place(&path, set_name("short"), &opts), Ok(InPlace::Unchanged)));
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// A second in-place editor is refused at once while the first holds the exclusive lock; a
/// reader's shared lock refuses it too. Nothing is written.
#[test]
fn in_place_takes_the_exclusive_lock() {
    let dir = TempDir::new("edit-call-lock");
    let path = model(&dir);
    let before = std::fs::read(&path).unwrap();
    for write in [true, false] {
        let held = open_locked(&path, write).unwrap();
        let errors = edit_in_place(&path, set_name("x"), &EditOptions::default()).unwrap_err();
        assert_eq!(errors.0.len(), 1, "{errors}");
        match &errors.0[0] {
            EditError::InPlace(e) => {
                assert!(
                    matches!(e.read_error(), Some(r) if matches!(r.kind(), StreamErrorKind::Locked { .. })),
                    "{e:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
        drop(held);
    }
    // Released: the edit goes through.
    assert!(matches!(
        edit_in_place(&path, set_name("x"), &EditOptions::default()),
        Ok(InPlace::Rewritten(_))
    ));
}

/// A pending header backup refuses the in-place call, the out-of-place call reading the model
/// and the one writing over it; the model and the backup are left as they were.
#[test]
fn the_calls_refuse_a_pending_backup() {
    let dir = TempDir::new("edit-call-pending");
    let path = model(&dir);
    let backup = leave_backup(&path);
    let before = std::fs::read(&path).unwrap();
    let other = dir.join("other.gguf");
    std::fs::copy(&path, &other).unwrap();
    let opts = EditOptions::default();
    let pending = |errors: sipllm_edit::header::EditErrors| {
        assert_eq!(codes(&errors), ["edit::in_place::pending"], "{errors}");
        match &errors.0[0] {
            EditError::InPlace(e) => match (e.kind(), e.path()) {
                (InPlaceErrorKind::Pending, Some(p)) => p.to_path_buf(),
                _ => panic!("{e:?}"),
            },
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(pending(edit_in_place(&path, set_name("x"), &opts).unwrap_err()), path);
    let mut none = |_, _| {};
    let from = edit_out_of_place(Input::Path(&path), &other, set_name("x"), &opts, &mut none);
    assert_eq!(pending(from.unwrap_err()), path);
    let into = edit_out_of_place(Input::Path(&other), &path, set_name("x"), &opts, &mut none);
    assert_eq!(pending(into.unwrap_err()), path);
    // Planning alone is refused as well: the header may be torn.
    let plan = edit_in_place(&path, set_name("x"), &opts.plan_only(true));
    assert_eq!(pending(plan.unwrap_err()), path);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert!(backup.exists(), "the backup is kept");
    assert_eq!(dir.names().len(), 3, "no temporary left: {:?}", dir.names());
}

/// Planning only reports every edit the model refuses, and writes nothing.
#[test]
fn plan_only_reports_every_problem_and_writes_nothing() {
    let dir = TempDir::new("edit-call-plan");
    let path = model(&dir);
    let before = std::fs::read(&path).unwrap();
    let out = dir.join("out.gguf");
    let edits = || {
        vec![
            Edit::Delete { key: "no.such.key".into() },
            Edit::RenameTensor { old: "nope".into(), new: "x".into() },
            Edit::RenameTensor { old: "a".into(), new: "b".into() },
        ]
    };
    let opts = EditOptions::default().plan_only(true);
    let mut none = |_, _| {};
    let errors =
        edit_out_of_place(Input::Path(&path), &out, edits(), &opts, &mut none).unwrap_err();
    let expected = [
        "edit::header::no_such_key",
        "edit::header::no_such_tensor",
        "edit::header::tensor_exists",
    ];
    assert_eq!(codes(&errors), expected);
    let errors = edit_in_place(&path, edits(), &opts).unwrap_err();
    assert_eq!(codes(&errors), expected);
    // Edits that apply: planned, not written.
    let planned = edit_out_of_place(Input::Path(&path), &out, set_name("y"), &opts, &mut none);
    assert!(matches!(planned, Ok(OutOfPlace::Planned(_))), "{planned:?}");
    assert!(matches!(edit_in_place(&path, set_name("y"), &opts), Ok(InPlace::Planned(_))));
    // In place, the fit is planned too.
    let long = "n".repeat(4096);
    let errors = edit_in_place(&path, set_name(&long), &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::in_place_does_not_fit"]);
    assert!(!out.exists());
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// Out of place: a private copy (a fetched URL) needs no lock; the output is checked and
/// committed; a missing input and a file that is no GGUF are typed errors.
#[test]
fn out_of_place_writes_checks_and_types_its_errors() {
    let dir = TempDir::new("edit-call-out");
    let path = model(&dir);
    let out = dir.join("out.gguf");
    let opts = EditOptions::default();
    let mut seen = 0;
    let mut progress = |done: u64, _total: u64| seen = done;
    let file = std::fs::File::open(&path).unwrap();
    let input = Input::Private { file, name: Path::new("https://example.com/m.gguf") };
    match edit_out_of_place(input, &out, set_name("copy"), &opts, &mut progress).unwrap() {
        OutOfPlace::Written { report, .. } => assert_eq!(report.planned.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(seen, 32, "the progress saw every tensor byte");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(sipllm_gguf::parse(&bytes).unwrap().get_str("general.name"), Some("copy"));

    let mut none = |_, _| {};
    let missing = dir.join("missing.gguf");
    let errors = edit_out_of_place(Input::Path(&missing), &out, set_name("x"), &opts, &mut none)
        .unwrap_err();
    assert!(
        matches!(&errors.0[..], [EditError::Open(e)] if matches!(e.kind(), StreamErrorKind::Open { .. })),
        "{errors}"
    );
    let llmw = dir.join("m.llmw");
    let mut w = sipllm_llmw::LlmwWriter::new();
    w.add_meta_i64("a", 1).unwrap();
    std::fs::write(&llmw, w.to_vec().unwrap()).unwrap();
    let errors = edit_in_place(&llmw, set_name("x"), &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::not_gguf"]);
    assert_eq!(std::fs::read(&out).unwrap(), bytes, "the output untouched by the failures");
}

/// The data offset and the end of the tensor directory of the GGUF file at `path`.
fn header_end(path: &Path) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let g = sipllm_gguf::parse(&bytes).unwrap();
    (g.data_offset(), g.directory().directory_end())
}

/// A value file must be UTF-8: the error says where it stops being.
#[test]
fn a_value_file_that_is_not_utf8_is_refused() {
    let dir = TempDir::new("edit-value-file");
    let latin1 = dir.join("latin1.txt");
    std::fs::write(&latin1, b"caf\xe9").unwrap();
    let e = Edit::set_file("tokenizer.chat_template", &latin1).unwrap_err();
    assert!(matches!(e, EditError::ValueFileNotUtf8 { valid_up_to: 3, .. }), "{e:?}");
    assert_eq!(e.code(), "edit::header::value_file_not_utf8");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: not UTF-8 text (invalid byte at offset 3); GGUF strings are UTF-8",
            latin1.display()
        )
    );
}

/// `general.alignment` must stay a `u32`; in place it must not change at all (set or deleted),
/// since that would move every tensor's data.
#[test]
fn the_alignment_stays_a_u32_and_in_place_unchanged() {
    let dir = TempDir::new("edit-alignment");
    let path = model(&dir);
    let before = std::fs::read(&path).unwrap();
    let out = dir.join("out.gguf");
    let opts = EditOptions::default();
    let mut none = |_, _| {};
    let set = |value| vec![Edit::Set { key: "general.alignment".into(), value, from: None }];

    let errors =
        edit_out_of_place(Input::Path(&path), &out, set(Value::string("64")), &opts, &mut none)
            .unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::alignment_type"]);
    assert_eq!(
        errors.to_string(),
        "general.alignment must be a u32 power of two (e.g. general.alignment=u32:64), not STRING"
    );
    let array = Value::Array { elem_type: ValueType::Uint32, elems: vec![Value::Uint32(64)] };
    let errors = edit_in_place(&path, set(array), &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::alignment_type"]);
    assert!(errors.to_string().ends_with(", not ARRAY of UINT32"), "{errors}");

    let errors = edit_in_place(&path, set(Value::Uint32(64)), &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::alignment_in_place"]);
    assert_eq!(
        errors.to_string(),
        "changing general.alignment from 32 to 64 moves every tensor's data; in place only the \
         header is rewritten"
    );
    assert!(errors.0[0].help().contains("-o OUT"), "{}", errors.0[0].help());
    // Out of place the data moves with the header.
    let written =
        edit_out_of_place(Input::Path(&path), &out, set(Value::Uint32(64)), &opts, &mut none);
    assert!(matches!(written, Ok(OutOfPlace::Written { .. })), "{written:?}");
    let aligned = std::fs::read(&out).unwrap();
    assert_eq!(sipllm_gguf::parse(&aligned).unwrap().alignment(), 64);
    let delete = vec![Edit::Delete { key: "general.alignment".into() }];
    let errors = edit_in_place(&out, delete, &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::alignment_in_place"]);
    assert_eq!(
        errors.to_string(),
        "deleting general.alignment from 64 to 32 moves every tensor's data; in place only the \
         header is rewritten"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(std::fs::read(&out).unwrap(), aligned);
}

/// An edit the writer cannot encode (an array whose elements are not of its type) is refused
/// before anything is created, planned or not.
#[test]
fn an_edit_that_makes_an_invalid_header_writes_nothing() {
    let dir = TempDir::new("edit-invalid");
    let path = model(&dir);
    let out = dir.join("out.gguf");
    let mixed = || {
        let elems = vec![Value::Uint8(1), Value::string("two")];
        let value = Value::Array { elem_type: ValueType::Uint8, elems };
        vec![Edit::Set { key: "my.list".into(), value, from: None }]
    };
    let mut none = |_, _| {};
    for opts in [EditOptions::default(), EditOptions::default().plan_only(true)] {
        let errors =
            edit_out_of_place(Input::Path(&path), &out, mixed(), &opts, &mut none).unwrap_err();
        assert_eq!(codes(&errors), ["edit::header::invalid_header"]);
        assert_eq!(
            errors.to_string(),
            "the edited header is invalid: key \"my.list\": array element of type STRING in an \
             array of UINT8"
        );
    }
    assert_eq!(dir.names(), ["m.gguf"], "nothing created");
}

/// In place, a file of header only has no data to keep where it is.
#[test]
fn in_place_a_file_without_tensors_is_refused() {
    let dir = TempDir::new("edit-no-tensors");
    let path = dir.join("vocab.gguf");
    let bytes = GgufBuilder::new().kv("general.name", B::str("vocabulary only")).build();
    std::fs::write(&path, &bytes).unwrap();
    let errors = edit_in_place(&path, set_name("v"), &EditOptions::default()).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::in_place_no_tensors"]);
    assert!(
        errors.to_string().starts_with("the file has no tensors: it is all header"),
        "{errors}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// In place, tensor data that is not where the canonical layout puts it (a gap, which the
/// strict profile only warns about) cannot be described by a rewritten header.
#[test]
fn in_place_data_out_of_canonical_layout_is_refused() {
    let dir = TempDir::new("edit-not-canonical");
    let path = dir.join("gap.gguf");
    let bytes = GgufBuilder::new()
        .kv("general.architecture", B::str("llama"))
        .kv("general.name", B::str("gap"))
        .tensor("a", GgmlType::F32, &[4])
        .tensor_info(Tensor {
            name: b"late".to_vec(),
            dims: vec![4],
            type_code: GgmlType::F32.code(),
            offset: Some(64),
            n_dims: None,
            data: None,
        })
        .build();
    std::fs::write(&path, &bytes).unwrap();
    let (data, _) = header_end(&path);
    // Same length: the header fits exactly, only the layout is in the way.
    let errors = edit_in_place(&path, set_name("GAP"), &EditOptions::default()).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::in_place_not_canonical"]);
    assert_eq!(
        errors.to_string(),
        format!(
            "the tensor data is not in canonical layout (tensor 1 \"late\" is at byte {}; the \
             canonical place is {}), so a rewritten header cannot describe it in place",
            data + 64,
            data + 32
        )
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// In place, a header that shrank by more than the alignment absorbs but by less than a
/// padding pair takes cannot end at the data section.
#[test]
fn in_place_a_gap_too_small_for_a_padding_pair_is_refused() {
    let dir = TempDir::new("edit-no-room");
    let path = model(&dir);
    let before = std::fs::read(&path).unwrap();
    let (data, end) = header_end(&path);
    // 36 bytes between the new header's end and the data: more than the 31 the alignment can
    // absorb, fewer than the 41 of the smallest padding pair.
    let name = "a model name with some room to shrink in place";
    let shorter = &name[..name.len() - (36 - (data - end) as usize)];
    let errors = edit_in_place(&path, set_name(shorter), &EditOptions::default()).unwrap_err();
    assert!(
        matches!(errors.0[..], [EditError::NoRoomForPadding { slack: 36, min: 41 }]),
        "{errors}"
    );
    assert_eq!(codes(&errors), ["edit::header::in_place_no_room_for_padding"]);
    assert!(errors.0[0].help().contains("a few bytes longer or shorter"), "{}", errors.0[0].help());
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

/// In place, a header that shrank by more than a GGUF string may hold would need a padding
/// string no reader accepts.
#[test]
fn in_place_a_padding_string_too_large_is_refused() {
    let dir = TempDir::new("edit-padding-too-large");
    let path = dir.join("big.gguf");
    // Two strings of 33 MiB (each within the 64 MiB limit), deleted together.
    let big = "x".repeat(33 << 20);
    let bytes = GgufBuilder::new()
        .kv("general.architecture", B::str("llama"))
        .kv("big.a", B::str(&big))
        .kv("big.b", B::str(&big))
        .tensor("a", GgmlType::F32, &[4])
        .build();
    std::fs::write(&path, &bytes).unwrap();
    drop(bytes);
    let (data, end) = header_end(&path);
    let delete = ["big.a", "big.b"].map(|key| Edit::Delete { key: key.into() }).to_vec();
    let errors = edit_in_place(&path, delete, &EditOptions::default()).unwrap_err();
    // Each pair: key length (8), key (5), type (4), string length (8), string.
    let slack = (data - end) + 2 * (25 + big.len() as u64);
    let (len, max) = (slack - 41, 64u64 << 20);
    assert!(len > max);
    assert!(
        matches!(errors.0[..], [EditError::PaddingTooLarge { len: l, max: m }] if (l, m) == (len, max)),
        "{errors}"
    );
    assert_eq!(codes(&errors), ["edit::header::in_place_padding_too_large"]);
    assert_eq!(
        errors.to_string(),
        format!(
            "the edited header would need a padding string of {len} bytes to keep the data in \
             place, more than the {max} a GGUF string may hold"
        )
    );
}

/// Out of place: another process makes the destination a directory while the data is copied;
/// the checked temporary is not moved over it, and is removed.
#[test]
fn out_of_place_a_destination_taken_during_the_write_is_not_replaced() {
    let dir = TempDir::new("edit-commit");
    let path = model(&dir);
    let out = dir.join("out.gguf");
    let mut take = |done: u64, total: u64| {
        if done == total && !out.exists() {
            std::fs::create_dir(&out).unwrap();
        }
    };
    let errors = edit_out_of_place(
        Input::Path(&path),
        &out,
        set_name("copy"),
        &EditOptions::default(),
        &mut take,
    )
    .unwrap_err();
    assert!(matches!(errors.0[..], [EditError::Commit { .. }]), "{errors}");
    assert_eq!(codes(&errors), ["edit::header::commit"]);
    assert_eq!(
        errors.to_string(),
        "cannot move the new file into place: the destination exists and is not a regular file; \
         it is not replaced"
    );
    assert!(out.is_dir());
    assert_eq!(dir.names(), ["m.gguf", "out.gguf"], "no temporary left behind");
}

/// Out of place: another process changes the source's tensor data after it was copied; the
/// check of the temporary finds the difference, and the destination is not created.
#[test]
fn out_of_place_a_source_changed_during_the_write_fails_the_check() {
    let dir = TempDir::new("edit-check");
    let path = model(&dir);
    let at =
        sipllm_gguf::parse(&std::fs::read(&path).unwrap()).unwrap().tensor_infos()[0].abs_offset();
    let out = dir.join("out.gguf");
    let mut changed = false;
    let mut change = |done: u64, total: u64| {
        if done == total && !changed {
            let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
            let mut byte = [0u8];
            f.read_exact_at(&mut byte, at).unwrap();
            f.write_all_at(&[!byte[0]], at).unwrap();
            changed = true;
        }
    };
    let errors = edit_out_of_place(
        Input::Path(&path),
        &out,
        set_name("copy"),
        &EditOptions::default(),
        &mut change,
    )
    .unwrap_err();
    match &errors.0[..] {
        [EditError::Check(c)] => {
            assert!(matches!(&**c, CheckError::Data { tensor, at: 0 } if tensor == "a"), "{c:?}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(codes(&errors), ["edit::header::check_failed"]);
    assert_eq!(
        errors.to_string(),
        "the written file failed its check: tensor \"a\": the bytes at +0 differ from the source's"
    );
    assert_eq!(dir.names(), ["m.gguf"], "no temporary left behind");
}

/// A value file that cannot be read names the file once, whichever layer found the fault.
#[test]
fn a_value_file_that_cannot_be_read_names_it_once() {
    let dir = TempDir::new("edit-value-file-missing");
    let missing = dir.join("missing.txt");
    let e = Edit::set_file("tokenizer.chat_template", &missing).unwrap_err();
    let EditError::ValueFile { source, .. } = &e else { panic!("{e:?}") };
    assert_eq!(source.path(), Some(missing.as_path()));
    let shown = missing.display().to_string();
    assert!(e.to_string().starts_with(&format!("{shown}: ")), "{e}");
    assert_eq!(e.to_string().matches(&shown).count(), 1, "{e}");

    let big = dir.join("big.txt");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(sipllm_gguf::Limits::default().max_string_len + 1).unwrap(); // sparse
    let e = Edit::set_file("tokenizer.chat_template", &big).unwrap_err();
    assert_eq!(e.code(), "edit::input::too_large");
    assert_eq!(e.to_string().matches(&big.display().to_string()).count(), 1, "{e}");
}
