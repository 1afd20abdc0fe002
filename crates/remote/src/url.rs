//! The URL forms a remote model is named by, and the little URL arithmetic the source needs
//! (origins, redirect targets, shard siblings, redaction): no URL crate, because only
//! `scheme://authority/path?query` of `http`/`https` ever reaches the network.

use std::fmt;

use crate::error::{RemoteError, RemoteErrorKind};
pub use crate::redact::redact;

/// The public Hugging Face Hub, the endpoint `hf://` URLs resolve against unless
/// `HF_ENDPOINT` names another (as `huggingface_hub` does).
pub const DEFAULT_HF_ENDPOINT: &str = "https://huggingface.co";

/// The revision an `hf://` URL without `@REVISION` resolves to.
pub const DEFAULT_HF_REVISION: &str = "main";

/// The schemes this crate recognises, whether or not this build can open them.
pub const SCHEMES: [&str; 6] = ["http", "https", "hf", "s3", "gs", "az"];

/// True when `s` names a remote object (`http://`, `https://`, `hf://`, `s3://`, `gs://`,
/// `az://`) rather than a local path. A path that merely contains `://` further on is local.
pub fn is_remote(s: &str) -> bool {
    scheme_of(s).is_some()
}

fn scheme_of(s: &str) -> Option<&'static str> {
    let (scheme, _) = s.split_once("://")?;
    SCHEMES.into_iter().find(|k| k.eq_ignore_ascii_case(scheme))
}

/// A parsed `http://` or `https://` URL: what a request is sent to.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct HttpUrl {
    https: bool,
    /// `host` or `host:port`, lowercased host, as written otherwise (no user info).
    authority: String,
    /// From the first `/` on, query included; `/` when absent.
    path_and_query: String,
}

