// The page's reader: a module Web Worker that runs the wasm (pkg/sipllm_web.js) over a local
// File or a URL. The read side is synchronous, and only a worker can read byte ranges
// synchronously: FileReaderSync for a File (Blob.slice, so only the ranges asked for are
// read, never the whole file) and a synchronous XMLHttpRequest with a Range header for a URL.
// The wasm calls the global sipllmReadAt(offset, dst) for every read; this file counts them.

import init, { inspect } from "./pkg/sipllm_web.js";

const ready = init();

// The first block of a URL is fetched before the wasm runs (its Content-Range gives the size)
// and kept, so the wasm's first reads cost no second request.
const FIRST_BLOCK = 64 * 1024;

let read = null;
let counts = { reads: 0, bytes: 0, ms: 0 };

// Every read, timed: the report says how much of the open time was reading.
self.sipllmReadAt = (offset, dst) => {
  const start = performance.now();
  try {
    read(offset, dst);
  } finally {
    counts.ms += performance.now() - start;
  }
};

function fileReader(file) {
  const reader = new FileReaderSync();
  return (offset, dst) => {
    const buf = reader.readAsArrayBuffer(file.slice(offset, offset + dst.length));
    if (buf.byteLength !== dst.length) {
      throw new Error(`short read: ${buf.byteLength} of ${dst.length} bytes at ${offset}`);
    }
    counts.reads += 1;
    counts.bytes += buf.byteLength;
    dst.set(new Uint8Array(buf));
  };
}

// One ranged GET of bytes start..end (inclusive): the body and the object's total size.
function rangeGet(url, start, end) {
  const xhr = new XMLHttpRequest();
  xhr.open("GET", url, false);
  // Allowed for synchronous requests in a worker (not in a window).
  xhr.responseType = "arraybuffer";
  xhr.setRequestHeader("Range", `bytes=${start}-${end}`);
  try {
    xhr.send();
  } catch (e) {
    throw new Error(`${url}: the request failed (${e.message}); a URL on another site must allow ` +
      "this page by CORS (Access-Control-Allow-Origin, and Range in Access-Control-Allow-Headers)");
  }
  if (xhr.status !== 206) {
    throw new Error(`${url}: the server answered ${xhr.status} to a range request, not 206 ` +
      "Partial Content: it must serve byte ranges");
  }
  const range = xhr.getResponseHeader("Content-Range") || "";
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(range.trim());
  if (!m) {
    throw new Error(`${url}: no readable Content-Range in the answer ("${range}"); a server on ` +
      "another site must list it in Access-Control-Expose-Headers");
  }
  const buf = xhr.response;
  if (Number(m[1]) !== start || buf.byteLength !== Number(m[2]) - start + 1) {
    throw new Error(`${url}: asked for bytes ${start}-${end}, got ${range} (${buf.byteLength} bytes)`);
  }
  counts.reads += 1;
  counts.bytes += buf.byteLength;
  return { bytes: new Uint8Array(buf), total: Number(m[3]) };
}

function urlReader(url) {
  const first = rangeGet(url, 0, FIRST_BLOCK - 1);
  const reader = (offset, dst) => {
    const end = offset + dst.length;
    if (end <= first.bytes.length) {
      dst.set(first.bytes.subarray(offset, end));
      return;
    }
    dst.set(rangeGet(url, offset, end - 1).bytes);
  };
  return { reader, size: first.total };
}

self.onmessage = async (event) => {
  const { file, url, arrayLimit } = event.data;
  counts = { reads: 0, bytes: 0, ms: 0 };
  try {
    await ready;
    const start = performance.now();
    let name;
    let size;
    if (file) {
      read = fileReader(file);
      name = file.name;
      size = file.size;
    } else {
      const opened = urlReader(url);
      read = opened.reader;
      name = url;
      size = opened.size;
    }
    const report = inspect(name, size, arrayLimit);
    const ms = performance.now() - start;
    self.postMessage({ report, ms, size, reads: counts.reads, bytes: counts.bytes, readMs: counts.ms });
  } catch (e) {
    self.postMessage({ error: String(e && e.message ? e.message : e), reads: counts.reads, bytes: counts.bytes });
  } finally {
    read = null;
  }
};
