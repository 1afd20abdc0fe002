//! `general.file_type`: llama.cpp's `llama_ftype` table (the "quantization" users name a
//! model by, `Q4_K_M`), and the label llama.cpp guesses from the tensor types when a file
//! does not say.
//!
//! The table is `enum llama_ftype` of llama.cpp's `include/llama.h`; the names are the
//! constants without their `LLAMA_FTYPE_MOSTLY_` prefix, as `llama-quantize` spells them
//! (`LLAMA_FTYPE_ALL_F32` is `F32`). Codes llama.cpp has retired keep their historical name
//! and say so; codes it never used are [`Quantization::Declared`] with no row, shown raw.
//!
//! ```
//! use sipllm_model::ftype::{self, Quantization};
//! use sipllm_gguf::GgmlType;
//!
//! assert_eq!(ftype::lookup(15).map(|r| r.name), Some("Q4_K_M"));
//! assert_eq!(Quantization::declared(15).to_string(), "Q4_K_M");
//! assert_eq!(Quantization::declared(1000).to_string(), "unknown (1000)");
//! // No `general.file_type`: the most common tensor type decides, as llama.cpp guesses.
//! let types = [GgmlType::F32, GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K];
//! assert_eq!(Quantization::guess(types).to_string(), "Q4_K_M (guessed)");
//! ```

use std::fmt;

use sipllm_gguf::GgmlType;

/// One row of llama.cpp's `llama_ftype` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileType {
    /// The stored `general.file_type` value.
    pub code: u32,
    /// The name users know (`Q4_K_M`): the constant without `LLAMA_FTYPE_MOSTLY_`.
    pub name: &'static str,
    /// llama.cpp's constant (`LLAMA_FTYPE_MOSTLY_Q4_K_M`).
    pub constant: &'static str,
    /// llama.cpp has retired the code (it no longer loads such files, or repacks at run time).
    pub removed: bool,
}

macro_rules! table {
    ($($code:literal $name:ident $(removed $removed:tt)?),* $(,)?) => {
        /// The whole `llama_ftype` table, in code order.
        pub const TABLE: &[FileType] = &[$(FileType {
            code: $code,
            name: table!(@name $name),
            constant: table!(@constant $name),
            removed: table!(@removed $($removed)?),
        }),*];
    };
    (@name ALL_F32) => { "F32" };
    (@name $name:ident) => { stringify!($name) };
    (@constant ALL_F32) => { "LLAMA_FTYPE_ALL_F32" };
    (@constant $name:ident) => { concat!("LLAMA_FTYPE_MOSTLY_", stringify!($name)) };
    (@removed) => { false };
    (@removed $x:tt) => { true };
}

table! {
    0 ALL_F32,
    1 F16,
    2 Q4_0,
    3 Q4_1,
    4 Q4_1_SOME_F16 removed(),
    5 Q4_2 removed(),
    6 Q4_3 removed(),
    7 Q8_0,
    8 Q5_0,
    9 Q5_1,
    10 Q2_K,
    11 Q3_K_S,
    12 Q3_K_M,
    13 Q3_K_L,
    14 Q4_K_S,
    15 Q4_K_M,
    16 Q5_K_S,
    17 Q5_K_M,
    18 Q6_K,
    19 IQ2_XXS,
    20 IQ2_XS,
    21 Q2_K_S,
    22 IQ3_XS,
    23 IQ3_XXS,
    24 IQ1_S,
    25 IQ4_NL,
    26 IQ3_S,
    27 IQ3_M,
    28 IQ2_S,
    29 IQ2_M,
    30 IQ4_XS,
    31 IQ1_M,
    32 BF16,
    33 Q4_0_4_4 removed(),
    34 Q4_0_4_8 removed(),
    35 Q4_0_8_8 removed(),
    36 TQ1_0,
    37 TQ2_0,
    38 MXFP4_MOE,
    39 NVFP4,
    40 Q1_0,
}

/// The row for a stored `general.file_type` value, if llama.cpp ever named it.
pub fn lookup(code: u64) -> Option<&'static FileType> {
    let code = u32::try_from(code).ok()?;
    TABLE.iter().find(|row| row.code == code)
}

/// The file type llama.cpp assumes for a model of mostly `ty` tensors (`llama_model_loader`'s
/// guess when `general.file_type` is absent): K-quants as their medium mix, `Q2_K` as itself.
/// `None` for the types it has no file type for (integer types, `Q8_1`, `Q8_K`, F64).
pub fn for_tensor_type(ty: GgmlType) -> Option<&'static FileType> {
    use GgmlType::*;
    let code = match ty {
        F32 => 0,
        F16 => 1,
        BF16 => 32,
        Q4_0 => 2,
        Q4_1 => 3,
        Q5_0 => 8,
        Q5_1 => 9,
        Q8_0 => 7,
        Q2_K => 10,
        Q3_K => 12,
        Q4_K => 15,
        Q5_K => 17,
        Q6_K => 18,
        TQ1_0 => 36,
        TQ2_0 => 37,
        IQ2_XXS => 19,
        IQ2_XS => 20,
        IQ2_S => 28,
        IQ3_XXS => 23,
        IQ1_S => 24,
        IQ1_M => 31,
        IQ4_NL => 25,
        IQ4_XS => 30,
        IQ3_S => 26,
        MXFP4 => 38,
        NVFP4 => 39,
        Q1_0 => 40,
        _ => return None,
    };
    lookup(code)
}

