//! The MCP tools: Slack's own hosted server (mcp.slack.com, all 19 tools with its names,
//! descriptions, input schemas and read-only hints verbatim; the capture's own user id in five
//! descriptions is replaced by where to find the caller's) and the reference server
//! (`@modelcontextprotocol/server-slack`, MIT: `slack_post_message`, `slack_get_channel_history`,
//! …). A tool that is one Web API method is sent to it as a form, like Slack's own clients do;
//! the others go to the twin's `/mcp-tools/<tool>` routes ([`crate::mcp_tools`]) as JSON.
//! The table is `tools.json`.

use pome_twin_sdk::describe::ToolDecl;

pub fn tools() -> Vec<ToolDecl> {
    serde_json::from_str(include_str!("tools.json")).expect("tools.json is a list of tool declarations")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_tool_reaches_a_route_the_twin_serves() {
        let routes = <crate::World as pome_twin_sdk::Twin>::router().surface();
        for t in super::tools() {
            assert!(t.reaches(&routes), "{} {} ({}) is no route of the twin", t.method, t.path, t.name);
        }
    }
}
