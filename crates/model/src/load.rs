//! Will llama.cpp load it: the checks llama.cpp 0c1e570's model loader makes, from the header.
//!
//! [`check`] follows `llama_model_load` in order — the architecture (`llm_arch_from_string`),
//! the hyperparameters (`llama_model_base::load_hparams`, then the architecture's
//! `load_arch_hparams`), the vocabulary keys (`llama_vocab::load`), the tensors
//! (`load_arch_tensors`' `create_tensor` calls through `check_tensor_dims`, then
//! `done_getting_tensors`' count) — and reports what the loader would stop at as
//! [`Finding`]s coded `model::load::…`. The container (`gguf_init_from_file`'s rules, tensor data
//! inside the file) is the GGUF parser's `llama-cpp` profile, checked before this.
//!
//! Where llama.cpp aborts instead of refusing (`GGML_ASSERT` on a block count of 0 or above
//! `LLAMA_MAX_LAYERS`, on expert counts that do not fit), the finding is
//! `model::load::llama_cpp_crashes`: the file is refused all the same.

use std::fmt;

use sipllm_format::{Finding, Kind, Path, PathSeg};
use sipllm_gguf::{MetaValue, ValueType};
use sipllm_streaming::{Model, SourceTensor};

use crate::arch::expr::{Hparams, KeyLookup};
use crate::arch::{self, KeySpec, KeyType};

/// `LLAMA_MAX_LAYERS` (src/llama-hparams.h).
pub const LLAMA_MAX_LAYERS: u64 = 512;
/// `LLAMA_MAX_EXPERTS` (src/llama-hparams.h).
pub const LLAMA_MAX_EXPERTS: u64 = 512;

/// What llama.cpp's loader objects to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Issue {
    /// The file is not GGUF (`.llmw`): llama.cpp does not read it.
    NotGguf,
    /// `general.architecture` names no architecture llama.cpp knows.
    UnknownArch {
        /// The name found.
        name: String,
    },
    /// A key the loader requires is absent.
    MissingKey {
        /// The key.
        key: String,
        /// Which step reads it.
        step: &'static str,
    },
    /// A key has a type the loader does not take.
    KeyType {
        /// The key.
        key: String,
        /// The type llama.cpp expects.
        expected: &'static str,
        /// The type found.
        found: String,
    },
    /// A per-layer array whose length is not the block count.
    ArrayLength {
        /// The key.
        key: String,
        /// The block count.
        expected: u64,
        /// The array's length.
        found: u64,
    },
    /// A hyperparameter value the loader refuses (not an abort).
    BadValue {
        /// The key.
        key: String,
        /// llama.cpp's message.
        message: String,
    },
    /// A tensor the loader requires is absent.
    MissingTensor {
        /// The tensor's name.
        name: String,
    },
    /// A tensor whose shape is not the one the loader creates.
    TensorShape {
        /// The tensor's name.
        name: String,
        /// The shape llama.cpp expects, ggml order (`ne[0]` first).
        expected: Vec<i64>,
        /// The shape found, ggml order.
        found: Vec<u64>,
    },
    /// Tensors the loader does not create for this architecture and these hyperparameters.
    ExtraTensors {
        /// How many tensors the file has.
        in_file: usize,
        /// How many of them the loader creates.
        created: usize,
        /// The first few left over.
        examples: Vec<String>,
    },
    /// `block_count` out of llama.cpp's range: the process aborts.
    BlockCount {
        /// The value found.
        found: u64,
    },
    /// llama.cpp aborts on this file (`GGML_ASSERT`), it does not return an error.
    LlamaCppCrashes {
        /// The assertion that fails.
        assertion: &'static str,
        /// The values that make it fail.
        detail: String,
    },
    /// More missing or misshapen tensors than [`MAX_TENSOR_FINDINGS`]: the rest, counted.
    MoreTensorFindings {
        /// How many were not listed.
        count: usize,
    },
    /// llama.cpp knows the architecture but sipllm has no tensor table for it: the keys
    /// were checked, the tensors were not.
    TensorsUnchecked {
        /// The architecture.
        arch: String,
    },
}

/// How bad an [`Issue`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// llama.cpp refuses the file (or crashes on it).
    Error,
    /// llama.cpp may load it; something was not checked.
    Warning,
}

