//! The ggml tensor type table and the one checked helper that computes a tensor's byte size.
//!
//! The table is ggml's `type_traits` as of 2026-08 (`GGML_TYPE_COUNT` = 43): a name, a block
//! size (elements per block) and a type size (bytes per block) for every code. Codes that ggml
//! removed are known by name as [`GgmlType::Removed`]; codes beyond the table are kept as
//! [`GgmlType::Unknown`] so metadata can still be read from files with newer types.

use std::fmt;

/// One row of the ggml type table.
#[derive(Debug, Clone, Copy)]
struct Traits {
    name: &'static str,
    /// Elements per block; 0 marks a removed code.
    block_size: u64,
    /// Bytes per block; 0 marks a removed code.
    type_size: u64,
}

const fn t(name: &'static str, block_size: u64, type_size: u64) -> Traits {
    Traits { name, block_size, type_size }
}

const QK_K: u64 = 256;

/// ggml's type table, indexed by code. Names are spelled as gguf-py prints them.
const TABLE: [Traits; 43] = [
    t("F32", 1, 4),
    t("F16", 1, 2),
    t("Q4_0", 32, 18),
    t("Q4_1", 32, 20),
    t("Q4_2", 0, 0),
    t("Q4_3", 0, 0),
    t("Q5_0", 32, 22),
    t("Q5_1", 32, 24),
    t("Q8_0", 32, 34),
    // ggml's block_q8_1 is 36 bytes; gguf-py's GGML_QUANT_SIZES still says 40 (two f32 fields
    // from an older layout). ggml is authoritative for what is stored.
    t("Q8_1", 32, 36),
    t("Q2_K", QK_K, 84),
    t("Q3_K", QK_K, 110),
    t("Q4_K", QK_K, 144),
    t("Q5_K", QK_K, 176),
    t("Q6_K", QK_K, 210),
    t("Q8_K", QK_K, 292),
    t("IQ2_XXS", QK_K, 66),
    t("IQ2_XS", QK_K, 74),
    t("IQ3_XXS", QK_K, 98),
    t("IQ1_S", QK_K, 50),
    t("IQ4_NL", 32, 18),
    t("IQ3_S", QK_K, 110),
    t("IQ2_S", QK_K, 82),
    t("IQ4_XS", QK_K, 136),
    t("I8", 1, 1),
    t("I16", 1, 2),
    t("I32", 1, 4),
    t("I64", 1, 8),
    t("F64", 1, 8),
    t("IQ1_M", QK_K, 56),
    t("BF16", 1, 2),
    t("Q4_0_4_4", 0, 0),
    t("Q4_0_4_8", 0, 0),
    t("Q4_0_8_8", 0, 0),
    t("TQ1_0", QK_K, 54),
    t("TQ2_0", QK_K, 66),
    t("IQ4_NL_4_4", 0, 0),
    t("IQ4_NL_4_8", 0, 0),
    t("IQ4_NL_8_8", 0, 0),
    t("MXFP4", 32, 17),
    t("NVFP4", 64, 36),
    t("Q1_0", 128, 18),
    t("Q2_0", 64, 18),
];

/// A ggml tensor type, as stored in a tensor info's `type` field.
///
/// Every code of current ggml (0–42) is a named variant. Codes ggml removed (4, 5, 31–33,
/// 36–38) are [`GgmlType::Removed`]: their name is known but their size is not defined any
/// more. Any other code is [`GgmlType::Unknown`]: a newer type this table does not know.
#[allow(non_camel_case_types, missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
    Q1_0,
    Q2_0,
    /// A code ggml once used and removed (4, 5, 31–33, 36–38); files using it no longer load.
    Removed(u32),
    /// A code this table does not know (43 and above): probably a newer ggml type.
    Unknown(u32),
}

/// The named variants in code order, with `None` at removed codes.
const BY_CODE: [Option<GgmlType>; 43] = {
    use GgmlType::*;
    [
        Some(F32),
        Some(F16),
        Some(Q4_0),
        Some(Q4_1),
        None,
        None,
        Some(Q5_0),
        Some(Q5_1),
        Some(Q8_0),
        Some(Q8_1),
        Some(Q2_K),
        Some(Q3_K),
        Some(Q4_K),
        Some(Q5_K),
        Some(Q6_K),
        Some(Q8_K),
        Some(IQ2_XXS),
        Some(IQ2_XS),
        Some(IQ3_XXS),
        Some(IQ1_S),
        Some(IQ4_NL),
        Some(IQ3_S),
        Some(IQ2_S),
        Some(IQ4_XS),
        Some(I8),
        Some(I16),
        Some(I32),
        Some(I64),
        Some(F64),
        Some(IQ1_M),
        Some(BF16),
        None,
        None,
        None,
        Some(TQ1_0),
        Some(TQ2_0),
        None,
        None,
        None,
        Some(MXFP4),
        Some(NVFP4),
        Some(Q1_0),
        Some(Q2_0),
    ]
};

