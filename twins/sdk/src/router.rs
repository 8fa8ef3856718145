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
            .collect();
        self.routes.push(Route {
            method,
            pattern: pattern.to_string(),
            segs,
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
        let path = call.req.path.clone();
        let segs: Vec<&str> = split(&path).collect();
        let mut best: Option<(&Route<T>, Vec<u8>, Vec<(String, String)>)> = None;
        for route in &self.routes {
            if route.method.is_some_and(|m| m != method) {
                continue;
            }
            if let Some((score, params)) = matches(&route.segs, &segs) {
                if best.as_ref().is_none_or(|(_, s, _)| score > *s) {
                    best = Some((route, score, params));
                }
            }
        }
        match best {
            Some((route, _, params)) => {
                call.params = params;
                call.action = Some(route.action.clone());
                (route.handler)(world, call)
            }
            None => {
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

/// Specificity score (2 literal, 1 param, 0 tail per segment) and captured params.
fn matches(pattern: &[Seg], path: &[&str]) -> Option<(Vec<u8>, Vec<(String, String)>)> {
    // Reject on length and literals before allocating anything: most routes of a large
    // table fail here, and this runs for every route on every request.
    let has_tail = matches!(pattern.last(), Some(Seg::Tail(_)));
    if (has_tail && path.len() < pattern.len()) || (!has_tail && path.len() != pattern.len()) {
        return None;
    }
    for (seg, p) in pattern.iter().zip(path) {
        if let Seg::Lit(lit) = seg {
            if lit != p {
                return None;
            }
        }
    }
    let mut score = Vec::with_capacity(pattern.len());
    let mut params = Vec::new();
    for (i, seg) in pattern.iter().enumerate() {
        match seg {
            Seg::Tail(name) => {
                if i >= path.len() {
                    return None;
                }
                let rest: Vec<String> = path[i..].iter().map(|s| decode_segment(s)).collect();
                params.push((name.clone(), rest.join("/")));
                score.push(0);
                return Some((score, params));
            }
            Seg::Lit(lit) => {
                if path.get(i) != Some(&lit.as_str()) {
                    return None;
                }
                score.push(2);
            }
            Seg::Param(name) => {
                let v = path.get(i)?;
                params.push((name.clone(), decode_segment(v)));
                score.push(1);
            }
        }
    }
    (pattern.len() == path.len()).then_some((score, params))
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
        let (lit, _) = matches(&pat("/repos/{o}/{r}/issues/comments"), &path).unwrap();
        let (par, params) = matches(&pat("/repos/{o}/{r}/issues/{n}"), &path).unwrap();
        assert!(lit > par);
        assert_eq!(params[2], ("n".to_string(), "comments".to_string()));
    }
}
