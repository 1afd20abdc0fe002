//! [`RemoteError`]: what went wrong fetching a remote object, with a stable code, the URL
//! (credentials redacted), the HTTP status and the hop (0 for the URL as given, n after n
//! redirects).

use std::fmt;
use std::io;

use sipllm_streaming::Kind;

use crate::redact::redact;

/// What went wrong, by who is at fault: the URL given, the network, or the server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RemoteErrorKind {
    /// The URL is not one this tool can fetch.
    BadUrl {
        /// Why.
        why: String,
    },
    /// The scheme is known, but this build cannot open it (`s3://` without the `object-store`
    /// feature).
    Unsupported {
        /// The scheme.
        scheme: String,
    },
    /// No connection could be made, or it failed mid-transfer, after the retries.
    Connect {
        /// The transport's reason.
        detail: String,
    },
    /// The connect or read timeout, or the total deadline, ran out.
    Timeout {
        /// Which limit.
        what: String,
    },
    /// Opening — the first block and the header's reads, of every shard of a split set —
    /// took longer than [`HttpOptions::open_deadline`](crate::HttpOptions::open_deadline).
    OpenTimeout {
        /// The limit.
        limit: std::time::Duration,
    },
    /// The server answered with an error status (after the retries, for 429 and 5xx).
    Status,
    /// The server answered a ranged GET with `200` and the whole object: it ignores `Range`.
    RangeIgnored,
    /// The `Content-Range` of a `206` does not describe the range asked for (or is missing).
    BadContentRange {
        /// The range asked for, `bytes=A-B`.
        asked: String,
        /// The header as received (empty when absent).
        found: String,
    },
    /// The body ended before the bytes its headers promised, every try.
    ShortBody {
        /// Bytes received on the last try.
        got: u64,
        /// Bytes expected.
        expected: u64,
    },
    /// The server gives no total size (`Content-Range: bytes A-B/*`) and no suffix range.
    UnknownSize,
    /// `416 Range Not Satisfiable` for a range inside the object.
    RangeNotSatisfiable,
    /// The object changed since it was opened: its `ETag` or `Last-Modified` differs.
    Changed {
        /// The validator pinned at the first response.
        pinned: String,
        /// The one received now (empty when absent).
        found: String,
    },
    /// The body came with a `Content-Encoding` other than `identity`, although
    /// `Accept-Encoding: identity` was sent: its bytes are not the object's.
    Encoded {
        /// The encoding.
        encoding: String,
    },
    /// More redirects than allowed.
    TooManyRedirects {
        /// The limit.
        max: u32,
    },
    /// A redirect that is not followed: no `Location`, or `https` to `http`.
    BadRedirect {
        /// Why.
        why: String,
    },
    /// An object store's endpoint is plain `http://` and the variable that allows it
    /// (`AWS_ALLOW_HTTP` for S3) is not set: refused before any request (`object_store`
    /// alone fails it with "HTTP error: builder error").
    HttpNotAllowed {
        /// The endpoint, redacted.
        endpoint: String,
        /// The environment variable that allows it.
        variable: &'static str,
    },
    /// An object store (`object_store`) error.
    ObjectStore {
        /// Its message.
        detail: String,
    },
}

impl RemoteErrorKind {
    /// The stable code (`remote::http::range_ignored`, …); [`RemoteError`]'s [`Kind::code`].
    pub fn code(&self) -> &'static str {
        match self {
            RemoteErrorKind::BadUrl { .. } => "remote::url::bad_url",
            RemoteErrorKind::Unsupported { .. } => "remote::url::unsupported_scheme",
            RemoteErrorKind::Connect { .. } => "remote::http::connect",
            RemoteErrorKind::Timeout { .. } => "remote::http::timeout",
            RemoteErrorKind::OpenTimeout { .. } => "remote::http::open_timeout",
            RemoteErrorKind::Status => "remote::http::status",
            RemoteErrorKind::RangeIgnored => "remote::http::range_ignored",
            RemoteErrorKind::BadContentRange { .. } => "remote::http::bad_content_range",
            RemoteErrorKind::ShortBody { .. } => "remote::http::short_body",
            RemoteErrorKind::UnknownSize => "remote::http::unknown_size",
            RemoteErrorKind::RangeNotSatisfiable => "remote::http::range_not_satisfiable",
            RemoteErrorKind::Changed { .. } => "remote::http::changed",
            RemoteErrorKind::Encoded { .. } => "remote::http::encoded",
            RemoteErrorKind::TooManyRedirects { .. } => "remote::http::too_many_redirects",
            RemoteErrorKind::BadRedirect { .. } => "remote::http::bad_redirect",
            RemoteErrorKind::HttpNotAllowed { .. } => "remote::store::http_not_allowed",
            RemoteErrorKind::ObjectStore { .. } => "remote::store::object_store",
        }
    }
}

