//! MCP tools. Linear's own MCP server's tools (mcp.linear.app: `list_issues`, `save_issue`,
//! `save_comment`, `list_milestones`, …) are listed with the vendor's names, descriptions and
//! input schemas verbatim (`mcp/tools.json`) and served by the twin itself at `/mcp/v1`
//! ([`ToolBody::Mcp`], `src/mcp.rs`): it resolves names the way Linear's server does and writes
//! through the same GraphQL mutations an SDK call makes.
//!
//! Beside them, a few older tools that Linear's server no longer lists (`create_issue`,
//! `update_issue`, `create_comment`, `list_my_issues`, `create_project`, `update_project`)
//! stay as GraphQL documents whose variables are the tool's arguments: a call is an ordinary
//! `POST /graphql`. Their arguments take ids (a team also by key), as the GraphQL API does;
//! an argument left out leaves its part of the input out (absent variables are absent fields).

use pome_twin_sdk::{ToolBody, ToolDecl, Value, json};

const ISSUE_FIELDS: &str = "id identifier title description priority priorityLabel estimate dueDate url branchName createdAt updatedAt completedAt \
state { id name type } assignee { id name email } team { id key name } project { id name } cycle { id number } parent { id identifier } labels { nodes { id name } }";

fn tool(name: &str, description: &str, read_only: bool, query: String, properties: Value, required: &[&str]) -> ToolDecl {
    ToolDecl {
        name: name.to_string(),
        description: description.to_string(),
        input_schema: json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false}),
        method: "POST".into(),
        path: "/graphql".into(),
        body: ToolBody::Graphql { query },
        rename: Default::default(),
        fixed: Default::default(),
        read_only,
    }
}

