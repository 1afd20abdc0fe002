//! The page's files, built into whatever serves them (`sipllm web`): the committed static
//! files and the committed wasm build (`just web-build`; CI checks it matches the source).

/// One file of the page.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// Its path under the page's root, with the leading `/`.
    pub path: &'static str,
    /// Its `Content-Type` (the wasm's must be `application/wasm` for streaming compilation).
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page; `/index.html` is also the root's.
pub const ASSETS: &[Asset] = &[
    Asset {
        path: "/index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../static/index.html"),
    },
    Asset { path: "/app.js", content_type: JS, bytes: include_bytes!("../static/app.js") },
    Asset { path: "/worker.js", content_type: JS, bytes: include_bytes!("../static/worker.js") },
    Asset {
        path: "/pkg/sipllm_web.js",
        content_type: JS,
        bytes: include_bytes!("../static/pkg/sipllm_web.js"),
    },
    Asset {
        path: "/pkg/sipllm_web_bg.wasm",
        content_type: "application/wasm",
        bytes: include_bytes!("../static/pkg/sipllm_web_bg.wasm"),
    },
];

/// The file served at `path` (`/` is `/index.html`); any query string is ignored.
pub fn asset(path: &str) -> Option<&'static Asset> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let path = if path == "/" { "/index.html" } else { path };
    ASSETS.iter().find(|a| a.path == path)
}
