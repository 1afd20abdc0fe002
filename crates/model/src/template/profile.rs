//! The rendering profile: a minijinja environment set up to render as transformers'
//! `_compile_jinja_template` does (Jinja2's `ImmutableSandboxedEnvironment(trim_blocks=True,
//! lstrip_blocks=True)` with `loopcontrols`, `{% generation %}`, its `tojson`,
//! `raise_exception` and `strftime_now`), plus the fixes that make minijinja print and test
//! values as Python does. `docs/templates.md` names the template that needs each fix.

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, Output, State, UndefinedBehavior};

use super::error::TemplateError;
use super::guard;
use super::python::{self, JsonStyle};

/// The environment every template of this profile is compiled into.
pub(crate) fn environment(fuel: u64, recursion: usize, strict: bool) -> Environment<'static> {
    let mut env = Environment::new();
    // Jinja2's defaults as transformers sets them: `keep_trailing_newline` stays false (a
    // template's one final newline is dropped), and nothing is auto-escaped.
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(false);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    // Jinja2's default `Undefined`: printed as "", iterated as empty, false in tests; an
    // attribute of it raises.
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_fuel(Some(fuel));
    env.set_recursion_limit(recursion);
    // `.strip()`, `.split()`, `.items()`, `.startswith()`, … on strings, lists and dicts.
    env.set_unknown_method_callback(unknown_method);
    env.set_formatter(format);
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env.add_filter("tojson", tojson);
    env.add_filter("string", string);
    env.add_filter("trim", trim);
    env.add_filter("replace", replace);
    env.add_filter("join", join);
    env.add_filter(
        "format",
        |fmt: &Value, args: minijinja::value::Rest<Value>| -> Result<Value, Error> {
            python::printf(&py_str(fmt)?, &args)
                .map(Value::from)
                .map_err(|m| guard::fail(render_error(m)))
        },
    );
    env.add_filter("length", length);
    env.add_filter("count", length);
    env.add_test("iterable", is_iterable);
    if strict {
        env.add_filter(super::source::STRICT_ITER, |v: Value| -> Result<Value, Error> {
            strict_not_iterable(&v)?;
            Ok(v)
        });
    }
    env
}

/// Python methods minijinja lacks: pycompat's (`.strip()`, `.items()`, …) and the `dict`
/// type's class methods.
fn unknown_method(
    state: &State<'_, '_>,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    if matches!(method, "fromkeys" | "from_keys")
        && value.kind() == ValueKind::Plain
        && value.to_string().contains("dict")
    {
        return dict_class_method(method, args);
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// `dict.fromkeys(keys, value=None)`, and `dict.from_keys(pairs)`: not a method of `dict`,
/// but Jinja2 resolves `dict.from_keys` to `dict['from_keys']`, a generic alias whose call is
/// `dict(pairs)` (GigaChat 3.1's template relies on it).
fn dict_class_method(method: &str, args: &[Value]) -> Result<Value, Error> {
    let first = args.first().cloned().unwrap_or_default();
    let mut entries: Vec<(Value, Value)> = Vec::new();
    for item in first.try_iter()? {
        if method == "fromkeys" {
            entries.push((item, args.get(1).cloned().unwrap_or(Value::from(()))));
        } else {
            let pair: Vec<Value> = item.try_iter()?.collect();
            match pair.as_slice() {
                [k, v] => entries.push((k.clone(), v.clone())),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "dictionary update sequence element has the wrong length",
                    ));
                }
            }
        }
    }
    Ok(entries.into_iter().collect())
}

/// `{{ value }}`: Python's `str()` of the value (the fix for templates that print `None`,
/// `True` or a tool call's arguments dict), with the deadline checked at every print.
fn format(out: &mut Output<'_>, _state: &State<'_, '_>, value: &Value) -> Result<(), Error> {
    guard::check_time()?;
    let write_failed = |_| Error::new(ErrorKind::WriteFailure, "write failed");
    if let Some(s) = value.as_str() {
        return out.write_str(s).map_err(write_failed);
    }
    let mut s = String::new();
    python::str_of(value, &mut s).map_err(|e| guard::fail(render_error(e.message())))?;
    out.write_str(&s).map_err(write_failed)
}

