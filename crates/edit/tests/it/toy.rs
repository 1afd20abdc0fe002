//! Writing the toy model (`sipllm_edit::toy::write_toy`) where it cannot be written: each
//! failure names the directory or file, with its code, and leaves no temporary behind.

use sipllm_edit::toy::{TOY_GGUF, TOY_LLMW, toy_model, write_toy};

use crate::support::TempDir;

/// A directory that cannot be created (its parent is a file) is an I/O error naming it.
#[test]
fn a_directory_that_cannot_be_created_is_an_io_error() {
    let dir = TempDir::new("toy-io");
    let file = dir.join("file.txt");
    std::fs::write(&file, "not a directory").unwrap();
    let under = file.join("toy");
    let e = write_toy(0, &under).unwrap_err();
    assert_eq!(e.code(), "edit::toy::io");
    assert_eq!(e.path(), Some(under.as_path()));
    let message = e.to_string();
    assert!(message.starts_with(&format!("toy model: cannot write {}: ", under.display())), "{e}");
    assert!(e.help().contains("writable"), "{}", e.help());
    assert_eq!(dir.names(), ["file.txt"]);
}

/// `toy.llmw` taken by a directory: `toy.gguf` is written (complete), the `.llmw` writer's
/// rename fails and names the file; the directory stays.
#[test]
fn a_llmw_file_that_cannot_be_written_is_a_write_llmw_error() {
    let dir = TempDir::new("toy-llmw");
    let llmw = dir.join(TOY_LLMW);
    std::fs::create_dir(&llmw).unwrap();
    let e = write_toy(0, dir.path()).unwrap_err();
    assert_eq!(e.code(), "edit::toy::write_llmw");
    assert_eq!(e.path(), Some(llmw.as_path()));
    let prefix =
        format!("toy model: the .llmw writer failed writing {}: I/O error: ", llmw.display());
    assert!(e.to_string().starts_with(&prefix), "{e}");
    assert!(e.help().contains("writable"), "{}", e.help());
    assert!(llmw.is_dir());
    let gguf = std::fs::read(dir.join(TOY_GGUF)).unwrap();
    assert_eq!(gguf, toy_model(0).gguf_bytes().unwrap());
    assert_eq!(dir.names(), [TOY_GGUF, TOY_LLMW], "no temporary left behind");
}