impl Issue {
    /// Error or warning.
    pub fn severity(&self) -> Severity {
        match self {
            Issue::TensorsUnchecked { .. } => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

fn dims<T: fmt::Display>(d: &[T]) -> String {
    let parts: Vec<String> = d.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(", "))
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Issue::NotGguf => write!(f, "llama.cpp reads GGUF files only"),
            Issue::UnknownArch { name } => {
                write!(f, "unknown model architecture {name:?}: llama.cpp does not know it")
            }
            Issue::MissingKey { key, step: _ } => write!(f, "key not found in model: {key}"),
            Issue::KeyType { key, expected, found } => {
                write!(f, "key {key} has type {found}, llama.cpp expects {expected}")
            }
            Issue::ArrayLength { key, expected, found } => write!(
                f,
                "key {key} has {found} values, llama.cpp expects one per layer ({expected})"
            ),
            Issue::BadValue { key, message } => write!(f, "key {key}: {message}"),
            Issue::MissingTensor { name } => write!(f, "required tensor {name:?} not found"),
            Issue::TensorShape { name: _, expected, found } => {
                write!(f, "shape (ne) {}, llama.cpp expects {}", dims(found), dims(expected))
            }
            Issue::ExtraTensors { in_file, created, examples } => write!(
                f,
                "wrong number of tensors: the file has {in_file}, the loader creates {created} \
                 (left over: {}{})",
                examples.join(", "),
                if in_file.saturating_sub(*created) > examples.len() { ", …" } else { "" }
            ),
            Issue::BlockCount { found } => write!(
                f,
                "block_count is {found}: llama.cpp asserts 0 < block_count <= \
                 {LLAMA_MAX_LAYERS} and aborts"
            ),
            Issue::LlamaCppCrashes { assertion: "a non-zero divisor", detail } => {
                write!(f, "llama.cpp dies of SIGFPE (integer division by zero): {detail}")
            }
            Issue::LlamaCppCrashes { assertion, detail } => {
                write!(f, "llama.cpp aborts: GGML_ASSERT({assertion}) fails: {detail}")
            }
            Issue::MoreTensorFindings { count } => {
                write!(f, "{count} more tensors are missing or have the wrong shape")
            }
            Issue::TensorsUnchecked { arch } => {
                write!(f, "{arch:?}: keys checked, tensors not (no table)")
            }
        }
    }
}

impl Kind for Issue {
    fn code(&self) -> &'static str {
        match self {
            Issue::NotGguf => "model::load::not_gguf",
            Issue::UnknownArch { .. } => "model::load::unknown_arch",
            Issue::MissingKey { .. } => "model::load::missing_key",
            Issue::KeyType { .. } | Issue::ArrayLength { .. } => "model::load::key_type",
            Issue::BadValue { .. } => "model::load::bad_value",
            Issue::MissingTensor { .. } => "model::load::missing_tensor",
            Issue::TensorShape { .. } => "model::load::tensor_shape",
            Issue::ExtraTensors { .. } => "model::load::extra_tensors",
            Issue::BlockCount { .. } => "model::load::block_count",
            Issue::LlamaCppCrashes { .. } => "model::load::llama_cpp_crashes",
            Issue::MoreTensorFindings { .. } => "model::load::more_tensor_findings",
            Issue::TensorsUnchecked { .. } => "model::load::tensors_unchecked",
        }
    }

    fn help(&self) -> &'static str {
        match self {
            Issue::NotGguf => "convert it to GGUF first (sipllm convert)",
            Issue::UnknownArch { .. } => {
                "llama.cpp's llm_arch_from_string (src/llama-arch.cpp) knows only the names of \
                 LLM_ARCH_NAMES: set general.architecture to one of them, or use an engine that \
                 supports this model"
            }
            Issue::MissingKey { .. } => {
                "llama_model_loader::get_key(..., required) throws \"key not found in model\" \
                 (load_hparams / load_arch_hparams in src/llama-model.cpp and src/models/*.cpp, \
                 llama_vocab::load for tokenizer.*): add the key"
            }
            Issue::KeyType { .. } | Issue::ArrayLength { .. } => {
                "llama_model_loader::get_key compares the stored GGUF type with the C++ field's \
                 exactly (\"has wrong type\"); get_key_or_arr also takes an array of one value \
                 per layer (\"has wrong array length\"): rewrite the value with that type"
            }
            Issue::BadValue { .. } => {
                "llama_model_base::load_hparams (src/llama-model.cpp) refuses this value: fix it"
            }
            Issue::MissingTensor { .. } => {
                "check_tensor_dims (src/llama-model-loader.cpp) throws \"tensor '...' not found\" \
                 for a tensor created without TENSOR_NOT_REQUIRED: the file lacks a weight the \
                 architecture needs, or names it differently"
            }
            Issue::TensorShape { .. } => {
                "check_tensor_dims (src/llama-model-loader.cpp) throws \"tensor '...' has wrong \
                 shape\": the shape must be the one load_arch_tensors computes from the \
                 hyperparameters, so the tensor or a hyperparameter is wrong"
            }
            Issue::ExtraTensors { .. } => {
                "done_getting_tensors (src/llama-model-loader.cpp) throws \"wrong number of \
                 tensors\" when the file has tensors the loader did not create: remove them, or \
                 fix their names or the block count"
            }
            Issue::BlockCount { .. } => {
                "load_hparams asserts hparams.n_layer_all > 0 && <= LLAMA_MAX_LAYERS \
                 (GGML_ASSERT: the process aborts): fix {arch}.block_count"
            }
            Issue::LlamaCppCrashes { .. } => {
                "llama.cpp does not refuse this file, it kills the process: a GGML_ASSERT \
                 (load_hparams in src/llama-model.cpp, or the architecture's src/models/ file) \
                 or an integer division by zero in load_arch_tensors. Fix the value named"
            }
            Issue::MoreTensorFindings { .. } => {
                "check_tensor_dims stops at the first; the first few are listed above: when \
                 nearly every tensor is wrong, the architecture or a hyperparameter is"
            }
            Issue::TensorsUnchecked { .. } => {
                "sipllm's tables cover the architectures llama.cpp's test generator builds; \
                 the tensors of this one are not checked"
            }
        }
    }
}