fn render_error(message: String) -> TemplateError {
    TemplateError::Render { line: None, message }
}

/// `raise_exception(message)`: transformers' way for a template to refuse a conversation.
fn raise_exception(message: Option<Value>) -> Result<Value, Error> {
    let mut text = String::new();
    if let Some(m) = &message {
        let _ = python::str_of(m, &mut text);
    }
    Err(guard::fail(TemplateError::Raised { line: None, message: text }))
}

/// `strftime_now(format)`: the render's clock ([`RenderInput::now`](super::RenderInput)).
fn strftime_now(format: &str) -> Result<Value, Error> {
    guard::check_time()?;
    let now = guard::read(|g| g.map(|g| g.now)).unwrap_or_else(super::clock::Moment::now);
    Ok(Value::from(now.strftime(format)))
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None,
/// sort_keys=False)`: `json.dumps` with Python's separators and float spelling, never
/// HTML-escaped (minijinja's own escapes `<`, `>`, `&` and `'` and takes `indent` only).
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, Error> {
    guard::check_time()?;
    let mut style = JsonStyle::default();
    let indent = match indent {
        Some(i) => Some(i),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    if let Some(indent) = indent.filter(|i| !i.is_none() && !i.is_undefined()) {
        style.indent = Some(match (indent.as_i64(), indent.as_str()) {
            (Some(n), _) => " ".repeat(usize::try_from(n.clamp(0, 64)).unwrap_or(0)),
            (None, Some(s)) => s.to_owned(),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: indent must be an int or a string",
                ));
            }
        });
        style.item_sep = ",".into();
    }
    if let Some(seps) = kwargs.get::<Option<Value>>("separators")?.filter(|s| !s.is_none()) {
        let parts: Vec<Value> = seps.try_iter()?.collect();
        match parts.as_slice() {
            [item, key] if item.as_str().is_some() && key.as_str().is_some() => {
                style.item_sep = item.as_str().unwrap_or_default().to_owned();
                style.key_sep = key.as_str().unwrap_or_default().to_owned();
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: separators must be two strings",
                ));
            }
        }
    }
    if let Some(sort) = kwargs.get::<Option<bool>>("sort_keys")? {
        style.sort_keys = sort;
    }
    if let Some(ascii) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        style.ensure_ascii = ascii;
    }
    kwargs.assert_all_used()?;
    let strict = guard::read(|g| g.is_some_and(|g| g.strict));
    if value.is_undefined() && !strict {
        // Python raises (`Undefined` is not JSON serializable); the lenient profile writes
        // what minijinja writes.
        return Ok(Value::from("null"));
    }
    let mut out = String::new();
    match python::json(value, &style, &mut out) {
        Ok(()) => Ok(Value::from(out)),
        Err(python::PyError::NotSerializable(t)) if strict || t != "Undefined" => {
            Err(guard::fail(TemplateError::Strict {
                line: None,
                message: python::PyError::NotSerializable(t).message(),
            }))
        }
        Err(e) => Err(guard::fail(render_error(e.message()))),
    }
}

/// `x|string`: Python's `str(x)` (`None`, `True`, `['a']`), not minijinja's spelling.
fn string(value: &Value) -> Result<Value, Error> {
    if value.kind() == ValueKind::String {
        return Ok(value.clone());
    }
    let mut s = String::new();
    python::str_of(value, &mut s).map_err(|e| guard::fail(render_error(e.message())))?;
    Ok(Value::from(s))
}

/// Python's `str(value)` as an owned string (Jinja2's string filters start with it).
fn py_str(value: &Value) -> Result<String, Error> {
    let mut s = String::new();
    python::str_of(value, &mut s).map_err(|e| guard::fail(render_error(e.message())))?;
    Ok(s)
}

