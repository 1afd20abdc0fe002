//! One call per edit (`sipllm_edit::header::{edit_in_place, edit_out_of_place}`): the lock, the
//! backup refusal, every problem at once, the plan-only run.

use std::path::Path;

use sipllm_edit::header::{
    Edit, EditError, EditOptions, InPlace, Input, OutOfPlace, edit_in_place, edit_out_of_place,
};
use sipllm_edit::{HeaderBackup, InPlaceError};
use sipllm_gguf::GgmlType;
use sipllm_gguf::writer::Value;
use sipllm_streaming::StreamError;
use sipllm_streaming::lock::open_locked;
use sipllm_testkit::{GgufBuilder, Value as B};

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
                assert!(matches!(**e, InPlaceError::Read(StreamError::Locked { .. })), "{e:?}")
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
            EditError::InPlace(e) => match &**e {
                InPlaceError::Pending { path: p, .. } => p.clone(),
                other => panic!("{other:?}"),
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
    assert!(matches!(errors.0[..], [EditError::Open(StreamError::Open { .. })]), "{errors}");
    let llmw = dir.join("m.llmw");
    let mut w = sipllm_llmw::LlmwWriter::new();
    w.add_meta_i64("a", 1).unwrap();
    std::fs::write(&llmw, w.to_vec().unwrap()).unwrap();
    let errors = edit_in_place(&llmw, set_name("x"), &opts).unwrap_err();
    assert_eq!(codes(&errors), ["edit::header::not_gguf"]);
    assert_eq!(std::fs::read(&out).unwrap(), bytes, "the output untouched by the failures");
}
