//! Credentials out of URLs before they are shown (a module of its own: both the URL forms
//! and the errors use it).

/// `url` with user info dropped and every query value replaced by `REDACTED`, for messages.
pub fn redact(url: &str) -> String {
    let (before_query, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let mut out = match before_query.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            let info = if host.len() == authority.len() { "" } else { "REDACTED@" };
            format!("{scheme}://{info}{host}{path}")
        }
        None => before_query.to_owned(),
    };
    if let Some(q) = query {
        out.push('?');
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, _)) => format!("{k}=REDACTED"),
                None => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}