/// `x|trim(chars=None)`: `str(x).strip(chars)` — a list of content parts trims to its
/// Python repr (Llama 3.x templates print `message['content'] | trim`).
fn trim(value: &Value, chars: Option<&str>) -> Result<Value, Error> {
    let s = py_str(value)?;
    let trimmed = match chars {
        Some(chars) => s.trim_matches(|c| chars.contains(c)),
        None => s.trim(),
    };
    Ok(Value::from(trimmed))
}

/// `x|replace(old, new, count=None)`: `str(x).replace(old, new, count)`.
fn replace(value: &Value, old: &Value, new: &Value, count: Option<i64>) -> Result<Value, Error> {
    let (s, old, new) = (py_str(value)?, py_str(old)?, py_str(new)?);
    Ok(Value::from(match count {
        Some(n) if n >= 0 => s.replacen(&old, &new, usize::try_from(n).unwrap_or(usize::MAX)),
        _ => s.replace(&old, &new),
    }))
}

/// `x|join(d="", attribute=None)`: the items' `str()` joined (`True`, not `true`).
fn join(value: &Value, d: Option<&str>, attribute: Option<&str>) -> Result<Value, Error> {
    if value.is_undefined() || value.is_none() {
        strict_not_iterable(value)?;
        return Ok(Value::from(""));
    }
    if let Some(s) = value.as_str() {
        // Jinja2 joins a string's characters.
        return Ok(Value::from(
            s.chars().map(String::from).collect::<Vec<_>>().join(d.unwrap_or("")),
        ));
    }
    let mut out = String::new();
    for (i, item) in value.try_iter()?.enumerate() {
        if i > 0 {
            out.push_str(d.unwrap_or(""));
        }
        let item = match attribute {
            Some(a) => item.get_attr(a)?,
            None => item,
        };
        python::str_of(&item, &mut out).map_err(|e| guard::fail(render_error(e.message())))?;
    }
    Ok(Value::from(out))
}

/// `x|length`: Python's `len(x)`; an undefined value has length 0 (Jinja2's `Undefined`
/// defines `__len__`), while minijinja raises.
fn length(value: &Value) -> Result<Value, Error> {
    match value.len() {
        Some(n) => Ok(Value::from(n)),
        None if value.is_undefined() => Ok(Value::from(0)),
        None => Err(guard::fail(TemplateError::Render {
            line: None,
            message: format!("object of type '{}' has no len()", python_type(value)),
        })),
    }
}

/// Under `--strict`, iterating `None` is Python's `TypeError`; leniently it is empty.
fn strict_not_iterable(value: &Value) -> Result<(), Error> {
    let strict = guard::read(|g| g.is_some_and(|g| g.strict));
    if strict && value.is_none() {
        return Err(guard::fail(TemplateError::Strict {
            line: None,
            message: "'NoneType' object is not iterable".into(),
        }));
    }
    Ok(())
}

/// `x is iterable`: Python's `iter(x)` succeeds — strings, lists, dicts and Jinja2's
/// `Undefined` (which iterates as empty); not numbers, booleans or `None`. minijinja says
/// false for strings and undefined.
fn is_iterable(value: &Value) -> bool {
    matches!(
        value.kind(),
        ValueKind::String
            | ValueKind::Seq
            | ValueKind::Map
            | ValueKind::Iterable
            | ValueKind::Undefined
            | ValueKind::Bytes
    )
}

/// Python's name of a value's type, for messages that say what Python would raise.
pub(crate) fn python_type(value: &Value) -> &'static str {
    match value.kind() {
        ValueKind::Undefined => "Undefined",
        ValueKind::None => "NoneType",
        ValueKind::Bool => "bool",
        ValueKind::Number if value.is_integer() => "int",
        ValueKind::Number => "float",
        ValueKind::String => "str",
        ValueKind::Bytes => "bytes",
        ValueKind::Seq | ValueKind::Iterable => "list",
        ValueKind::Map => "dict",
        _ => "object",
    }
}