/// The verdict of [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// `general.architecture`, when it is a string.
    pub arch: Option<String>,
    /// True when llama.cpp knows the architecture.
    pub known_arch: bool,
    /// True when the tensors were checked against a table.
    pub tensors_checked: bool,
    /// What was found, in the loader's order (it stops at the first error; this goes on
    /// where it can).
    pub findings: Vec<Finding<Issue>>,
}

impl LoadReport {
    /// The verdict in a few words: `loads it`, `may load it, tensors not checked`,
    /// `refuses it`, `crashes on it` (after "llama.cpp").
    pub fn verdict(&self) -> &'static str {
        match (self.loads(), self.crashes(), self.tensors_checked) {
            (true, _, true) => "loads it",
            (true, _, false) => "may load it, tensors not checked",
            (false, true, _) => "crashes on it",
            (false, false, _) => "refuses it",
        }
    }

    /// True when llama.cpp would load the file (no error finding).
    pub fn loads(&self) -> bool {
        !self.findings.iter().any(|f| f.kind().severity() == Severity::Error)
    }

    /// True when llama.cpp would abort on the file rather than refuse it.
    pub fn crashes(&self) -> bool {
        self.findings
            .iter()
            .any(|f| matches!(f.kind(), Issue::LlamaCppCrashes { .. } | Issue::BlockCount { .. }))
    }
}

/// The keys of a GGUF header, for [`Hparams`].
struct Keys<'a> {
    gguf: &'a sipllm_gguf::Gguf<sipllm_streaming::HeaderBytes>,
}

fn as_i64(v: MetaValue<'_>) -> Option<i64> {
    Some(match v {
        MetaValue::Uint8(x) => x.into(),
        MetaValue::Int8(x) => x.into(),
        MetaValue::Uint16(x) => x.into(),
        MetaValue::Int16(x) => x.into(),
        MetaValue::Uint32(x) => x.into(),
        MetaValue::Int32(x) => x.into(),
        MetaValue::Uint64(x) => i64::try_from(x).ok()?,
        MetaValue::Int64(x) => x,
        MetaValue::Bool(b) => b.into(),
        _ => return None,
    })
}

impl KeyLookup for Keys<'_> {
    fn int(&self, key: &str, il: u32) -> Option<i64> {
        match self.gguf.get(key)? {
            MetaValue::Array(a) => as_i64(a.get(u64::from(il))?),
            v => as_i64(v),
        }
    }

    fn array_len(&self, key: &str) -> Option<u64> {
        self.gguf.get_array(key).map(|a| a.len())
    }
}

/// A builder of findings located in the header.
struct Out<'a> {
    gguf: &'a sipllm_gguf::Gguf<sipllm_streaming::HeaderBytes>,
    findings: Vec<Finding<Issue>>,
    /// Tensor findings past [`MAX_TENSOR_FINDINGS`], counted only.
    dropped: usize,
}

