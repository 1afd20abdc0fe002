//! Logical locations in a file: `metadata[12] "tokenizer.ggml.tokens"[5031]`.

use std::fmt;

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
        /// The key, lossily decoded.
        key: Option<Box<str>>,
    },
    /// The n-th tensor info, with its name when it could be read.
    Tensor {
        /// Index in file order.
        index: u64,
        /// The name, lossily decoded.
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
                    write!(f, "{sep}metadata[{index}] {key:?}")?
                }
                PathSeg::Metadata { index, key: None } => write!(f, "{sep}metadata[{index}]")?,
                PathSeg::Tensor { index, name: Some(name) } => {
                    write!(f, "{sep}tensor[{index}] {name:?}")?
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
}
