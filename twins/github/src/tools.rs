//! The MCP tools: GitHub's own MCP server's names and argument names (github/github-mcp-server,
//! MIT), each mapped onto one of this twin's REST routes. The table is `tools.json`: schemas
//! as the vendor's server lists them where its current release still has the tool, else as
//! its earlier releases did (`get_issue`, `get_pull_request`, `pullNumber`, `perPage`).
//! Every other action is offered under its own name by the host.

use pome_twin_sdk::describe::ToolDecl;

pub fn tools() -> Vec<ToolDecl> {
    serde_json::from_str(include_str!("tools.json")).expect("tools.json is a list of tool declarations")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_tool_reaches_a_route_the_twin_serves() {
        let routes = crate::routes::router().surface();
        for t in super::tools() {
            assert!(t.reaches(&routes), "{} {} ({}) is no route of the twin", t.method, t.path, t.name);
        }
    }
}