impl fmt::Display for RemoteErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemoteErrorKind::BadUrl { why } => write!(f, "bad URL: {why}"),
            RemoteErrorKind::Unsupported { scheme } => {
                write!(f, "{scheme}:// URLs need the `object-store` feature of this build")
            }
            RemoteErrorKind::Connect { detail } => write!(f, "connection failed: {detail}"),
            RemoteErrorKind::Timeout { what } => write!(f, "timed out: {what}"),
            RemoteErrorKind::OpenTimeout { limit } => {
                write!(f, "opening took longer than its deadline ({} s)", limit.as_secs_f64())
            }
            RemoteErrorKind::Status => f.write_str("the server answered with an error"),
            RemoteErrorKind::RangeIgnored => f.write_str(
                "the server ignores range requests (answered 200 with the whole object)",
            ),
            RemoteErrorKind::BadContentRange { asked, found } if found.is_empty() => {
                write!(f, "a 206 response without Content-Range (asked for {asked})")
            }
            RemoteErrorKind::BadContentRange { asked, found } => {
                write!(f, "Content-Range {found:?} does not match the range asked for ({asked})")
            }
            RemoteErrorKind::ShortBody { got, expected } => {
                write!(f, "the body ended after {got} of {expected} bytes")
            }
            RemoteErrorKind::UnknownSize => {
                f.write_str("the server gives no object size (Content-Range total `*`)")
            }
            RemoteErrorKind::RangeNotSatisfiable => {
                f.write_str("416 Range Not Satisfiable for a range inside the object")
            }
            RemoteErrorKind::Changed { pinned, found } => write!(
                f,
                "the object changed while it was read (validator {pinned:?} at open, {:?} now)",
                found
            ),
            RemoteErrorKind::Encoded { encoding } => {
                write!(f, "the body is {encoding}-encoded although identity was asked for")
            }
            RemoteErrorKind::TooManyRedirects { max } => {
                write!(f, "more than {max} redirects")
            }
            RemoteErrorKind::BadRedirect { why } => write!(f, "redirect not followed: {why}"),
            RemoteErrorKind::HttpNotAllowed { endpoint, variable } => write!(
                f,
                "the endpoint {endpoint} is plain http://, and {variable} is not set to allow it"
            ),
            RemoteErrorKind::ObjectStore { detail } => write!(f, "object store: {detail}"),
        }
    }
}

/// A remote fetch failed: the kind, and where.
///
/// Carried through [`ReadAt`](sipllm_streaming::ReadAt)'s `io::Error` as its inner error
/// ([`RemoteError::into_io`], [`RemoteError::from_io`]), so the streaming layer's errors keep
/// it intact and the CLI shows its code and help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteError {
    /// What went wrong.
    pub kind: RemoteErrorKind,
    /// The URL of the hop that failed, credentials redacted.
    pub url: Option<String>,
    /// 0 for the URL as given, n for the URL reached after n redirects.
    pub hop: u32,
    /// The HTTP status of the failing response, when there was one.
    pub status: Option<u16>,
}

impl RemoteError {
    /// An error of `kind` with no URL yet.
    pub fn new(kind: RemoteErrorKind) -> RemoteError {
        RemoteError { kind, url: None, hop: 0, status: None }
    }

    /// [`RemoteErrorKind::BadUrl`] for `url`.
    pub fn bad_url(url: &str, why: &str) -> RemoteError {
        RemoteError::new(RemoteErrorKind::BadUrl { why: why.to_owned() }).with_url(url)
    }

    /// Names the URL (redacted here).
    pub fn with_url(mut self, url: &str) -> RemoteError {
        self.url = Some(redact(url));
        self
    }

    /// Names the hop.
    pub fn with_hop(mut self, hop: u32) -> RemoteError {
        self.hop = hop;
        self
    }

    /// Names the HTTP status.
    pub fn with_status(mut self, status: u16) -> RemoteError {
        self.status = Some(status);
        self
    }

    /// Wraps this in an [`io::Error`] (kind `TimedOut` for timeouts, `Other` otherwise).
    pub fn into_io(self) -> io::Error {
        let kind = match self.kind {
            RemoteErrorKind::Timeout { .. } | RemoteErrorKind::OpenTimeout { .. } => {
                io::ErrorKind::TimedOut
            }
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, self)
    }