/// Missing or misshapen tensors reported one by one; the rest are counted
/// ([`Issue::MoreTensorFindings`]): a wrong architecture name makes every tensor wrong.
pub const MAX_TENSOR_FINDINGS: usize = 16;

impl Out<'_> {
    fn capped(&mut self, name: &str, issue: Issue) {
        let shown = self
            .findings
            .iter()
            .filter(|f| matches!(f.kind(), Issue::MissingTensor { .. } | Issue::TensorShape { .. }))
            .count();
        if shown < MAX_TENSOR_FINDINGS {
            self.at_tensor(name, issue);
        } else {
            self.dropped += 1;
        }
    }

    fn at_key(&mut self, key: &str, issue: Issue) {
        let (offset, len, path) = match self.gguf.get_entry(key) {
            Some(e) => {
                let span = e.kv.span();
                let seg = PathSeg::Metadata { index: e.index as u64, key: Some(key.into()) };
                (span.offset, span.len, Path::root().with(seg))
            }
            None => (0, 0, Path::root()),
        };
        self.findings.push(Finding::new(issue, offset, len, path));
    }

    fn at_tensor(&mut self, name: &str, issue: Issue) {
        let found = self
            .gguf
            .tensor_infos()
            .iter()
            .enumerate()
            .find(|(_, t)| self.gguf.tensor_name(t).as_bytes() == name.as_bytes());
        let (offset, len, path) = match found {
            Some((index, t)) => {
                let seg = PathSeg::Tensor { index: index as u64, name: Some(name.into()) };
                (t.span().offset, t.span().len, Path::root().with(seg))
            }
            None => (0, 0, Path::root()),
        };
        self.findings.push(Finding::new(issue, offset, len, path));
    }

    fn errors(&self) -> bool {
        self.findings.iter().any(|f| f.kind().severity() == Severity::Error)
    }
}

fn type_name(v: &MetaValue<'_>) -> String {
    match v {
        MetaValue::Array(a) => format!("ARRAY of {}", a.elem_type()),
        v => v.value_type().to_string(),
    }
}

/// A key to check: [`KeySpec`] with a key built at run time.
#[derive(Clone, Copy)]
struct Spec<'k> {
    key: &'k str,
    ty: KeyType,
    per_layer: bool,
}

impl<'k> From<&'k KeySpec> for Spec<'k> {
    fn from(s: &'k KeySpec) -> Spec<'k> {
        Spec { key: s.key, ty: s.ty, per_layer: s.per_layer }
    }
}

/// Checks a key read by `get_key` (or `get_key_or_arr` when `per_layer`); true when present
/// and well typed.
fn check_key(
    out: &mut Out<'_>,
    spec: Spec<'_>,
    required: bool,
    n_layer: u64,
    step: &'static str,
) -> bool {
    let Some(v) = out.gguf.get(spec.key) else {
        if required {
            out.at_key(spec.key, Issue::MissingKey { key: spec.key.into(), step });
        }
        return false;
    };
    let expected = spec.ty.value_type();
    if let (MetaValue::Array(a), true) = (v, spec.per_layer) {
        if a.len() != n_layer {
            out.at_key(
                spec.key,
                Issue::ArrayLength { key: spec.key.into(), expected: n_layer, found: a.len() },
            );
            return false;
        }
        // get_arr: UINT32/INT32/BOOL elements for an integer field, FLOAT32 for a float.
        let ok = match spec.ty {
            KeyType::U32 | KeyType::I32 => {
                matches!(a.elem_type(), ValueType::Uint32 | ValueType::Int32 | ValueType::Bool)
            }
            KeyType::F32 => a.elem_type() == ValueType::Float32,
            _ => false,
        };
        if !ok {
            out.at_key(
                spec.key,
                Issue::KeyType {
                    key: spec.key.into(),
                    expected: expected.name(),
                    found: type_name(&v),
                },
            );
        }
        return ok;
    }
    if v.value_type() != expected {
        out.at_key(
            spec.key,
            Issue::KeyType {
                key: spec.key.into(),
                expected: expected.name(),
                found: type_name(&v),
            },
        );
        return false;
    }
    true
}

