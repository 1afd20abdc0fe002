//! The command line: clap derive types for every command and option.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Parser, Subcommand, ValueEnum};
use sipllm_model::manifest::HashKind;

use sipllm_gguf::Profile;

use crate::open::OpenSettings;

/// Inspect, validate and verify GGUF (and .llmw) model files: what model is this, is it
/// intact, will it load, and if not, exactly why.
#[derive(Debug, Parser)]
#[command(name = "sipllm", version, propagate_version = true, max_term_width = 100)]
#[command(after_help = "Every FILE a command reads is a path or URL (http://, https://, \
    hf://OWNER/REPO/PATH[@REVISION]; s3:// with the object-store feature).\nExit codes: 0 \
    ok/valid, 1 invalid file, verification mismatch or models that differ, 2 usage or I/O \
    error.\nDocumentation: https://github.com/sipllm/sipllm-gguf/tree/main/docs (the command \
    line: docs/cli.md there)")]
pub struct Cli {
    /// When to use colors in diagnostics and progress output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// No progress bars (they are drawn on standard error, and only when it is a terminal).
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Summarise a model file: header, hyperparameters, parameter count, metadata, tensors.
    ///
    /// With no FILE, inspects a small sample GGUF bundled into the program.
    Inspect(InspectArgs),
    /// Check files against a validation profile and explain every problem over a hex view.
    ///
    /// Exit code 0 when every file is valid (warnings allowed unless --deny-warnings), 1 when
    /// any file is invalid, 2 when a file cannot be read.
    Validate(ValidateArgs),
    /// List the tensors of a model file (name, type, row-major shape, offset, size).
    Tensors(TensorsArgs),
    /// Write a tensor's stored bytes (or a byte range of them) to a file or a pipe.
    Read(ReadArgs),
    /// Read every tensor back, check it is complete, and hash it and the whole model
    /// (manifests: sipllm's, or llama.cpp's llama-gguf-hash's).
    Verify(VerifyArgs),
    /// Print a shell completion script (e.g. `sipllm completions bash > sipllm.bash`).
    Completions(CompletionsArgs),
    /// Serve the GGUF inspector page on 127.0.0.1 and open it in the browser.
    ///
    /// The page reads a local file or a URL (?url=…) in the browser, header only: nothing is
    /// uploaded. See docs/web.md.
    Web(WebArgs),
    /// Edit a GGUF file's metadata and tensor names; tensor data is copied unchanged (or not
    /// touched at all with --in-place).
    ///
    /// Edits apply in the order given. Nothing is written when any edit is invalid. The output
    /// is re-opened and checked before the command reports success.
    #[command(after_help = EDIT_HELP)]
    Edit(EditArgs),
    /// Convert a model between GGUF and .llmw (the output is the other format), or export
    /// it as safetensors (OUT ending in .safetensors, or --to safetensors).
    ///
    /// Metadata the output format cannot hold is an error listing every such key, unless
    /// --drop-unsupported. See docs/writer.md for the type mapping and docs/edit.md for
    /// safetensors (dtypes, rounding, --names hf).
    Convert(ConvertArgs),
    /// Write the seeded toy model as DIR/toy.gguf and DIR/toy.llmw (the same model in both
    /// formats).
    MakeToy(MakeToyArgs),
    /// Split a GGUF file into a set of shards, as llama.cpp's gguf-split does
    /// (`<stem>-00001-of-0000N.gguf` …).
    ///
    /// Shard 1 holds all the metadata; every shard gets split.no, split.count and
    /// split.tensors.count. Tensor data is copied, never held in memory. See docs/split.md.
    Split(SplitArgs),
    /// Merge a split set into one GGUF file (the split keys removed: merging what `split`
    /// wrote gives the original file back byte for byte).
    Merge(MergeArgs),
    /// Compare two models: metadata (typed), the tensor table, and tensor data (by hash).
    ///
    /// Arrays are summarised by their length and the first differing indices, never printed
    /// whole. Exit code 0 when the models are equal, 1 when they differ, 2 when a file cannot
    /// be read. `--diffable FILE` prints one file as stable text for `diff -u` instead.
    Diff(DiffArgs),
    /// The memory llama.cpp would allocate for a model and a context: weights per device,
    /// KV cache, recurrent state, output and compute buffers (from the header alone).
    ///
    /// Flags as llama-server spells them (-c, -b, -ub, -np, -ctk, -ctv, -fa, -ngl). Exit
    /// code 2 when llama.cpp would refuse the context or the architecture is not modelled.
    Fit(FitArgs),
    /// Chat templates: show them, render them exactly as transformers does, lint and audit
    /// them (see docs/templates.md).
    Template(TemplateArgs),
}

