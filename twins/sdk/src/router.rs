//! Path routing: each route is a named action (the tape's `action`) bound to a method and a
//! pattern such as `/repos/{owner}/{repo}/issues/{number}`. `{*rest}` as the last segment
//! takes the remainder of the path, slashes included.
//!
//! When several patterns match, the most specific wins: segment by segment, a literal beats
//! a parameter, which beats a tail. So route order in a twin's table does not matter.

use crate::call::Call;
use crate::describe::{Fidelity, RouteDecl};
use crate::http::{Method, Response, decode_segment};

pub type Handler<T> = fn(&mut T, &mut Call) -> Response;

enum Seg {
    Lit(String),
    Param(String),
    Tail(String),
}

struct Route<T> {
    method: Option<Method>,
    pattern: String,
    segs: Vec<Seg>,
    /// Paths this route can match have exactly this many segments (`None` with a tail).
    len: Option<usize>,
    action: String,
    fidelity: Fidelity,
    handler: Handler<T>,
}

pub struct Router<T> {
    routes: Vec<Route<T>>,
}

impl<T: crate::Twin> Default for Router<T> {
    fn default() -> Self {
        Router::new()
    }
}

impl<T: crate::Twin> Router<T> {
    pub fn new() -> Self {
        Router { routes: Vec::new() }
    }

    /// Add a route; `method: None` accepts any method (RPC-style APIs).
    pub fn route(
        mut self,
        method: Option<Method>,
        pattern: &str,
        action: &str,
        fidelity: Fidelity,
        handler: Handler<T>,
    ) -> Self {
        let segs = split(pattern)
            .map(|s| {
                if let Some(name) = s.strip_prefix("{*").and_then(|s| s.strip_suffix('}')) {
                    Seg::Tail(name.to_string())
                } else if let Some(name) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Seg::Param(name.to_string())
                } else {
                    Seg::Lit(s.to_string())
                }
            })
            .collect::<Vec<_>>();
        let len = (!segs.iter().any(|s| matches!(s, Seg::Tail(_)))).then_some(segs.len());
        self.routes.push(Route {
            method,
            pattern: pattern.to_string(),
            segs,
            len,
            action: action.to_string(),
            fidelity,
            handler,
        });
        self
    }

    pub fn get(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(Some(Method::Get), pattern, action, Fidelity::Semantic, h)
    }
    pub fn post(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(Some(Method::Post), pattern, action, Fidelity::Semantic, h)
    }
    pub fn put(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(Some(Method::Put), pattern, action, Fidelity::Semantic, h)
    }
    pub fn patch(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(Some(Method::Patch), pattern, action, Fidelity::Semantic, h)
    }
    pub fn delete(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(Some(Method::Delete), pattern, action, Fidelity::Semantic, h)
    }
    pub fn any(self, pattern: &str, action: &str, h: Handler<T>) -> Self {
        self.route(None, pattern, action, Fidelity::Semantic, h)
    }

    /// Serve `call`: run the best matching route's handler, or the twin's `unsupported`
    /// answer (marking the call unsupported) when none matches.
    pub fn dispatch(&self, world: &mut T, call: &mut Call) -> Response {
        let method = if call.req.method == Method::Head { Method::Get } else { call.req.method };
        let path = std::mem::take(&mut call.req.path);
        let segs: Vec<&str> = split(&path).collect();
        // Scoring allocates nothing; only the winner's parameters are captured.
        let mut best: Option<(&Route<T>, u64)> = None;
        for route in &self.routes {
            // Cheap refusals first: a twin has a hundred or more routes and this runs on
            // every request.
            if route.method.is_some_and(|m| m != method) || route.len.is_some_and(|n| n != segs.len()) {
                continue;
            }
            if let Some(score) = score(&route.segs, &segs) {
                if best.is_none_or(|(_, s)| score > s) {
                    best = Some((route, score));
                }
            }
        }
        let params = best.map(|(route, _)| capture(&route.segs, &segs));
        call.req.path = path;
        match (best, params) {
            (Some((route, _)), Some(params)) => {
                call.params = params;
                call.action = Some(route.action.clone());
                (route.handler)(world, call)
            }
            _ => {
                call.unsupported = true;
                T::unsupported(call)
            }
        }
    }

    /// The declared surface, for `describe`.
    pub fn surface(&self) -> Vec<RouteDecl> {
        self.routes
            .iter()
            .map(|r| RouteDecl {
                method: r.method.map(|m| m.as_str()).unwrap_or("*").to_string(),
                path: r.pattern.clone(),
                action: r.action.clone(),
                fidelity: r.fidelity,
            })
            .collect()
    }
}

fn split(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// Specificity of `pattern` for `path`, or `None` if it does not match. Segment by segment
/// (most significant first) a literal scores 2, a parameter 1, a tail 0; two bits each.
fn score(pattern: &[Seg], path: &[&str]) -> Option<u64> {
    let mut score = 0u64;
    for (i, seg) in pattern.iter().enumerate() {
        let shift = 62u32.saturating_sub(2 * i as u32);
        match seg {
            Seg::Tail(_) => return (i < path.len()).then_some(score),
            Seg::Lit(lit) => {
                if path.get(i) != Some(&lit.as_str()) {
                    return None;
                }
                score |= 2 << shift;
            }
            Seg::Param(_) => {
                path.get(i)?;
                score |= 1 << shift;
            }
        }
    }
    (pattern.len() == path.len()).then_some(score)
}

/// The parameters `pattern` captures from `path` (which it matches).
fn capture(pattern: &[Seg], path: &[&str]) -> Vec<(String, String)> {
    let mut params = Vec::new();
    for (i, seg) in pattern.iter().enumerate() {
        match seg {
            Seg::Tail(name) => {
                let rest: Vec<String> = path[i..].iter().map(|s| decode_segment(s)).collect();
                params.push((name.clone(), rest.join("/")));
                break;
            }
            Seg::Param(name) => params.push((name.clone(), decode_segment(path[i]))),
            Seg::Lit(_) => {}
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_beats_parameter_whatever_the_order() {
        let pat = |p: &str| -> Vec<Seg> {
            split(p)
                .map(|s| match s.strip_prefix('{') {
                    Some(n) => Seg::Param(n.trim_end_matches('}').into()),
                    None => Seg::Lit(s.into()),
                })
                .collect()
        };
        let path: Vec<&str> = split("/repos/a/b/issues/comments").collect();
        let lit = score(&pat("/repos/{o}/{r}/issues/comments"), &path).unwrap();
        let par = score(&pat("/repos/{o}/{r}/issues/{n}"), &path).unwrap();
        assert!(lit > par);
        let params = capture(&pat("/repos/{o}/{r}/issues/{n}"), &path);
        assert_eq!(params[2], ("n".to_string(), "comments".to_string()));
    }
}
