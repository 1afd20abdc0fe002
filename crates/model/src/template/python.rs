//! Python's spelling of values, which transformers' templates print: `str()`/`repr()` of
//! `None`, booleans, floats, lists and dicts, and `json.dumps` with its keyword arguments.
//!
//! minijinja prints `none`, `true`, `[1, "a"]` and `1e-5` as `0.00001`; Jinja2 prints what
//! Python's `str()` does. A template that prints a tool-call argument (`{{ value }}`) or a
//! whole list therefore renders differently unless the value goes through these functions.

use std::fmt::Write as _;

use minijinja::value::{Value, ValueKind};

/// How deep [`repr`] and [`json`] follow nested lists and maps before giving up: Python's
/// own recursion limit is 1000, and a conversation nested deeper than this is hostile.
const MAX_DEPTH: usize = 200;

/// Why a value could not be written as Python would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PyError {
    /// `json.dumps` of a value JSON has no spelling for (Python: `TypeError: Object of type
    /// Undefined is not JSON serializable`).
    NotSerializable(&'static str),
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
}

impl PyError {
    pub(crate) fn message(&self) -> String {
        match self {
            PyError::NotSerializable(t) => format!("Object of type {t} is not JSON serializable"),
            PyError::TooDeep => format!("value nested deeper than {MAX_DEPTH} levels"),
        }
    }
}

/// `str(value)` as Python prints it: what `{{ value }}` renders in Jinja2.
pub(crate) fn str_of(value: &Value, out: &mut String) -> Result<(), PyError> {
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::String => {
            out.push_str(value.as_str().unwrap_or_default());
            Ok(())
        }
        _ => repr(value, out, 0),
    }
}

/// `repr(value)`: strings quoted (containers print their items this way).
pub(crate) fn repr(value: &Value, out: &mut String, depth: usize) -> Result<(), PyError> {
    if depth > MAX_DEPTH {
        return Err(PyError::TooDeep);
    }
    match value.kind() {
        // Inside a container an Undefined prints as "" in Jinja2 too (its `__repr__` is
        // "Undefined", but Jinja2 never hands one to a list; a missing key gives no item).
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => number(value, out),
        ValueKind::String => str_repr(value.as_str().unwrap_or_default(), out),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            if let Ok(items) = value.try_iter() {
                for (i, item) in items.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    repr(&item, out, depth + 1)?;
                }
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            if let Ok(keys) = value.try_iter() {
                for (i, key) in keys.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    repr(&key, out, depth + 1)?;
                    out.push_str(": ");
                    let item = value.get_item(&key).unwrap_or_default();
                    repr(&item, out, depth + 1)?;
                }
            }
            out.push('}');
        }
        // Bytes, functions, macros and other objects: minijinja's own spelling.
        _ => {
            let _ = write!(out, "{value}");
        }
    }
    Ok(())
}

/// A number as Python prints it: integers in full, floats in `repr(float)`'s shortest
/// round-trip form (`1.0`, `1e-05`, `1.5e+20`, `inf`, `nan`).
fn number(value: &Value, out: &mut String) {
    if value.is_integer() {
        let _ = write!(out, "{value}");
        return;
    }
    match f64::try_from(value.clone()) {
        Ok(f) => float(f, out, FloatStyle::Repr),
        Err(_) => {
            let _ = write!(out, "{value}");
        }
    }
}

/// Whether non-finite floats print as Python's `repr` (`inf`) or as `json.dumps` does
/// (`Infinity`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FloatStyle {
    Repr,
    Json,
}

fn float(f: f64, out: &mut String, style: FloatStyle) {
    if f.is_nan() {
        out.push_str(if style == FloatStyle::Json { "NaN" } else { "nan" });
        return;
    }
    if f.is_infinite() {
        let s = match (style, f > 0.0) {
            (FloatStyle::Json, true) => "Infinity",
            (FloatStyle::Json, false) => "-Infinity",
            (FloatStyle::Repr, true) => "inf",
            (FloatStyle::Repr, false) => "-inf",
        };
        out.push_str(s);
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as Python's repr does; only the
    // layout differs. Python uses scientific notation when the exponent is < -4 or >= 16.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    out.push_str(sign);
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(&digits);
        } else if exp + 1 >= n {
            out.push_str(&digits);
            for _ in 0..(exp + 1 - n) {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs());
    }
}