impl Command {
    /// Copies each reading command's `--shard-only` into its parsing options, so that the
    /// commands' `parse.settings()` carry it.
    pub fn apply_shard_only(&mut self) {
        let (parse, shard_only) = match self {
            Command::Inspect(a) => (&mut a.parse, a.shard_only),
            Command::Validate(a) => (&mut a.parse, a.shard_only),
            Command::Tensors(a) => (&mut a.parse, a.shard_only),
            Command::Read(a) => (&mut a.parse, a.shard_only),
            Command::Verify(a) => (&mut a.parse, a.shard_only),
            Command::Diff(a) => (&mut a.parse, a.shard_only),
            _ => return,
        };
        parse.shard_only = shard_only;
    }
}

/// The help of `--shard-only` (one text for every reading command).
const SHARD_ONLY: &str = "Read a shard of a split set as the single GGUF file it is, without \
    opening the other shards (which may be missing): its own metadata and tensors only";

/// Extra help for `edit`: the value syntax.
const EDIT_HELP: &str = "\
Values (TYPE: u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool str):
  --set 'general.name=str:My model'             str: the rest, verbatim (=, : and , too)
  --set llama.rope.freq_base=f32:5e5            floats: 0.5, 1e-5, nan, inf
  --set tokenizer.ggml.add_bos_token=bool:true  bools: true, false, 1, 0
  --set-array 'general.tags=str:a\\,b,c'         split on ','; '\\,' is a comma, '\\\\' a backslash
  --set-file tokenizer.chat_template=t.jinja    a string from a UTF-8 file
  --delete general.description
  --rename-tensor output.weight=lm_head.weight
An interrupted --in-place edit leaves a header backup (.FILE.header-backup); `sipllm edit
--recover FILE` restores the header from it. A killed -o write leaves a hidden
.OUT.PID-N.tmp beside OUT; the next write of OUT removes it. Documentation:
https://github.com/sipllm/sipllm-gguf/blob/main/docs/writer.md";

/// When to color output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Color when writing to a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always color.
    Always,
    /// Never color.
    Never,
}

/// A validation profile, as the command line spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ProfileArg {
    /// The GGUF spec plus safety rules (the default).
    #[default]
    Strict,
    /// Exactly what llama.cpp's loader accepts, under its own size caps (1 GiB strings,
    /// 2^30-element arrays): "will llama.cpp load this file?".
    LlamaCpp,
    /// Read whatever can be read safely, turning tolerable errors into warnings.
    Lenient,
}

impl From<ProfileArg> for Profile {
    fn from(p: ProfileArg) -> Profile {
        match p {
            ProfileArg::Strict => Profile::Strict,
            ProfileArg::LlamaCpp => Profile::LlamaCpp,
            ProfileArg::Lenient => Profile::Lenient,
        }
    }
}

/// How files are parsed.
#[derive(Debug, Clone, Copy, Args)]
pub struct ParseArgs {
    /// Validation profile for GGUF files (.llmw files have one fixed, strict rule set).
    #[arg(long, value_enum, default_value_t = ProfileArg::Strict)]
    pub profile: ProfileArg,

    /// Also read GGUF version 1 files (2023, obsolete; llama.cpp rejects them).
    #[arg(long)]
    pub allow_v1: bool,

    /// The command's `--shard-only` ([`Command::apply_shard_only`]); not an option of its
    /// own, since writing commands (`split`, `merge`) always read the whole set.
    #[arg(skip)]
    pub shard_only: bool,
}

impl ParseArgs {
    /// The settings for `open_file`.
    pub fn settings(&self) -> OpenSettings {
        OpenSettings {
            profile: self.profile.into(),
            allow_v1: self.allow_v1,
            shard_only: self.shard_only,
        }
    }
}

