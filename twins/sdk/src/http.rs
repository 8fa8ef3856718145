//! HTTP request and response types as twins see them, with the body and query helpers
//! every API needs.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
    Other,
}

impl Method {
    pub fn parse(s: &str) -> Method {
        const ALL: [Method; 7] =
            [Method::Get, Method::Head, Method::Post, Method::Put, Method::Patch, Method::Delete, Method::Options];
        ALL.into_iter().find(|m| m.as_str().eq_ignore_ascii_case(s)).unwrap_or(Method::Other)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Other => "OTHER",
        }
    }
}

/// How the host authenticated the request (the twin never sees the credential itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    Agent,
    Missing,
    Invalid,
}

#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// The API's own path, percent-encoded as it arrived.
    pub path: String,
    /// The raw query string without `?`.
    pub query: String,
    /// Lower-cased names, arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// e.g. `http://127.0.0.1:8080/s/ses_x/github`, no trailing slash.
    pub base_url: String,
    pub auth: Auth,
}

/// Why a body could not be read; twins map it to their API's own 400/422.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyError(pub String);

impl Request {
    /// A request with no headers or body, for native tests.
    pub fn new(method: Method, path_and_query: &str) -> Request {
        let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
        Request {
            method,
            path: path.to_string(),
            query: query.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            base_url: "http://twin.test".to_string(),
            auth: Auth::Agent,
        }
    }

    pub fn with_json(mut self, body: &Value) -> Request {
        self.body = serde_json::to_vec(body).unwrap();
        self.headers.push(("content-type".into(), "application/json".into()));
        self
    }

    pub fn with_form(mut self, pairs: &[(&str, &str)]) -> Request {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
        self.body = body.into_bytes();
        self.headers
            .push(("content-type".into(), "application/x-www-form-urlencoded".into()));
        self
    }

    /// The first value of a header (names are lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Decoded query pairs in order.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        form_urlencoded::parse(self.query.as_bytes()).into_owned().collect()
    }

    /// The first value of a query parameter. `key[]` forms are matched too.
    pub fn query(&self, key: &str) -> Option<String> {
        self.query_pairs()
            .into_iter()
            .find(|(k, _)| k == key || k.strip_suffix("[]") == Some(key))
            .map(|(_, v)| v)
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    pub fn is_json(&self) -> bool {
        let ct = self.content_type();
        ct.starts_with("application/json") || (ct.is_empty() && self.body.first() == Some(&b'{'))
    }

    /// The body as JSON; an empty body is `{}`.
    pub fn json_value(&self) -> Result<Value, BodyError> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Default::default()));
        }
        serde_json::from_slice(&self.body).map_err(|e| BodyError(format!("Problems parsing JSON: {e}")))
    }

    /// The body as a typed JSON document.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, BodyError> {
        serde_json::from_value(self.json_value()?).map_err(|e| BodyError(e.to_string()))
    }

    /// The body as `application/x-www-form-urlencoded` pairs.
    pub fn form_pairs(&self) -> Vec<(String, String)> {
        form_urlencoded::parse(&self.body).into_owned().collect()
    }

    /// Every argument of the request in one JSON object: query parameters, then the body's
    /// fields (JSON object or form), later ones winning. For RPC-style APIs (Slack) that
    /// accept the same argument from any of the three.
    pub fn args(&self) -> Result<serde_json::Map<String, Value>, BodyError> {
        let mut out = serde_json::Map::new();
        for (k, v) in self.query_pairs() {
            out.insert(k, Value::String(v));
        }
        if self.is_json() {
            match self.json_value()? {
                Value::Object(m) => out.extend(m),
                _ => return Err(BodyError("body must be a JSON object".into())),
            }
        } else {
            for (k, v) in self.form_pairs() {
                out.insert(k, Value::String(v));
            }
        }
        Ok(out)
    }

    /// Absolute URL for an API path, under the client's own base (`/repos/a/b` →
    /// `http://host/s/ses_x/github/repos/a/b`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }
}

/// Percent-decode one path segment.
pub fn decode_segment(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, body: &impl Serialize) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json; charset=utf-8".into())],
            body: serde_json::to_vec(body).expect("response bodies serialise"),
        }
    }

    pub fn empty(status: u16) -> Response {
        Response { status, headers: Vec::new(), body: Vec::new() }
    }

    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Response {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The body parsed as JSON (tests).
    pub fn json_body(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostErrorKind {
    PayloadTooLarge,
    TapeFull,
    TwinFailed,
    RateLimited,
}

impl HostErrorKind {
    /// The HTTP status most APIs use for this error.
    pub fn status(self) -> u16 {
        match self {
            HostErrorKind::PayloadTooLarge => 413,
            HostErrorKind::TapeFull => 429,
            HostErrorKind::TwinFailed => 500,
            HostErrorKind::RateLimited => 429,
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostError {
    pub kind: HostErrorKind,
    pub message: String,
}
