//! Path routing: each route is a named action (the tape's `action`) bound to a method and a
//! pattern such as `/repos/{owner}/{repo}/issues/{number}`. `{*rest}` as the last segment
//! takes the remainder of the path, slashes included.
//!
//! When several patterns match, the most specific wins: segment by segment, a literal beats
//! a parameter, which beats a tail. So route order in a twin's table does not matter.
//!
//! A twin has a hundred or more routes and routing runs on every request, so the patterns
//! are kept as a tree of segments, searched depth first trying a literal, then a parameter,
//! then a tail at each segment: the first route found is the most specific, in steps as
//! many as the path has segments.

use std::collections::BTreeMap;

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
    /// The patterns as a tree; `nodes[0]` is the root (the path `/`).
    nodes: Vec<Node>,
}

/// The patterns that share the segments leading here.
#[derive(Default)]
struct Node {
    /// The next segment, literally.
    literals: BTreeMap<String, usize>,
    /// The next segment as a parameter.
    param: Option<usize>,
    /// Routes whose pattern ends here with a tail (one segment or more), in table order.
    tails: Vec<usize>,
    /// Routes whose pattern ends here, in table order.
    ends: Vec<usize>,
}

impl<T> Default for Router<T> {
    fn default() -> Self {
        Router::new()
    }
}