/// `sipllm inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The model file (GGUF or .llmw): a path or URL (http://, https://, hf://; s3:// with
    /// the object-store feature). Default: the bundled sample.
    pub file: Option<PathBuf>,

    /// Print JSON (schema in docs/cli.md) instead of text.
    #[arg(long)]
    pub json: bool,

    /// Show every array element and whole strings instead of abbreviating them.
    #[arg(long)]
    pub full: bool,

    /// Leave out the tensor table.
    #[arg(long)]
    pub no_tensors: bool,

    /// With --json: leave out array elements, keeping each array's type, count and the
    /// sha256 of its stored bytes (`payload_sha256`).
    #[arg(long, requires = "json", conflicts_with = "array_limit")]
    pub no_arrays: bool,

    /// With --json: write at most N elements of each array (nested arrays too), with its
    /// type, count, `payload_sha256` and `truncated`.
    #[arg(long, value_name = "N", requires = "json")]
    pub array_limit: Option<u64>,

    /// Only show metadata keys and tensor names matching this glob (`*`, `?`, `[a-z]`),
    /// e.g. 'tokenizer.*' or 'blk.0.*'.
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,

    /// Print the value of this one metadata key alone, escaped (strings quoted, arrays
    /// whole), e.g. --key general.name.
    #[arg(long, value_name = "KEY", conflicts_with_all = ["json", "filter", "no_tensors"])]
    pub key: Option<String>,

    /// With --key: the value exactly as stored and nothing added (no quotes, no newline): a
    /// string's bytes, e.g. `--key tokenizer.chat_template --raw > template.jinja`, or a
    /// number's text. Not for arrays. On a terminal, control characters are still escaped.
    #[arg(long, requires = "key")]
    pub raw: bool,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The files to check, each a path or URL (http://, https://, hf://; s3:// with the
    /// object-store feature).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Treat warnings as errors (exit code 1 when any file has a warning).
    #[arg(long)]
    pub deny_warnings: bool,

    /// Also check the model as llama.cpp's loader does (architecture, hyperparameter keys,
    /// every tensor's presence and shape, the tensor count): exit 0 only if llama.cpp 0c1e570
    /// would load it. The container is checked first, under the chosen profile.
    #[arg(long)]
    pub model: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// How `validate` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Diagnostics with a hex view of the offending bytes.
    Human,
    /// One JSON object per finding, one per line (file, severity, code, offset, length, path,
    /// message, help).
    Json,
}

/// `sipllm tensors`.
#[derive(Debug, Args)]
pub struct TensorsArgs {
    /// The model file: a path or URL (http://, https://, hf://; s3:// with the object-store
    /// feature).
    pub file: PathBuf,

    /// Only tensors whose name matches this glob (`*`, `?`, `[a-z]`).
    #[arg(long, value_name = "GLOB")]
    pub filter: Option<String>,

    /// Print a JSON array of tensor records (as in `inspect --json`).
    #[arg(long)]
    pub json: bool,

    /// Read every listed tensor's values and print min, max, mean, standard deviation and
    /// NaN/Inf counts (streaming; a progress bar on a terminal; with --json, a JSON array
    /// of one record per tensor).
    #[arg(long)]
    pub stats: bool,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The model file: a path or URL (http://, https://, hf://; s3:// with the object-store
    /// feature).
    pub file: PathBuf,

    /// The tensor's name.
    pub tensor: String,

    /// Write to this file instead of standard output (`-`: standard output).
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,

    /// Only these bytes of the tensor: START..END (END exclusive; either may be left out;
    /// decimal or 0x-hex), relative to the tensor's first byte. With `--as`, element indices
    /// (row-major) instead.
    #[arg(long, value_name = "START..END")]
    pub range: Option<String>,

    /// Write the tensor's values (dequantized, as gguf-py computes them) instead of its
    /// stored bytes.
    #[arg(long = "as", value_enum, value_name = "TYPE")]
    pub as_type: Option<ValueType>,

    /// Layout of the values written with `--as`: `raw` (little-endian, no header) or `npy`
    /// (numpy's format, with the row-major shape).
    #[arg(long, value_enum, requires = "as_type", default_value_t = ValueFormat::Raw)]
    pub format: ValueFormat,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// Element types `sipllm read --as` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValueType {
    /// 32-bit IEEE floats.
    F32,
}

/// Layouts of `sipllm read --as` output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ValueFormat {
    /// The values alone, little-endian.
    #[default]
    Raw,
    /// A `.npy` file (format 1.0): loadable with `numpy.load`, shaped as the tensor.
    Npy,
}

