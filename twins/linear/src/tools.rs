//! MCP tools as Linear's own MCP server (mcp.linear.app) names them, each a GraphQL document
//! whose variables are the tool's arguments: a tool call is an ordinary `POST /graphql`, so it
//! is validated, executed, recorded and graded like any SDK call.
//!
//! Arguments keep Linear's names (`team`, `assignee`, `state`, `limit`, `cursor`). Where
//! Linear's server resolves a name itself (a team by key or name, a user by email or name, a
//! state by name or type), the documents express that as an `or` filter over String fields
//! (GraphQL will not compare one variable with both an `ID` and a `String`, so lookups by
//! name do not also take ids); where it would need a lookup before a write (`assignee` by
//! email on `create_issue`), the argument takes an id, as the GraphQL API does (a team also
//! by key). An argument left out leaves its part of the filter or input out (absent variables
//! are absent fields).

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

/// A team by key or name (an `ID` variable could not be compared with a key as well).
const TEAM_BY: &str = "{or: [{key: {eqIgnoreCase: $team}}, {name: {eqIgnoreCase: $team}}]}";

pub fn declared() -> Vec<ToolDecl> {
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
            "list_issues",
            "List issues in the workspace, newest first, optionally filtered by team, assignee, state, label, project, parent or text",
            true,
            format!(
                "query list_issues($query: String, $team: String, $assignee: String, $state: String, $label: String, $project: String, $parentId: ID, $limit: Int = 50, $cursor: String, $includeArchived: Boolean = false, $orderBy: PaginationOrderBy = updatedAt) {{ \
issues(first: $limit, after: $cursor, includeArchived: $includeArchived, orderBy: $orderBy, filter: {{team: {TEAM_BY}, \
assignee: {{or: [{{email: {{eqIgnoreCase: $assignee}}}}, {{name: {{eqIgnoreCase: $assignee}}}}, {{displayName: {{eqIgnoreCase: $assignee}}}}]}}, \
state: {{or: [{{name: {{eqIgnoreCase: $state}}}}, {{type: {{eq: $state}}}}]}}, \
labels: {{some: {{name: {{eqIgnoreCase: $label}}}}}}, \
project: {{name: {{eqIgnoreCase: $project}}}}, \
parent: {{id: {{eq: $parentId}}}}, \
or: [{{title: {{containsIgnoreCase: $query}}}}, {{description: {{containsIgnoreCase: $query}}}}]}}) \
{{ nodes {{ {ISSUE_FIELDS} }} pageInfo {{ hasNextPage endCursor }} }} }}"
            ),
            json!({"query": s("Text to find in the title or description"), "team": s("Team key or name"), "assignee": s("Assignee email or name"),
                   "state": s("State name or type (started)"), "label": s("Label name"), "project": s("Project name"),
                   "parentId": s("Parent issue id"), "limit": limit, "cursor": cursor, "includeArchived": archived,
                   "orderBy": {"type": "string", "enum": ["createdAt", "updatedAt"]}}),
            &[],
        ),
        tool(
            "list_my_issues",
            "List the issues assigned to you",
            true,
            format!("query list_my_issues($limit: Int = 50, $cursor: String, $includeArchived: Boolean = false) {{ viewer {{ assignedIssues(first: $limit, after: $cursor, includeArchived: $includeArchived) {{ nodes {{ {ISSUE_FIELDS} }} pageInfo {{ hasNextPage endCursor }} }} }} }}"),
            json!({"limit": limit, "cursor": cursor, "includeArchived": archived}),
            &[],
        ),
        tool(
            "get_issue",
            "Get an issue by id or identifier (ENG-123), with its labels, sub-issues and attachments",
            true,
            format!("query get_issue($id: String!) {{ issue(id: $id) {{ {ISSUE_FIELDS} children {{ nodes {{ id identifier title }} }} attachments {{ nodes {{ id title url }} }} }} }}"),
            json!({"id": s("The issue's id or identifier (ENG-123)")}),
            &["id"],
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
            "list_comments",
            "List the comments on an issue, oldest replies under their thread",
            true,
            "query list_comments($issueId: String!) { issue(id: $issueId) { comments { nodes { id body createdAt updatedAt url user { id name } parent { id } } } } }".into(),
            json!({"issueId": s("The issue's id or identifier")}),
            &["issueId"],
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
            "list_teams",
            "List the workspace's teams",
            true,
            "query list_teams($query: String, $limit: Int = 50, $cursor: String, $includeArchived: Boolean = false) { teams(first: $limit, after: $cursor, includeArchived: $includeArchived, filter: {or: [{name: {containsIgnoreCase: $query}}, {key: {containsIgnoreCase: $query}}]}) { nodes { id key name description } pageInfo { hasNextPage endCursor } } }".into(),
            json!({"query": s("Text in the team's name or key"), "limit": limit, "cursor": cursor, "includeArchived": archived}),
            &[],
        ),
        tool(
            "get_team",
            "Get a team by key or name",
            true,
            "query get_team($query: String!) { teams(first: 1, filter: {or: [{key: {eqIgnoreCase: $query}}, {name: {eqIgnoreCase: $query}}]}) { nodes { id key name description states { nodes { id name type } } } } }".into(),
            json!({"query": s("The team's key or name")}),
            &["query"],
        ),
        tool(
            "list_users",
            "List the workspace's users",
            true,
            "query list_users($query: String, $limit: Int = 50, $cursor: String) { users(first: $limit, after: $cursor, filter: {or: [{name: {containsIgnoreCase: $query}}, {displayName: {containsIgnoreCase: $query}}, {email: {containsIgnoreCase: $query}}]}) { nodes { id name displayName email active admin } pageInfo { hasNextPage endCursor } } }".into(),
            json!({"query": s("Text in the user's name or email"), "limit": limit, "cursor": cursor}),
            &[],
        ),
        tool(
            "get_user",
            "Get a user by email or name",
            true,
            "query get_user($query: String!) { users(first: 1, filter: {or: [{email: {eqIgnoreCase: $query}}, {name: {eqIgnoreCase: $query}}, {displayName: {eqIgnoreCase: $query}}]}) { nodes { id name displayName email active admin } } }".into(),
            json!({"query": s("The user's email or name")}),
            &["query"],
        ),
        tool(
            "list_projects",
            "List projects",
            true,
            "query list_projects($query: String, $limit: Int = 50, $cursor: String, $includeArchived: Boolean = false) { projects(first: $limit, after: $cursor, includeArchived: $includeArchived, filter: {name: {containsIgnoreCase: $query}}) { nodes { id name description state url startDate targetDate lead { id name } teams { nodes { id key } } } pageInfo { hasNextPage endCursor } } }".into(),
            json!({"query": s("Text in the project's name"), "limit": limit, "cursor": cursor, "includeArchived": archived}),
            &[],
        ),
        tool(
            "get_project",
            "Get a project by name or slug",
            true,
            "query get_project($query: String!) { projects(first: 1, filter: {or: [{name: {eqIgnoreCase: $query}}, {slugId: {eq: $query}}]}) { nodes { id name description state url startDate targetDate lead { id name } teams { nodes { id key } } projectMilestones { nodes { id name targetDate } } } } }".into(),
            json!({"query": s("The project's name or slug")}),
            &["query"],
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
        tool(
            "list_issue_statuses",
            "List a team's workflow states",
            true,
            format!("query list_issue_statuses($team: String!) {{ workflowStates(first: 100, filter: {{team: {TEAM_BY}}}) {{ nodes {{ id name type color position }} }} }}"),
            json!({"team": s("The team's key or name")}),
            &["team"],
        ),
        tool(
            "get_issue_status",
            "Get a workflow state by id",
            true,
            "query get_issue_status($id: String!) { workflowState(id: $id) { id name type color position team { id key } } }".into(),
            json!({"id": s("The state's id")}),
            &["id"],
        ),
        tool(
            "list_issue_labels",
            "List issue labels, optionally a team's or by name",
            true,
            format!("query list_issue_labels($team: String, $name: String, $limit: Int = 50, $cursor: String) {{ issueLabels(first: $limit, after: $cursor, filter: {{team: {TEAM_BY}, name: {{containsIgnoreCase: $name}}}}) {{ nodes {{ id name color description isGroup parent {{ id name }} team {{ id key }} }} pageInfo {{ hasNextPage endCursor }} }} }}"),
            json!({"team": s("The team's key or name"), "name": s("Text in the label's name"), "limit": limit, "cursor": cursor}),
            &[],
        ),
        tool(
            "create_issue_label",
            "Create an issue label, in a team or for the whole workspace",
            false,
            "mutation create_issue_label($name: String!, $color: String, $description: String, $teamId: String, $parentId: String, $isGroup: Boolean) { issueLabelCreate(input: {name: $name, color: $color, description: $description, teamId: $teamId, parentId: $parentId, isGroup: $isGroup}) { success issueLabel { id name color team { id key } } } }".into(),
            json!({"name": s("The label's name"), "color": s("Hex color (#eb5757)"), "description": s("What it marks"), "teamId": s("The team's id (none: a workspace label)"),
                   "parentId": s("The label group's id"), "isGroup": {"type": "boolean"}}),
            &["name"],
        ),
        tool(
            "list_cycles",
            "List a team's cycles",
            true,
            "query list_cycles($teamId: String!) { cycles(first: 100, filter: {team: {or: [{key: {eqIgnoreCase: $teamId}}, {name: {eqIgnoreCase: $teamId}}]}}) { nodes { id number name startsAt endsAt progress } } }".into(),
            json!({"teamId": s("The team's key or name")}),
            &["teamId"],
        ),
        tool(
            "list_documents",
            "List documents, optionally by title text or project",
            true,
            "query list_documents($query: String, $projectId: ID, $limit: Int = 50, $cursor: String) { documents(first: $limit, after: $cursor, filter: {title: {containsIgnoreCase: $query}, project: {id: {eq: $projectId}}}) { nodes { id title url createdAt updatedAt creator { id name } project { id name } } pageInfo { hasNextPage endCursor } } }".into(),
            json!({"query": s("Text in the title"), "projectId": s("The project's id"), "limit": limit, "cursor": cursor}),
            &[],
        ),
        tool(
            "get_document",
            "Get a document by id",
            true,
            "query get_document($id: String!) { document(id: $id) { id title content url createdAt updatedAt creator { id name } project { id name } } }".into(),
            json!({"id": s("The document's id")}),
            &["id"],
        ),
    ]
}