/// What every architecture's loading reads (`llama_model_base::load_hparams`,
/// src/llama-model.cpp): (suffix, type, required, per layer).
const COMMON_KEYS: &[(&str, KeyType, bool, bool)] = &[
    ("context_length", KeyType::U32, true, false),
    ("embedding_length", KeyType::U32, true, false),
    ("embedding_length_out", KeyType::U32, false, false),
    ("attention.causal", KeyType::Bool, false, false),
    ("pooling_type", KeyType::U32, false, false),
    ("block_count", KeyType::U32, true, false),
    ("nextn_predict_layers", KeyType::U32, false, false),
    ("expert_count", KeyType::U32, false, false),
    ("expert_used_count", KeyType::U32, false, true),
    ("expert_group_count", KeyType::U32, false, false),
    ("expert_group_used_count", KeyType::U32, false, false),
    ("feed_forward_length", KeyType::U32, false, true),
    ("attention.head_count", KeyType::U32, false, true),
    ("attention.head_count_kv", KeyType::U32, false, true),
    ("rope.scaling.finetuned", KeyType::Bool, false, false),
    ("rope.scaling.original_context_length", KeyType::U32, false, false),
    ("rope.freq_base", KeyType::F32, false, false),
    ("rope.scaling.type", KeyType::Str, false, false),
    ("rope.scaling.factor", KeyType::F32, false, false),
    ("rope.scaling.attn_factor", KeyType::F32, false, false),
];

/// Keys read only when the model has attention heads (`n_head() > 0`).
const HEAD_KEYS: &[(&str, KeyType)] = &[
    ("attention.key_length", KeyType::U32),
    ("attention.value_length", KeyType::U32),
    ("rope.dimension_count", KeyType::U32),
    ("attention.key_length_swa", KeyType::U32),
    ("attention.value_length_swa", KeyType::U32),
    ("rope.dimension_count_swa", KeyType::U32),
];

/// Whether llama.cpp 0c1e570 would load `model`, from its header: see the module docs.
pub fn check(model: &Model) -> LoadReport {
    let gguf = match (model.gguf(), model.split()) {
        (Some(g), _) => g.gguf(),
        (None, Some(set)) => set.first().gguf(),
        (None, None) => {
            return LoadReport {
                arch: None,
                known_arch: false,
                tensors_checked: false,
                findings: vec![Finding::new(Issue::NotGguf, 0, 0, Path::root())],
            };
        }
    };
    let tensors = model.as_weight_source().tensors();
    let mut out = Out { gguf, findings: Vec::new(), dropped: 0 };
    let mut report =
        LoadReport { arch: None, known_arch: false, tensors_checked: false, findings: Vec::new() };
    check_into(&mut out, tensors, &mut report);
    report.findings = out.findings;
    report
}