/// `sipllm verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The model file: a path or URL (http://, https://, hf://; s3:// with the object-store
    /// feature).
    pub file: PathBuf,

    /// Hash functions, comma-separated or repeated (default sha256; with --check, what the
    /// manifest holds: guessed from the digit count of a sipllm manifest, the strongest one of
    /// a gguf-hash manifest).
    #[arg(long, value_delimiter = ',', value_parser = hash_kinds())]
    pub hash: Vec<HashKind>,

    /// Write a manifest (`-`: standard output): per tensor `<hex hash>  <byte size>  <name>`,
    /// or with --manifest-format gguf-hash what llama.cpp's llama-gguf-hash prints.
    #[arg(long, value_name = "OUT", conflicts_with = "check")]
    pub manifest: Option<PathBuf>,

    /// The format --manifest writes (--check reads either, recognised by its content).
    #[arg(long, value_enum, default_value_t = ManifestFormat::Sipllm, requires = "manifest")]
    pub manifest_format: ManifestFormat,

    /// Compare against a manifest (sipllm's or llama-gguf-hash's) and list every difference
    /// (exit code 1 on any).
    #[arg(long, value_name = "MANIFEST")]
    pub check: Option<PathBuf>,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `verify --hash`'s values: the library's hash functions ([`HashKind`]) by llama.cpp's
/// llama-gguf-hash's names, in the order it prints them, each with what it is.
fn hash_kinds() -> impl clap::builder::TypedValueParser<Value = HashKind> {
    let help = |k: HashKind| match k {
        HashKind::Xxh64 => {
            "XXH64, seed 0 (16 hex digits): llama-gguf-hash's default; fast, not cryptographic"
        }
        HashKind::Xxh3 => "XXH3-64 (16 hex digits): fast, not cryptographic",
        HashKind::Sha1 => "SHA-1 (40 hex digits)",
        HashKind::Sha256 => {
            "SHA-256 (64 hex digits), as `sha256sum` and the corpus `.tensors.sha256` files"
        }
        HashKind::Uuid => {
            "The whole model's UUIDv5 (llama.cpp's namespace over all tensor data): no \
             per-tensor hash, so only with --manifest-format gguf-hash or without --manifest"
        }
    };
    let values = HashKind::ALL.map(|k| PossibleValue::new(k.name()).help(help(k)));
    // Only the possible values pass the parser, and each names a kind.
    PossibleValuesParser::new(values)
        .map(|name| HashKind::from_name(&name).unwrap_or(HashKind::Sha256))
}

/// Manifest formats `verify --manifest` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ManifestFormat {
    /// `<hex hash>  <byte size>  <tensor name>` per tensor (one hash function).
    #[default]
    Sipllm,
    /// llama.cpp's llama-gguf-hash output: `<hash name padded to 8>  <hex>  FILE:TENSOR` per
    /// tensor and hash, then `<hash name>  <hex>  FILE` per hash for the whole model.
    GgufHash,
}

/// `sipllm edit`.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// The GGUF file to edit: a path or URL (http://, https://, hf://; s3:// with the
    /// object-store feature); a URL only with -o (it is fetched once into a temporary file).
    pub file: PathBuf,

    /// Write the edited model to OUT (replaced atomically if it exists; may be FILE itself).
    #[arg(
        short,
        long,
        value_name = "OUT",
        required_unless_present_any = ["in_place", "recover"],
        conflicts_with_all = ["in_place", "recover"]
    )]
    pub output: Option<PathBuf>,

    /// Rewrite only FILE's header, in place: works when the new header fits in the space
    /// before the data section (the data offset does not change).
    #[arg(long)]
    pub in_place: bool,

    /// Restore FILE's header from the backup an interrupted --in-place edit left, then
    /// remove the backup.
    #[arg(
        long,
        conflicts_with_all = ["in_place", "set", "set_array", "set_file", "delete", "rename_tensor"]
    )]
    pub recover: bool,

    /// Set KEY to a value: KEY=TYPE:VALUE (replaces the value in place, or appends the key).
    #[arg(long, value_name = "KEY=TYPE:VALUE")]
    pub set: Vec<String>,

    /// Set KEY to an array: KEY=TYPE:V1,V2,... ('\,' is a literal comma).
    #[arg(long, value_name = "KEY=TYPE:V1,V2,...")]
    pub set_array: Vec<String>,

    /// Set KEY to a string read from a UTF-8 file: KEY=PATH (e.g. a chat template).
    #[arg(long, value_name = "KEY=PATH")]
    pub set_file: Vec<String>,

    /// Remove KEY (an error if FILE has no such key).
    #[arg(long, value_name = "KEY")]
    pub delete: Vec<String>,

    /// Rename a tensor: OLD=NEW (an error if OLD is missing or NEW exists).
    #[arg(long, value_name = "OLD=NEW")]
    pub rename_tensor: Vec<String>,
}