impl GgmlType {
    /// Number of codes in ggml's current table (`GGML_TYPE_COUNT`).
    pub const COUNT: u32 = 43;

    /// Maps a stored code to a type. Never fails: unknown codes become [`GgmlType::Unknown`].
    pub fn from_code(code: u32) -> GgmlType {
        match usize::try_from(code).ok().and_then(|i| BY_CODE.get(i)) {
            Some(Some(ty)) => *ty,
            Some(None) => GgmlType::Removed(code),
            None => GgmlType::Unknown(code),
        }
    }

    /// The code stored in the file.
    pub fn code(self) -> u32 {
        match self {
            GgmlType::Removed(code) | GgmlType::Unknown(code) => code,
            named => {
                // The named variants appear in BY_CODE exactly once.
                BY_CODE.iter().position(|slot| *slot == Some(named)).map_or(u32::MAX, |i| i as u32)
            }
        }
    }

    fn traits(self) -> Option<&'static Traits> {
        usize::try_from(self.code()).ok().and_then(|i| TABLE.get(i))
    }

    /// The name as gguf-py prints it (`F32`, `Q4_K`, `IQ2_XXS`, `BF16`, …). Removed codes have
    /// their historical name; unknown codes are `"unknown"`.
    pub fn name(self) -> &'static str {
        self.traits().map_or("unknown", |tr| tr.name)
    }

    /// Elements per block, or `None` for removed and unknown codes.
    pub fn block_size(self) -> Option<u64> {
        self.traits().map(|tr| tr.block_size).filter(|&b| b != 0)
    }

    /// Bytes per block, or `None` for removed and unknown codes.
    pub fn type_size(self) -> Option<u64> {
        self.traits().map(|tr| tr.type_size).filter(|&s| s != 0)
    }

    /// True for the types ggml can load today (neither removed nor unknown).
    pub fn is_known(self) -> bool {
        self.block_size().is_some()
    }

    /// Every type ggml can load today, in code order.
    pub fn all_known() -> impl Iterator<Item = GgmlType> {
        BY_CODE.iter().filter_map(|slot| *slot)
    }

    /// Parses a name as [`GgmlType::name`] spells it (case-insensitive, so ggml's `q4_K` works).
    pub fn from_name(name: &str) -> Option<GgmlType> {
        Self::all_known().find(|ty| ty.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GgmlType::Unknown(code) => write!(f, "unknown type {code}"),
            GgmlType::Removed(code) => write!(f, "{} (removed type {code})", self.name()),
            named => f.write_str(named.name()),
        }
    }
}

/// Why a tensor's byte size cannot be computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// The type has no defined size (removed or unknown code).
    #[error("type {0} has no defined size")]
    UnsizedType(GgmlType),
    /// `ne[0]` (the row length) is not a multiple of the type's block size.
    #[error("row length {ne0} is not a multiple of the block size {block_size} of {ty}")]
    NotBlockMultiple {
        /// The row length.
        ne0: u64,
        /// The type's block size.
        block_size: u64,
        /// The type.
        ty: GgmlType,
    },
    /// The product of the dimensions does not fit in 64 bits.
    #[error("the element count overflows 64 bits")]
    ElementCountOverflow,
    /// The element count fits but the byte size does not.
    #[error("the byte size overflows 64 bits")]
    ByteSizeOverflow,
}

/// The one checked computation of a tensor's stored byte size.
///
/// `dims` are in GGUF order (`ne[0]` first, the fastest-varying dimension). The size is
/// `ne[0] / block_size * type_size * ne[1] * ne[2] * …`, as ggml computes it. Every step is
/// checked: the element count must fit in `u64` (so a product that would wrap to 0 is an
/// error, not a 0-byte tensor), `ne[0]` must be a multiple of the block size, and the byte size
/// must fit in `u64`. An empty `dims` is a scalar (one element). Any zero dimension gives 0.
pub fn tensor_nbytes(ty: GgmlType, dims: &[u64]) -> Result<u64, SizeError> {
    let (block_size, type_size) = match (ty.block_size(), ty.type_size()) {
        (Some(b), Some(s)) => (b, s),
        _ => return Err(SizeError::UnsizedType(ty)),
    };
    // The element count is checked on its own first: ggml's own guard skipped this when the
    // product wrapped to exactly zero (e.g. [2^32, 2^32] F32), which let a bogus size through.
    tensor_element_count(dims)?;
    let ne0 = dims.first().copied().unwrap_or(1);
    if ne0 % block_size != 0 {
        return Err(SizeError::NotBlockMultiple { ne0, block_size, ty });
    }
    if dims.contains(&0) {
        // Nothing is stored, however large the other dimensions (ggml: 0 bytes).
        return Ok(0);
    }
    let row_bytes = (ne0 / block_size).checked_mul(type_size).ok_or(SizeError::ByteSizeOverflow)?;
    dims.iter()
        .skip(1)
        .try_fold(row_bytes, |acc, &d| acc.checked_mul(d))
        .ok_or(SizeError::ByteSizeOverflow)
}