fn check_into(out: &mut Out<'_>, tensors: &[SourceTensor], report: &mut LoadReport) {
    // llm_arch_from_string(ml.get_arch_name()): get_key(general.architecture) is a string.
    let arch = match out.gguf.get("general.architecture") {
        Some(MetaValue::String(s)) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        Some(v) => {
            let found = type_name(&v);
            out.at_key(
                "general.architecture",
                Issue::KeyType { key: "general.architecture".into(), expected: "STRING", found },
            );
            return;
        }
        None => {
            out.at_key(
                "general.architecture",
                Issue::MissingKey {
                    key: "general.architecture".into(),
                    step: "llm_arch_from_string",
                },
            );
            return;
        }
    };
    report.arch = Some(arch.clone());
    if !arch::is_known(&arch) {
        out.at_key("general.architecture", Issue::UnknownArch { name: arch });
        return;
    }
    report.known_arch = true;
    let keys = Keys { gguf: out.gguf };
    let hp = Hparams::new(&arch, &keys);

    // load_hparams: the keys every architecture reads, in its order.
    let mut n_layer = 0u64;
    for &(suffix, ty, required, per_layer) in COMMON_KEYS {
        let key = format!("{arch}.{suffix}");
        let ok =
            check_key(out, Spec { key: &key, ty, per_layer }, required, n_layer, "load_hparams");
        if out.errors() {
            return;
        }
        if suffix == "block_count" && ok {
            n_layer = hp.n_layer_all().max(0) as u64;
            if n_layer == 0 || n_layer > LLAMA_MAX_LAYERS {
                out.at_key(&key, Issue::BlockCount { found: n_layer });
                return;
            }
        }
        if suffix == "expert_group_used_count" && !expert_asserts(out, &hp, n_layer) {
            return;
        }
    }
    if hp.n_head(0) > 0 {
        for &(suffix, ty) in HEAD_KEYS {
            let key = format!("{arch}.{suffix}");
            check_key(
                out,
                Spec { key: &key, ty, per_layer: false },
                false,
                n_layer,
                "load_hparams",
            );
            if out.errors() {
                return;
            }
        }
        let n_rot = hp.get("n_rot", 0).unwrap_or(0);
        let head_k = hp.get("n_embd_head_k", 0).unwrap_or(0);
        if matches!(arch.as_str(), "llama" | "deci" | "falcon" | "llama-embed") && n_rot != head_k {
            let key = format!("{arch}.rope.dimension_count");
            out.at_key(
                &key,
                Issue::BadValue {
                    key: key.clone(),
                    message: format!("invalid n_rot: {n_rot}, expected {head_k}"),
                },
            );
            return;
        }
    }

    // load_arch_hparams: the architecture's own required keys.
    let table = arch::table(&arch);
    if let Some(t) = table {
        for spec in t.keys {
            check_key(out, spec.into(), spec.required, n_layer, "load_arch_hparams");
            if out.errors() {
                return;
            }
        }
    }

    // llama_vocab::load: the tokenizer model, then the tokens.
    match out.gguf.get("tokenizer.ggml.model") {
        None => {
            out.at_key(
                "tokenizer.ggml.model",
                Issue::MissingKey { key: "tokenizer.ggml.model".into(), step: "llama_vocab::load" },
            );
            return;
        }
        Some(MetaValue::String(_)) => {}
        Some(v) => {
            let found = type_name(&v);
            out.at_key(
                "tokenizer.ggml.model",
                Issue::KeyType { key: "tokenizer.ggml.model".into(), expected: "STRING", found },
            );
            return;
        }
    }
    let no_vocab = matches!(out.gguf.get_str("tokenizer.ggml.model"), Some("no_vocab" | "none"));
    if !no_vocab && out.gguf.get_array("tokenizer.ggml.tokens").is_none() {
        out.at_key(
            "tokenizer.ggml.tokens",
            Issue::MissingKey {
                key: "tokenizer.ggml.tokens".into(),
                step: "llama_vocab::load: cannot find tokenizer vocab in model file",
            },
        );
        return;
    }

    // load_arch_tensors, then done_getting_tensors.
    let Some(table) = table else {
        out.findings.push(Finding::new(Issue::TensorsUnchecked { arch }, 0, 0, Path::root()));
        return;
    };
    if !arch_asserts(out, table, &hp, n_layer) {
        return;
    }
    report.tensors_checked = true;
    check_tensors(out, table, &hp, tensors, n_layer);
}

/// The expert-count assertions of `load_hparams` (GGML_ASSERT: llama.cpp aborts).
fn expert_asserts(out: &mut Out<'_>, hp: &Hparams<'_>, n_layer: u64) -> bool {
    let n_expert = hp.get("n_expert", 0).unwrap_or(0).max(0) as u64;
    let used_max = (0..n_layer.min(LLAMA_MAX_LAYERS) as u32)
        .map(|il| hp.get("n_expert_used", il).unwrap_or(0).max(0) as u64)
        .max()
        .unwrap_or(0);
    let groups = hp.get("kv:expert_group_count", 0).unwrap_or(0).max(0) as u64;
    let crash =
        |assertion: &'static str, detail: String| Issue::LlamaCppCrashes { assertion, detail };
    let issue = if n_expert > LLAMA_MAX_EXPERTS {
        Some(crash("hparams.n_expert <= LLAMA_MAX_EXPERTS", format!("expert_count is {n_expert}")))
    } else if used_max > n_expert {
        Some(crash(
            "n_expert_used_max <= hparams.n_expert",
            format!("expert_used_count is {used_max}, expert_count {n_expert}"),
        ))
    } else if n_expert > 0 && used_max == 0 {
        Some(crash(
            "n_expert_used_max > 0",
            format!("expert_count is {n_expert}, no expert is used"),
        ))
    } else if n_expert > 0 && groups >= n_expert {
        Some(crash(
            "hparams.n_expert_groups < hparams.n_expert",
            format!("expert_group_count is {groups}"),
        ))
    } else if n_expert == 0 && groups != 0 {
        Some(crash(
            "hparams.n_expert_groups == 0",
            format!("expert_group_count is {groups} without experts"),
        ))
    } else {
        None
    };
    match issue {
        Some(issue) => {
            out.findings.push(Finding::new(issue, 0, 0, Path::root()));
            false
        }
        None => true,
    }
}

