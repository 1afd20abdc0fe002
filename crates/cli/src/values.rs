//! The value syntax of `sipllm edit`: `--set KEY=TYPE:VALUE`, `--set-array KEY=TYPE:V1,V2,…`.
//!
//! * `TYPE` is one of `u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str` ([`TypeName`]).
//! * Integers are decimal, with an optional sign; a value outside the type's range is an error
//!   that says so (`300 does not fit u8 (0 to 255)`), never a wrap-around.
//! * Floats are what Rust's `str::parse` reads (`1e-5`, `0.5`, `-3`, `nan`, `inf`,
//!   `-infinity`); a finite literal too large for the type (`f32:1e39`) is an error rather
//!   than a silent infinity.
//! * Bools are `true`, `false`, `1` or `0`.
//! * `str:` takes the rest of the argument verbatim: it may contain `=`, `:` and `,`.
//! * Arrays split on `,`. Inside an element, `\,` is a literal comma and `\\` a literal
//!   backslash; a backslash before anything else is kept as it is (`a\nb` stays four
//!   characters). `KEY=TYPE:` (nothing after the colon) is an empty array. Arrays of arrays
//!   cannot be written on the command line.
//!
//! Error messages are complete sentences naming the argument, what is wrong and what is
//! expected; the caller prefixes the option (`--set`).

use std::borrow::Cow;
use std::fmt;

use sipllm_gguf::ValueType;
use sipllm_gguf::writer::Value;

use crate::render::escape;

/// A `TYPE` of the value syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeName {
    /// `u8`: GGUF `UINT8`.
    U8,
    /// `i8`: `INT8`.
    I8,
    /// `u16`: `UINT16`.
    U16,
    /// `i16`: `INT16`.
    I16,
    /// `u32`: `UINT32`.
    U32,
    /// `i32`: `INT32`.
    I32,
    /// `u64`: `UINT64`.
    U64,
    /// `i64`: `INT64`.
    I64,
    /// `f32`: `FLOAT32`.
    F32,
    /// `f64`: `FLOAT64`.
    F64,
    /// `bool`: `BOOL`.
    Bool,
    /// `str`: `STRING`.
    Str,
}

impl TypeName {
    /// Every type, in the order the help lists them.
    pub const ALL: [TypeName; 12] = [
        TypeName::U8,
        TypeName::I8,
        TypeName::U16,
        TypeName::I16,
        TypeName::U32,
        TypeName::I32,
        TypeName::U64,
        TypeName::I64,
        TypeName::F32,
        TypeName::F64,
        TypeName::Bool,
        TypeName::Str,
    ];

    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TypeName::U8 => "u8",
            TypeName::I8 => "i8",
            TypeName::U16 => "u16",
            TypeName::I16 => "i16",
            TypeName::U32 => "u32",
            TypeName::I32 => "i32",
            TypeName::U64 => "u64",
            TypeName::I64 => "i64",
            TypeName::F32 => "f32",
            TypeName::F64 => "f64",
            TypeName::Bool => "bool",
            TypeName::Str => "str",
        }
    }

    /// The GGUF value type.
    pub fn value_type(self) -> ValueType {
        match self {
            TypeName::U8 => ValueType::Uint8,
            TypeName::I8 => ValueType::Int8,
            TypeName::U16 => ValueType::Uint16,
            TypeName::I16 => ValueType::Int16,
            TypeName::U32 => ValueType::Uint32,
            TypeName::I32 => ValueType::Int32,
            TypeName::U64 => ValueType::Uint64,
            TypeName::I64 => ValueType::Int64,
            TypeName::F32 => ValueType::Float32,
            TypeName::F64 => ValueType::Float64,
            TypeName::Bool => ValueType::Bool,
            TypeName::Str => ValueType::String,
        }
    }

    /// Parses a type name (exactly as listed; case-sensitive).
    pub fn parse(text: &str) -> Result<TypeName, String> {
        TypeName::ALL.into_iter().find(|t| t.name() == text).ok_or_else(|| {
            format!("unknown type {}; the types are {}", escape::quoted(text.as_bytes()), names())
        })
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `u8 i8 … str`, for messages.
pub fn names() -> String {
    TypeName::ALL.iter().map(|t| t.name()).collect::<Vec<_>>().join(" ")
}

/// Splits `KEY=REST` at the first `=`. The key must not be empty.
pub fn split_key<'s>(spec: &'s str, shape: &str) -> Result<(&'s str, &'s str), String> {
    match spec.split_once('=') {
        Some(("", _)) => {
            Err(format!("{}: the key is empty; expected {shape}", escape::quoted(spec.as_bytes())))
        }
        Some(parts) => Ok(parts),
        None => Err(format!("{}: no `=`; expected {shape}", escape::quoted(spec.as_bytes()))),
    }
}