impl<T> Router<T> {
    pub fn new() -> Self {
        Router { routes: Vec::new(), nodes: vec![Node::default()] }
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
        let at = self.routes.len();
        let mut node = 0;
        for seg in &segs {
            let next = match seg {
                Seg::Tail(_) => break,
                Seg::Lit(lit) => self.nodes[node].literals.get(lit).copied(),
                Seg::Param(_) => self.nodes[node].param,
            };
            node = next.unwrap_or_else(|| {
                self.nodes.push(Node::default());
                let new = self.nodes.len() - 1;
                match seg {
                    Seg::Lit(lit) => self.nodes[node].literals.insert(lit.clone(), new),
                    _ => self.nodes[node].param.replace(new),
                };
                new
            });
        }
        match segs.iter().any(|s| matches!(s, Seg::Tail(_))) {
            true => self.nodes[node].tails.push(at),
            false => self.nodes[node].ends.push(at),
        }
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

    /// The route serving `method` on `segs`: the most specific (segment by segment, a
    /// literal beats a parameter, which beats a tail), the earliest in the table among equals.
    fn best(&self, method: Method, segs: &[&str]) -> Option<&Route<T>> {
        self.search(0, method, segs).map(|i| &self.routes[i])
    }

    /// Depth first from `node`, with `segs` left to match: literal, then parameter, then
    /// tail, so the first route found is the most specific. Allocates nothing.
    fn search(&self, node: usize, method: Method, segs: &[&str]) -> Option<usize> {
        let node = &self.nodes[node];
        let takes = |&&i: &&usize| self.routes[i].method.is_none_or(|m| m == method);
        let Some((seg, rest)) = segs.split_first() else {
            return node.ends.iter().find(takes).copied();
        };
        node.literals
            .get(*seg)
            .and_then(|&n| self.search(n, method, rest))
            .or_else(|| node.param.and_then(|n| self.search(n, method, rest)))
            .or_else(|| node.tails.iter().find(takes).copied())
    }
}

impl<T: crate::Twin> Router<T> {
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
        let best = self.best(method, &segs);
        let params = best.map(|route| capture(&route.segs, &segs));
        call.req.path = path;
        match (best, params) {
            (Some(route), Some(params)) => {
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
    fn a_parameter_captures_its_segment_decoded() {
        let table = [(Some(Method::Get), "/repos/{o}/{r}/issues/{n}", "issues.get")];
        let router = router_of(&table);
        let segs: Vec<&str> = split("/repos/a/b%20c/issues/comments").collect();
        let route = router.best(Method::Get, &segs).unwrap();
        let params = capture(&route.segs, &segs);
        assert_eq!(params, [("o", "a"), ("r", "b c"), ("n", "comments")].map(|(k, v)| (k.to_string(), v.to_string())));
    }

    /// The rule the tree must keep, as it was first written: score every route, segment by
    /// segment a literal 2, a parameter 1, a tail 0 (two bits each, most significant first).
    fn score(pattern: &[Seg], path: &[&str]) -> Option<u64> {
        let mut score = 0u64;
        for (i, seg) in pattern.iter().enumerate() {
            let shift = 62u32.saturating_sub(2 * i as u32);
            match seg {
                Seg::Tail(_) => return (i < path.len()).then_some(score),
                Seg::Lit(lit) if path.get(i) == Some(&lit.as_str()) => score |= 2 << shift,
                Seg::Lit(_) => return None,
                Seg::Param(_) => {
                    path.get(i)?;
                    score |= 1 << shift;
                }
            }
        }
        (pattern.len() == path.len()).then_some(score)
    }

    #[test]
    fn the_tree_finds_what_scoring_every_route_finds() {
        let table = [
            (None, "/{*all}", "any.tail"),
            (Some(Method::Get), "/a", "a"),
            (Some(Method::Post), "/a/{x}", "a.x.post"),
            (None, "/a/{x}", "a.x"),
            (Some(Method::Get), "/a/b", "a.b"),
            (Some(Method::Get), "/a/{x}/c", "a.x.c"),
            (Some(Method::Get), "/a/b/{y}", "a.b.y"),
            (None, "/a/b/{*rest}", "a.b.tail"),
            (Some(Method::Get), "/{x}/b/c", "x.b.c"),
            (Some(Method::Post), "/{x}/{y}/{z}", "x.y.z"),
            (Some(Method::Get), "/b/{x}/{*rest}", "b.x.tail"),
            (Some(Method::Get), "/b/c", "b.c"),
            (None, "/", "root"),
        ];
        let router = router_of(&table);
        let mut paths = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = paths.iter().flat_map(|p| ["a", "b", "c", "d"].map(|s| format!("{p}/{s}"))).collect();
            paths.extend(longer);
        }
        paths.sort();
        paths.dedup();
        for path in &paths {
            let segs: Vec<&str> = split(path).collect();
            for method in [Method::Get, Method::Post, Method::Delete] {
                let mut want: Option<(usize, u64)> = None;
                for (i, r) in router.routes.iter().enumerate() {
                    if r.method.is_some_and(|m| m != method) {
                        continue;
                    }
                    if let Some(s) = score(&r.segs, &segs)
                        && want.is_none_or(|(_, b)| s > b)
                    {
                        want = Some((i, s));
                    }
                }
                let want = want.map(|(i, _)| router.routes[i].action.as_str());
                assert_eq!(router.best(method, &segs).map(|r| r.action.as_str()), want, "{method:?} {path:?}");
            }
        }
    }

    fn never(_: &mut (), _: &mut Call) -> Response {
        unreachable!("routing tests only choose")
    }

    /// A router of `(method, pattern, action)` rows, in table order.
    fn router_of(table: &[(Option<Method>, &str, &str)]) -> Router<()> {
        table.iter().fold(Router::<()>::new(), |r, (m, p, a)| r.route(*m, p, a, Fidelity::Semantic, never))
    }

    /// Which action `method path` reaches in a table of `(method, pattern, action)`.
    fn chosen(table: &[(Option<Method>, &str, &str)], method: Method, path: &str) -> Option<String> {
        let router = router_of(table);
        let segs: Vec<&str> = split(path).collect();
        router.best(method, &segs).map(|r| r.action.clone())
    }

    #[test]
    fn a_literal_route_wins_wherever_it_stands_in_the_table() {
        let table = [
            (Some(Method::Get), "/repos/{o}/{r}/issues/{n}", "issues.get"),
            (Some(Method::Get), "/repos/{o}/{r}/issues/comments", "comments.list"),
            (Some(Method::Get), "/repos/acme/api/issues/comments", "all.literal"),
            (None, "/api/{*rest}", "api.any"),
        ];
        assert_eq!(chosen(&table, Method::Get, "/repos/a/b/issues/7").as_deref(), Some("issues.get"));
        assert_eq!(chosen(&table, Method::Get, "/repos/a/b/issues/comments").as_deref(), Some("comments.list"));
        assert_eq!(chosen(&table, Method::Get, "/repos/acme/api/issues/comments").as_deref(), Some("all.literal"));
        // Empty segments do not count.
        assert_eq!(chosen(&table, Method::Get, "//repos/acme//api/issues/comments/").as_deref(), Some("all.literal"));
        assert_eq!(chosen(&table, Method::Post, "/api/auth.test").as_deref(), Some("api.any"));
        assert_eq!(chosen(&table, Method::Get, "/repos/a/b/pulls/7"), None);
    }

    #[test]
    fn a_literal_route_of_another_method_leaves_the_path_to_the_others() {
        let table = [
            (Some(Method::Post), "/api/chat.postMessage", "chat.post"),
            (Some(Method::Get), "/api/{method}", "api.get"),
            (None, "/{*rest}", "fallback"),
        ];
        assert_eq!(chosen(&table, Method::Post, "/api/chat.postMessage").as_deref(), Some("chat.post"));
        assert_eq!(chosen(&table, Method::Get, "/api/chat.postMessage").as_deref(), Some("api.get"));
        assert_eq!(chosen(&table, Method::Delete, "/api/chat.postMessage").as_deref(), Some("fallback"));
    }

    #[test]
    fn among_equal_routes_the_first_in_the_table_wins() {
        let table = [
            (Some(Method::Get), "/a/{x}", "first.param"),
            (None, "/a/{y}", "second.param"),
            (None, "/b", "first.literal"),
            (Some(Method::Get), "/b", "second.literal"),
            (None, "/c/{*one}", "first.tail"),
            (None, "/c/{*two}", "second.tail"),
        ];
        assert_eq!(chosen(&table, Method::Get, "/a/1").as_deref(), Some("first.param"));
        assert_eq!(chosen(&table, Method::Post, "/a/1").as_deref(), Some("second.param"));
        assert_eq!(chosen(&table, Method::Get, "/b").as_deref(), Some("first.literal"));
        assert_eq!(chosen(&table, Method::Get, "/c/d/e").as_deref(), Some("first.tail"));
    }
}
