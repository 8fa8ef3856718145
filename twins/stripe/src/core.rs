//! What every Stripe endpoint shares: nested form parameters, Stripe's error envelope, ids
//! with Stripe's prefixes, list objects and pagination, `expand[]`, and the per-request
//! pipeline (request ids, failure injection, idempotency).

use pome_twin_sdk::{Call, Method, Response, Value, json};
use serde_json::Map;

use crate::World;
use crate::limits::{MAX_EXPAND_PATHS, MAX_PARAM_DEPTH, SHOWN_NAME_CHARS};

/// A Stripe API error: `{"error": {type, code, decline_code, param, message, doc_url}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct StripeError {
    pub status: u16,
    pub kind: &'static str,
    pub code: Option<String>,
    pub decline_code: Option<String>,
    pub param: Option<String>,
    pub message: String,
    /// Extra fields beside the error (`payment_intent`, `charge`, `payment_method`).
    pub extra: Map<String, Value>,
}

impl StripeError {
    pub fn new(status: u16, kind: &'static str, message: impl Into<String>) -> StripeError {
        StripeError { status, kind, code: None, decline_code: None, param: None, message: message.into(), extra: Map::new() }
    }
    pub fn code(mut self, code: &str) -> Self {
        self.code = Some(code.to_string());
        self
    }
    pub fn param(mut self, p: &str) -> Self {
        self.param = Some(p.to_string());
        self
    }
    pub fn with(mut self, k: &str, v: Value) -> Self {
        self.extra.insert(k.to_string(), v);
        self
    }
    pub fn body(&self, request_id: &str) -> Value {
        let mut e = Map::new();
        if let Some(c) = &self.code {
            e.insert("code".into(), json!(c));
        }
        if let Some(c) = &self.decline_code {
            e.insert("decline_code".into(), json!(c));
        }
        if let Some(c) = &self.code {
            e.insert("doc_url".into(), json!(format!("https://stripe.com/docs/error-codes/{}", c.replace('_', "-"))));
        }
        e.insert("message".into(), json!(self.message));
        if let Some(p) = &self.param {
            e.insert("param".into(), json!(p));
        }
        for (k, v) in &self.extra {
            e.insert(k.clone(), v.clone());
        }
        e.insert("request_log_url".into(), json!(format!("https://dashboard.stripe.com/test/logs/{request_id}")));
        e.insert("type".into(), json!(self.kind));
        json!({ "error": e })
    }
}

pub type Res = Result<Value, StripeError>;

/// 400 invalid_request_error.
pub fn invalid(message: impl Into<String>) -> StripeError {
    StripeError::new(400, "invalid_request_error", message)
}

pub fn missing(param: &str) -> StripeError {
    invalid(format!("Missing required param: {param}.")).code("parameter_missing").param(param)
}

/// The object the request's path names does not exist: 404.
pub fn no_such(kind: &str, id: &str, param: &str) -> StripeError {
    StripeError::new(404, "invalid_request_error", format!("No such {kind}: '{id}'")).code("resource_missing").param(param)
}

/// A parameter names an object that does not exist: the same error as [`no_such`], but a
/// 400, as Stripe answers a bad reference in the body rather than a missing resource.
pub fn no_such_ref(kind: &str, id: &str, param: &str) -> StripeError {
    StripeError { status: 400, ..no_such(kind, id, param) }
}

// ---------------------------------------------------------------------------------------
// Parameters: `a[b][0][c]=v` becomes {"a": {"b": [{"c": "v"}]}}, `expand[]=x` an array.

/// Parse form pairs into one nested JSON object. Values stay strings; handlers coerce.
pub fn nest(pairs: &[(String, String)]) -> Result<Map<String, Value>, StripeError> {
    let mut root = Value::Object(Map::new());
    for (k, v) in pairs {
        let (head, rest) = match k.find('[') {
            Some(i) => (&k[..i], &k[i..]),
            None => (k.as_str(), ""),
        };
        let mut keys: Vec<&str> = vec![head];
        let mut r = rest;
        while let Some(s) = r.strip_prefix('[') {
            let Some(end) = s.find(']') else { return Err(invalid(format!("Invalid parameter name: {}", shown(k)))) };
            keys.push(&s[..end]);
            if keys.len() > MAX_PARAM_DEPTH + 1 {
                return Err(invalid(format!(
                    "Invalid parameter name: {} is nested more than {MAX_PARAM_DEPTH} levels deep.",
                    shown(k)
                ))
                .param(head));
            }
            r = &s[end + 1..];
        }
        insert(&mut root, &keys, Value::String(v.clone())).map_err(|_| invalid(format!("Invalid array or hash: {}", shown(k))).param(head))?;
    }
    // Hashes keyed 0..n become arrays.
    fn arrays(v: &mut Value) {
        if let Value::Object(m) = v {
            for (_, c) in m.iter_mut() {
                arrays(c);
            }
            if !m.is_empty() && m.keys().all(|k| k.parse::<usize>().is_ok()) {
                let mut items: Vec<(usize, Value)> =
                    std::mem::take(m).into_iter().map(|(k, v)| (k.parse().unwrap(), v)).collect();
                items.sort_by_key(|(i, _)| *i);
                *v = Value::Array(items.into_iter().map(|(_, v)| v).collect());
            }
        } else if let Value::Array(a) = v {
            a.iter_mut().for_each(arrays);
        }
    }
    arrays(&mut root);
    match root {
        Value::Object(m) => Ok(m),
        _ => Ok(Map::new()),
    }
}