/// Parses `--set KEY=TYPE:VALUE`.
pub fn parse_set(spec: &str) -> Result<(String, Value<'static>), String> {
    const SHAPE: &str = "KEY=TYPE:VALUE, e.g. general.name=str:My model";
    let (key, rest) = split_key(spec, SHAPE)?;
    let (ty, text) = split_type(spec, rest, SHAPE)?;
    let value = parse_scalar(ty, text).map_err(|e| format!("{}: {e}", quoted(spec)))?;
    Ok((key.to_owned(), value))
}

/// Parses `--set-array KEY=TYPE:V1,V2,…`.
pub fn parse_set_array(spec: &str) -> Result<(String, Value<'static>), String> {
    const SHAPE: &str = "KEY=TYPE:V1,V2,..., e.g. general.tags=str:llama,chat";
    let (key, rest) = split_key(spec, SHAPE)?;
    let (ty, text) = split_type(spec, rest, SHAPE)?;
    let mut elems = Vec::new();
    for (i, item) in split_array(text).into_iter().enumerate() {
        let v = parse_scalar(ty, &item)
            .map_err(|e| format!("{}: element {i} {}: {e}", quoted(spec), quoted(&item)))?;
        elems.push(v);
    }
    Ok((key.to_owned(), Value::Array { elem_type: ty.value_type(), elems }))
}

fn split_type<'s>(spec: &str, rest: &'s str, shape: &str) -> Result<(TypeName, &'s str), String> {
    let (ty, text) = rest.split_once(':').ok_or_else(|| {
        format!("{}: no `:` after the type; expected {shape}", escape::quoted(spec.as_bytes()))
    })?;
    let ty =
        TypeName::parse(ty).map_err(|e| format!("{}: {e}", escape::quoted(spec.as_bytes())))?;
    Ok((ty, text))
}

fn quoted(s: &str) -> String {
    escape::quoted(s.as_bytes())
}

/// Splits an array's text on `,`, honouring `\,` (a comma) and `\\` (a backslash). Empty text
/// is no element at all.
pub fn split_array(text: &str) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(',') => cur.push(','),
                Some('\\') => cur.push('\\'),
                Some(other) => {
                    cur.push('\\');
                    cur.push(other);
                }
                None => cur.push('\\'),
            },
            ',' => items.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    items.push(cur);
    items
}

/// Parses one value of type `ty`.
pub fn parse_scalar(ty: TypeName, text: &str) -> Result<Value<'static>, String> {
    Ok(match ty {
        TypeName::U8 => Value::Uint8(int(ty, text, u8::try_from)?),
        TypeName::I8 => Value::Int8(int(ty, text, i8::try_from)?),
        TypeName::U16 => Value::Uint16(int(ty, text, u16::try_from)?),
        TypeName::I16 => Value::Int16(int(ty, text, i16::try_from)?),
        TypeName::U32 => Value::Uint32(int(ty, text, u32::try_from)?),
        TypeName::I32 => Value::Int32(int(ty, text, i32::try_from)?),
        TypeName::U64 => Value::Uint64(int(ty, text, u64::try_from)?),
        TypeName::I64 => Value::Int64(int(ty, text, i64::try_from)?),
        TypeName::F32 => {
            let v: f32 = float(ty, text)?;
            Value::Float32(v)
        }
        TypeName::F64 => Value::Float64(float(ty, text)?),
        TypeName::Bool => Value::Bool(match text {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return Err(format!("{} is not a bool (true, false, 1 or 0)", quoted(text))),
        }),
        TypeName::Str => Value::String(Cow::Owned(text.as_bytes().to_vec())),
    })
}

/// An integer of the target type: parsed as `i128` (so "too large" and "not a number" are
/// told apart), then narrowed.
fn int<T: fmt::Display + Bounded, E>(
    ty: TypeName,
    text: &str,
    narrow: impl Fn(i128) -> Result<T, E>,
) -> Result<T, String> {
    let wide: i128 = text.parse().map_err(|_| {
        format!("{} is not an integer (decimal digits with an optional sign)", quoted(text))
    })?;
    narrow(wide)
        .map_err(|_| format!("{wide} does not fit {ty} ({} to {})", T::MIN_TEXT, T::MAX_TEXT))
}