/// `repr(str)`: single quotes unless the text has a single quote and no double quote;
/// backslash escapes for the quote, backslash, `\n`, `\r`, `\t` and other non-printables.
fn str_repr(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = u32::from(c);
                let _ = match n {
                    0..=0xff => write!(out, "\\x{n:02x}"),
                    0x100..=0xffff => write!(out, "\\u{n:04x}"),
                    _ => write!(out, "\\U{n:08x}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` for one character, near enough: control characters, the
/// separators other than the space, and unassigned/format characters are escaped by repr.
fn printable(c: char) -> bool {
    !(c.is_control()
        || matches!(c, '\u{ad}' | '\u{2028}' | '\u{2029}' | '\u{200b}'..='\u{200f}')
        || matches!(c, '\u{2060}'..='\u{2064}' | '\u{feff}')
        || (c.is_whitespace() && c != ' '))
}

/// Python's `format % args` (printf style), for Jinja2's `format` filter: `%s` is `str()`,
/// `%r` `repr()`, `%d`/`%i` an integer, `%f`/`%e`/`%g` a float, `%x`/`%o` bases, `%%`; flags
/// `-`, `0`, `+`, ` `, a width and a precision.
pub(crate) fn printf(format: &str, args: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut flags = String::new();
        while let Some(&f) = chars.peek().filter(|f| "-0+ #".contains(**f)) {
            flags.push(f);
            chars.next();
        }
        let mut width = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(d);
            chars.next();
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                chars.next();
            }
            precision = Some(p.parse().unwrap_or(0));
        }
        let conv = chars.next().ok_or("incomplete format")?;
        if conv == '%' {
            out.push('%');
            continue;
        }
        let arg = args.next().ok_or("not enough arguments for format string")?;
        let mut text = String::new();
        match conv {
            's' => str_of(arg, &mut text).map_err(|e| e.message())?,
            'r' | 'a' => repr(arg, &mut text, 0).map_err(|e| e.message())?,
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                let n = i128::try_from(arg.clone())
                    .or_else(|_| f64::try_from(arg.clone()).map(|f| f.trunc() as i128))
                    .map_err(|_| format!("%{conv} format: a real number is required"))?;
                let digits = match conv {
                    'x' => format!("{:x}", n.unsigned_abs()),
                    'X' => format!("{:X}", n.unsigned_abs()),
                    'o' => format!("{:o}", n.unsigned_abs()),
                    _ => n.unsigned_abs().to_string(),
                };
                let sign = if n < 0 {
                    "-"
                } else if flags.contains('+') {
                    "+"
                } else if flags.contains(' ') {
                    " "
                } else {
                    ""
                };
                text = pad_number(sign, &digits, &flags, &width);
            }
            'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
                let f = f64::try_from(arg.clone()).map_err(|_| "must be real number".to_owned())?;
                let p = precision.unwrap_or(6);
                let body = match conv {
                    'f' | 'F' => format!("{:.p$}", f.abs()),
                    'e' | 'E' => {
                        let s = format!("{:.p$e}", f.abs());
                        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                        let e: i32 = e.parse().unwrap_or(0);
                        format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.unsigned_abs())
                    }
                    _ => {
                        let mut s = String::new();
                        float(f.abs(), &mut s, FloatStyle::Repr);
                        s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
                    }
                };
                let sign = if f < 0.0 {
                    "-"
                } else if flags.contains('+') {
                    "+"
                } else {
                    ""
                };
                text = pad_number(sign, &body, &flags, &width);
            }
            other => return Err(format!("unsupported format character '{other}'")),
        }
        if matches!(conv, 's' | 'r' | 'a') {
            if let Some(p) = precision {
                text = text.chars().take(p).collect();
            }
            let w: usize = width.parse().unwrap_or(0);
            let n = text.chars().count();
            if n < w {
                let fill = " ".repeat(w - n);
                text = if flags.contains('-') { text + &fill } else { fill + &text };
            }
        }
        out.push_str(&text);
    }
    if args.next().is_some() {
        return Err("not all arguments converted during string formatting".into());
    }
    Ok(out)
}

fn pad_number(sign: &str, digits: &str, flags: &str, width: &str) -> String {
    let w: usize = width.parse().unwrap_or(0);
    let n = sign.len() + digits.chars().count();
    if n >= w {
        return format!("{sign}{digits}");
    }
    let fill = w - n;
    if flags.contains('-') {
        format!("{sign}{digits}{}", " ".repeat(fill))
    } else if flags.contains('0') {
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{sign}{digits}", " ".repeat(fill))
    }
}

/// `json.dumps`'s options, as transformers' `tojson` passes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonStyle {
    /// `indent`: `None`, or the text one level of indentation adds (an integer n is n spaces).
    pub indent: Option<String>,
    /// `separators`: (item, key) separators; Python's default is `(", ", ": ")` without
    /// indent and `(",", ": ")` with one.
    pub item_sep: String,
    pub key_sep: String,
    pub sort_keys: bool,
    pub ensure_ascii: bool,
}

impl Default for JsonStyle {
    fn default() -> Self {
        JsonStyle {
            indent: None,
            item_sep: ", ".into(),
            key_sep: ": ".into(),
            sort_keys: false,
            ensure_ascii: false,
        }
    }
}