fn s(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn int(description: &str) -> Value {
    json!({"type": "integer", "description": description})
}

fn page() -> (Value, Value, Value) {
    (
        json!({"type": "integer", "minimum": 1, "maximum": 250, "description": "How many to return (default 50, at most 250)"}),
        s("The cursor to continue from (the previous page's endCursor)"),
        json!({"type": "boolean", "description": "Include archived items"}),
    )
}

/// Linear's tools as its server lists them, each a call to the twin's own MCP endpoint.
fn vendor() -> Vec<ToolDecl> {
    crate::mcp::listing()
        .iter()
        .map(|t| ToolDecl {
            name: t["name"].as_str().unwrap_or_default().to_string(),
            description: t["description"].as_str().unwrap_or_default().to_string(),
            input_schema: t["inputSchema"].clone(),
            method: "POST".into(),
            path: crate::mcp::PATH.into(),
            body: ToolBody::Mcp,
            rename: Default::default(),
            fixed: Default::default(),
            read_only: t["annotations"]["readOnlyHint"].as_bool().unwrap_or(false),
        })
        .collect()
}

pub fn declared() -> Vec<ToolDecl> {
    let mut out = vendor();
    out.extend(older());
    out
}

/// The older GraphQL tools.
fn older() -> Vec<ToolDecl> {
    let (limit, cursor, archived) = page();
    let issue_write = |id: bool| {
        let mut p = json!({
            "title": s("The issue's title"),
            "team": s("The team's id or key (ENG)"),
            "description": s("Markdown description"),
            "assignee": s("The assignee's user id"),
            "state": s("The workflow state's id"),
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Label ids"},
            "priority": json!({"type": "integer", "minimum": 0, "maximum": 4, "description": "0 none, 1 urgent, 2 high, 3 medium, 4 low"}),
            "project": s("The project's id"),
            "parentId": s("The parent issue's id or identifier (a sub-issue)"),
            "dueDate": s("Due date, YYYY-MM-DD"),
            "estimate": int("Estimate in points"),
            "cycle": s("The cycle's id"),
        });
        if id {
            p["id"] = s("The issue's id or identifier (ENG-123)");
        }
        p
    };
    vec![
        tool(
            "list_my_issues",
            "List the issues assigned to you",
            true,
            format!("query list_my_issues($limit: Int = 50, $cursor: String, $includeArchived: Boolean = false) {{ viewer {{ assignedIssues(first: $limit, after: $cursor, includeArchived: $includeArchived) {{ nodes {{ {ISSUE_FIELDS} }} pageInfo {{ hasNextPage endCursor }} }} }} }}"),
            json!({"limit": limit, "cursor": cursor, "includeArchived": archived}),
            &[],
        ),
        tool(
            "create_issue",
            "Create an issue",
            false,
            format!(
                "mutation create_issue($title: String!, $team: String!, $description: String, $assignee: String, $state: String, $labels: [String!], $priority: Int, $project: String, $parentId: String, $dueDate: TimelessDate, $estimate: Int, $cycle: String) {{ \
issueCreate(input: {{title: $title, teamId: $team, description: $description, assigneeId: $assignee, stateId: $state, labelIds: $labels, priority: $priority, projectId: $project, parentId: $parentId, dueDate: $dueDate, estimate: $estimate, cycleId: $cycle}}) \
{{ success issue {{ {ISSUE_FIELDS} }} }} }}"
            ),
            issue_write(false),
            &["title", "team"],
        ),
        tool(
            "update_issue",
            "Update an issue; fields left out stay as they are",
            false,
            format!(
                "mutation update_issue($id: String!, $title: String, $team: String, $description: String, $assignee: String, $state: String, $labels: [String!], $priority: Int, $project: String, $parentId: String, $dueDate: TimelessDate, $estimate: Int, $cycle: String) {{ \
issueUpdate(id: $id, input: {{title: $title, teamId: $team, description: $description, assigneeId: $assignee, stateId: $state, labelIds: $labels, priority: $priority, projectId: $project, parentId: $parentId, dueDate: $dueDate, estimate: $estimate, cycleId: $cycle}}) \
{{ success issue {{ {ISSUE_FIELDS} }} }} }}"
            ),
            issue_write(true),
            &["id"],
        ),
        tool(
            "create_comment",
            "Comment on an issue, or reply in a comment's thread",
            false,
            "mutation create_comment($issueId: String!, $body: String!, $parentId: String) { commentCreate(input: {issueId: $issueId, body: $body, parentId: $parentId}) { success comment { id body url createdAt parent { id } } } }".into(),
            json!({"issueId": s("The issue's id or identifier"), "body": s("Markdown body"), "parentId": s("The comment to reply to")}),
            &["issueId", "body"],
        ),
        tool(
            "create_project",
            "Create a project in a team",
            false,
            "mutation create_project($name: String!, $team: String!, $description: String, $summary: String, $lead: String, $startDate: TimelessDate, $targetDate: TimelessDate) { projectCreate(input: {name: $name, teamIds: [$team], description: $description, content: $summary, leadId: $lead, startDate: $startDate, targetDate: $targetDate}) { success project { id name url state } } }".into(),
            json!({"name": s("The project's name"), "team": s("The team's id or key"), "description": s("A short description"), "summary": s("Markdown content"),
                   "lead": s("The lead's user id"), "startDate": s("YYYY-MM-DD"), "targetDate": s("YYYY-MM-DD")}),
            &["name", "team"],
        ),
        tool(
            "update_project",
            "Update a project; fields left out stay as they are",
            false,
            "mutation update_project($id: String!, $name: String, $description: String, $summary: String, $lead: String, $startDate: TimelessDate, $targetDate: TimelessDate, $priority: Int) { projectUpdate(id: $id, input: {name: $name, description: $description, content: $summary, leadId: $lead, startDate: $startDate, targetDate: $targetDate, priority: $priority}) { success project { id name url state } } }".into(),
            json!({"id": s("The project's id"), "name": s("New name"), "description": s("A short description"), "summary": s("Markdown content"),
                   "lead": s("The lead's user id"), "startDate": s("YYYY-MM-DD"), "targetDate": s("YYYY-MM-DD"), "priority": json!({"type": "integer", "minimum": 0, "maximum": 4})}),
            &["id"],
        ),
    ]
}