/// `sipllm convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The model to convert: GGUF or .llmw (recognised by its content), a path or URL
    /// (http://, https://, hf://; s3:// with the object-store feature).
    pub input: PathBuf,

    /// The output file, in the other format (replaced atomically if it exists).
    pub output: PathBuf,

    /// Leave out the metadata the output format cannot hold (listed on standard error)
    /// instead of refusing.
    #[arg(long)]
    pub drop_unsupported: bool,

    /// The output format (default: the other of GGUF/.llmw, or safetensors when OUT ends in
    /// .safetensors). A safetensors export also reads split sets and URLs.
    #[arg(long, value_enum)]
    pub to: Option<ConvertTo>,

    /// safetensors: the tensors' element type (f16/bf16 round to nearest even from the
    /// exact f32 values; keep writes F32/F16/BF16 as stored and dequantizes the rest to f32).
    #[arg(long, value_enum, default_value_t = ExportDtype::F32)]
    pub dtype: ExportDtype,

    /// safetensors: the tensors' names: the GGUF ones, or transformers' (hf: llama,
    /// mistral, qwen2, qwen3, phi3, gemma2, gemma3; writes config.json beside OUT).
    #[arg(long, value_enum, default_value_t = ExportNames::Gguf)]
    pub names: ExportNames,
}

/// `convert --to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertTo {
    /// GGUF.
    Gguf,
    /// The engine's .llmw.
    Llmw,
    /// safetensors (Hugging Face).
    Safetensors,
}

/// `convert --dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportDtype {
    /// 32-bit floats: gguf-py's dequantization, bit for bit.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// F32/F16/BF16 as stored, the rest as f32.
    Keep,
}

/// `convert --names`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportNames {
    /// The GGUF names.
    Gguf,
    /// transformers' parameter names (and config.json).
    Hf,
}

/// `sipllm make-toy`.
#[derive(Debug, Args)]
pub struct MakeToyArgs {
    /// The seed of the weights (the same seed always gives the same bytes).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// The directory to write toy.gguf and toy.llmw into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// `sipllm split`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("limit").required(true).args(["max_tensors", "max_size"])))]
pub struct SplitArgs {
    /// The GGUF file to split (a local path: download a URL first).
    pub file: PathBuf,

    /// At most N tensors per shard.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tensors: Option<u64>,

    /// At most SIZE bytes of tensor data per shard, each tensor counted padded to 32 bytes
    /// (headers not counted): bytes, or with a unit K, M, G, T (powers of 1000, as
    /// gguf-split) or KiB, MiB, GiB, TiB.
    #[arg(long, value_name = "SIZE", value_parser = crate::values::parse_size)]
    pub max_size: Option<u64>,

    /// Write the shards into DIR (default: FILE's directory).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,

    /// Make shard 1 metadata-only (no tensors), as gguf-split's flag of the same name.
    #[arg(long)]
    pub no_tensor_first_split: bool,

    /// Print the plan (each shard's name, tensors and data size) and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// A shard of the set (normally the first, `<prefix>-00001-of-0000N.gguf`); the others are
    /// found by name.
    pub shard: PathBuf,

