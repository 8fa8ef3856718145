//! A repository with a thousand issues: paging through it sees every issue exactly once, and
//! the answer cache never serves a page the world has moved past. (How fast it is belongs to
//! `make bench`, which lists a page of 30 out of 1,000 issues through the real host.)

mod common;
use std::collections::BTreeSet;

use common::*;
use pome_twin_sdk::{Method, json};

/// The `rel="next"` target of a `Link` header, as a path the router takes.
fn next_link(link: Option<&str>) -> Option<String> {
    let part = link?.split(',').find(|p| p.contains("rel=\"next\""))?;
    let url = part.trim().trim_start_matches('<').split('>').next()?;
    Some(url.strip_prefix("http://h/s/ses_1/github")?.to_string())
}

#[test]
fn paging_through_a_thousand_issues_sees_each_once() {
    let mut w = world();
    for i in 0..1000 {
        let (s, _) = post(&mut w, "/repos/acme/api/issues", json!({"title": format!("issue {i}"), "labels": ["bug"], "milestone": 1, "assignees": ["alice"]}));
        assert_eq!(s, 201);
    }
    let mut seen = BTreeSet::new();
    let mut pages = 0;
    let mut next = Some("/repos/acme/api/issues".to_string());
    while let Some(path) = next {
        let (r, page, _) = call(&mut w, Method::Get, &path, None);
        assert_eq!(r.status, 200, "{path}");
        let items = page.as_array().unwrap();
        assert!(items.len() <= 30, "{path}: {} items", items.len());
        for it in items {
            assert!(seen.insert(it["number"].as_u64().unwrap()), "{path}: #{} seen twice", it["number"]);
        }
        pages += 1;
        next = next_link(r.header("link"));
    }
    // Open issues and pull requests (GitHub lists both): the seed's #1 and #3, and the 1,000 new.
    assert_eq!(seen.len(), 1002);
    assert!(!seen.contains(&2), "the closed issue is not listed by default");
    assert_eq!(pages, 34);
}

#[test]
fn cached_answers_follow_every_write() {
    let mut w = world();
    let (_, a) = get(&mut w, "/repos/acme/api/issues/1");
    let (_, b) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(a, b);
    patch(&mut w, "/repos/acme/api/issues/1", json!({"title": "changed"}));
    let (_, c) = get(&mut w, "/repos/acme/api/issues/1");
    assert_eq!(c["title"], "changed");
    // A page of a list moves with the world too.
    let (_, before) = get(&mut w, "/repos/acme/api/issues?per_page=1");
    post(&mut w, "/repos/acme/api/issues", json!({"title": "newest"}));
    let (_, after) = get(&mut w, "/repos/acme/api/issues?per_page=1");
    assert_ne!(before[0]["number"], after[0]["number"]);
    assert_eq!(after[0]["title"], "newest");
    // A restored world is a new world to the cache.
    let bytes = postcard::to_stdvec(&w).unwrap();
    let mut restored: twin_github::World = postcard::from_bytes(&bytes).unwrap();
    let (_, d) = get(&mut restored, "/repos/acme/api/issues/1");
    assert_eq!(d["title"], "changed");
}