/// Assertions of single architectures that abort llama.cpp while it loads.
fn arch_asserts(
    out: &mut Out<'_>,
    table: &arch::ArchTable,
    hp: &Hparams<'_>,
    n_layer: u64,
) -> bool {
    let crash =
        |assertion: &'static str, detail: String| Issue::LlamaCppCrashes { assertion, detail };
    let get = |name: &str| hp.get(name, 0).unwrap_or(0);
    let issue = match table.source {
        // src/models/hrm-text.cpp, load_arch_hparams: the block count is the expanded slot count.
        "src/models/hrm-text.cpp" => {
            let slots = get("kv:hrm.layers_per_stack")
                .saturating_mul(get("kv:hrm.h_cycles"))
                .saturating_mul(get("kv:hrm.l_cycles").saturating_add(1));
            (slots != n_layer as i64).then(|| {
                crash(
                    "hparams.n_layer() == n_slot",
                    format!("block_count is {n_layer}, the HRM cycles make {slots} slots"),
                )
            })
        }
        // src/models/deepseek2.cpp: the MLA key head must be longer than its rotary part.
        "src/models/deepseek2.cpp" => {
            let nope = get("n_embd_head_k_mla") - get("n_rot");
            (nope < 1).then(|| {
                crash(
                    "n_embd_head_qk_nope >= 1",
                    format!(
                        "key head {} minus rope dimension {} is {nope}",
                        get("n_embd_head_k_mla"),
                        get("n_rot")
                    ),
                )
            })
        }
        _ => None,
    };
    // load_arch_tensors' first lines: an integer division by zero (SIGFPE).
    let issue = issue.or_else(|| {
        let d = table.divisors.iter().find(|d| hp.eval(d, 0) == Some(0))?;
        Some(crash("a non-zero divisor", format!("load_arch_tensors divides by {d}, which is 0")))
    });
    match issue {
        Some(issue) => {
            out.findings.push(Finding::new(issue, 0, 0, Path::root()));
            false
        }
        None => true,
    }
}

/// The generic pass of `llama_model_base::load_tensors` after `load_arch_tensors`: optional
/// per-tensor `.scale` / `.input_scale` tensors beside the weights (NVFP4 and the like).
fn generic_scale(
    name: &str,
    table: &arch::ArchTable,
    present: &dyn Fn(&str) -> bool,
) -> Option<&'static [&'static str]> {
    let (base, suffix) = name.rsplit_once('.')?;
    if suffix != "scale" && suffix != "input_scale" {
        return None;
    }
    let weight = format!("{base}.weight");
    // The pass adds a scale beside a weight the layer holds: a weight of this file, or (HRM-Text's
    // cycles) the weight of another layer this one aliases, which the table requires in some
    // layers but not in this one.
    let aliased = || {
        let Some((il, rest)) = base.strip_prefix("blk.").and_then(|r| r.split_once('.')) else {
            return false;
        };
        let Ok(il) = il.parse::<u32>() else { return false };
        let stem = format!("blk.{{i}}.{rest}.weight");
        table.tensors.iter().any(|t| {
            t.name == stem
                && matches!(t.need, arch::Need::Layers(ls) if !ls.is_empty() && !ls.contains(&il))
        })
    };
    if !present(&weight) && !aliased() {
        return None;
    }
    // `{n_expert}` for the expert tensors, `{1}` for the others.
    Some(if base.ends_with("_exps") { &["n_expert"] } else { &["1"] })
}