/// What a model says (or suggests) about its quantization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    /// `general.file_type` is present: its value, and llama.cpp's row for it (`None`: a value
    /// llama.cpp never used, shown raw).
    Declared {
        /// The stored value.
        code: u64,
        /// The table's row, when there is one.
        file_type: Option<&'static FileType>,
    },
    /// No `general.file_type`: guessed from the most common tensor type, as llama.cpp does.
    Guessed(&'static FileType),
    /// Neither: no key, and no tensor type to guess from.
    Unknown,
}

impl Quantization {
    /// The label of a stored `general.file_type` value.
    pub fn declared(code: u64) -> Quantization {
        Quantization::Declared { code, file_type: lookup(code) }
    }

    /// The label guessed from the tensors' types, as llama.cpp's loader does: the type most
    /// tensors have (ties to the lower type code), mapped by [`for_tensor_type`].
    pub fn guess(types: impl IntoIterator<Item = GgmlType>) -> Quantization {
        // (code, count) in code order; a model has a handful of types.
        let mut counts: Vec<(u32, u64)> = Vec::new();
        let mut by_code: Vec<GgmlType> = Vec::new();
        for ty in types {
            match counts.iter_mut().find(|(c, _)| *c == ty.code()) {
                Some((_, n)) => *n += 1,
                None => {
                    counts.push((ty.code(), 1));
                    by_code.push(ty);
                }
            }
        }
        let most = counts
            .iter()
            .zip(&by_code)
            .max_by(|((ca, na), _), ((cb, nb), _)| na.cmp(nb).then(cb.cmp(ca)))
            .map(|(_, ty)| *ty);
        match most.and_then(for_tensor_type) {
            Some(row) => Quantization::Guessed(row),
            None => Quantization::Unknown,
        }
    }

    /// The name (`Q4_K_M`), without the guess marker; `None` for an unknown value.
    pub fn name(&self) -> Option<&'static str> {
        match self {
            Quantization::Declared { file_type, .. } => file_type.map(|r| r.name),
            Quantization::Guessed(row) => Some(row.name),
            Quantization::Unknown => None,
        }
    }

    /// True when the label is a guess from the tensor types.
    pub fn is_guess(&self) -> bool {
        matches!(self, Quantization::Guessed(_))
    }
}

/// `Q4_K_M`, `Q4_2 (removed from llama.cpp)`, `unknown (1000)`, `Q4_K_M (guessed)` or `unknown`.
impl fmt::Display for Quantization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Quantization::Declared { file_type: Some(row), .. } if row.removed => {
                write!(f, "{} (removed from llama.cpp)", row.name)
            }
            Quantization::Declared { file_type: Some(row), .. } => f.write_str(row.name),
            Quantization::Declared { code, file_type: None } => write!(f, "unknown ({code})"),
            Quantization::Guessed(row) => write!(f, "{} (guessed)", row.name),
            Quantization::Unknown => f.write_str("unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_llama_cpps() {
        // Codes in order, none twice, every name the constant's suffix.
        assert!(TABLE.windows(2).all(|w| w[0].code < w[1].code));
        assert_eq!(TABLE.len(), 41);
        for row in TABLE {
            assert!(row.constant.starts_with("LLAMA_FTYPE_"), "{row:?}");
            if row.code != 0 {
                assert_eq!(row.constant.strip_prefix("LLAMA_FTYPE_MOSTLY_"), Some(row.name));
            }
        }
        let names: Vec<(u32, &str)> = TABLE.iter().map(|r| (r.code, r.name)).collect();
        for expected in [
            (0, "F32"),
            (1, "F16"),
            (2, "Q4_0"),
            (7, "Q8_0"),
            (10, "Q2_K"),
            (14, "Q4_K_S"),
            (15, "Q4_K_M"),
            (17, "Q5_K_M"),
            (18, "Q6_K"),
            (21, "Q2_K_S"),
            (30, "IQ4_XS"),
            (32, "BF16"),
            (37, "TQ2_0"),
            (38, "MXFP4_MOE"),
        ] {
            assert!(names.contains(&expected), "{expected:?}");
        }
        assert!(lookup(5).unwrap().removed);
        assert!(!lookup(15).unwrap().removed);
        assert_eq!(lookup(41), None);
        assert_eq!(lookup(u64::MAX), None);
    }

    #[test]
    fn labels_declared_removed_and_unknown() {
        assert_eq!(Quantization::declared(0).to_string(), "F32");
        assert_eq!(Quantization::declared(15).to_string(), "Q4_K_M");
        assert_eq!(Quantization::declared(5).to_string(), "Q4_2 (removed from llama.cpp)");
        assert_eq!(Quantization::declared(1024).to_string(), "unknown (1024)");
        assert_eq!(Quantization::declared(1024).name(), None);
        assert!(!Quantization::declared(15).is_guess());
    }

    #[test]
    fn the_guess_is_the_most_common_type() {
        use GgmlType::*;
        // A Q4_K_M model: norms in F32, most matrices Q4_K, some Q6_K.
        let mut types = vec![F32; 65];
        types.extend([Q4_K; 193]);
        types.extend([Q6_K; 33]);
        let q = Quantization::guess(types);
        assert_eq!(q, Quantization::Guessed(lookup(15).unwrap()));
        assert!(q.is_guess());
        assert_eq!(q.to_string(), "Q4_K_M (guessed)");
        // A tie goes to the lower type code (llama.cpp walks a map ordered by type).
        assert_eq!(Quantization::guess([Q8_0, F16]).name(), Some("F16"));
        assert_eq!(Quantization::guess([F16, Q8_0]).name(), Some("F16"));
        // Nothing to guess from.
        assert_eq!(Quantization::guess([]), Quantization::Unknown);
        assert_eq!(Quantization::guess([I32, I32]).to_string(), "unknown");
    }
}