    /// The merged file (replaced atomically if it exists; must not be one of the shards).
    pub out: PathBuf,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The first model (GGUF, .llmw, a shard of a split set): a path or URL (http://,
    /// https://, hf://; s3:// with the object-store feature).
    pub a: PathBuf,

    /// The second model, a path or URL (not with --diffable).
    #[arg(required_unless_present = "diffable", conflicts_with = "diffable")]
    pub b: Option<PathBuf>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,

    /// Compare only the headers (metadata and tensor table): no tensor data is read.
    #[arg(long)]
    pub metadata_only: bool,

    /// Print A alone as stable text for `diff -u` (one line per key, array element and tensor,
    /// no offsets; tensor data as hashes unless --metadata-only).
    #[arg(long)]
    pub diffable: bool,

    /// How many differing indices to list per array.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_indices: usize,

    /// `--shard-only`: read one shard of a split set alone.
    #[arg(long, help = SHARD_ONLY)]
    pub shard_only: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// How `diff` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Lines for people: `~` changed, `-` only in A, `+` only in B.
    Text,
    /// One JSON document (schema in docs/cli.md).
    Json,
}

/// `sipllm completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The defaults `sipllm fit` starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FitProfile {
    /// llama-server's: the training context, 4 slots sharing a unified cache, swa_full off.
    #[default]
    Server,
    /// libllama's `llama_context_default_params()`: n_ctx 512, one sequence, swa_full on.
    Libllama,
}

/// `-fa on|off|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlashAttnArg {
    /// Flash attention on.
    On,
    /// Off (a quantized V cache is then refused).
    Off,
    /// On where the device supports it (the CPU does).
    Auto,
}

/// `sipllm fit`.
#[derive(Debug, Args)]
pub struct FitArgs {
    /// The model file: a path or URL (http://, https://, hf://; s3:// with the object-store
    /// feature); only the header is read.
    pub file: PathBuf,

    /// The defaults the other flags change.
    #[arg(long, value_enum, default_value_t = FitProfile::Server)]
    pub profile: FitProfile,

    /// -c: context size (0: the model's training context).
    #[arg(short = 'c', long = "ctx-size", value_name = "N")]
    pub ctx_size: Option<u32>,

    /// -b: logical batch size.
    #[arg(short = 'b', long = "batch-size", value_name = "N")]
    pub batch_size: Option<u32>,

    /// -ub: physical batch size.
    #[arg(long = "ubatch-size", value_name = "N")]
    pub ubatch_size: Option<u32>,

    /// -np: parallel sequences (slots).
    #[arg(long = "parallel", value_name = "N")]
    pub parallel: Option<u32>,

    /// -ctk: K cache type (f16, q8_0, q4_0, …).
    #[arg(long = "cache-type-k", value_name = "TYPE")]
    pub cache_type_k: Option<String>,

    /// -ctv: V cache type.
    #[arg(long = "cache-type-v", value_name = "TYPE")]
    pub cache_type_v: Option<String>,

    /// -fa: flash attention.
    #[arg(long = "flash-attn", value_enum, value_name = "on|off|auto")]
    pub flash_attn: Option<FlashAttnArg>,

    /// One KV cache shared by every sequence.
    #[arg(long = "kv-unified", overrides_with = "no_kv_unified")]
    pub kv_unified: bool,

    /// One KV stream per sequence.
    #[arg(long = "no-kv-unified")]
    pub no_kv_unified: bool,

    /// Full-size caches for sliding-window layers.
    #[arg(long = "swa-full", overrides_with = "no_swa_full")]
    pub swa_full: bool,

    /// Window-sized caches for sliding-window layers.
    #[arg(long = "no-swa-full")]
    pub no_swa_full: bool,

    /// -ngl: layers on the GPU (counting the output layer), or `all`.
    #[arg(long = "n-gpu-layers", value_name = "N|all")]
    pub n_gpu_layers: Option<String>,

    /// Answer the largest context whose total fits in SIZE (e.g. 16GiB, 8G).
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<String>,

    /// Print JSON (schema in docs/cli.md) instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `sipllm template`.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// The subcommand.
    #[command(subcommand)]
    pub command: TemplateCommand,
}

/// The `template` subcommands.
#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// Write a model's chat template exactly as stored to standard output; list every
    /// template in the file with its size and sha256 on standard error.
    Show(TemplateShowArgs),
    /// Render a conversation through a template: exactly the prompt, nothing added.
    ///
    /// From a model, bos_token and eos_token are its vocabulary's BOS/EOS tokens. With
    /// --batch, one JSON line in per case and one out: {"ok": "…"} or {"err": {…}}.
    Render(TemplateRenderArgs),
    /// Render the built-in conversation shapes and report what fails or renders oddly.
    ///
    /// Exit code 0 when nothing is reported, 1 when something is, 2 on an error.
    Lint(TemplateLintArgs),
    /// Static findings: dunder and attribute chains, include/import/extends, code-execution
    /// names, unbounded loops and recursion.
    ///
    /// Exit code 0 clean, 1 findings, 2 error.
    Audit(TemplateAuditArgs),
}

