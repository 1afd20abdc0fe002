//! `s3://`, `gs://` and `az://` through `object_store` (the `object-store` feature): a
//! [`ReadAt`] whose reads are ranged GETs of the object (2 MiB, doubling while reads follow
//! on, up to 64 MiB, into one buffer later reads are served from), conditional on the `ETag`
//! pinned at open, driven by a current-thread tokio runtime of its own (so no runtime leaks into the
//! rest of the program, and none into the default build).
//!
//! Each store is configured from the environment the way `object_store` reads it
//! (`AmazonS3Builder::from_env`: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, …; `GOOGLE_*` for GCS; `AZURE_*` for Azure). A
//! plain `http://` S3 endpoint without `AWS_ALLOW_HTTP=true` is refused before any request,
//! naming the variable (`remote::store::http_not_allowed`).

use std::fmt;
use std::io;
use std::sync::Arc;

use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore};
use sipllm_streaming::{ReadAt, ShortRead};

use crate::error::{RemoteError, RemoteErrorKind};
use crate::url::RemoteUrl;

/// An object in S3, GCS or Azure, read by ranged GETs.
pub struct ObjectSource {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    len: u64,
    e_tag: Option<String>,
    url: String,
    runtime: tokio::runtime::Runtime,
    /// The last range fetched, which later reads are served from while they fall inside it.
    ahead: std::sync::Mutex<Ahead>,
}

/// The last fetched range and the size of the next one.
#[derive(Default)]
struct Ahead {
    start: u64,
    bytes: bytes::Bytes,
    next_len: u64,
}

/// The first fetch; each fetch starting where the last one ended is twice as long, up to
/// `MAX_FETCH`: a header costs O(log size) requests, as over HTTP.
const FIRST_FETCH: u64 = 2 << 20;
const MAX_FETCH: u64 = 64 << 20;

impl fmt::Debug for ObjectSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectSource").field("url", &self.url).field("len", &self.len).finish()
    }
}

fn store_error(url: &str, e: &object_store::Error) -> RemoteError {
    let err =
        RemoteError::new(RemoteErrorKind::ObjectStore { detail: e.to_string() }).with_url(url);
    match e {
        object_store::Error::NotFound { .. } => err.with_status(404),
        object_store::Error::PermissionDenied { .. } => err.with_status(403),
        object_store::Error::Unauthenticated { .. } => err.with_status(401),
        _ => err,
    }
}

/// A plain `http://` S3 endpoint (`AWS_ENDPOINT_URL`, `AWS_ENDPOINT`, `aws_endpoint`) without
/// `AWS_ALLOW_HTTP` (`allow_http`) set true: [`RemoteErrorKind::HttpNotAllowed`], before any
/// request — `object_store` would fail its first request with "HTTP error: builder error",
/// which names neither variable.
fn refuse_plain_http(b: &object_store::aws::AmazonS3Builder) -> Result<(), RemoteError> {
    use object_store::ClientConfigKey;
    use object_store::aws::AmazonS3ConfigKey;
    let Some(endpoint) = b.get_config_value(&AmazonS3ConfigKey::Endpoint) else { return Ok(()) };
    let plain = endpoint.trim().get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"));
    let allowed = b
        .get_config_value(&AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp))
        .is_some_and(|v| {
            // object_store's own reading of a boolean.
            matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "on" | "yes" | "y")
        });
    if plain && !allowed {
        let endpoint = crate::redact::redact(endpoint.trim());
        return Err(RemoteError::new(RemoteErrorKind::HttpNotAllowed {
            endpoint,
            variable: "AWS_ALLOW_HTTP",
        }));
    }
    Ok(())
}

impl ObjectSource {
    /// Opens the object `url` names (an [`RemoteUrl::ObjectStore`]), configured from the
    /// environment: one `HEAD` for its size and `ETag`.
    pub fn open(url: &RemoteUrl) -> Result<ObjectSource, RemoteError> {
        ObjectSource::open_with(url, &[])
    }