/// The range of an integer type, for messages.
trait Bounded {
    const MIN_TEXT: &'static str;
    const MAX_TEXT: &'static str;
}

macro_rules! bounded {
    ($($t:ty => $min:literal, $max:literal;)*) => {
        $(impl Bounded for $t {
            const MIN_TEXT: &'static str = $min;
            const MAX_TEXT: &'static str = $max;
        })*
    };
}

bounded! {
    u8 => "0", "255";
    i8 => "-128", "127";
    u16 => "0", "65535";
    i16 => "-32768", "32767";
    u32 => "0", "4294967295";
    i32 => "-2147483648", "2147483647";
    u64 => "0", "18446744073709551615";
    i64 => "-9223372036854775808", "9223372036854775807";
}

/// A float: Rust's parser, except that a finite literal that overflows to infinity is an
/// error (an explicit `inf` is fine).
fn float<T>(ty: TypeName, text: &str) -> Result<T, String>
where
    T: std::str::FromStr + Float,
{
    let v: T = text
        .parse()
        .map_err(|_| format!("{} is not a number (e.g. 0.5, 1e-5, -3, nan, inf)", quoted(text)))?;
    if v.is_infinite() && !text.to_ascii_lowercase().contains("inf") {
        return Err(format!("{} is out of range for {ty} (it would be infinite)", quoted(text)));
    }
    Ok(v)
}

/// What `float` needs of `f32` and `f64`.
trait Float {
    fn is_infinite(&self) -> bool;
}

impl Float for f32 {
    fn is_infinite(&self) -> bool {
        f32::is_infinite(*self)
    }
}

impl Float for f64 {
    fn is_infinite(&self) -> bool {
        f64::is_infinite(*self)
    }
}

