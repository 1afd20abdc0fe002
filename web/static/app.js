// The page: hands a File or a URL to the worker (worker.js, which runs the wasm) and renders
// the report it sends back. Every fact comes from the wasm's JSON (`sipllm inspect --json`'s
// document and `validate`'s findings); this file only lays them out. Text from the file goes
// into the page through textContent, never as HTML.

// Array elements shown per metadata value (the JSON's `--array-limit`).
const ARRAY_LIMIT = 8;
// Strings longer than this are folded.
const FOLD_CHARS = 160;

const $ = (id) => document.getElementById(id);
const worker = new Worker(new URL("worker.js", import.meta.url), { type: "module" });

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function group(n) {
  return typeof n === "number" ? n.toLocaleString("en-US") : String(n);
}

function humanBytes(n) {
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  if (n < 1024) return `${n} B`;
  let v = n / 1024;
  let u = 0;
  while (v >= 1024 && u + 1 < units.length) { v /= 1024; u += 1; }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[u]}`;
}

function setStatus(text, error) {
  const s = $("status");
  s.textContent = text;
  s.className = error ? "error" : "";
}

function pairs(table, rows) {
  table.replaceChildren();
  for (const [label, value, id] of rows) {
    if (value === null || value === undefined) continue;
    const tr = el("tr");
    tr.append(el("th", label));
    const td = el("td", value);
    if (id) td.id = id;
    tr.append(td);
    table.append(tr);
  }
}

function grid(table, head, rows) {
  table.replaceChildren();
  const tr = el("tr");
  for (const [h, cls] of head) tr.append(el("th", h, cls));
  table.append(tr);
  for (const row of rows) {
    const r = el("tr");
    row.forEach((cell, i) => {
      const cls = head[i][1];
      if (cell instanceof Node) { const td = el("td", undefined, cls); td.append(cell); r.append(td); }
      else r.append(el("td", cell, cls));
    });
    table.append(r);
  }
}

// A scalar as text: strings quoted, non-UTF-8 bytes as hex.
function scalar(v) {
  if (v !== null && typeof v === "object" && "bytes_hex" in v) return `bytes ${v.bytes_hex}`;
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

// A metadata value: arrays previewed (`[128256 × STRING] "!", "\"", …`), long strings folded.
function valueNode(entry) {
  if (entry.type === "ARRAY") {
    const shown = (entry.value || []).map((x) => (Array.isArray(x) ? `[${x.map(scalar).join(", ")}]` : scalar(x)));
    const more = entry.truncated ? ", …" : "";
    return el("span", `[${group(entry.len)} × ${entry.array_type}] ${shown.join(", ")}${more}`);
  }
  const text = scalar(entry.value);
  if (typeof entry.value === "string" && entry.value.length > FOLD_CHARS) {
    const d = el("details");
    d.append(el("summary", `${JSON.stringify(entry.value.slice(0, FOLD_CHARS))}… (${group(entry.value.length)} characters)`));
    d.append(el("pre", entry.value));
    return d;
  }
  return el("span", text);
}

const HYPER = [
  ["context length", "context_length"], ["embedding length", "embedding_length"],
  ["feed-forward length", "feed_forward_length"], ["blocks", "block_count"],
  ["attention heads", "head_count"], ["KV heads", "head_count_kv"], ["key length", "key_length"],
  ["value length", "value_length"], ["rope dimensions", "rope_dimension_count"],
  ["rope frequency base", "rope_freq_base"], ["rope scaling", "rope_scaling_type"],
  ["rope scaling factor", "rope_scaling_factor"],
  ["rope original context", "rope_scaling_original_context_length"],
  ["RMS norm epsilon", "layer_norm_rms_epsilon"], ["norm epsilon", "layer_norm_epsilon"],
  ["sliding window", "sliding_window"], ["sliding-window layers", "sliding_window_pattern"],
  ["experts", "expert_count"], ["experts used", "expert_used_count"],
  ["vocabulary size", "vocab_size"], ["tokenizer", "tokenizer"],
];

function hyperText(v) {
  if (Array.isArray(v)) return `per layer: ${v.join(", ")}`;
  if (v && typeof v === "object") return JSON.stringify(v);
  return typeof v === "number" ? String(v) : v;
}

// The CLI's --filter: a glob (`*`, `?`) over the whole name, or a substring without one.
function matcher(text) {
  const t = text.trim();
  if (!t) return () => true;
  if (!/[*?]/.test(t)) return (name) => name.includes(t);
  const re = new RegExp(`^${t.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
  return (name) => re.test(name);
}

function tensorName(n) {
  return typeof n === "string" ? n : scalar(n);
}

function renderTensors(doc) {
  const tensors = doc.tensors || [];
  const keep = matcher($("tensor-filter").value);
  const rows = tensors
    .map((t, i) => [i, t])
    .filter(([, t]) => keep(tensorName(t.name)))
    .map(([i, t]) => [i, tensorName(t.name), t.ggml_type, `[${t.shape.join(", ")}]`,
      `0x${t.abs_offset.toString(16)}`, t.nbytes === null ? "unknown" : group(t.nbytes)]);
  $("tensors-count").textContent = rows.length === tensors.length
    ? `(${tensors.length})` : `(${rows.length} of ${tensors.length})`;
  grid($("tensors"), [["#", "num"], ["name", "mono"], ["type"], ["shape"], ["offset", "num mono"], ["bytes", "num"]], rows);
}