impl HttpUrl {
    /// Parses an absolute `http://` or `https://` URL. User info (`user:pass@`) is refused:
    /// credentials belong in `HF_TOKEN` or a header, never in a URL that errors print.
    pub fn parse(s: &str) -> Result<HttpUrl, RemoteError> {
        let bad = |why: &str| RemoteError::bad_url(s, why);
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("no scheme"))?;
        let https = if scheme.eq_ignore_ascii_case("https") {
            true
        } else if scheme.eq_ignore_ascii_case("http") {
            false
        } else {
            return Err(bad("only http:// and https:// are fetched directly"));
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(split);
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad(
                "credentials in the URL are refused (use HF_TOKEN for the Hub, or a signed URL)",
            ));
        }
        if authority.chars().any(|c| c.is_ascii_whitespace() || c.is_ascii_control()) {
            return Err(bad("white space or a control character in the host"));
        }
        // The fragment is never sent.
        let tail = tail.split('#').next().unwrap_or_default();
        let path_and_query = match tail.strip_prefix('?') {
            Some(q) => format!("/?{q}"),
            None if tail.is_empty() => "/".to_owned(),
            None => tail.to_owned(),
        };
        if path_and_query.chars().any(|c| c.is_ascii_whitespace() || c.is_ascii_control()) {
            return Err(bad("white space or a control character in the path (percent-encode it)"));
        }
        Ok(HttpUrl { https, authority: authority.to_ascii_lowercase(), path_and_query })
    }

    /// True for `https://`.
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The origin: scheme, host and port (the default port made explicit), which decides
    /// whether credentials may be sent.
    pub fn origin(&self) -> (bool, String, u16) {
        let default = if self.https { 443 } else { 80 };
        let (host, port) = match self.authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || self.authority.starts_with('[') => {
                match p.parse::<u16>() {
                    Ok(port) => (h.to_owned(), port),
                    Err(_) => (self.authority.clone(), default),
                }
            }
            _ => (self.authority.clone(), default),
        };
        (self.https, host, port)
    }

    /// The path without the query.
    pub fn path(&self) -> &str {
        self.path_and_query.split('?').next().unwrap_or("/")
    }

    /// Resolves a `Location` header against this URL: absolute, scheme-relative (`//host/p`),
    /// absolute-path (`/p`) or relative (`p`, against this path's directory).
    pub fn join(&self, location: &str) -> Result<HttpUrl, RemoteError> {
        let location = location.trim();
        if location.contains("://") {
            return HttpUrl::parse(location);
        }
        let scheme = if self.https { "https" } else { "http" };
        if let Some(rest) = location.strip_prefix("//") {
            return HttpUrl::parse(&format!("{scheme}://{rest}"));
        }
        let path = if location.starts_with('/') {
            location.to_owned()
        } else {
            let dir = self.path().rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/{location}")
        };
        HttpUrl::parse(&format!("{scheme}://{}{path}", self.authority))
    }

    /// The URL of the sibling named `file_name` (the last path segment replaced, the query
    /// dropped): how the other shards of a split set are found.
    pub fn with_file_name(&self, file_name: &str) -> HttpUrl {
        let dir = self.path().rsplit_once('/').map_or("", |(d, _)| d);
        HttpUrl {
            https: self.https,
            authority: self.authority.clone(),
            path_and_query: format!("{dir}/{file_name}"),
        }
    }

    /// The last path segment (percent-encoding kept).
    pub fn file_name(&self) -> &str {
        self.path().rsplit('/').next().unwrap_or_default()
    }

    /// The URL as sent.
    pub fn as_request_url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.authority, self.path_and_query)
    }

    /// The URL as shown: every query value replaced by `REDACTED` (signed URLs carry their
    /// credentials there: `X-Amz-Signature`, `sig`, `token`, …).
    pub fn redacted(&self) -> String {
        redact(&self.as_request_url())
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// A remote model's name, parsed: where to fetch it and, for the Hub, the token to send.
#[derive(Clone, PartialEq, Eq)]
pub enum RemoteUrl {
    /// `http://` or `https://`, fetched as is.
    Http(HttpUrl),
    /// `hf://OWNER/REPO/PATH[@REVISION]`, resolved to
    /// `{endpoint}/{OWNER}/{REPO}/resolve/{REVISION}/{PATH}`.
    Hub {
        /// `OWNER/REPO`.
        repo: String,
        /// The file's path inside the repository.
        path: String,
        /// The branch, tag or commit (`main` by default).
        revision: String,
        /// The resolved URL.
        url: HttpUrl,
    },
    /// `s3://`, `gs://` or `az://`: opened through `object_store` (the `object-store`
    /// feature).
    ObjectStore {
        /// `s3`, `gs` or `az`.
        scheme: &'static str,
        /// The bucket or container.
        bucket: String,
        /// The object's key.
        key: String,
    },
}

impl fmt::Debug for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_string())
    }
}

impl fmt::Display for RemoteUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteUrl::Http(u) => write!(f, "{u}"),
            RemoteUrl::Hub { repo, path, revision, .. } => {
                write!(f, "hf://{repo}/{path}")?;
                if revision != DEFAULT_HF_REVISION {
                    write!(f, "@{revision}")?;
                }
                Ok(())
            }
            RemoteUrl::ObjectStore { scheme, bucket, key } => {
                write!(f, "{scheme}://{bucket}/{key}")
            }
        }
    }
}

