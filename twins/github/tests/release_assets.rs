//! Release assets through the router (#34, item 4): upload at the release's `upload_url`
//! with the file as the body, list, get, the octet-stream redirect, the file served at
//! `browser_download_url` (counted), rename and relabel, delete, and the twin's size limits,
//! each obeyed and violated.

mod common;
use common::*;
use pome_twin_sdk::{Call, Method, Request, Response, Twin, Value, json};
use twin_github::World;
use twin_github::limits::{MAX_ASSET_BYTES, MAX_ASSET_BYTES_PER_SANDBOX};

const BASE: &str = "http://h/s/ses_1/github";

/// One request with a raw body and headers, as PyGithub's `upload_asset` sends it.
fn raw(w: &mut World, method: Method, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (Response, Call) {
    let mut req = Request::new(method, path);
    req.base_url = BASE.into();
    req.body = body;
    for (k, v) in headers {
        req.headers.push((k.to_string(), v.to_string()));
    }
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    (r, c)
}

fn release(w: &mut World, tag: &str) -> Value {
    let (s, v) = post(w, "/repos/acme/api/releases", json!({"tag_name": tag}));
    assert_eq!(s, 201, "{v}");
    v
}

/// The upload path of a release: its `upload_url` without the `{?name,label}` template.
fn upload_path(rel: &Value) -> String {
    let u = rel["upload_url"].as_str().unwrap();
    u.strip_prefix(BASE).unwrap().split('{').next().unwrap().to_string()
}

fn upload(w: &mut World, rel: &Value, query: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let path = format!("{}?{query}", upload_path(rel));
    let (r, _) = raw(w, Method::Post, &path, &[("content-type", content_type)], body);
    (r.status, r.json_body())
}

fn local(url: &Value) -> String {
    url.as_str().unwrap().strip_prefix(BASE).unwrap().to_string()
}

#[test]
fn an_uploaded_asset_is_listed_got_downloaded_renamed_and_deleted() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let (s, a) = upload(&mut w, &rel, "name=my%20tool%20linux.tar.gz&label=Linux%20build", "application/gzip", bytes.clone());
    assert_eq!(s, 201, "{a}");
    // GitHub renames what it does not keep in a file name.
    assert_eq!(a["name"], "my.tool.linux.tar.gz");
    assert_eq!((a["label"].as_str(), a["state"].as_str(), a["content_type"].as_str()), (Some("Linux build"), Some("uploaded"), Some("application/gzip")));
    assert_eq!((a["size"].as_u64(), a["download_count"].as_u64()), (Some(1000), Some(0)));
    assert_eq!(a["uploader"]["login"], "pome-agent");
    let digest = a["digest"].as_str().unwrap();
    assert!(digest.starts_with("sha256:") && digest.len() == 7 + 64, "{digest}");
    assert_eq!(a["browser_download_url"], format!("{BASE}/acme/api/releases/download/v1.0.0/my.tool.linux.tar.gz"));
    let id = a["id"].as_u64().unwrap();

    // The release carries it; the list and the asset answer it.
    let (_, r) = get(&mut w, &format!("/repos/acme/api/releases/{}", rel["id"]));
    assert_eq!(r["assets"][0]["id"], id);
    let (s, list) = get(&mut w, &format!("/repos/acme/api/releases/{}/assets", rel["id"]));
    assert_eq!((s, list.as_array().unwrap().len()), (200, 1));
    let (s, got) = get(&mut w, &local(&a["url"]));
    assert_eq!((s, &got), (200, &a));

    // Accept: application/octet-stream on the asset's URL: a 302 to the file.
    let (r, _) = raw(&mut w, Method::Get, &local(&a["url"]), &[("accept", "application/octet-stream")], Vec::new());
    assert_eq!((r.status, r.header("location")), (302, a["browser_download_url"].as_str()));
    // The file is the bytes as uploaded, and every download counts.
    for n in 1..=2 {
        let (r, c) = raw(&mut w, Method::Get, &local(&a["browser_download_url"]), &[], Vec::new());
        assert_eq!((r.status, r.header("content-type")), (200, Some("application/gzip")));
        assert_eq!(r.body, bytes);
        assert_eq!(c.action.as_deref(), Some("repos.download_release_asset_file"));
        let (_, got) = get(&mut w, &local(&a["url"]));
        assert_eq!(got["download_count"], n, "the cached answer is not stale");
    }

    // Rename and relabel; a name taken in the release is 422 already_exists.
    let (_, b) = upload(&mut w, &rel, "name=checksums.txt", "text/plain", b"abc  my.tool\n".to_vec());
    let (s, e) = patch(&mut w, &local(&b["url"]), json!({"name": "my.tool.linux.tar.gz"}));
    assert_eq!((s, &e["errors"][0]), (422, &json!({"resource": "ReleaseAsset", "field": "name", "code": "already_exists"})));
    let (s, e) = upload(&mut w, &rel, "name=checksums.txt", "text/plain", b"again".to_vec());
    assert_eq!((s, e["errors"][0]["code"].as_str()), (422, Some("already_exists")));
    let (s, b2) = patch(&mut w, &local(&b["url"]), json!({"name": "SHA256SUMS", "label": "sums"}));
    assert_eq!((s, b2["name"].as_str(), b2["label"].as_str()), (200, Some("SHA256SUMS"), Some("sums")));
    let (r, _) = raw(&mut w, Method::Get, "/acme/api/releases/download/v1.0.0/SHA256SUMS", &[], Vec::new());
    assert_eq!(r.body, b"abc  my.tool\n");

    // Delete: 204, then 404 everywhere.
    assert_eq!(delete(&mut w, &local(&a["url"])).0, 204);
    assert_eq!(get(&mut w, &local(&a["url"])).0, 404);
    assert_eq!(delete(&mut w, &local(&a["url"])).0, 404);
    let (r, _) = raw(&mut w, Method::Get, &local(&a["browser_download_url"]), &[], Vec::new());
    assert_eq!(r.status, 404);
    let (_, list) = get(&mut w, &format!("/repos/acme/api/releases/{}/assets", rel["id"]));
    assert_eq!(list.as_array().unwrap().len(), 1);
}

