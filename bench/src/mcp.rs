//! MCP lines of `make bench`: one read tool call (GitHub's `get_issue`) through a sandbox's
//! MCP door at 1 and 64 connections, beside the same read over REST, on the same seed. Each
//! MCP request is a whole stateless JSON-RPC `tools/call` POST, as an MCP client sends it once
//! initialized. `bench -- mcp` runs these lines alone.

use serde_json::json;

use crate::{Server, wrk};

pub async fn run(server: &Server) {
    let dir = tempfile::tempdir().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "get_issue", "arguments": {"owner": "acme", "repo": "api", "issue_number": 1}}});
    let script = dir.path().join("mcp.lua");
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.body = [==[{call}]==]\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Accept\"] = \"application/json, text/event-stream\"\nwrk.headers[\"MCP-Protocol-Version\"] = \"2025-11-25\"\n"
        ),
    )
    .unwrap();
    let body = json!({"twins": ["github"], "seed": crate::github_seed(50, 200)});
    for conns in [1u32, 64] {
        let sb = server.create(&body).await;
        let (id, token) = (sb["id"].as_str().unwrap(), sb["agent_token"].as_str().unwrap());
        // The call must answer the issue, not an error, or the figure means nothing.
        let answer: serde_json::Value = server
            .http
            .post(format!("{}/s/{id}/github/mcp", server.url))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&call)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or_default();
        assert_eq!(answer["result"]["structuredContent"]["number"], 1, "{answer}");
        let rest = wrk(&format!("{}/s/{id}/github/repos/acme/api/issues/1", server.url), token, conns, None);
        crate::report("mcp    github get_issue over REST (same read)", conns, &rest);
        let mcp = wrk(&format!("{}/s/{id}/github/mcp", server.url), token, conns, Some(&script));
        crate::report("mcp    github get_issue as an MCP tools/call", conns, &mcp);
        if rest.all_succeeded() && mcp.all_succeeded() && rest.rps > 0.0 && mcp.rps > 0.0 {
            println!("mcp    c={conns:<3} MCP throughput is {:.2}x REST's; p50 {:.2}x (floor: within 1.5x)", mcp.rps / rest.rps, mcp.p50_ms / rest.p50_ms.max(1e-6));
        }
        server.discard(id).await;
    }
}
