//! Parse options: resource limits and the file size.

/// Resource limits. Nothing is allocated in proportion to a declared count, so these bound
/// work and the size of what a streaming reader buffers, not allocations.
///
/// Every limit on a declared length is checked as soon as the length field is read, before
/// the decoder asks for the bytes it declares: a corrupt length can never make a caller buffer
/// more than [`max_header_bytes`](Self::max_header_bytes) (plus one fixed-size field of at most
/// 8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Longest string (key, tensor name or string value), in bytes. Default 64 MiB.
    pub max_string_len: u32,
    /// Most elements in one array. Default 2^26 (67 M); vocabularies have under a million.
    pub max_array_len: u32,
    /// Most metadata entries. Default 2^20.
    pub max_meta_count: u32,
    /// Most tensors. Default 2^20.
    pub max_tensor_count: u32,
    /// No string, array or the padding before the data section may end beyond this offset.
    /// Default 256 MiB.
    pub max_header_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_string_len: 64 << 20,
            max_array_len: 1 << 26,
            max_meta_count: 1 << 20,
            max_tensor_count: 1 << 20,
            max_header_bytes: 256 << 20,
        }
    }
}

/// Everything that shapes a parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ParseOptions {
    /// Resource limits.
    pub limits: Limits,
    /// Size of the whole file, when known: tensor data must then lie inside it.
    pub file_size: Option<u64>,
}

impl ParseOptions {
    /// Sets the limits.
    pub fn with_limits(mut self, limits: Limits) -> ParseOptions {
        self.limits = limits;
        self
    }

    /// Sets (or clears) the file size used for bounds checks.
    pub fn with_file_size(mut self, file_size: Option<u64>) -> ParseOptions {
        self.file_size = file_size;
        self
    }
}