#[test]
fn an_upload_needs_a_name_a_release_and_write_access() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let (s, e) = upload(&mut w, &rel, "", "text/plain", b"x".to_vec());
    assert_eq!((s, e["errors"][0]["code"].as_str()), (422, Some("missing_field")));
    let (r, _) = raw(&mut w, Method::Post, "/repos/acme/api/releases/999999/assets?name=a.txt", &[], b"x".to_vec());
    assert_eq!(r.status, 404);
    // Without a Content-Type the asset is application/octet-stream.
    let (r, _) = raw(&mut w, Method::Post, &format!("{}?name=a.bin", upload_path(&rel)), &[], b"x".to_vec());
    assert_eq!((r.status, r.json_body()["content_type"].as_str()), (201, Some("application/octet-stream")));

    let mut w = seeded(json!({
        "users": [{"login": "acme", "type": "Organization"}, {"login": "pome-agent"}],
        "repositories": [{"owner": "acme", "name": "api", "agent_permission": "read",
                          "files": [{"path": "README.md", "content": "x\n"}], "releases": [{"tag_name": "v1"}]}]
    }));
    let (_, rels) = get(&mut w, "/repos/acme/api/releases");
    let (s, _) = upload(&mut w, &rels[0], "name=a.txt", "text/plain", b"x".to_vec());
    assert_eq!(s, 403);
}

#[test]
fn a_release_takes_its_assets_with_it_and_the_state_names_them_by_digest() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let (_, a) = upload(&mut w, &rel, "name=a.txt", "text/plain", b"hello\n".to_vec());
    // The tape's change and the state export leave the bytes out; the digest names them.
    let (_, c) = raw(&mut w, Method::Post, &format!("{}?name=b.txt", upload_path(&rel)), &[("content-type", "text/plain")], b"secret bytes".to_vec());
    let change = c.changes.iter().find(|c| c.entity == "release_asset").expect("the upload is recorded");
    assert!(!change.after.as_deref().unwrap().contains("secret bytes"));
    let state = w.state_json();
    let assets = &state["repositories"][0]["releases"].as_array().unwrap().iter().find(|x| x["tag_name"] == "v1.0.0").unwrap()["assets"];
    assert_eq!(assets[0]["name"], "a.txt");
    assert_eq!(assets[0]["digest"], "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    assert!(!state.to_string().contains("secret bytes"));
    // Snapshots keep the bytes.
    let bytes = postcard::to_stdvec(&w).unwrap();
    let mut back: World = postcard::from_bytes(&bytes).unwrap();
    let (r, _) = raw(&mut back, Method::Get, &local(&a["browser_download_url"]), &[], Vec::new());
    assert_eq!(r.body, b"hello\n");
    // Deleting the release deletes its assets.
    assert_eq!(delete(&mut w, &format!("/repos/acme/api/releases/{}", rel["id"])).0, 204);
    assert!(w.release_assets.is_empty());
    assert_eq!(get(&mut w, &local(&a["url"])).0, 404);
}

#[test]
fn an_asset_at_the_size_limit_is_kept() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let (s, a) = upload(&mut w, &rel, "name=big.bin", "application/octet-stream", vec![7; MAX_ASSET_BYTES]);
    assert_eq!((s, a["size"].as_u64()), (201, Some(MAX_ASSET_BYTES as u64)));
}

#[test]
fn an_asset_over_the_size_limit_is_refused_in_githubs_shape() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let (s, e) = upload(&mut w, &rel, "name=big.bin", "application/octet-stream", vec![7; MAX_ASSET_BYTES + 1]);
    assert_eq!((s, e["message"].as_str()), (422, Some("Validation Failed")));
    assert_eq!((e["errors"][0]["resource"].as_str(), e["errors"][0]["field"].as_str(), e["errors"][0]["code"].as_str()), (Some("ReleaseAsset"), Some("size"), Some("custom")));
    assert!(w.release_assets.is_empty());
}

#[test]
fn a_sandbox_holds_assets_up_to_its_cap_and_no_more() {
    let mut w = world();
    let rel = release(&mut w, "v1.0.0");
    let n = MAX_ASSET_BYTES_PER_SANDBOX / MAX_ASSET_BYTES;
    for i in 0..n {
        let (s, e) = upload(&mut w, &rel, &format!("name=part{i}.bin"), "application/octet-stream", vec![1; MAX_ASSET_BYTES]);
        assert_eq!(s, 201, "{e}");
    }
    let (s, e) = upload(&mut w, &rel, "name=one-more.bin", "application/octet-stream", vec![1]);
    assert_eq!((s, e["errors"][0]["field"].as_str()), (422, Some("size")));
    assert!(e["errors"][0]["message"].as_str().unwrap().contains("at most"), "{e}");
    // Deleting one makes room again.
    let (_, list) = get(&mut w, &format!("/repos/acme/api/releases/{}/assets", rel["id"]));
    assert_eq!(delete(&mut w, &local(&list[0]["url"])).0, 204);
    assert_eq!(upload(&mut w, &rel, "name=one-more.bin", "application/octet-stream", vec![1]).0, 201);
}
