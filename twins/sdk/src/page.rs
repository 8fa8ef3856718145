//! Pagination helpers: page-number pages with an RFC 8288 `Link` header (GitHub) and opaque
//! cursors (Slack, Stripe-style).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::http::Request;

/// One page of a list, with what a `Link` header needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageInfo {
    /// 1-based page number requested.
    pub page: usize,
    pub per_page: usize,
    /// Number of pages (at least 1).
    pub last: usize,
}

impl PageInfo {
    /// Read `page`/`per_page` from the query, with the API's default and cap.
    pub fn from_query(req: &Request, default_per_page: usize, max_per_page: usize) -> (usize, usize) {
        let per_page = req
            .query("per_page")
            .and_then(|v| v.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(default_per_page)
            .min(max_per_page);
        let page = req.query("page").and_then(|v| v.parse::<usize>().ok()).filter(|&n| n > 0).unwrap_or(1);
        (page, per_page)
    }

    /// The index range of `total` items that this page covers.
    pub fn range(&self, total: usize) -> std::ops::Range<usize> {
        let start = (self.page - 1).saturating_mul(self.per_page).min(total);
        let end = start.saturating_add(self.per_page).min(total);
        start..end
    }

    pub fn new(page: usize, per_page: usize, total: usize) -> PageInfo {
        PageInfo { page, per_page, last: total.div_ceil(per_page).max(1) }
    }

    /// `Link` header value for this page, or `None` when everything fits on one page.
    /// Built like GitHub's: `prev`, `next`, `last`, `first` as applicable, each URL the
    /// request's own (under the client's base URL) with `page` replaced.
    pub fn link_header(&self, req: &Request) -> Option<String> {
        if self.last <= 1 && self.page <= 1 {
            return None;
        }
        let url_for = |page: usize| {
            let mut q = form_urlencoded::Serializer::new(String::new());
            let mut saw_page = false;
            for (k, v) in req.query_pairs() {
                if k == "page" {
                    saw_page = true;
                    q.append_pair("page", &page.to_string());
                } else {
                    q.append_pair(&k, &v);
                }
            }
            if !saw_page {
                q.append_pair("page", &page.to_string());
            }
            format!("{}{}?{}", req.base_url, req.path, q.finish())
        };
        let mut links = Vec::new();
        if self.page > 1 {
            links.push(format!("<{}>; rel=\"prev\"", url_for((self.page - 1).min(self.last))));
        }
        if self.page < self.last {
            links.push(format!("<{}>; rel=\"next\"", url_for(self.page + 1)));
            links.push(format!("<{}>; rel=\"last\"", url_for(self.last)));
        }
        if self.page > 1 {
            links.push(format!("<{}>; rel=\"first\"", url_for(1)));
        }
        (!links.is_empty()).then(|| links.join(", "))
    }
}

/// An opaque cursor naming a position (`kind:offset`), base64 like Slack's.
pub fn encode_cursor(kind: &str, offset: usize) -> String {
    STANDARD.encode(format!("{kind}:{offset}"))
}

/// Decode a cursor made by [`encode_cursor`] for the same `kind`.
pub fn decode_cursor(kind: &str, cursor: &str) -> Option<usize> {
    let raw = STANDARD.decode(cursor.trim()).ok()?;
    let text = String::from_utf8(raw).ok()?;
    text.strip_prefix(kind)?.strip_prefix(':')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Method, Request};

    #[test]
    fn link_header_keeps_other_query_parameters_and_the_base() {
        let mut req = Request::new(Method::Get, "/repos/a/b/issues?state=all&per_page=2&page=2");
        req.base_url = "http://h/s/ses_1/github".into();
        let p = PageInfo::new(2, 2, 5);
        assert_eq!(p.last, 3);
        assert_eq!(
            p.link_header(&req).unwrap(),
            "<http://h/s/ses_1/github/repos/a/b/issues?state=all&per_page=2&page=1>; rel=\"prev\", \
             <http://h/s/ses_1/github/repos/a/b/issues?state=all&per_page=2&page=3>; rel=\"next\", \
             <http://h/s/ses_1/github/repos/a/b/issues?state=all&per_page=2&page=3>; rel=\"last\", \
             <http://h/s/ses_1/github/repos/a/b/issues?state=all&per_page=2&page=1>; rel=\"first\""
        );
        assert_eq!(p.range(5), 2..4);
    }

    #[test]
    fn cursors_round_trip_and_reject_other_kinds() {
        let c = encode_cursor("msg", 40);
        assert_eq!(decode_cursor("msg", &c), Some(40));
        assert_eq!(decode_cursor("user", &c), None);
        assert_eq!(decode_cursor("msg", "not base64!"), None);
    }
}
