//! [`GgufFile`]: a GGUF file as a [`WeightSource`](crate::WeightSource) — the GGUF
//! [`Container`] of the one generic opener ([`HeaderFile`]).

use std::path::Path;

use sipllm_gguf::{Decoder, Directory, Gguf};

use crate::MetaStr;
use crate::backing::ReadAt;
use crate::error::StreamError;
use crate::header_bytes::HeaderBytes;
use crate::header_file::{self, Container, HeaderFile};
use crate::meta::Meta;
use crate::options::OpenOptions;
use crate::source::SourceTensor;
use crate::window::HeaderStats;

/// A GGUF file opened as a [`WeightSource`](crate::WeightSource): header and directory parsed,
/// every tensor checked to lie inside the file, tensor data read only on request.
pub type GgufFile = HeaderFile<Gguf<HeaderBytes>>;

/// Reads and parses the GGUF header and tensor directory at the start of `source`, through
/// the refilling window (see [`HeaderFile`]): the header, directory and padding plus at most
/// one window are read. When the source ends first, the error is the parser's
/// [`UnexpectedEof`](sipllm_gguf::ErrorKind::UnexpectedEof) naming the item that was cut.
/// `parse.file_size` is replaced by `source.len()`.
///
/// [`GgufFile`] uses this; call it directly to parse a header without the tensor bounds
/// guarantee of a weight source (e.g. to inspect a truncated file with the lenient profile).
pub fn read_header(
    source: &dyn ReadAt,
    path: Option<&Path>,
    options: &OpenOptions,
) -> Result<(Gguf<HeaderBytes>, HeaderStats), StreamError> {
    header_file::read(source, path, options)
}

impl Container for Gguf<HeaderBytes> {
    type Decoder = Decoder;

    fn decoder(options: &OpenOptions, file_size: u64) -> Decoder {
        Decoder::new(options.parse.with_file_size(Some(file_size)))
    }

    fn wrap(path: Option<&Path>, err: sipllm_gguf::Error) -> StreamError {
        StreamError::parse(path, err)
    }

    fn assemble(buf: HeaderBytes, dir: Directory) -> Result<(Self, u64), sipllm_gguf::Error> {
        let data_offset = dir.data_offset();
        Ok((Gguf::from_parts(buf, dir)?, data_offset))
    }

    fn tensor_infos(&self) -> Vec<SourceTensor> {
        self.tensors()
            .map(|t| SourceTensor {
                name: t.name.to_string_lossy().into_owned(),
                ggml_type: t.info.ggml_type(),
                shape: t.info.shape(),
                abs_offset: t.info.abs_offset(),
                nbytes: t.info.nbytes(),
            })
            .collect()
    }

    fn meta(&self, key: &str) -> Option<Meta<'_>> {
        let entry = self.get_entry(key)?;
        Some(Meta::from_gguf(entry.key, entry.value))
    }

    fn endian(&self) -> sipllm_gguf::Endian {
        Gguf::endian(self)
    }

    fn metadata(&self) -> Box<dyn Iterator<Item = (MetaStr<'_>, Meta<'_>)> + '_> {
        Box::new(Gguf::metadata(self).map(|e| (e.key, Meta::from_gguf(e.key, e.value))))
    }
}

impl GgufFile {
    /// The parsed header: the parser's AST over the header bytes (version, byte order,
    /// alignment, warnings, every value as stored).
    pub fn gguf(&self) -> &Gguf<HeaderBytes> {
        self.ast()
    }
}
