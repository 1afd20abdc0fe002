//! Paths, codes and helps of the parser's findings.

use super::*;

#[test]
fn paths_render_like_the_docs_say() {
    let p = Path::root()
        .with(PathSeg::Metadata { index: 12, key: Some("tokenizer.ggml.tokens".into()) })
        .with(PathSeg::Element(5031));
    assert_eq!(p.to_string(), "metadata[12] \"tokenizer.ggml.tokens\"[5031]");
    let p = Path::root()
        .with(PathSeg::Tensor { index: 7, name: Some("blk.0.attn_q.weight".into()) })
        .with(crate::grammar::ne(1));
    assert_eq!(p.to_string(), "tensor[7] \"blk.0.attn_q.weight\" ne[1]");
    // Control characters from the file are escaped, never printed raw.
    let p = Path::root().with(PathSeg::Metadata { index: 0, key: Some("a\x1b[2Jb".into()) });
    assert_eq!(p.to_string(), "metadata[0] \"a\\u{1b}[2Jb\"");
}

#[test]
fn bad_magic_shows_hex_and_ascii() {
    let e = ErrorKind::BadMagic { found: *b"FUGG" };
    assert_eq!(e.to_string(), "bad magic 46 55 47 47 (\"FUGG\"): expected \"GGUF\"");
    assert!(e.help().contains("pre-release"));
}
