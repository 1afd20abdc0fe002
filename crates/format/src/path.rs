//! Logical locations in a file: `metadata[12] "tokenizer.ggml.tokens"[5031]`.

use std::fmt;

/// The most bytes of a key or tensor name a [`Path`] keeps and shows; longer ones are elided
/// by [`shown_name`] (so a finding about an 8 MiB name costs neither 8 MiB per copy nor an
/// 8 MiB message).
pub const MAX_SHOWN_NAME: usize = 128;

/// A key or tensor name as a [`PathSeg`] holds it: lossily decoded, and when longer than
/// [`MAX_SHOWN_NAME`] bytes cut to its first characters (at most that many bytes) followed by
/// the marker `… (N bytes)` giving the whole length, e.g. `aaaa… (8388608 bytes)`.
pub fn shown_name(bytes: &[u8]) -> Box<str> {
    if bytes.len() <= MAX_SHOWN_NAME {
        return String::from_utf8_lossy(bytes).into();
    }
    let mut cut = MAX_SHOWN_NAME;
    // Back up (at most 3 bytes) to a character boundary when the cut falls inside a UTF-8
    // sequence, so the kept head never ends in a replacement character.
    while cut > 0 && bytes.get(cut).is_some_and(|&b| b & 0xc0 == 0x80) && MAX_SHOWN_NAME - cut < 3 {
        cut -= 1;
    }
    let head = String::from_utf8_lossy(bytes.get(..cut).unwrap_or_default());
    format!("{head}… ({} bytes)", bytes.len()).into()
}

/// Writes `name` Debug-quoted, eliding it (as [`shown_name`] does) when it is too long, so a
/// [`Path`] built by hand with a huge name still displays bounded.
fn fmt_name(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    // Room for the marker `shown_name` appends.
    if name.len() <= MAX_SHOWN_NAME + 32 {
        return write!(f, "{name:?}");
    }
    write!(f, "{:?}", shown_name(name.as_bytes()))
}

/// A logical location in a file, e.g. `tensor[7] "blk.0.attn_q.weight" ne[1]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(Vec<PathSeg>);

impl Path {
    /// The empty path (the file as a whole).
    pub fn root() -> Path {
        Path(Vec::new())
    }

    /// The segments, outermost first.
    pub fn segments(&self) -> &[PathSeg] {
        &self.0
    }

    /// True for the root path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Appends a segment.
    pub fn push(&mut self, seg: PathSeg) {
        self.0.push(seg);
    }

    /// The path with one more segment.
    pub fn with(mut self, seg: PathSeg) -> Path {
        self.0.push(seg);
        self
    }
}

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathSeg {
    /// A field of the fixed header (`magic`, `version`, `tensor_count`, `kv_count`).
    Header(&'static str),
    /// The n-th metadata key/value pair, with its key when it could be read.
    Metadata {
        /// Index in file order.
        index: u64,
        /// The key, lossily decoded (elided past [`MAX_SHOWN_NAME`] bytes: [`shown_name`]).
        key: Option<Box<str>>,
    },
    /// The n-th tensor info, with its name when it could be read.
    Tensor {
        /// Index in file order.
        index: u64,
        /// The name, lossily decoded (elided past [`MAX_SHOWN_NAME`] bytes: [`shown_name`]).
        name: Option<Box<str>>,
    },
    /// An array element.
    Element(u64),
    /// The `index`-th entry of a list field of the enclosing item, in the format's own words:
    /// GGUF's `ne[j]` (dimensions fastest-varying first), `.llmw`'s `dims[j]` (row-major).
    Indexed {
        /// The field's name (`ne`, `dims`).
        field: &'static str,
        /// The entry's index in the field.
        index: u32,
    },
    /// A named field of the enclosing item (`key`, `type`, `value`, `n_dims`, `offset`, …).
    Field(&'static str),
    /// The padding before the data section.
    Padding,
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            match seg {
                PathSeg::Header(field) => write!(f, "{sep}header.{field}")?,
                PathSeg::Metadata { index, key: Some(key) } => {
                    write!(f, "{sep}metadata[{index}] ")?;
                    fmt_name(f, key)?
                }
                PathSeg::Metadata { index, key: None } => write!(f, "{sep}metadata[{index}]")?,
                PathSeg::Tensor { index, name: Some(name) } => {
                    write!(f, "{sep}tensor[{index}] ")?;
                    fmt_name(f, name)?
                }
                PathSeg::Tensor { index, name: None } => write!(f, "{sep}tensor[{index}]")?,
                PathSeg::Element(i) => write!(f, "[{i}]")?,
                PathSeg::Indexed { field, index } => write!(f, "{sep}{field}[{index}]")?,
                PathSeg::Field(name) => write!(f, "{sep}{name}")?,
                PathSeg::Padding => write!(f, "{sep}padding")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_the_docs_say() {
        let p = Path::root()
            .with(PathSeg::Metadata { index: 12, key: Some("tokenizer.ggml.tokens".into()) })
            .with(PathSeg::Element(5031));
        assert_eq!(p.to_string(), "metadata[12] \"tokenizer.ggml.tokens\"[5031]");
        let p = Path::root()
            .with(PathSeg::Tensor { index: 7, name: Some("blk.0.attn_q.weight".into()) })
            .with(PathSeg::Indexed { field: "ne", index: 1 });
        assert_eq!(p.to_string(), "tensor[7] \"blk.0.attn_q.weight\" ne[1]");
        // Control characters from the file are escaped, never printed raw.
        let p = Path::root().with(PathSeg::Metadata { index: 0, key: Some("a\x1b[2Jb".into()) });
        assert_eq!(p.to_string(), "metadata[0] \"a\\u{1b}[2Jb\"");
    }

    #[test]
    fn long_names_are_elided_with_their_length() {
        let long = "a".repeat(8 << 20);
        let shown = shown_name(long.as_bytes());
        assert_eq!(&*shown, format!("{}… (8388608 bytes)", "a".repeat(MAX_SHOWN_NAME)));
        // Held elided, and displayed elided even when a path was built with the whole name.
        for name in [shown.clone(), long.clone().into()] {
            let p = Path::root().with(PathSeg::Tensor { index: 0, name: Some(name) });
            let text = p.to_string();
            assert!(text.len() < 200, "{}", text.len());
            assert!(text.ends_with("… (8388608 bytes)\""), "{text}");
        }
        // Names up to the limit are kept whole; a cut never splits a character.
        let edge = "b".repeat(MAX_SHOWN_NAME);
        assert_eq!(&*shown_name(edge.as_bytes()), edge);
        let wide = "é".repeat(MAX_SHOWN_NAME);
        let shown = shown_name(wide.as_bytes());
        assert!(shown.starts_with(&"é".repeat(MAX_SHOWN_NAME / 2)), "{shown}");
        assert!(!shown.contains('\u{fffd}'), "{shown}");
    }
}