/// A parameter's name as an error repeats it: cut at [`SHOWN_NAME_CHARS`] characters.
pub(crate) fn shown(name: &str) -> String {
    match name.char_indices().nth(SHOWN_NAME_CHARS) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    }
}

fn insert(node: &mut Value, keys: &[&str], v: Value) -> Result<(), ()> {
    let (k, rest) = keys.split_first().ok_or(())?;
    if rest.is_empty() {
        match node {
            Value::Object(m) => {
                m.insert(k.to_string(), v);
            }
            Value::Array(a) if k.is_empty() => a.push(v),
            _ => return Err(()),
        }
        return Ok(());
    }
    let next_is_push = rest[0].is_empty();
    let child = match node {
        Value::Object(m) => m
            .entry(k.to_string())
            .or_insert_with(|| if next_is_push { Value::Array(vec![]) } else { Value::Object(Map::new()) }),
        Value::Array(a) if k.is_empty() => {
            a.push(Value::Object(Map::new()));
            a.last_mut().unwrap()
        }
        _ => return Err(()),
    };
    if next_is_push && rest.len() == 1 {
        if let Value::String(_) = child {
            return Err(());
        }
        if let Value::Object(m) = child {
            if m.is_empty() {
                *child = Value::Array(vec![]);
            }
        }
    }
    insert(child, rest, v)
}

/// The request's parameters: the form body (POST) or query (GET, DELETE), nested.
pub struct Params(pub Map<String, Value>);