/// `json.dumps(value, **style)`.
pub(crate) fn json(value: &Value, style: &JsonStyle, out: &mut String) -> Result<(), PyError> {
    json_at(value, style, out, 0)
}

fn json_at(
    value: &Value,
    style: &JsonStyle,
    out: &mut String,
    depth: usize,
) -> Result<(), PyError> {
    if depth > MAX_DEPTH {
        return Err(PyError::TooDeep);
    }
    match value.kind() {
        ValueKind::Undefined => return Err(PyError::NotSerializable("Undefined")),
        ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => {
            if value.is_integer() {
                let _ = write!(out, "{value}");
            } else {
                let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
                float(f, out, FloatStyle::Json);
            }
        }
        ValueKind::String => json_str(value.as_str().unwrap_or_default(), style.ensure_ascii, out),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter().map(|i| i.collect()).unwrap_or_default();
            if items.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(style, out, depth + 1);
                json_at(item, style, out, depth + 1)?;
            }
            newline(style, out, depth);
            out.push(']');
        }
        ValueKind::Map => {
            let mut keys: Vec<Value> = value.try_iter().map(|i| i.collect()).unwrap_or_default();
            if keys.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            if style.sort_keys {
                keys.sort();
            }
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(&style.item_sep);
                }
                newline(style, out, depth + 1);
                json_key(key, style, out)?;
                out.push_str(&style.key_sep);
                let item = value.get_item(key).unwrap_or_default();
                json_at(&item, style, out, depth + 1)?;
            }
            newline(style, out, depth);
            out.push('}');
        }
        ValueKind::Bytes => return Err(PyError::NotSerializable("bytes")),
        _ => return Err(PyError::NotSerializable("object")),
    }
    Ok(())
}

/// A dict key as `json.dumps` writes it: strings quoted, numbers, booleans and `None`
/// converted to their JSON spelling inside quotes.
fn json_key(key: &Value, style: &JsonStyle, out: &mut String) -> Result<(), PyError> {
    match key.kind() {
        ValueKind::String => json_str(key.as_str().unwrap_or_default(), style.ensure_ascii, out),
        ValueKind::None | ValueKind::Bool | ValueKind::Number => {
            let mut s = String::new();
            json_at(key, style, &mut s, 0)?;
            json_str(&s, style.ensure_ascii, out);
        }
        _ => return Err(PyError::NotSerializable("key")),
    }
    Ok(())
}

fn newline(style: &JsonStyle, out: &mut String, depth: usize) {
    if let Some(indent) = &style.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(indent);
        }
    }
}

/// A JSON string as Python's encoder writes it.
fn json_str(s: &str, ensure_ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 || (ensure_ascii && !c.is_ascii()) => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr_of(v: Value) -> String {
        let mut s = String::new();
        str_of(&v, &mut s).unwrap();
        s
    }

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e20, "1.5e+20"),
            (1e16, "1e+16"),
            (123456789012345.0, "123456789012345.0"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
        ];
        for (f, want) in cases {
            assert_eq!(repr_of(Value::from(f)), want, "{f}");
        }
    }

    #[test]
    fn containers_print_as_python_repr() {
        let v: Value =
            serde_json::from_str(r#"{"b": "x\ny", "a": [1, "it's", null, true]}"#).unwrap();
        assert_eq!(repr_of(v), r#"{'b': 'x\ny', 'a': [1, "it's", None, True]}"#);
    }

    #[test]
    fn printf_matches_python() {
        let args = [Value::from(7), Value::from("ab"), Value::from(()), Value::from(2.5)];
        assert_eq!(printf("%02d|%-4s|%s|%.2f|%%", &args).unwrap(), "07|ab  |None|2.50|%");
        assert!(printf("%s %s", &args[..1]).is_err());
    }

    #[test]
    fn json_matches_python_defaults() {
        let v: Value = serde_json::from_str(r#"{"k": [1, 2.0, "é\u0001"], "e": {}}"#).unwrap();
        let mut s = String::new();
        json(&v, &JsonStyle::default(), &mut s).unwrap();
        assert_eq!(s, r#"{"k": [1, 2.0, "é\u0001"], "e": {}}"#);
        let style =
            JsonStyle { indent: Some("  ".into()), item_sep: ",".into(), ..JsonStyle::default() };
        let mut s = String::new();
        json(&v, &style, &mut s).unwrap();
        assert_eq!(s, "{\n  \"k\": [\n    1,\n    2.0,\n    \"é\\u0001\"\n  ],\n  \"e\": {}\n}");
        assert_eq!(
            json(&Value::UNDEFINED, &JsonStyle::default(), &mut s),
            Err(PyError::NotSerializable("Undefined"))
        );
    }
}