/// Where a template comes from: a model's metadata or a file.
#[derive(Debug, Clone, Args)]
pub struct TemplateFrom {
    /// The model (GGUF, .llmw, a shard of a split set): a path or URL (http://, https://,
    /// hf://; s3:// with the object-store feature). One of MODEL and
    /// --template is needed (`render --batch` needs neither when every case names its
    /// template).
    #[arg(conflicts_with = "template")]
    pub model: Option<PathBuf>,

    /// A template file instead of a model's.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,

    /// The model's template of this name (`tokenizer.chat_template.NAME`) instead of the
    /// default one.
    #[arg(long, value_name = "NAME", conflicts_with = "template")]
    pub name: Option<String>,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm template show`.
#[derive(Debug, Args)]
pub struct TemplateShowArgs {
    /// The model: a path or URL (http://, https://, hf://; s3:// with the object-store
    /// feature).
    pub model: PathBuf,

    /// The template of this name instead of the default one.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Print one JSON document: every template's name, key, size, sha256 and text.
    #[arg(long)]
    pub json: bool,

    /// Parsing options.
    #[command(flatten)]
    pub parse: ParseArgs,
}

/// `sipllm template render`.
#[derive(Debug, Args)]
pub struct TemplateRenderArgs {
    /// The template.
    #[command(flatten)]
    pub from: TemplateFrom,

    /// The conversation: a JSON list of messages.
    #[arg(long, value_name = "FILE.json", required_unless_present = "batch")]
    pub messages: Option<PathBuf>,

    /// The tool definitions: a JSON list.
    #[arg(long, value_name = "FILE.json")]
    pub tools: Option<PathBuf>,

    /// Append the header of the assistant's next turn.
    #[arg(long)]
    pub add_generation_prompt: bool,

    /// The bos_token string (default: the model's BOS token, else `<s>`).
    #[arg(long, value_name = "S")]
    pub bos_token: Option<String>,

    /// The eos_token string (default: the model's EOS token, else `</s>`).
    #[arg(long, value_name = "S")]
    pub eos_token: Option<String>,

    /// The clock strftime_now reads, YYYY-MM-DDTHH:MM:SS (default: now, as UTC).
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,

    /// A further variable, its value JSON (`--var enable_thinking=false`); repeatable.
    #[arg(long = "var", value_name = "KEY=JSON")]
    pub vars: Vec<String>,

    /// Error where Python's Jinja2 raises (iterating None, tojson of undefined, ...)
    /// instead of rendering leniently.
    #[arg(long)]
    pub strict: bool,

    /// Render every case of a JSON-lines file (`-`: standard input) on all cores.
    #[arg(long, value_name = "CASES.jsonl", conflicts_with_all = ["messages", "tools"])]
    pub batch: Option<PathBuf>,
}

/// `sipllm template lint`.
#[derive(Debug, Args)]
pub struct TemplateLintArgs {
    /// The template.
    #[command(flatten)]
    pub from: TemplateFrom,

    /// Render strictly: error where Python's Jinja2 raises.
    #[arg(long)]
    pub strict: bool,
}

/// `sipllm template audit`.
#[derive(Debug, Args)]
pub struct TemplateAuditArgs {
    /// The template.
    #[command(flatten)]
    pub from: TemplateFrom,

    /// Output format.
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    pub format: AuditFormat,

    /// The expected sha256 of the template (hex): a different one is a finding (drift
    /// between quantizations of one model).
    #[arg(long, value_name = "HEX")]
    pub expect_sha256: Option<String>,
}

/// How `template audit` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    /// Lines for people.
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0, for code-scanning tools.
    Sarif,
}

/// `sipllm web`.
#[derive(Debug, Args)]
pub struct WebArgs {
    /// The port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8421)]
    pub port: u16,

    /// Do not open the browser.
    #[arg(long)]
    pub no_open: bool,
}
