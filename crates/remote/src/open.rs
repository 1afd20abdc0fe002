//! Opening a remote model: a source per URL, the format sniffed as for files, and a shard of
//! a split set opened as the whole set.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use sipllm_streaming::split::{KEY_COUNT, KEY_NO, ShardName};
use sipllm_streaming::{
    GgufFile, Model, ModelOrHeader, OpenOptions, ReadAt, SplitFile, StreamError, StreamErrorKind,
    WeightSource,
};

use crate::error::{RemoteError, RemoteErrorKind};
use crate::http::{HttpOptions, HttpSource, HttpStats};
use crate::url::RemoteUrl;

/// A remote model, opened: the [`Model`] (a split set when the URL names a shard of one) and
/// its sources, for their request statistics.
pub struct RemoteModel {
    /// The model, read through the remote sources.
    pub model: Model,
    /// The URL opened.
    pub url: RemoteUrl,
    sources: Vec<Arc<HttpSource>>,
}

impl fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteModel")
            .field("url", &self.url)
            .field("sources", &self.sources.len())
            .field("stats", &self.stats())
            .finish()
    }
}

impl RemoteModel {
    /// Requests and bytes so far, summed over the sources (one per shard).
    pub fn stats(&self) -> HttpStats {
        self.sources.iter().map(|s| s.stats()).fold(HttpStats::default(), |a, b| HttpStats {
            requests: a.requests + b.requests,
            bytes: a.bytes + b.bytes,
            retries: a.retries + b.retries,
        })
    }

    /// The HTTP sources, one per shard, in `split.no` order (none for an object store).
    pub fn sources(&self) -> &[Arc<HttpSource>] {
        &self.sources
    }
}

/// Opens the object `url` names as a byte source. `hf://` URLs get `HF_TOKEN` as their bearer
/// token unless `opts` has one. `s3://`, `gs://` and `az://` need the `object-store` feature.
pub fn open_source(url: &RemoteUrl, opts: &HttpOptions) -> Result<Arc<HttpSource>, RemoteError> {
    let source = open_source_in(url, opts, &Opening::new(opts))?;
    source.opened();
    Ok(source)
}

/// What the sources of one model share while it opens: the connection pool, and the instant
/// the open deadline runs out.
struct Opening {
    agent: ureq::Agent,
    until: Instant,
}

impl Opening {
    fn new(opts: &HttpOptions) -> Opening {
        Opening { agent: crate::http::agent(opts), until: Instant::now() + opts.open_deadline }
    }
}

/// [`open_source`] through `opening`'s pool and under its deadline, left in force.
fn open_source_in(
    url: &RemoteUrl,
    opts: &HttpOptions,
    opening: &Opening,
) -> Result<Arc<HttpSource>, RemoteError> {
    let Some(http) = url.http() else {
        let scheme = match url {
            RemoteUrl::ObjectStore { scheme, .. } => (*scheme).to_owned(),
            _ => String::new(),
        };
        return Err(
            RemoteError::new(RemoteErrorKind::Unsupported { scheme }).with_url(&url.to_string())
        );
    };
    let mut opts = opts.clone();
    if matches!(url, RemoteUrl::Hub { .. }) && opts.bearer_token.is_none() {
        opts.bearer_token = std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty());
    }
    HttpSource::open_in(http.clone(), opts, opening.agent.clone(), opening.until).map(Arc::new)
}

/// Opens the object `url` names as a byte source of whichever kind it needs: HTTP(S) and the
/// Hub ([`open_source`]), or with the `object-store` feature S3, GCS and Azure.
pub fn open_any(url: &RemoteUrl, opts: &HttpOptions) -> Result<Arc<dyn ReadAt>, RemoteError> {
    let (source, http) = open_tracked(url, opts, &Opening::new(opts))?;
    if let Some(h) = http {
        h.opened();
    }
    Ok(source)
}

/// A source, and the same source as an [`HttpSource`] (for its statistics) when it is one.
type Tracked = (Arc<dyn ReadAt>, Option<Arc<HttpSource>>);

/// [`open_any`], and the HTTP source again for its statistics.
fn open_tracked(
    url: &RemoteUrl,
    opts: &HttpOptions,
    opening: &Opening,
) -> Result<Tracked, RemoteError> {
    #[cfg(feature = "object-store")]
    if let RemoteUrl::ObjectStore { .. } = url {
        let source: Arc<dyn ReadAt> = Arc::new(crate::object::ObjectSource::open(url)?);
        return Ok((source, None));
    }
    let http = open_source_in(url, opts, opening)?;
    Ok((http.clone(), Some(http)))
}