function render(result) {
  const r = JSON.parse(result.report);
  window.sipllmReport = r;
  const doc = r.inspect;
  const v = r.validate;
  const read = `${group(result.bytes)} bytes in ${result.reads} reads of ${group(result.size)}`;
  $("report").hidden = false;

  const verdict = $("verdict");
  const warnings = v.findings.filter((f) => f.severity === "warning").length;
  if (v.valid) {
    verdict.textContent = `✓ valid${warnings ? `, ${warnings} warning${warnings === 1 ? "" : "s"}` : ""} (${v.read_as})`;
    verdict.className = "ok";
  } else {
    verdict.textContent = "✗ invalid";
    verdict.className = "bad";
  }
  const findings = $("findings");
  findings.replaceChildren();
  for (const f of v.findings) {
    const text = f.rendered || `${f.severity}[${f.code}] at ${f.offset ?? "-"}: ${f.path ? `${f.path}: ` : ""}${f.message}\n  help: ${f.help}`;
    const pre = el("pre", text);
    pre.dataset.code = f.code;
    findings.append(pre);
  }

  for (const id of ["summary", "hyperparameters", "weights", "types", "metadata", "tensors"]) $(id).replaceChildren();
  $("metadata-count").textContent = "";
  $("tensors-count").textContent = "";
  if (!doc) {
    pairs($("summary"), [["file", r.name], ["read", read, "read"]]);
    setStatus(`${r.name}: cannot be read as a model (below)`, true);
    return;
  }
  const s = doc.summary;
  const q = s.quantization;
  const fileType = q.label ? `${q.label}${q.guessed ? " (guessed from the tensor types)" : ` (general.file_type ${s.file_type})`}` : null;
  pairs($("summary"), [
    ["file", r.name],
    ["format", `${doc.format.toUpperCase()} v${doc.version}, ${doc.endian}-endian`],
    ["file size", `${group(doc.file_size)} bytes (${humanBytes(doc.file_size)})`, "file-size"],
    ["alignment", doc.alignment],
    ["data offset", `${group(doc.data_offset)} (0x${doc.data_offset.toString(16)})`, "data-offset"],
    ["metadata", `${group(doc.kv_count)} key/value pairs`],
    ["tensors", group(doc.tensor_count), "tensor-count"],
    ["architecture", s.architecture, "architecture"],
    ["name", s.name],
    ["file type", fileType],
    ["read", `${read}, in ${result.ms.toFixed(1)} ms`, "read"],
  ]);
  const h = s.hyperparameters;
  const hrows = HYPER.filter(([, k]) => h[k] !== null && h[k] !== undefined)
    .map(([label, k]) => (k === "vocab_size" ? [label, group(h[k]), "vocab-size"] : [label, hyperText(h[k])]));
  for (const e of s.config_errors) hrows.push(["note", `${e.message} (${e.code})`]);
  pairs($("hyperparameters"), hrows);
  pairs($("weights"), [
    ["parameters", group(s.parameters), "parameters"],
    ["bytes", s.bytes === null ? "unknown" : `${group(s.bytes)} (${humanBytes(s.bytes)})`],
    ["bits/weight", s.bits_per_weight === null ? "-" : s.bits_per_weight.toFixed(2)],
  ]);
  grid($("types"), [["type"], ["tensors", "num"], ["parameters", "num"], ["bytes", "num"], ["bits/weight", "num"]],
    s.types.map((t) => [t.ggml_type, group(t.tensors), group(t.parameters),
      t.bytes === null ? "unknown" : group(t.bytes), t.bits_per_weight === null ? "-" : t.bits_per_weight.toFixed(2)]));
  $("metadata-count").textContent = `(${doc.metadata.length})`;
  grid($("metadata"), [["#", "num"], ["key", "mono"], ["type"], ["value", "mono"]],
    doc.metadata.map((e, i) => [i, tensorName(e.key), e.type, valueNode(e)]));
  renderTensors(doc);
  setStatus(`${r.name}: ${read}, in ${result.ms.toFixed(1)} ms`);
}

let pending = null;
worker.onmessage = (event) => {
  const result = event.data;
  window.sipllmResult = result;
  try {
    if (result.error) {
      $("report").hidden = true;
      setStatus(result.error, true);
    } else {
      render(result);
    }
  } catch (e) {
    setStatus(`could not show the report: ${e.message}`, true);
  }
  document.body.dataset.state = result.error ? "error" : "done";
  if (pending) pending();
};

function open(message) {
  document.body.dataset.state = "reading";
  setStatus("reading the header…");
  worker.postMessage({ ...message, arrayLimit: ARRAY_LIMIT });
}

$("file").addEventListener("change", (e) => {
  const f = e.target.files[0];
  if (f) open({ file: f });
});
$("tensor-filter").addEventListener("input", () => {
  if (window.sipllmReport && window.sipllmReport.inspect) renderTensors(window.sipllmReport.inspect);
});
const drop = $("drop");
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const f = e.dataTransfer.files[0];
  if (f) open({ file: f });
});

const url = new URLSearchParams(location.search).get("url");
if (url) {
  open({ url: new URL(url, location.href).href });
} else {
  document.body.dataset.state = "idle";
}