    /// [`open`](Self::open) with configuration pairs applied over the environment's, in
    /// `object_store`'s key names (`aws_endpoint`, `allow_http`, `google_service_account`,
    /// `azure_storage_account_name`, …).
    pub fn open_with(
        url: &RemoteUrl,
        config: &[(&str, &str)],
    ) -> Result<ObjectSource, RemoteError> {
        let shown = url.to_string();
        let bad_key = |k: &str, e: object_store::Error| {
            RemoteError::new(RemoteErrorKind::ObjectStore {
                detail: format!("configuration key {k:?}: {e}"),
            })
            .with_url(&shown)
        };
        let RemoteUrl::ObjectStore { scheme, bucket, key } = url else {
            return Err(RemoteError::bad_url(&shown, "not an object store URL"));
        };
        let err = |e: object_store::Error| store_error(&shown, &e);
        let base = format!("{scheme}://{bucket}");
        let store: Arc<dyn ObjectStore> = match *scheme {
            "s3" => {
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_url(base);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| bad_key(k, e))?, *v);
                }
                refuse_plain_http(&b).map_err(|e| e.with_url(&shown))?;
                Arc::new(b.build().map_err(err)?)
            }
            "gs" => {
                let mut b = object_store::gcp::GoogleCloudStorageBuilder::from_env().with_url(base);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| bad_key(k, e))?, *v);
                }
                Arc::new(b.build().map_err(err)?)
            }
            "az" => {
                let mut b = object_store::azure::MicrosoftAzureBuilder::from_env().with_url(base);
                for (k, v) in config {
                    b = b.with_config(k.parse().map_err(|e| bad_key(k, e))?, *v);
                }
                Arc::new(b.build().map_err(err)?)
            }
            other => {
                return Err(RemoteError::new(RemoteErrorKind::Unsupported {
                    scheme: other.into(),
                })
                .with_url(&shown));
            }
        };
        let path = ObjectPath::parse(key.as_str())
            .map_err(|e| RemoteError::bad_url(&shown, &format!("bad object key: {e}")))?;
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| {
                RemoteError::new(RemoteErrorKind::ObjectStore { detail: e.to_string() })
            })?;
        let meta = runtime.block_on(store.head(&path)).map_err(err)?;
        Ok(ObjectSource {
            store,
            path,
            len: meta.size,
            e_tag: meta.e_tag,
            url: shown,
            runtime,
            ahead: std::sync::Mutex::new(Ahead::default()),
        })
    }

    /// The object's `ETag` at open, which every read is conditional on.
    pub fn e_tag(&self) -> Option<&str> {
        self.e_tag.as_deref()
    }
}

impl ReadAt for ObjectSource {
    fn read_exact_at(&self, offset: u64, dst: &mut [u8]) -> io::Result<()> {
        ShortRead::check(offset, dst.len() as u64, self.len).map_err(ShortRead::into_io)?;
        if dst.is_empty() {
            return Ok(());
        }
        let mut ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        let mut done = 0usize;
        while let Some(rest) = dst.get_mut(done..).filter(|r| !r.is_empty()) {
            let pos = offset + done as u64;
            let have_end = ahead.start + ahead.bytes.len() as u64;
            if ahead.start <= pos && pos < have_end {
                let from = ahead.bytes.get((pos - ahead.start) as usize..).unwrap_or_default();
                let n = from.len().min(rest.len());
                rest.get_mut(..n)
                    .unwrap_or_default()
                    .copy_from_slice(from.get(..n).unwrap_or_default());
                done += n;
                continue;
            }
            let want = rest.len() as u64;
            ahead.next_len = if pos == have_end && have_end > 0 {
                ahead.next_len.saturating_mul(2).clamp(FIRST_FETCH, MAX_FETCH)
            } else {
                FIRST_FETCH
            };
            let fetch_end = pos.saturating_add(want.max(ahead.next_len)).min(self.len);
            let bytes = self.fetch(pos, fetch_end)?;
            *ahead = Ahead { start: pos, bytes, next_len: ahead.next_len };
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl ObjectSource {
    /// One ranged GET of `start..end`, conditional on the pinned `ETag`.
    fn fetch(&self, start: u64, end: u64) -> io::Result<bytes::Bytes> {
        let options = GetOptions {
            range: Some(GetRange::Bounded(start..end)),
            if_match: self.e_tag.clone(),
            ..GetOptions::default()
        };
        let got = self.runtime.block_on(async {
            let result = self.store.get_opts(&self.path, options).await?;
            result.bytes().await
        });
        let bytes = got.map_err(|e| match e {
            object_store::Error::Precondition { .. } => {
                RemoteError::new(RemoteErrorKind::Changed {
                    pinned: self.e_tag.clone().unwrap_or_default(),
                    found: String::new(),
                })
                .with_url(&self.url)
                .with_status(412)
                .into_io()
            }
            other => store_error(&self.url, &other).into_io(),
        })?;
        let len = end - start;
        if bytes.len() as u64 != len {
            let kind = RemoteErrorKind::ShortBody { got: bytes.len() as u64, expected: len };
            return Err(RemoteError::new(kind).with_url(&self.url).into_io());
        }
        Ok(bytes)
    }
}