/// The name a remote object goes by in the streaming layer's errors.
fn name_of(url: &RemoteUrl) -> PathBuf {
    PathBuf::from(url.to_string())
}

fn open_error(url: &RemoteUrl, e: RemoteError) -> StreamError {
    StreamError::at(name_of(url), StreamErrorKind::Open { source: e.into_io() })
}

/// Opens the model at `url`, GGUF or `.llmw` (sniffed from its first bytes, as for files).
///
/// A GGUF whose `split.count` is above 1 is a shard of a split set: the other shards' URLs
/// are derived from its name (`<prefix>-NNNNN-of-NNNNN.gguf`, the siblings in the same
/// directory) and the whole set opens as [`Model::Split`]. Network failures are
/// [`StreamErrorKind::Open`] or [`StreamErrorKind::Io`] errors whose `io::Error` carries a
/// [`RemoteError`] ([`RemoteError::find_in`]).
///
/// The sources share one connection pool (a set's shards are siblings on one host), a
/// shard's open response body is closed once its header is read, and the whole open — every
/// shard's header — is bounded by [`HttpOptions::open_deadline`] (`remote::http::open_timeout`).
pub fn open_model(
    url: &RemoteUrl,
    http: &HttpOptions,
    options: &OpenOptions,
) -> Result<RemoteModel, StreamError> {
    open_model_or_header(url, http, options)?.into_model()
}

/// [`open_model`] for inspection: under the lenient profile, a GGUF whose own tensor data is
/// not all inside the object opens as its header
/// ([`ModelOrHeader::Header`](sipllm_streaming::ModelOrHeader::Header)) from the one read
/// of it, as a local file does
/// ([`ModelOrHeader::open`](sipllm_streaming::ModelOrHeader::open)).
pub fn open_model_or_header(
    url: &RemoteUrl,
    http: &HttpOptions,
    options: &OpenOptions,
) -> Result<ModelOrHeader<RemoteModel>, StreamError> {
    let opening = Opening::new(http);
    let opened = open_model_in(url, http, options, &opening)?;
    if let ModelOrHeader::Model(model) = &opened {
        for s in &model.sources {
            s.opened();
        }
    }
    Ok(opened)
}

/// Opens the model a URL string names, as every front end does (the CLI, the Python
/// package): `url` parsed with the Hub's endpoint from `HF_ENDPOINT`
/// ([`RemoteUrl::parse_env`]), then [`open_model`] — the same sources, limits (`http`) and
/// errors wherever it is called from. A URL that does not parse (or names a scheme this
/// build cannot open) is a [`StreamErrorKind::Open`] naming it, credentials redacted, around the
/// [`RemoteError`] ([`RemoteError::find_in`] finds it, with its code and help).
///
/// ```no_run
/// use sipllm_remote::{HttpOptions, open_url};
/// use sipllm_streaming::{OpenOptions, WeightSource};
///
/// let remote = open_url(
///     "hf://ggml-org/models/tinyllamas/stories15M-q4_0.gguf",
///     &HttpOptions::default(),
///     &OpenOptions::default(),
/// )?;
/// println!("{} tensors", remote.model.tensors().len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open_url(
    url: &str,
    http: &HttpOptions,
    options: &OpenOptions,
) -> Result<RemoteModel, StreamError> {
    let parsed = RemoteUrl::parse_env(url).map_err(|e| {
        StreamError::at(
            PathBuf::from(crate::url::redact(url)),
            StreamErrorKind::Open { source: e.into_io() },
        )
    })?;
    open_model(&parsed, http, options)
}