/// Parses `--max-size`: a number of bytes, optionally followed by a unit: `K`, `M`, `G`, `T`
/// (powers of 1000, as gguf-split's `M` and `G`; `KB`… too) or `KiB`, `MiB`, `GiB`, `TiB`
/// (powers of 1024); `B` for bytes. Units are case-insensitive; the result must be at least 1.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = s.split_at(digits);
    if number.is_empty() {
        return Err(format!("{s:?} is not a size: expected a whole number, e.g. 2G or 500MiB"));
    }
    let unit = unit.trim().to_ascii_lowercase();
    let scale: u64 = match unit.as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}: use K, M, G, T (powers of 1000) or KiB, MiB, GiB, TiB"
            ));
        }
    };
    let n: u64 = number.parse().map_err(|_| format!("{s:?} is too large"))?;
    match n.checked_mul(scale) {
        Some(0) => Err("the size must be at least 1 byte".to_owned()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("{s:?} is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(spec: &str) -> Result<Value<'static>, String> {
        parse_set(spec).map(|(_, v)| v)
    }

    #[test]
    fn scalars_of_every_type() {
        assert_eq!(set("a=u8:255"), Ok(Value::Uint8(255)));
        assert_eq!(set("a=i8:-128"), Ok(Value::Int8(-128)));
        assert_eq!(set("a=u16:65535"), Ok(Value::Uint16(65535)));
        assert_eq!(set("a=i16:+12"), Ok(Value::Int16(12)));
        assert_eq!(set("a=u32:4294967295"), Ok(Value::Uint32(u32::MAX)));
        assert_eq!(set("a=i32:-1"), Ok(Value::Int32(-1)));
        assert_eq!(set("a=u64:18446744073709551615"), Ok(Value::Uint64(u64::MAX)));
        assert_eq!(set("a=i64:-9223372036854775808"), Ok(Value::Int64(i64::MIN)));
        assert_eq!(set("a=f32:1e-5"), Ok(Value::Float32(1e-5)));
        assert_eq!(set("a=f64:0.1"), Ok(Value::Float64(0.1)));
        assert_eq!(set("a=f32:-inf"), Ok(Value::Float32(f32::NEG_INFINITY)));
        assert_eq!(set("a=f64:infinity"), Ok(Value::Float64(f64::INFINITY)));
        assert!(matches!(set("a=f32:nan"), Ok(Value::Float32(x)) if x.is_nan()));
        assert_eq!(set("a=bool:true"), Ok(Value::Bool(true)));
        assert_eq!(set("a=bool:0"), Ok(Value::Bool(false)));
        assert_eq!(set("a=str:"), Ok(Value::string("")));
        // str takes the rest verbatim: `=`, `:` and `,` included.
        assert_eq!(set("k=str:a=b:c,d"), Ok(Value::string("a=b:c,d")));
        assert_eq!(parse_set("tokenizer.x=str:y").unwrap().0, "tokenizer.x");
    }

    #[test]
    fn values_that_do_not_fit_are_errors_that_say_so() {
        assert_eq!(set("a=u8:300").unwrap_err(), "\"a=u8:300\": 300 does not fit u8 (0 to 255)");
        assert_eq!(set("a=u8:-1").unwrap_err(), "\"a=u8:-1\": -1 does not fit u8 (0 to 255)");
        assert_eq!(
            set("a=i64:9223372036854775808").unwrap_err(),
            "\"a=i64:9223372036854775808\": 9223372036854775808 does not fit i64 \
             (-9223372036854775808 to 9223372036854775807)"
        );
        assert!(set("a=u32:1.5").unwrap_err().contains("\"1.5\" is not an integer"));
        assert!(set("a=u32:").unwrap_err().contains("\"\" is not an integer"));
        assert!(
            set("a=u64:99999999999999999999999999999999999999999")
                .unwrap_err()
                .contains("is not an integer")
        );
        assert_eq!(
            set("a=f32:1e39").unwrap_err(),
            "\"a=f32:1e39\": \"1e39\" is out of range for f32 (it would be infinite)"
        );
        assert!(set("a=f64:1e309").unwrap_err().contains("out of range for f64"));
        assert!(set("a=f32:fast").unwrap_err().contains("\"fast\" is not a number"));
        assert_eq!(
            set("a=bool:yes").unwrap_err(),
            "\"a=bool:yes\": \"yes\" is not a bool (true, false, 1 or 0)"
        );
    }

    #[test]
    fn malformed_specs() {
        assert!(set("a=u9:3").unwrap_err().contains("unknown type \"u9\"; the types are u8 i8"));
        assert!(set("a=U8:3").unwrap_err().contains("unknown type \"U8\""));
        assert!(set("a=3").unwrap_err().contains("no `:` after the type"));
        assert!(set("a").unwrap_err().contains("no `=`"));
        assert!(set("=str:x").unwrap_err().contains("the key is empty"));
        // A control character in the argument is escaped in the message.
        assert!(set("a\x1b=u9:3").unwrap_err().contains("\\u{1b}"));
    }

    #[test]
    fn arrays_split_on_commas_with_escapes() {
        assert_eq!(split_array(""), Vec::<String>::new());
        assert_eq!(split_array("a"), ["a"]);
        assert_eq!(split_array("a,,b"), ["a", "", "b"]);
        assert_eq!(split_array(r"a\,b,c"), ["a,b", "c"]);
        assert_eq!(split_array(r"a\\,b"), [r"a\", "b"]);
        assert_eq!(split_array(r"a\nb\"), [r"a\nb\"]);
        let (key, v) = parse_set_array(r"general.tags=str:x\, y,z").unwrap();
        assert_eq!(key, "general.tags");
        assert_eq!(v, Value::strings(["x, y", "z"]));
        assert_eq!(
            parse_set_array("a=i32:1,-2,3").unwrap().1,
            Value::Array {
                elem_type: ValueType::Int32,
                elems: vec![Value::Int32(1), Value::Int32(-2), Value::Int32(3)],
            }
        );
        assert_eq!(
            parse_set_array("a=f32:").unwrap().1,
            Value::Array { elem_type: ValueType::Float32, elems: vec![] }
        );
        assert_eq!(
            parse_set_array("a=u8:1,256").unwrap_err(),
            "\"a=u8:1,256\": element 1 \"256\": 256 does not fit u8 (0 to 255)"
        );
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn sizes_parse_like_gguf_split_and_more() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert_eq!(parse_size("500M"), Ok(500_000_000));
        assert_eq!(parse_size("500mb"), Ok(500_000_000));
        assert_eq!(parse_size("3 GiB"), Ok(3 << 30));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("7b"), Ok(7));
        assert!(parse_size("0").unwrap_err().contains("at least 1 byte"));
        assert!(parse_size("1.5G").unwrap_err().contains("unknown unit"));
        assert!(parse_size("G").unwrap_err().contains("not a size"));
        assert!(parse_size("-1").unwrap_err().contains("not a size"));
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
        assert!(parse_size("99999999999999999999999").unwrap_err().contains("too large"));
    }
}