impl RemoteUrl {
    /// Parses `s`, resolving `hf://` against `hf_endpoint` (pass `None` for the public Hub;
    /// [`RemoteUrl::parse_env`] reads `HF_ENDPOINT`).
    pub fn parse(s: &str, hf_endpoint: Option<&str>) -> Result<RemoteUrl, RemoteError> {
        let bad = |why: &str| RemoteError::bad_url(s, why);
        let scheme = scheme_of(s).ok_or_else(|| bad("not a URL this tool reads"))?;
        let rest = s.split_once("://").map_or("", |(_, r)| r);
        match scheme {
            "http" | "https" => Ok(RemoteUrl::Http(HttpUrl::parse(s)?)),
            "hf" => {
                let (body, revision) = match rest.rsplit_once('@') {
                    Some((b, r)) if !r.is_empty() && !r.starts_with('/') => (b, r.to_owned()),
                    Some(_) => return Err(bad("empty or malformed @REVISION")),
                    None => (rest, DEFAULT_HF_REVISION.to_owned()),
                };
                let mut parts = body.splitn(3, '/');
                let (owner, name, path) = (parts.next(), parts.next(), parts.next());
                let (Some(owner), Some(name), Some(path)) = (owner, name, path) else {
                    return Err(bad("expected hf://OWNER/REPO/PATH[@REVISION]"));
                };
                if owner.is_empty() || name.is_empty() || path.is_empty() || path.ends_with('/') {
                    return Err(bad("expected hf://OWNER/REPO/PATH[@REVISION]"));
                }
                if path.split('/').any(|seg| seg == ".." || seg == ".") {
                    return Err(bad("`.` and `..` segments are refused in the path"));
                }
                let endpoint = hf_endpoint.unwrap_or(DEFAULT_HF_ENDPOINT).trim_end_matches('/');
                let repo = format!("{owner}/{name}");
                let resolved = format!(
                    "{endpoint}/{repo}/resolve/{}/{}",
                    percent_encode(&revision, false),
                    percent_encode(path, true)
                );
                let url = HttpUrl::parse(&resolved).map_err(|e| {
                    RemoteError::new(RemoteErrorKind::BadUrl {
                        why: format!("HF_ENDPOINT gives no valid URL: {}", e.kind),
                    })
                    .with_url(s)
                })?;
                Ok(RemoteUrl::Hub { repo, path: path.to_owned(), revision, url })
            }
            object => {
                let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() || key.is_empty() {
                    return Err(bad("expected SCHEME://BUCKET/KEY"));
                }
                Ok(RemoteUrl::ObjectStore {
                    scheme: object,
                    bucket: bucket.to_owned(),
                    key: key.to_owned(),
                })
            }
        }
    }

    /// [`parse`](Self::parse) with the endpoint from `HF_ENDPOINT`.
    pub fn parse_env(s: &str) -> Result<RemoteUrl, RemoteError> {
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.is_empty());
        RemoteUrl::parse(s, endpoint.as_deref())
    }

    /// The HTTP URL to fetch, for `http(s)://` and `hf://`.
    pub fn http(&self) -> Option<&HttpUrl> {
        match self {
            RemoteUrl::Http(u) | RemoteUrl::Hub { url: u, .. } => Some(u),
            RemoteUrl::ObjectStore { .. } => None,
        }
    }

    /// The object's file name (last segment), which split-set shard names are read from.
    pub fn file_name(&self) -> &str {
        match self {
            RemoteUrl::Http(u) => u.file_name(),
            RemoteUrl::Hub { path, .. } => path.rsplit('/').next().unwrap_or_default(),
            RemoteUrl::ObjectStore { key, .. } => key.rsplit('/').next().unwrap_or_default(),
        }
    }

    /// The sibling object named `file_name` in the same directory (shards of a split set).
    pub fn sibling(&self, file_name: &str) -> RemoteUrl {
        match self {
            RemoteUrl::Http(u) => RemoteUrl::Http(u.with_file_name(file_name)),
            RemoteUrl::Hub { repo, path, revision, url } => {
                let dir = path.rsplit_once('/').map(|(d, _)| d);
                let path = dir.map_or_else(|| file_name.to_owned(), |d| format!("{d}/{file_name}"));
                RemoteUrl::Hub {
                    repo: repo.clone(),
                    path,
                    revision: revision.clone(),
                    url: url.with_file_name(&percent_encode(file_name, false)),
                }
            }
            RemoteUrl::ObjectStore { scheme, bucket, key } => {
                let dir = key.rsplit_once('/').map(|(d, _)| d);
                let key = dir.map_or_else(|| file_name.to_owned(), |d| format!("{d}/{file_name}"));
                RemoteUrl::ObjectStore { scheme, bucket: bucket.clone(), key }
            }
        }
    }
}