fn check_tensors(
    out: &mut Out<'_>,
    table: &arch::ArchTable,
    hp: &Hparams<'_>,
    tensors: &[SourceTensor],
    n_layer: u64,
) {
    use std::collections::{HashMap, HashSet};
    let by_name: HashMap<&str, &SourceTensor> =
        tensors.iter().map(|t| (t.name.as_str(), t)).collect();
    let ne = |t: &SourceTensor| -> Vec<u64> { t.shape.iter().rev().copied().collect() };
    let mut created: HashSet<&str> = HashSet::new();
    let n_layer = n_layer.min(LLAMA_MAX_LAYERS) as u32;

    // None when one of the calls creating the name gives the tensor's shape, else the first
    // call's expected shape (-1 where unknown).
    let shape_ok = |specs: &[(&arch::TensorSpec, u32)], t: &SourceTensor| -> Option<Vec<i64>> {
        let found = ne(t);
        let mut expected_first = None;
        for (spec, il) in specs {
            let want: Vec<Option<i64>> = spec.dims.iter().map(|d| hp.eval(d, *il)).collect();
            let matches = (0..4).all(|k| match (want.get(k), found.get(k)) {
                (Some(Some(w)), Some(f)) => *w >= 0 && *w as u64 == *f,
                (Some(Some(w)), None) => *w == 1,
                (Some(None), _) => true,
                (None, Some(f)) => *f == 1,
                (None, None) => true,
            });
            if matches {
                return None;
            }
            if expected_first.is_none() {
                expected_first = Some(want.iter().map(|w| w.unwrap_or(-1)).collect());
            }
        }
        expected_first
    };

    // Every name the table may create, per layer.
    let mut specs_by_name: HashMap<String, Vec<(&arch::TensorSpec, u32)>> = HashMap::new();
    for spec in table.tensors {
        if spec.per_layer() {
            for il in 0..n_layer {
                specs_by_name.entry(spec.name_for(il)).or_default().push((spec, il));
            }
        } else {
            specs_by_name.entry(spec.name.to_owned()).or_default().push((spec, 0));
        }
    }

    // Required tensors, in table order; a fused alternative satisfies the split ones.
    let alt = |name: &str| -> Option<String> {
        for (split, fused) in [
            (".attn_q.weight", ".attn_qkv.weight"),
            (".attn_k.weight", ".attn_qkv.weight"),
            (".attn_v.weight", ".attn_qkv.weight"),
            (".ffn_gate_exps.weight", ".ffn_gate_up_exps.weight"),
            (".ffn_up_exps.weight", ".ffn_gate_up_exps.weight"),
        ] {
            if let Some(stem) = name.strip_suffix(split) {
                return Some(format!("{stem}{fused}"));
            }
        }
        None
    };
    // llama.cpp computes every executed call's dims; a zero divisor kills it (SIGFPE).
    for spec in table.tensors.iter().filter(|s| s.required(0, hp)) {
        if let Some(d) = spec.dims.iter().find(|d| hp.eval_traced(d, 0).1) {
            let name = spec.name_for(0);
            let detail = format!("the shape of {name:?} divides by {d}, which is 0");
            let issue = Issue::LlamaCppCrashes { assertion: "a non-zero divisor", detail };
            out.findings.push(Finding::new(issue, 0, 0, Path::root()));
            return;
        }
    }
    let mut missing_reported = HashSet::new();
    for spec in table.tensors {
        let layers: Vec<u32> = if spec.per_layer() { (0..n_layer).collect() } else { vec![0] };
        for il in layers {
            if !spec.required(il, hp) {
                continue;
            }
            let name = spec.name_for(il);
            if by_name.contains_key(name.as_str()) {
                continue;
            }
            if alt(&name).is_some_and(|a| by_name.contains_key(a.as_str())) {
                continue;
            }
            // token_embd doubles as the output (TENSOR_DUPLICATED) and the like: several
            // calls of one name, any present satisfies it.
            if missing_reported.insert(name.clone()) {
                out.capped(&name, Issue::MissingTensor { name: name.clone() });
            }
        }
    }

    // Present tensors: shape against the calls that create the name; the rest left over.
    let present = |n: &str| by_name.contains_key(n);
    let mut extras = Vec::new();
    for t in tensors {
        let name = t.name.as_str();
        if let Some(specs) = specs_by_name.get(name) {
            created.insert(name);
            if let Some(expected) = shape_ok(specs, t) {
                out.capped(name, Issue::TensorShape { name: name.into(), expected, found: ne(t) });
            }
            continue;
        }
        if let Some(dims) = generic_scale(name, table, &present) {
            let layer_ok = match name.strip_prefix("blk.").and_then(|r| r.split('.').next()) {
                Some(n) => n.parse::<u32>().is_ok_and(|il| il < n_layer),
                None => true,
            };
            if layer_ok {
                created.insert(name);
                let spec =
                    arch::TensorSpec { name: "", dims, need: arch::Need::Optional, when: "" };
                if let Some(expected) = shape_ok(&[(&spec, 0)], t) {
                    let issue = Issue::TensorShape { name: name.into(), expected, found: ne(t) };
                    out.capped(name, issue);
                }
                continue;
            }
        }
        extras.push(name.to_owned());
    }
    if out.dropped > 0 {
        let issue = Issue::MoreTensorFindings { count: out.dropped };
        out.findings.push(Finding::new(issue, 0, 0, Path::root()));
    }
    if !extras.is_empty() {
        let first = extras.first().cloned().unwrap_or_default();
        let examples = extras.iter().take(3).cloned().collect();
        out.at_tensor(
            &first,
            Issue::ExtraTensors { in_file: tensors.len(), created: created.len(), examples },
        );
    }
}