fn open_model_in(
    url: &RemoteUrl,
    http: &HttpOptions,
    options: &OpenOptions,
    opening: &Opening,
) -> Result<ModelOrHeader<RemoteModel>, StreamError> {
    let (source, tracked) = open_tracked(url, http, opening).map_err(|e| open_error(url, e))?;
    let model = match ModelOrHeader::from_named_source(source.clone(), name_of(url), options)? {
        ModelOrHeader::Model(m) => m,
        ModelOrHeader::Header(h) => return Ok(ModelOrHeader::Header(h)),
    };
    let count = split_key(&model, KEY_COUNT)?;
    let count = match (&model, count) {
        (Model::Gguf(_), Some(c @ 2..)) => c,
        _ => {
            return Ok(ModelOrHeader::Model(RemoteModel {
                model,
                url: url.clone(),
                sources: tracked.into_iter().collect(),
            }));
        }
    };
    let no = split_key(&model, KEY_NO)?.unwrap_or(0);
    let Ok(count) = u16::try_from(count) else {
        return Err(StreamError::from(sipllm_streaming::SplitSetError::NotASet {
            path: Some(name_of(url)),
            count: None,
        }));
    };
    let split_no = u16::try_from(no).unwrap_or(u16::MAX);
    let Some(name) = ShardName::parse(Path::new(url.file_name())) else {
        return Err(StreamError::from(sipllm_streaming::SplitSetError::BadName {
            path: name_of(url),
            split_no,
            count,
        }));
    };
    let given = match model {
        Model::Gguf(g) => g,
        other => {
            let sources = tracked.into_iter().collect();
            return Ok(ModelOrHeader::Model(RemoteModel {
                model: other,
                url: url.clone(),
                sources,
            }));
        }
    };
    let mut given = Some(given);
    let mut files: Vec<GgufFile> = Vec::with_capacity(usize::from(count));
    let mut sources = Vec::with_capacity(usize::from(count));
    for i in 0..count {
        if i == split_no
            && let Some(g) = given.take()
        {
            files.push(g);
            if let Some(t) = &tracked {
                t.release();
            }
            sources.extend(tracked.clone());
            continue;
        }
        let shard_path = name.path_of(u64::from(i));
        let file_name = shard_path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let shard_url = url.sibling(file_name);
        let (shard, shard_tracked) = match open_tracked(&shard_url, http, opening) {
            Ok(s) => s,
            Err(e) if e.status == Some(404) => {
                return Err(StreamError::from(sipllm_streaming::SplitSetError::MissingShard {
                    set: name_of(url),
                    missing: Some(name_of(&shard_url)),
                    split_no: i,
                    count,
                }));
            }
            Err(e) => return Err(open_error(&shard_url, e)),
        };
        files.push(GgufFile::from_named_source(shard.clone(), name_of(&shard_url), options)?);
        if let Some(t) = &shard_tracked {
            t.release();
        }
        sources.extend(shard_tracked);
    }
    let set = SplitFile::from_files(files)?;
    Ok(ModelOrHeader::Model(RemoteModel { model: Model::Split(set), url: url.clone(), sources }))
}

/// An unsigned split key, when present.
fn split_key(model: &Model, key: &str) -> Result<Option<u64>, StreamError> {
    if model.gguf().is_none() || model.meta(key).is_none() {
        return Ok(None);
    }
    model.meta_uint(key).map(Some)
}

/// Fetches the whole object at `url` into an unnamed temporary file (in
/// [`std::env::temp_dir`]), for commands that write a model from another and copy every tensor
/// byte anyway (`edit -o`, `convert`): parse it with
/// [`Model::from_file`](sipllm_streaming::Model::from_file), naming it by the URL. The transfer
/// is one announced range: requests of [`HttpOptions::max_request`] bytes, each read continuing
/// the current one. The file is unlinked as soon as it is created, so nothing is left behind
/// however the process ends; no lock is needed on a file no other process can name.
pub fn fetch_to_file(url: &RemoteUrl, http: &HttpOptions) -> Result<File, StreamError> {
    let name = name_of(url);
    let source = open_any(url, http).map_err(|e| open_error(url, e))?;
    download(&*source, &name)
}

/// Copies all of `source` into an unnamed temporary file.
fn download(source: &dyn ReadAt, name: &Path) -> Result<File, StreamError> {
    const PIECE: u64 = 8 << 20;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp = std::env::temp_dir().join(format!(".sipllm-fetch-{}-{stamp}", std::process::id()));
    let create = |e| StreamError::at(tmp.clone(), StreamErrorKind::Spool { offset: 0, source: e });
    let mut file =
        File::options().read(true).write(true).create_new(true).open(&tmp).map_err(create)?;
    // Unnamed from now on.
    let _ = std::fs::remove_file(&tmp);
    let len = source.len();
    let _ = source.prefetch(0, len);
    let mut buf = vec![0u8; usize::try_from(PIECE.min(len)).unwrap_or(0)];
    let mut pos = 0u64;
    while pos < len {
        let n = PIECE.min(len - pos);
        let dst = buf.get_mut(..n as usize).unwrap_or_default();
        source.read_exact_at(pos, dst).map_err(|e| {
            StreamError::new(
                Some(name.to_path_buf()),
                StreamErrorKind::Io { offset: pos, len: n, source: e },
            )
        })?;
        let write = |e: io::Error| {
            StreamError::at(tmp.clone(), StreamErrorKind::Spool { offset: pos, source: e })
        };
        file.write_all(dst).map_err(write)?;
        pos += n;
    }
    file.flush().map_err(|e| {
        StreamError::at(tmp.clone(), StreamErrorKind::Spool { offset: pos, source: e })
    })?;
    Ok(file)
}
