//! Hostile input to the git data API: paths nested past the tree writer's bound and trees
//! whose subtrees share children are refused with GitHub's 422; a recursive tree listing
//! walks with a stack of its own and stops at GitHub's entry limit, saying `truncated`.

mod common;
use common::*;
use pome_twin_sdk::json;
use twin_github::git::MAX_PATH_DEPTH;

fn nested_path(depth: usize) -> String {
    let mut p = "d/".repeat(depth - 1);
    p.push_str("f.txt");
    p
}

#[test]
fn a_file_nested_to_the_path_depth_limit_is_written_and_listed_obeyed() {
    let mut w = world();
    let path = nested_path(MAX_PATH_DEPTH);
    let (s, v) = put(&mut w, &format!("/repos/acme/api/contents/{path}"), json!({"message": "deep", "content": "aGk="}));
    assert_eq!(s, 201, "{v}");
    let (s, tree) = get(&mut w, "/repos/acme/api/git/trees/main?recursive=1");
    assert_eq!(s, 200);
    assert!(tree["tree"].as_array().unwrap().iter().any(|e| e["path"] == path.as_str()), "the deepest file is listed");
    assert_eq!(tree["truncated"], false);
}

#[test]
fn a_path_nested_past_the_limit_is_a_422_by_every_way_in_violated() {
    let mut w = world();
    let path = nested_path(MAX_PATH_DEPTH + 1);
    let (s, v) = put(&mut w, &format!("/repos/acme/api/contents/{path}"), json!({"message": "deep", "content": "aGk="}));
    assert_eq!(s, 422, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| m.contains("deep")), "{v}");
    let deep = nested_path(50_000);
    let (s, v) = post(&mut w, "/repos/acme/api/git/trees", json!({"tree": [{"path": deep, "mode": "100644", "type": "blob", "content": "x"}]}));
    assert_eq!(s, 422, "{v}");
    assert_eq!(get(&mut w, "/repos/acme/api/git/trees/main?recursive=1").0, 200, "the repository reads on");
}

#[test]
fn trees_that_share_subtrees_stop_at_githubs_entry_limit() {
    let mut w = world();
    let (s, t) = post(&mut w, "/repos/acme/api/git/trees", json!({"tree": [{"path": "f", "mode": "100644", "type": "blob", "content": "x"}]}));
    assert_eq!(s, 201, "{t}");
    let mut sha = t["sha"].as_str().unwrap().to_string();
    // Each tree names the previous one twice: the files double with each request.
    let mut refused = None;
    for i in 0..40 {
        let (s, t) = post(&mut w, "/repos/acme/api/git/trees", json!({"tree": [
            {"path": "a", "mode": "040000", "type": "tree", "sha": sha},
            {"path": "b", "mode": "040000", "type": "tree", "sha": sha},
        ]}));
        if s == 422 {
            refused = Some((i, t));
            break;
        }
        assert_eq!(s, 201, "{t}");
        sha = t["sha"].as_str().unwrap().to_string();
    }
    let (i, v) = refused.expect("refused before 2^40 files");
    // Request i would make 2^(i+1) files: the 17th (i = 16, 131,072 files) is the first past.
    assert_eq!(i, 16, "{v}");
    assert!(v["message"].as_str().unwrap().contains("100000"), "{v}");
    // The largest tree that was made lists in full or truncated, never a failure.
    let (s, tree) = get(&mut w, &format!("/repos/acme/api/git/trees/{sha}?recursive=1"));
    assert_eq!(s, 200);
    assert!(tree["tree"].as_array().unwrap().len() <= 100_000);
}