/// The checked element count of a tensor (the product of its dimensions; 1 for a scalar).
/// Any zero dimension makes it 0, whatever the other dimensions multiply to (as ggml counts).
pub fn tensor_element_count(dims: &[u64]) -> Result<u64, SizeError> {
    if dims.contains(&0) {
        return Ok(0);
    }
    dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d)).ok_or(SizeError::ElementCountOverflow)
}

/// Rounds `offset` up to a multiple of `alignment`, checked: `None` if the result overflows or
/// `alignment` is not a non-zero power of two.
pub fn align_up(offset: u64, alignment: u64) -> Option<u64> {
    // A check, not a debug assertion: this is public, and the mask below is only right for
    // powers of two (a debug build panicked on 0 or 3; a release build returned garbage).
    if !alignment.is_power_of_two() {
        return None;
    }
    let mask = alignment - 1;
    offset.checked_add(mask).map(|v| v & !mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_names_match_the_table() {
        for code in 0..60u32 {
            let ty = GgmlType::from_code(code);
            assert_eq!(ty.code(), code, "{ty:?}");
            match code {
                4 | 5 | 31..=33 | 36..=38 => assert_eq!(ty, GgmlType::Removed(code)),
                43.. => assert_eq!(ty, GgmlType::Unknown(code)),
                _ => assert!(ty.is_known(), "{code}"),
            }
        }
        assert_eq!(GgmlType::all_known().count(), 43 - 8);
        assert_eq!(GgmlType::from_code(12).name(), "Q4_K");
        assert_eq!(GgmlType::from_code(30).name(), "BF16");
        assert_eq!(GgmlType::from_code(31).name(), "Q4_0_4_4");
        assert_eq!(GgmlType::from_name("q4_k"), Some(GgmlType::Q4_K));
        assert_eq!(GgmlType::from_name("Q4_2"), None);
    }

    #[test]
    fn sizes_follow_ggml_not_gguf_py_for_q8_1() {
        assert_eq!(GgmlType::Q8_1.type_size(), Some(36));
        assert_eq!(tensor_nbytes(GgmlType::Q8_1, &[64, 2]), Ok(2 * 2 * 36));
        assert_eq!(tensor_nbytes(GgmlType::Q4_K, &[4096, 14336]), Ok(16 * 144 * 14336));
        assert_eq!(tensor_nbytes(GgmlType::F32, &[]), Ok(4));
        assert_eq!(tensor_nbytes(GgmlType::F16, &[7, 0, 3]), Ok(0));
    }

    #[test]
    fn size_errors_are_checked_not_wrapped() {
        // Wraps to exactly zero in 64-bit arithmetic: must not pass as an empty tensor.
        assert_eq!(
            tensor_nbytes(GgmlType::F32, &[1 << 32, 1 << 32]),
            Err(SizeError::ElementCountOverflow)
        );
        assert_eq!(
            tensor_nbytes(GgmlType::Q4_K, &[256, 1 << 56]),
            Err(SizeError::ElementCountOverflow)
        );
        // 2^63 elements fit, 2^63 * 2 bytes do not.
        assert_eq!(tensor_nbytes(GgmlType::F16, &[1 << 62, 2]), Err(SizeError::ByteSizeOverflow));
        // I64 with 2^61 elements: 2^64 bytes.
        assert_eq!(tensor_nbytes(GgmlType::I64, &[1 << 61]), Err(SizeError::ByteSizeOverflow));
        assert_eq!(
            tensor_nbytes(GgmlType::Q8_0, &[33]),
            Err(SizeError::NotBlockMultiple { ne0: 33, block_size: 32, ty: GgmlType::Q8_0 })
        );
        assert_eq!(
            tensor_nbytes(GgmlType::Removed(4), &[32]),
            Err(SizeError::UnsizedType(GgmlType::Removed(4)))
        );
    }

    #[test]
    fn align_up_is_checked() {
        assert_eq!(align_up(0, 32), Some(0));
        assert_eq!(align_up(33, 32), Some(64));
        assert_eq!(align_up(u64::MAX - 3, 8), None);
        assert_eq!(align_up(7, 1), Some(7));
    }
}