    /// The `RemoteError` inside an I/O error made by [`into_io`](Self::into_io), if any.
    pub fn from_io(err: &io::Error) -> Option<&RemoteError> {
        err.get_ref().and_then(|e| e.downcast_ref::<RemoteError>())
    }

    /// The `RemoteError` anywhere in `err`'s source chain (a `StreamError` around an
    /// `io::Error` around it, say).
    pub fn find_in<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a RemoteError> {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(e) = cur {
            if let Some(r) = e.downcast_ref::<RemoteError>() {
                return Some(r);
            }
            if let Some(io) = e.downcast_ref::<io::Error>()
                && let Some(r) = RemoteError::from_io(io)
            {
                return Some(r);
            }
            cur = e.source();
        }
        None
    }
}

impl fmt::Display for RemoteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(url) = &self.url {
            write!(f, ": {url}")?;
        }
        let mut notes = Vec::new();
        if let Some(s) = self.status {
            notes.push(format!("HTTP {s}"));
        }
        if self.hop > 0 {
            let s = if self.hop == 1 { "" } else { "s" };
            notes.push(format!("hop {}, after {} redirect{s}", self.hop, self.hop));
        }
        if !notes.is_empty() {
            write!(f, " ({})", notes.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for RemoteError {}

/// The shared contract of every error kind: a stable `remote::…` code and a help text, so
/// the CLI renders a remote failure as it renders the parser's and the write side's.
impl Kind for RemoteError {
    /// The stable code (`remote::http::range_ignored`, …).
    fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// How to fix it; the HTTP status picks among the `remote::http::status` helps.
    fn help(&self) -> &'static str {
        match (&self.kind, self.status) {
            (RemoteErrorKind::BadUrl { .. }, _) => {
                "use http://HOST/PATH, https://HOST/PATH or \
                hf://OWNER/REPO/PATH[@REVISION] (the Hub's endpoint from HF_ENDPOINT)"
            }
            (RemoteErrorKind::Unsupported { .. }, _) => {
                "install the build with the `object-store` feature (from the checkout: cargo \
                install --locked --path crates/cli --features object-store), or use the \
                object's https:// or presigned URL"
            }
            (RemoteErrorKind::Connect { .. }, _) => {
                "check the host name, the port and the network; the request was retried"
            }
            (RemoteErrorKind::Timeout { .. }, _) => {
                "the server is too slow or stalled; try \
                again later, or download the file and open it locally"
            }
            (RemoteErrorKind::OpenTimeout { .. }, _) => {
                "the server sends the header too \
                slowly (or a set has very many shards); try again later, raise \
                HttpOptions::open_deadline, or download the file and open it locally"
            }
            (RemoteErrorKind::Status, Some(401 | 403)) => {
                "the server refused access: for a \
                gated or private Hub repository set HF_TOKEN to a token that can read it; a \
                presigned URL may have expired"
            }
            (RemoteErrorKind::Status, Some(404)) => {
                "no such object: check the URL, the repository, the path and the revision"
            }
            (RemoteErrorKind::Status, Some(429 | 500..=599)) => {
                "the server is overloaded or failing (retried with backoff); try again later"
            }
            (RemoteErrorKind::Status, _) => "check the URL",
            (RemoteErrorKind::RangeIgnored, _) => {
                "this server cannot serve parts of a file; \
                nothing more was read from it. Download the file (curl -o) and open it locally"
            }
            (RemoteErrorKind::BadContentRange { .. } | RemoteErrorKind::UnknownSize, _) => {
                "the server's range support is broken (a proxy or CDN rewriting responses?); \
                 download the file and open it locally"
            }
            (RemoteErrorKind::ShortBody { .. }, _) => {
                "the connection kept breaking mid-body \
                (retried from where it stopped); try again later"
            }
            (RemoteErrorKind::RangeNotSatisfiable, _) => {
                "the object is shorter than the server \
                first said, or changed: open it again"
            }
            (RemoteErrorKind::Changed { .. }, _) => {
                "the object was replaced while it was read; \
                no bytes of two versions were mixed. Open it again (pin a Hub revision with \
                @COMMIT to avoid this)"
            }
            (RemoteErrorKind::Encoded { .. }, _) => {
                "the server (or a proxy) compresses \
                responses regardless of Accept-Encoding; byte ranges of it cannot be trusted"
            }
            (RemoteErrorKind::TooManyRedirects { .. }, _) => {
                "the URL redirects in a loop or through too many hops; use the final URL"
            }
            (RemoteErrorKind::BadRedirect { .. }, _) => {
                "use the final URL directly if you trust it"
            }
            (RemoteErrorKind::HttpNotAllowed { .. }, _) => {
                "set AWS_ALLOW_HTTP=true to reach a plain-HTTP endpoint (a local S3 server: \
                MinIO, moto, LocalStack), or give an https:// endpoint in AWS_ENDPOINT_URL"
            }
            (RemoteErrorKind::ObjectStore { .. }, _) => {
                "check the bucket, the key and the \
                credentials in the environment (AWS_*, GOOGLE_*, AZURE_* as object_store reads \
                them)"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_code_url_status_and_hop() {
        let e = RemoteError::new(RemoteErrorKind::Status)
            .with_url("https://cdn/x?sig=secret")
            .with_status(403)
            .with_hop(1);
        assert_eq!(e.code(), "remote::http::status");
        let shown = e.to_string();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("HTTP 403") && shown.contains("hop 1"), "{shown}");
        assert!(e.help().contains("HF_TOKEN"));
        let io = e.clone().into_io();
        assert_eq!(RemoteError::from_io(&io), Some(&e));
        assert_eq!(RemoteError::find_in(&io), Some(&e));
    }

    /// One of every kind. The match below has no `_` arm, so a new kind does not compile
    /// until it is listed here too, and so is checked by the test below.
    fn every_kind() -> Vec<RemoteErrorKind> {
        use std::time::Duration;
        let all = vec![
            RemoteErrorKind::BadUrl { why: "w".into() },
            RemoteErrorKind::Unsupported { scheme: "s3".into() },
            RemoteErrorKind::Connect { detail: "d".into() },
            RemoteErrorKind::Timeout { what: "read".into() },
            RemoteErrorKind::OpenTimeout { limit: Duration::from_secs(1) },
            RemoteErrorKind::Status,
            RemoteErrorKind::RangeIgnored,
            RemoteErrorKind::BadContentRange { asked: "bytes=0-1".into(), found: String::new() },
            RemoteErrorKind::ShortBody { got: 1, expected: 2 },
            RemoteErrorKind::UnknownSize,
            RemoteErrorKind::RangeNotSatisfiable,
            RemoteErrorKind::Changed { pinned: "a".into(), found: "b".into() },
            RemoteErrorKind::Encoded { encoding: "gzip".into() },
            RemoteErrorKind::TooManyRedirects { max: 5 },
            RemoteErrorKind::BadRedirect { why: "w".into() },
            RemoteErrorKind::HttpNotAllowed { endpoint: "http://h".into(), variable: "V" },
            RemoteErrorKind::ObjectStore { detail: "d".into() },
        ];
        for k in &all {
            match k {
                RemoteErrorKind::BadUrl { .. }
                | RemoteErrorKind::Unsupported { .. }
                | RemoteErrorKind::Connect { .. }
                | RemoteErrorKind::Timeout { .. }
                | RemoteErrorKind::OpenTimeout { .. }
                | RemoteErrorKind::Status
                | RemoteErrorKind::RangeIgnored
                | RemoteErrorKind::BadContentRange { .. }
                | RemoteErrorKind::ShortBody { .. }
                | RemoteErrorKind::UnknownSize
                | RemoteErrorKind::RangeNotSatisfiable
                | RemoteErrorKind::Changed { .. }
                | RemoteErrorKind::Encoded { .. }
                | RemoteErrorKind::TooManyRedirects { .. }
                | RemoteErrorKind::BadRedirect { .. }
                | RemoteErrorKind::HttpNotAllowed { .. }
                | RemoteErrorKind::ObjectStore { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_code_is_remote_shaped_unique_and_helped() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in every_kind() {
            let e = RemoteError::new(kind.clone());
            // Through the shared trait, as the CLI renders every error kind.
            let shared: &dyn Kind = &e;
            let code = shared.code();
            let parts: Vec<&str> = code.split("::").collect();
            assert!(
                parts.len() == 3
                    && parts[0] == "remote"
                    && ["url", "http", "store"].contains(&parts[1])
                    && !parts[2].is_empty()
                    && parts[2].bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{code} is not remote::{{url,http,store}}::snake_case"
            );
            assert!(seen.insert(code), "{code} is used by two kinds ({kind:?})");
            assert!(!shared.help().is_empty(), "{code} has no help");
        }
        assert_eq!(seen.len(), every_kind().len());
    }
}
