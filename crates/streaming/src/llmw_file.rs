//! [`LlmwFile`]: a `.llmw` file as a [`WeightSource`](crate::WeightSource) — the `.llmw`
//! [`Container`] of the one generic opener ([`HeaderFile`]).

use std::path::Path;

use sipllm_llmw::{Decoder, Directory, Llmw};

use crate::MetaStr;
use crate::backing::ReadAt;
use crate::error::StreamError;
use crate::header_bytes::HeaderBytes;
use crate::header_file::{self, Container, HeaderFile};
use crate::meta::Meta;
use crate::options::OpenOptions;
use crate::source::SourceTensor;
use crate::window::HeaderStats;

/// A `.llmw` file opened as a [`WeightSource`](crate::WeightSource): the sibling of
/// [`GgufFile`](crate::GgufFile) — the same opener, backings, bounds checks and readahead.
///
/// Shapes are the `.llmw` dims as stored (row-major already). Metadata maps onto [`Meta`]
/// without copying: `i64` → [`Meta::Int`], `f64` → [`Meta::Float`], strings →
/// [`Meta::Str`], and the v2 arrays → [`Meta::Ints`], [`Meta::Floats`], [`Meta::Strs`]
/// wrapping the parser's views into the header buffer.
pub type LlmwFile = HeaderFile<Llmw<HeaderBytes>>;

/// Reads and parses the `.llmw` header and tensor directory at the start of `source`, through
/// the same refilling window as GGUF's [`read_header`](crate::read_header). When the source
/// ends first, the error is the parser's `llmw::input::unexpected_eof` naming the item that
/// was cut. `options.llmw.file_size` is replaced by `source.len()`, so the parser checks that
/// every tensor's data lies inside the file (`llmw::layout::out_of_bounds`).
pub fn read_llmw_header(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<(Llmw<HeaderBytes>, HeaderStats), StreamError> {
    header_file::read(source, path, options)
}

impl Container for Llmw<HeaderBytes> {
    type Decoder = Decoder;

    fn decoder(options: &OpenOptions, file_size: u64) -> Decoder {
        Decoder::new(options.llmw.with_file_size(Some(file_size)))
    }

    fn wrap(path: Option<&Path>, err: sipllm_llmw::Error) -> StreamError {
        StreamError::parse_llmw(path, err)
    }

    fn assemble(buf: HeaderBytes, dir: Directory) -> Result<(Self, u64), sipllm_llmw::Error> {
        let data_start = dir.data_start();
        Ok((Llmw::from_parts(buf, dir)?, data_start))
    }

    fn tensor_infos(&self) -> Vec<SourceTensor> {
        self.tensors()
            .map(|t| SourceTensor {
                name: t.name.to_owned(),
                ggml_type: t.info.dtype(),
                shape: t.info.dims().iter().copied().collect(),
                abs_offset: t.info.offset(),
                nbytes: Some(t.info.nbytes()),
            })
            .collect()
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        let entry = self.get_entry(key)?;
        Meta::from_llmw(MetaStr::from(entry.key), entry.value)
    }

    /// `.llmw` stores every number little-endian (docs/llmw.md).
    fn endian(&self) -> sipllm_gguf::Endian {
        sipllm_gguf::Endian::Little
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        Box::new(Llmw::metadata(self).filter_map(|e| {
            let key = MetaStr::from(e.key);
            Some((key, Meta::from_llmw(key, e.value)?))
        }))
    }
}

impl LlmwFile {
    /// The parsed header: the `.llmw` parser's AST over the header bytes (version, every value
    /// as stored, the directory's spans).
    pub fn llmw(&self) -> &Llmw<HeaderBytes> {
        self.ast()
    }
}