impl Params {
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !matches!(v, Value::String(s) if s.is_empty()) || k == "metadata")
    }
    pub fn str(&self, k: &str) -> Option<&str> {
        self.get(k).and_then(Value::as_str)
    }
    pub fn has(&self, k: &str) -> bool {
        self.0.contains_key(k)
    }
    /// A whole number parameter; a malformed one is Stripe's `Invalid integer` error.
    pub fn int(&self, k: &str) -> Result<Option<i64>, StripeError> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => s.parse::<i64>().map(Some).map_err(|_| invalid(format!("Invalid integer: {s}")).param(k)),
            Some(Value::Number(n)) => Ok(n.as_i64()),
            Some(_) => Err(invalid(format!("Invalid integer: {k}")).param(k)),
        }
    }
    pub fn req_int(&self, k: &str) -> Result<i64, StripeError> {
        self.int(k)?.ok_or_else(|| missing(k))
    }
    pub fn bool(&self, k: &str) -> Result<Option<bool>, StripeError> {
        match self.str(k) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(s) => Err(invalid(format!("Invalid boolean: {s}")).param(k)),
        }
    }
    pub fn req_str(&self, k: &str) -> Result<&str, StripeError> {
        self.str(k).ok_or_else(|| missing(k))
    }
    pub fn strs(&self, k: &str) -> Vec<String> {
        match self.get(k) {
            Some(Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => vec![],
        }
    }
    /// Apply `metadata[...]` to an object's metadata: empty values unset keys; `metadata=""`
    /// clears it. Stripe's limits: 50 keys, keys ≤ 40 chars, values ≤ 500 chars.
    pub fn metadata_into(&self, obj: &mut Value) -> Result<(), StripeError> {
        let Some(md) = self.0.get("metadata") else { return Ok(()) };
        let target = obj["metadata"].as_object_mut().map(std::mem::take).unwrap_or_default();
        let mut target = target;
        match md {
            Value::String(s) if s.is_empty() => target.clear(),
            Value::Object(m) => {
                for (k, v) in m {
                    let v = v.as_str().unwrap_or("");
                    if k.chars().count() > 40 {
                        return Err(invalid(format!("Metadata keys can have up to 40 characters; the key `{k}` is too long.")).param(&format!("metadata[{k}]")));
                    }
                    if v.chars().count() > 500 {
                        return Err(invalid(format!("Metadata values can have up to 500 characters, but you passed in a value that is {} characters.", v.chars().count())).param(&format!("metadata[{k}]")));
                    }
                    if v.is_empty() {
                        target.remove(k);
                    } else {
                        target.insert(k.clone(), json!(v));
                    }
                }
                if target.len() > 50 {
                    return Err(invalid("You can have up to 50 metadata keys.").param("metadata"));
                }
            }
            _ => return Err(invalid("Invalid hash").param("metadata")),
        }
        obj["metadata"] = Value::Object(target);
        Ok(())
    }
    /// Copy plain string/nullable fields given in the request onto `obj`.
    /// [`Params::copy`] of one field into a typed object's field.
    pub fn copy_into(&self, name: &str, field: &mut Value) {
        if let Some(v) = self.0.get(name) {
            *field = match v {
                Value::String(s) if s.is_empty() => Value::Null,
                other => other.clone(),
            };
        }
    }

    /// [`Params::metadata_into`] of a typed object's `metadata` field.
    pub fn metadata_of(&self, metadata: &mut Value) -> Result<(), StripeError> {
        if !self.0.contains_key("metadata") {
            return Ok(());
        }
        let mut holder = Value::Object(serde_json::Map::new());
        holder["metadata"] = std::mem::take(metadata);
        let out = self.metadata_into(&mut holder);
        *metadata = holder["metadata"].take();
        out
    }

    pub fn copy(&self, obj: &mut Value, fields: &[&str]) {
        for f in fields {
            if let Some(v) = self.0.get(*f) {
                obj[*f] = match v {
                    Value::String(s) if s.is_empty() => Value::Null,
                    other => other.clone(),
                };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Ids: the prefix and 24 base62 characters derived from a counter, so the same requests
// give the same ids.

const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

pub fn base62(n: u64, width: usize) -> String {
    let mut out = String::with_capacity(width);
    push_base62(&mut out, n, width);
    out
}

/// Append `n` in base 62, `width` characters, most significant first.
fn push_base62(out: &mut String, mut n: u64, width: usize) {
    // A u64 has 11 base-62 digits; wider ids are zero-padded on the left.
    let mut buf = [b'0'; 11];
    for d in buf.iter_mut().rev() {
        *d = B62[(n % 62) as usize];
        n /= 62;
    }
    for _ in buf.len()..width {
        out.push('0');
    }
    let digits = &buf[buf.len().saturating_sub(width)..];
    out.push_str(std::str::from_utf8(digits).expect("base62 digits are ASCII"));
}

/// `prefix_` + 24 characters: a scrambled form of the counter (so ids look like Stripe's)
/// then the counter itself (so they stay unique).
pub fn make_id(prefix: &str, n: u64) -> String {
    let scrambled = n.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0x5DEE_CE66_D1CE_4E5B;
    let mut out = String::with_capacity(prefix.len() + 25);
    out.push_str(prefix);
    out.push('_');
    push_base62(&mut out, scrambled, 12);
    push_base62(&mut out, n, 12);
    out
}

// ---------------------------------------------------------------------------------------
// Lists.

/// Paginate `items` (newest first) by `limit`, `starting_after`, `ending_before`.
pub fn list_object(url: &str, items: Vec<Value>, p: &Params) -> Res {
    list_refs(url, items.iter().collect(), p)
}

/// [`list_object`] over borrowed objects: only the page is cloned.
pub fn list_refs(url: &str, items: Vec<&Value>, p: &Params) -> Res {
    let limit = p.int("limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(invalid("Invalid limit: must be between 1 and 100").param("limit"));
    }
    let limit = limit as usize;
    let pos = |id: &str, param: &str| -> Result<usize, StripeError> {
        items
            .iter()
            .position(|o| o["id"].as_str() == Some(id))
            .ok_or_else(|| invalid(format!("No such object: '{id}'")).code("resource_missing").param(param))
    };
    let (page, has_more): (Vec<Value>, bool) = if let Some(after) = p.str("starting_after") {
        let start = pos(after, "starting_after")? + 1;
        let rest = &items[start..];
        (rest.iter().take(limit).map(|v| (*v).clone()).collect(), rest.len() > limit)
    } else if let Some(before) = p.str("ending_before") {
        let end = pos(before, "ending_before")?;
        let start = end.saturating_sub(limit);
        (items[start..end].iter().map(|v| (*v).clone()).collect(), start > 0)
    } else {
        (items.iter().take(limit).map(|v| (*v).clone()).collect(), items.len() > limit)
    };
    // Built directly: `json!` would copy the page once more through the serializer.
    let mut m = Map::with_capacity(4);
    m.insert("object".into(), Value::String("list".into()));
    m.insert("data".into(), Value::Array(page));
    m.insert("has_more".into(), Value::Bool(has_more));
    m.insert("url".into(), Value::String(url.to_string()));
    Ok(Value::Object(m))
}

/// A list page cut from ids (newest first) and written straight from the stored text.
pub fn list_ids(w: &World, url: &str, ids: Vec<&String>, p: &Params) -> Res {
    let limit = p.int("limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(invalid("Invalid limit: must be between 1 and 100").param("limit"));
    }
    let limit = limit as usize;
    let pos = |id: &str, param: &str| -> Result<usize, StripeError> {
        ids.iter().position(|o| o.as_str() == id).ok_or_else(|| invalid(format!("No such object: '{id}'")).code("resource_missing").param(param))
    };
    let (page, has_more): (&[&String], bool) = if let Some(after) = p.str("starting_after") {
        let start = pos(after, "starting_after")? + 1;
        let rest = &ids[start..];
        (&rest[..rest.len().min(limit)], rest.len() > limit)
    } else if let Some(before) = p.str("ending_before") {
        let end = pos(before, "ending_before")?;
        let start = end.saturating_sub(limit);
        (&ids[start..end], start > 0)
    } else {
        (&ids[..ids.len().min(limit)], ids.len() > limit)
    };
    let mut out = String::with_capacity(64 + page.len() * 1024);
    out.push_str("{\"object\":\"list\",\"data\":[");
    for (i, id) in page.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if let Some(s) = w.objects.get(&crate::store::Id::of(id)) {
            crate::store::render_into(&mut out, &w.templates, s);
        }
    }
    out.push_str("],\"has_more\":");
    out.push_str(if has_more { "true" } else { "false" });
    out.push_str(",\"url\":");
    out.push_str(&serde_json::to_string(url).unwrap());
    out.push('}');
    Ok(raw(out))
}

thread_local! {
    /// A handler's answer already written as JSON text, taken by [`run`] in place of the
    /// `Value` the handler returned (see [`raw`]).
    static RAW_OUT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Answer with this JSON text: the handler returns the placeholder this gives back.
pub fn raw(text: String) -> Value {
    RAW_OUT.with(|r| *r.borrow_mut() = Some(text));
    Value::Null
}

fn take_raw() -> Option<String> {
    RAW_OUT.with(|r| r.borrow_mut().take())
}

/// A search result object (`object: search_result`, `next_page`, `total_count` absent).
pub fn search_object(url: &str, items: Vec<Value>, p: &Params) -> Res {
    // Search refuses a limit out of range as lists do (Stripe answers both the same way).
    let limit = p.int("limit")?.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(invalid("Invalid limit: must be between 1 and 100").param("limit"));
    }
    let limit = limit as usize;
    let start = match p.str("page") {
        Some(pg) => pg.strip_prefix("page_").and_then(|s| s.parse::<usize>().ok()).ok_or_else(|| invalid("Invalid page").param("page"))?,
        None => 0,
    };
    let start = start.min(items.len());
    let end = (start + limit).min(items.len());
    let has_more = end < items.len();
    Ok(json!({
        "object": "search_result",
        "data": items[start..end].to_vec(),
        "has_more": has_more,
        "next_page": if has_more { json!(format!("page_{end}")) } else { Value::Null },
        "url": url,
    }))
}

// ---------------------------------------------------------------------------------------
// The search query language (Stripe's "Search query language"): clauses `field:"value"`,
// `metadata["k"]:"v"`, `amount>1000`, `-field:"v"` for negation and `field~"val"` for a
// substring; clauses separated by spaces or joined by AND or OR (any case, never both).

/// One clause: a field, its operator and its value, negated by a leading `-`.
struct Clause {
    neg: bool,
    field: String,
    op: &'static str,
    value: String,
}

pub fn search_matches(query: &str, obj: &Value) -> Result<bool, StripeError> {
    let (clauses, any) = parse_query(query)?;
    let mut hits = clauses.iter().map(|c| clause_matches(c, obj));
    Ok(if any { hits.any(|h| h) } else { hits.all(|h| h) })
}

fn parse_error(near: &str) -> StripeError {
    invalid(format!("We were unable to parse your search query. Try checking the syntax near `{near}`.")).param("query")
}

/// The clauses of `query`, and whether they are joined by OR (else AND).
fn parse_query(query: &str) -> Result<(Vec<Clause>, bool), StripeError> {
    let q = query.trim();
    if q.is_empty() {
        return Err(invalid("Missing required param: query.").param("query"));
    }
    let chars: Vec<char> = q.chars().collect();
    let mut at = 0;
    let mut clauses = Vec::new();
    let mut joiner: Option<bool> = None;
    // Whether the last thing read was a keyword, which must be followed by a clause.
    let mut dangling = false;
    loop {
        while chars.get(at).is_some_and(|c| c.is_whitespace()) {
            at += 1;
        }
        if at >= chars.len() {
            break;
        }
        let word_end = (at..chars.len()).find(|&i| chars[i].is_whitespace()).unwrap_or(chars.len());
        let word: String = chars[at..word_end].iter().collect();
        if word.eq_ignore_ascii_case("and") || word.eq_ignore_ascii_case("or") {
            let is_or = word.eq_ignore_ascii_case("or");
            if clauses.is_empty() || dangling {
                return Err(parse_error(&word));
            }
            if joiner.is_some_and(|j| j != is_or) {
                return Err(invalid("Search queries cannot mix AND and OR.").param("query"));
            }
            joiner = Some(is_or);
            dangling = true;
            at = word_end;
            continue;
        }
        let (clause, next) = parse_clause(&chars, at)?;
        clauses.push(clause);
        dangling = false;
        at = next;
    }
    if dangling || clauses.is_empty() {
        return Err(parse_error(q));
    }
    if clauses.len() > 10 {
        return Err(invalid("Search queries can have up to 10 clauses.").param("query"));
    }
    Ok((clauses, joiner == Some(true)))
}

/// A quoted string starting at `at` (`"…"` or `'…'`, backslash escapes), and the index after it.
fn quoted(chars: &[char], at: usize) -> Option<(String, usize)> {
    let quote = *chars.get(at).filter(|c| **c == '"' || **c == '\'')?;
    let mut out = String::new();
    let mut i = at + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(chars[i + 1]);
                i += 2;
            }
            c if c == quote => return Some((out, i + 1)),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

fn parse_clause(chars: &[char], start: usize) -> Result<(Clause, usize), StripeError> {
    let rest_word = || -> String {
        let end = (start..chars.len()).find(|&i| chars[i].is_whitespace()).unwrap_or(chars.len());
        chars[start..end].iter().collect()
    };
    let mut at = start;
    let neg = chars.get(at) == Some(&'-');
    if neg {
        at += 1;
    }
    // The field: a dotted path, or `metadata[…]` with a quoted key.
    let mut field = String::new();
    while let Some(&c) = chars.get(at) {
        if c == '[' {
            let (key, after) = quoted(chars, at + 1).filter(|(_, after)| chars.get(*after) == Some(&']')).ok_or_else(|| parse_error(&rest_word()))?;
            field.push('[');
            field.push_str(&key);
            field.push(']');
            at = after + 1;
        } else if c.is_alphanumeric() || c == '_' || c == '.' {
            field.push(c);
            at += 1;
        } else {
            break;
        }
    }
    let two: String = chars[at..chars.len().min(at + 2)].iter().collect();
    let op = match () {
        _ if two == ">=" => ">=",
        _ if two == "<=" => "<=",
        _ => match chars.get(at) {
            Some(':') => ":",
            Some('~') => "~",
            Some('>') => ">",
            Some('<') => "<",
            Some('=') => ":",
            _ => return Err(parse_error(&rest_word())),
        },
    };
    if field.is_empty() {
        return Err(parse_error(&rest_word()));
    }
    at += if op.len() == 2 { 2 } else { 1 };
    let (value, next) = match quoted(chars, at) {
        Some(q) => q,
        None if chars.get(at).is_some_and(|c| *c == '"' || *c == '\'') => return Err(parse_error(&rest_word())),
        None => {
            let end = (at..chars.len()).find(|&i| chars[i].is_whitespace()).unwrap_or(chars.len());
            (chars[at..end].iter().collect::<String>(), end)
        }
    };
    if value.is_empty() && op != ":" {
        return Err(parse_error(&rest_word()));
    }
    if chars.get(next).is_some_and(|c| !c.is_whitespace()) {
        return Err(parse_error(&rest_word()));
    }
    let text: String = chars[start..next].iter().collect();
    if op == "~" && value.chars().count() < 3 {
        return Err(invalid("Substring matching requires at least 3 characters.").param("query"));
    }
    if matches!(op, ">" | "<" | ">=" | "<=") && value.parse::<f64>().is_err() {
        return Err(parse_error(&text));
    }
    Ok((Clause { neg, field, op, value }, next))
}

fn clause_matches(c: &Clause, obj: &Value) -> bool {
    let actual: &Value = match c.field.strip_prefix("metadata[").and_then(|s| s.strip_suffix(']')) {
        Some(k) => &obj["metadata"][k],
        None => c.field.split('.').fold(obj, |cur, part| &cur[part]),
    };
    // An expanded object compares by its id.
    let actual = if actual.is_object() { &actual["id"] } else { actual };
    let text = match actual {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    };
    let hit = match c.op {
        ":" if c.value == "null" || c.value.is_empty() => actual.is_null() || text.is_empty(),
        ":" => match (actual.as_f64(), c.value.parse::<f64>()) {
            (Some(a), Ok(b)) => a == b,
            // Stripe's string fields (emails, names, descriptions) match without regard to
            // case; its token fields (ids, statuses, currencies) and metadata match exactly.
            _ if TEXT_FIELDS.contains(&c.field.as_str()) => text.to_lowercase() == c.value.to_lowercase(),
            _ => text == c.value,
        },
        "~" => text.to_lowercase().contains(&c.value.to_lowercase()),
        op => match (actual.as_f64(), c.value.parse::<f64>()) {
            (Some(a), Ok(b)) => match op {
                ">" => a > b,
                "<" => a < b,
                ">=" => a >= b,
                _ => a <= b,
            },
            _ => false,
        },
    };
    hit != c.neg
}

/// The search fields Stripe types as `string` rather than `token`.
const TEXT_FIELDS: &[&str] = &["email", "name", "description", "phone", "statement_descriptor", "number", "receipt_number"];

// ---------------------------------------------------------------------------------------
// expand[]

/// Replace id strings named by `expand[]` paths (`customer`, `latest_charge.balance_transaction`,
/// `data.customer` inside lists) with the objects they name.
pub fn expand(w: &World, v: &mut Value, paths: &[String]) -> Result<(), StripeError> {
    // A path asked for twice expands once: repeating it must not repeat the work.
    too_many_expansions(paths)?;
    let mut done: Vec<&String> = Vec::new();
    for path in paths {
        if done.contains(&path) {
            continue;
        }
        done.push(path);
        let parts: Vec<&str> = path.split('.').collect();
        if parts.len() > 4 {
            return Err(invalid("You cannot expand more than 4 levels of a property.").param("expand"));
        }
        expand_one(w, v, &parts, path)?;
    }
    Ok(())
}

/// More distinct `expand[]` paths than [`MAX_EXPAND_PATHS`] is refused before anything runs.
fn too_many_expansions(paths: &[String]) -> Result<(), StripeError> {
    let mut distinct: Vec<&String> = paths.iter().collect();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > MAX_EXPAND_PATHS {
        return Err(invalid(format!("You cannot expand more than {MAX_EXPAND_PATHS} properties in one request.")).param("expand"));
    }
    Ok(())
}

/// An API object (one another path of the same request may have expanded already).
fn is_expanded_object(v: &Value) -> bool {
    // A list included only when expanded (a Checkout session's or quote's `line_items`)
    // counts as expanded too.
    v.get("object").is_some_and(Value::is_string) && (v.get("id").is_some() || v["object"] == "list")
}

fn expand_one(w: &World, v: &mut Value, parts: &[&str], full: &str) -> Result<(), StripeError> {
    let Some((first, rest)) = parts.split_first() else { return Ok(()) };
    if v.get("object").and_then(Value::as_str) == Some("list") || v.get("object").and_then(Value::as_str) == Some("search_result") {
        if *first == "data" {
            if let Some(items) = v["data"].as_array_mut() {
                for item in items {
                    expand_one(w, item, rest, full)?;
                }
            }
            return Ok(());
        }
    }
    let Some(obj) = v.as_object_mut() else { return Ok(()) };
    let Some(field) = obj.get_mut(*first) else {
        return Err(invalid(format!("This property cannot be expanded ({full}).")).param("expand"));
    };
    if let Value::String(id) = field {
        match w.get(id.as_str()) {
            Some(target) => *field = target,
            None => return Err(invalid(format!("This property cannot be expanded ({full}).")).param("expand")),
        }
    } else if field.is_null() {
        return Ok(());
    } else if rest.is_empty() && !is_expanded_object(field) && !field.is_array() {
        // A property that is not a reference (an amount, a hash like `metadata`) is refused,
        // as Stripe refuses `expand[]=amount`, not passed over.
        return Err(invalid(format!("This property cannot be expanded ({full}).")).param("expand"));
    }
    expand_one(w, field, rest, full)
}

// ---------------------------------------------------------------------------------------
// The request pipeline.

pub type Handler = fn(&mut World, &mut Call, &Params) -> Res;

/// A new request id (`req_…`), made the current request's.
pub fn next_request_id(w: &mut World) -> String {
    w.request_seq += 1;
    let request_id = format!("req_{}", base62(w.request_seq.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 8, 14));
    w.current_request = request_id.clone();
    request_id
}

mod known {
    include!(concat!(env!("OUT_DIR"), "/known_params.rs"));
}
pub use known::EVENT_TYPES;

/// Whether Stripe sends events of type `t` (or `t` is `*`, every type).
pub fn is_event_type(t: &str) -> bool {
    EVENT_TYPES.binary_search(&t).is_ok()
}

/// Serve one request through a handler: parameters, failure injection, idempotency,
/// `expand[]`, and Stripe's headers on every answer.
pub fn run(w: &mut World, call: &mut Call, f: Handler) -> Response {
    let answer = serve(w, call, f);
    // Scratch of this request only: the next starts without it, and snapshots never hold it.
    w.test_pms.clear();
    answer
}

fn serve(w: &mut World, call: &mut Call, f: Handler) -> Response {
    let request_id = next_request_id(w);
    let version = call.req.header("stripe-version").unwrap_or(crate::API_VERSION).to_string();
    let finish = |mut r: Response| -> Response {
        r = r.with_header("request-id", request_id.clone()).with_header("stripe-version", version.clone());
        r
    };
    if !crate::versions::is_known(&version, w.now()) {
        let e = invalid(format!("Invalid Stripe API version: {version}"));
        return Response::json(400, &e.body(&request_id)).with_header("request-id", request_id.clone());
    }

    let pairs = if matches!(call.req.method, Method::Post) {
        if call.req.is_json() && !call.req.body.is_empty() {
            // Stripe takes form bodies only; a JSON body reads as no parameters.
            Vec::new()
        } else if call.action.as_deref() == Some("files.create") {
            // Files come as `multipart/form-data` (files.stripe.com's upload): its text
            // fields are the parameters, the file part the handler's to read.
            match crate::api::multipart_pairs(&call.req) {
                Ok(p) => p,
                Err(e) => return finish(error_response(&e, &request_id)),
            }
        } else {
            call.req.form_pairs()
        }
    } else {
        call.req.query_pairs()
    };
    let mut params = match nest(&pairs) {
        Ok(m) => Params(m),
        Err(e) => return finish(error_response(&e, &request_id)),
    };
    if matches!(call.req.method, Method::Post) {
        // `expand[]` may come in the query of a POST too.
        for (k, v) in call.req.query_pairs() {
            if k == "expand[]" || k.starts_with("expand[") {
                let arr = params.0.entry("expand").or_insert_with(|| Value::Array(vec![]));
                if let Value::Array(a) = arr {
                    a.push(Value::String(v));
                }
            }
        }
    }

    if let Err(e) = too_many_expansions(&params.strs("expand")) {
        return finish(error_response(&e, &request_id));
    }
    // Every name, type and enum value, at every depth, as Stripe's description has them.
    if let Err(e) = crate::params::check(call.action.as_deref(), &params.0) {
        return finish(error_response(&e, &request_id));
    }

    // Failure injection: the Nth attempt of a method and path.
    let path = call.req.path.clone();
    let method = call.req.method.as_str().to_string();
    let key = format!("{method} {path}");
    // Attempts are counted only when a rule could fire, so a plain world keeps no per-path state.
    let attempt = if w.failure_injection.is_empty() {
        0
    } else {
        let n = w.attempts.entry(key).or_insert(0);
        *n += 1;
        *n
    };
    let rule = w
        .failure_injection
        .iter()
        .find(|r| r.method.eq_ignore_ascii_case(&method) && (r.path == path || r.path.is_empty()) && r.attempt.is_none_or(|a| a == attempt))
        .cloned();
    let injected = |r: &crate::FailureRule| {
        let mut body = r.body.clone().unwrap_or_else(|| json!({"error": {"type": "api_error", "message": "Injected failure."}}));
        if let Some(e) = body.get_mut("error").and_then(Value::as_object_mut) {
            e.entry("request_log_url").or_insert(json!(format!("https://dashboard.stripe.com/test/logs/{request_id}")));
        }
        finish(Response::json(r.status, &body))
    };
    if let Some(r) = rule.as_ref().filter(|r| r.mode == "before_handler") {
        return injected(r);
    }

    // Idempotency: POSTs with a key replay their first answer.
    let idem_key = if matches!(call.req.method, Method::Post) {
        call.req.header("idempotency-key").map(str::to_string)
    } else {
        None
    };
    let fingerprint = if idem_key.is_some() { format!("{method} {path} {}", String::from_utf8_lossy(&call.req.body)) } else { String::new() };
    // Stripe keeps a key for 24 hours: one older than that on the sandbox's clock is gone,
    // and the same key starts afresh.
    let now = w.now();
    forget_idempotency_keys(w, now);
    if let Some(k) = &idem_key {
        if let Some(prev) = w.idempotency.get(k) {
            // The fingerprint starts with the method and path it was first used on.
            let endpoint = |f: &str| f.splitn(3, ' ').take(2).collect::<Vec<_>>().join(" ");
            let (was, now) = (endpoint(&prev.fingerprint), endpoint(&fingerprint));
            if was != now {
                let first = was.split_once(' ').map_or(was.as_str(), |(_, p)| p).to_string();
                let e = StripeError::new(400, "idempotency_error", format!(
                    "Keys for idempotent requests can only be used for the same endpoint they were first used for ('{first}' vs '{path}'). Try using a key other than '{k}' if you meant to execute a different request."
                ));
                return finish(error_response(&e, &request_id));
            }
            if prev.fingerprint != fingerprint {
                let e = StripeError::new(400, "idempotency_error", format!(
                    "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '{k}' if you meant to execute a different request."
                ));
                return finish(error_response(&e, &request_id));
            }
            let mut r = Response::json(prev.status, &Value::Null);
            r.body = prev.body.clone().into_bytes();
            return finish(r.with_header("idempotent-replayed", "true").with_header("original-request", prev.request_id.clone()));
        }
    }

    w.current_idempotency_key = idem_key.clone();
    take_raw();
    let out = f(w, call, &params);
    let text = take_raw();
    let paths = params.strs("expand");
    let out = match (out, text) {
        (Ok(_), Some(text)) if paths.is_empty() => Ok(Err(text)),
        (Ok(_), Some(text)) => Ok(Ok(serde_json::from_str::<Value>(&text).expect("a rendered answer is JSON"))),
        (Ok(v), None) => Ok(Ok(v)),
        (Err(e), _) => Err(e),
    };
    let out = out.and_then(|v| match v {
        Ok(mut v) => {
            if !paths.is_empty() {
                expand(w, &mut v, &paths)?;
            }
            Ok(Ok(v))
        }
        text => Ok(text),
    });
    w.current_idempotency_key = None;
    let resp = match out {
        Ok(Ok(v)) => Response::json(200, &v),
        Ok(Err(text)) => {
            let mut r = Response::json(200, &Value::Null);
            r.body = text.into_bytes();
            r
        }
        Err(e) => error_response(&e, &request_id),
    };
    if let Some(k) = idem_key {
        // Stripe saves the result once the endpoint started executing; validation failures
        // (400 invalid_request_error without side effects) are not saved.
        let saved = resp.status == 200 || resp.status == 402;
        if saved {
            // Keys are forgotten 24 hours after their first use (above), oldest first.
            w.idempotency_order.push_back(k.clone());
            w.idempotency_bytes += k.len() + fingerprint.len() + resp.body.len();
            w.idempotency.insert(
                k,
                crate::IdemEntry {
                    fingerprint,
                    status: resp.status,
                    body: String::from_utf8_lossy(&resp.body).into_owned(),
                    request_id: request_id.clone(),
                    created: now,
                },
            );
        }
    }
    if let Some(r) = rule.as_ref().filter(|r| r.mode != "before_handler") {
        return injected(r);
    }
    finish(resp)
}

/// Let go of idempotency keys first used 24 hours or more before `now` on the sandbox's clock,
/// and of the oldest while the saved answers are over [`crate::IDEMPOTENCY_MAX_BYTES`].
pub fn forget_idempotency_keys(w: &mut World, now: i64) {
    while let Some(old) = w.idempotency_order.front() {
        let keep = match w.idempotency.get(old) {
            Some(e) => now - e.created < crate::IDEMPOTENCY_KEPT_SECS && w.idempotency_bytes <= crate::IDEMPOTENCY_MAX_BYTES,
            None => false,
        };
        if keep {
            break;
        }
        let old = w.idempotency_order.pop_front().expect("a front key");
        if let Some(e) = w.idempotency.remove(&old) {
            w.idempotency_bytes = w.idempotency_bytes.saturating_sub(old.len() + e.fingerprint.len() + e.body.len());
        }
    }
}

pub fn error_response(e: &StripeError, request_id: &str) -> Response {
    Response::json(e.status, &e.body(request_id))
}