/// Percent-encodes what may not appear raw in a path segment (`/` kept when `keep_slash`).
fn percent_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let unreserved = b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b);
        if unreserved || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_remote_names() {
        assert!(is_remote("https://h/x.gguf"));
        assert!(is_remote("HF://a/b/c.gguf"));
        assert!(is_remote("s3://b/k"));
        assert!(!is_remote("dir/x.gguf"));
        assert!(!is_remote("weird/file://x"));
        assert!(!is_remote("ftp://h/x"));
    }

    #[test]
    fn parses_http_urls() {
        let u = HttpUrl::parse("HTTP://Example.COM:8080/a/b.gguf?x=1#frag").unwrap();
        assert_eq!(u.as_request_url(), "http://example.com:8080/a/b.gguf?x=1");
        assert_eq!(u.origin(), (false, "example.com".into(), 8080));
        assert_eq!(u.file_name(), "b.gguf");
        assert_eq!(HttpUrl::parse("https://h").unwrap().as_request_url(), "https://h/");
        assert_eq!(HttpUrl::parse("https://h").unwrap().origin(), (true, "h".into(), 443));
        assert!(HttpUrl::parse("https://user:pw@h/x").is_err());
        assert!(HttpUrl::parse("https:///x").is_err());
        assert!(HttpUrl::parse("https://h/a b").is_err());
    }

    #[test]
    fn joins_locations() {
        let u = HttpUrl::parse("https://h/a/b/c.gguf?q=1").unwrap();
        assert_eq!(u.join("/x").unwrap().as_request_url(), "https://h/x");
        assert_eq!(u.join("d.gguf").unwrap().as_request_url(), "https://h/a/b/d.gguf");
        assert_eq!(u.join("//cdn/x?s=2").unwrap().as_request_url(), "https://cdn/x?s=2");
        assert_eq!(u.join("http://o:81/y").unwrap().origin(), (false, "o".into(), 81));
        assert_eq!(u.with_file_name("m-00002-of-00003.gguf").path(), "/a/b/m-00002-of-00003.gguf");
    }

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact("https://u:p@h/x?X-Amz-Signature=abc&flag"),
            "https://REDACTED@h/x?X-Amz-Signature=REDACTED&flag"
        );
        assert_eq!(redact("https://h/x"), "https://h/x");
    }

    #[test]
    fn resolves_hub_urls() {
        let u =
            RemoteUrl::parse("hf://org/repo/sub/m.gguf@v1.0", Some("http://127.0.0.1:9/")).unwrap();
        assert_eq!(
            u.http().unwrap().as_request_url(),
            "http://127.0.0.1:9/org/repo/resolve/v1.0/sub/m.gguf"
        );
        assert_eq!(u.to_string(), "hf://org/repo/sub/m.gguf@v1.0");
        let d = RemoteUrl::parse("hf://org/repo/m.gguf", None).unwrap();
        assert_eq!(
            d.http().unwrap().as_request_url(),
            "https://huggingface.co/org/repo/resolve/main/m.gguf"
        );
        let s = d.sibling("m-00002-of-00002.gguf");
        assert_eq!(s.to_string(), "hf://org/repo/m-00002-of-00002.gguf");
        assert_eq!(
            s.http().unwrap().as_request_url(),
            "https://huggingface.co/org/repo/resolve/main/m-00002-of-00002.gguf"
        );
        // A revision with slashes (refs/pr/1) is percent-encoded, as the Hub expects.
        let pr = RemoteUrl::parse("hf://o/r/m.gguf@refs/pr/1", None).unwrap();
        assert!(pr.http().unwrap().as_request_url().ends_with("/resolve/refs%2Fpr%2F1/m.gguf"));
        for bad in ["hf://o/r", "hf://o/r/", "hf://o/r/m.gguf@", "hf://o/r/../x.gguf"] {
            assert!(RemoteUrl::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_object_store_urls() {
        let u = RemoteUrl::parse("s3://bucket/dir/m.gguf", None).unwrap();
        assert_eq!(u.file_name(), "m.gguf");
        assert_eq!(u.sibling("n.gguf").to_string(), "s3://bucket/dir/n.gguf");
        assert!(RemoteUrl::parse("gs://bucket", None).is_err());
    }
}
