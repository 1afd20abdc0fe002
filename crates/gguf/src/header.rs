//! The fixed header: magic, version, counts — and how the byte order is found.
//!
//! GGUF has no byte-order flag. A big-endian file (gguf-py's writer can produce one) stores the
//! version byte-swapped, so a little-endian read gives a value whose low 16 bits are zero
//! (3 becomes `0x03000000`). That is the probe gguf-py uses; every later number is then read
//! big-endian (see `docs/format.md`, "Versions and byte order").

use std::fmt;

/// Byte order of every number in the file (the magic is bytes and has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Endian {
    /// Little-endian: every file in practice.
    #[default]
    Little,
    /// Big-endian: detected from a byte-swapped version word.
    Big,
}

impl fmt::Display for Endian {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Endian::Little => "little",
            Endian::Big => "big",
        })
    }
}

/// The parsed fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// GGUF version (1, 2 or 3).
    pub version: u32,
    /// Byte order of the file.
    pub endian: Endian,
    /// Declared number of tensor infos.
    pub tensor_count: u64,
    /// Declared number of metadata key/value pairs.
    pub kv_count: u64,
}

impl Header {
    /// Size in bytes of the fixed header (24 in v2/v3, 16 in v1).
    pub fn size(&self) -> u64 {
        if self.version == 1 { 16 } else { 24 }
    }
}

/// The outcome of probing the version word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VersionProbe {
    /// A version in 1..=3 in the given byte order.
    Known { version: u32, endian: Endian },
    /// Anything else; the little-endian reading of the word.
    Unsupported { version: u32 },
}

/// Decides version and byte order from the raw version word.
pub(crate) fn probe_version(word: [u8; 4]) -> VersionProbe {
    let le = u32::from_le_bytes(word);
    let be = u32::from_be_bytes(word);
    if (1..=3).contains(&le) {
        VersionProbe::Known { version: le, endian: Endian::Little }
    } else if le & 0xFFFF == 0 && (1..=3).contains(&be) {
        VersionProbe::Known { version: be, endian: Endian::Big }
    } else {
        VersionProbe::Unsupported { version: le }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_swapped_versions_mean_big_endian() {
        assert_eq!(
            probe_version(3u32.to_le_bytes()),
            VersionProbe::Known { version: 3, endian: Endian::Little }
        );
        assert_eq!(
            probe_version(3u32.to_be_bytes()),
            VersionProbe::Known { version: 3, endian: Endian::Big }
        );
        assert_eq!(probe_version(0u32.to_le_bytes()), VersionProbe::Unsupported { version: 0 });
        assert_eq!(probe_version(4u32.to_le_bytes()), VersionProbe::Unsupported { version: 4 });
        assert_eq!(
            probe_version(4u32.to_be_bytes()),
            VersionProbe::Unsupported { version: 0x0400_0000 }
        );
    }
}
