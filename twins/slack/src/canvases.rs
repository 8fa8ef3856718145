//! Canvases: `canvases.create`, `canvases.edit`, `canvases.delete`,
//! `canvases.sections.lookup` and `conversations.canvases.create`, over a document kept as
//! sections of Canvas-flavoured markdown. A section is what Slack's edits address: a heading
//! line, a paragraph, a whole list or checklist, a table, a code block or a quote.
//!
//! Who may see and edit a canvas: its creator, and for a canvas that belongs to a conversation,
//! whoever may see that conversation (Slack shares a channel canvas with its members).

use pome_twin_sdk::{Call, json};
use serde_json::Value;

use crate::args::Args;
use crate::conversations::{self, now_secs};
use crate::model::*;
use crate::{Res, SlackError, fail, ok};

/// Markdown → its sections, in order.
pub fn split_sections(markdown: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Block {
        None,
        Para,
        List,
        Table,
        Quote,
        Code,
    }
    let mut out = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut kind = Block::None;
    let flush = |cur: &mut Vec<&str>, out: &mut Vec<String>| {
        if !cur.is_empty() {
            out.push(cur.join("\n"));
            cur.clear();
        }
    };
    for line in markdown.lines() {
        let t = line.trim_start();
        if kind == Block::Code {
            cur.push(line);
            if t.starts_with("```") {
                flush(&mut cur, &mut out);
                kind = Block::None;
            }
            continue;
        }
        let this = if t.is_empty() {
            Block::None
        } else if t.starts_with("```") {
            Block::Code
        } else if is_heading(t) {
            flush(&mut cur, &mut out);
            out.push(line.to_string());
            kind = Block::None;
            continue;
        } else if is_list_item(t) || (kind == Block::List && line.starts_with([' ', '\t'])) {
            Block::List
        } else if t.starts_with('|') {
            Block::Table
        } else if t.starts_with('>') {
            Block::Quote
        } else {
            Block::Para
        };
        if this != kind || this == Block::Code {
            flush(&mut cur, &mut out);
            kind = this;
        }
        if this != Block::None {
            cur.push(line);
        }
    }
    flush(&mut cur, &mut out);
    out
}

fn is_heading(t: &str) -> bool {
    let hashes = t.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && t[hashes..].starts_with(' ')
}

fn is_list_item(t: &str) -> bool {
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
}

/// The heading level of a section (`h1`…`h3`), if it is a heading.
fn heading_type(md: &str) -> Option<String> {
    let t = md.trim_start();
    is_heading(t).then(|| format!("h{}", t.bytes().take_while(|b| *b == b'#').count().min(3)))
}

impl Canvas {
    pub fn markdown(&self) -> String {
        self.sections.iter().map(|s| s.markdown.as_str()).collect::<Vec<_>>().join("\n\n")
    }

    fn new_sections(&mut self, markdown: &str) -> Vec<CanvasSection> {
        split_sections(markdown)
            .into_iter()
            .map(|md| {
                self.section_seq += 1;
                CanvasSection { id: format!("temp:C:{}{:06}", &self.id[1..], self.section_seq), markdown: md }
            })
            .collect()
    }

    fn section(&self, id: &str) -> Result<usize, SlackError> {
        self.sections.iter().position(|s| s.id == id).ok_or_else(|| fail("canvas_editing_failed").with("detail", json!(format!("section `{id}` is not in this canvas"))))
    }
}

/// The canvas as the tape records it.
pub fn canvas_entity(c: &Canvas) -> Value {
    json!({"id": c.id, "title": c.title, "channel": c.channel, "markdown": c.markdown(), "creator": c.creator})
}

pub fn permalink(w: &World, base: &str, c: &Canvas) -> String {
    format!("{base}/docs/{}/{}", w.team.id, c.id)
}

/// A canvas the agent may see and edit, else `canvas_not_found`.
pub fn find(w: &World, id: Option<String>) -> Result<usize, SlackError> {
    let id = id.ok_or_else(|| fail("canvas_not_found"))?;
    let i = w.canvases.iter().position(|c| c.id == id).ok_or_else(|| fail("canvas_not_found"))?;
    let c = &w.canvases[i];
    let shared = c.channel.as_deref().and_then(|ch| w.channel_idx(ch)).is_some_and(|ci| w.visible(&w.channels[ci]));
    if c.creator == w.agent || shared { Ok(i) } else { Err(fail("canvas_not_found")) }
}

/// `document_content`: `{"type": "markdown", "markdown": "…"}` (an object, or JSON in a form).
fn document_markdown(v: Option<&Value>) -> Result<Option<String>, SlackError> {
    let Some(v) = v else { return Ok(None) };
    let v = match v {
        Value::String(s) => serde_json::from_str::<Value>(s).map_err(|_| fail("invalid_arguments"))?,
        Value::Null => return Ok(None),
        other => other.clone(),
    };
    if v.get("type").and_then(Value::as_str) != Some("markdown") {
        return Err(fail("invalid_arguments").with("detail", json!("document_content.type must be `markdown`")));
    }
    match v.get("markdown") {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        _ => Err(fail("invalid_arguments").with("detail", json!("document_content.markdown must be a string"))),
    }
}

impl Canvas {
    /// A canvas with its document split into sections.
    pub fn new(id: String, title: String, creator: String, created: i64, channel: Option<String>, is_channel_canvas: bool, markdown: &str) -> Canvas {
        let mut c = Canvas { id, title, creator, created, updated: created, channel, is_channel_canvas, ..Canvas::default() };
        c.section_seq += 1;
        c.title_section = format!("temp:C:{}{:06}", &c.id[1..], c.section_seq);
        c.sections = c.new_sections(markdown);
        c
    }
}

/// Make a canvas; `channel` is set for a channel canvas or the conversation it is tabbed in.
pub fn create_canvas(w: &mut World, call: &mut Call, title: String, markdown: &str, channel: Option<String>, is_channel_canvas: bool) -> String {
    let id = w.new_id("F");
    let c = Canvas::new(id.clone(), title, w.agent.clone(), now_secs(), channel, is_channel_canvas, markdown);
    call.created("canvas", &id, &canvas_entity(&c));
    w.canvases.push(c);
    id
}

pub fn create(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let markdown = document_markdown(a.0.get("document_content"))?.unwrap_or_default();
    let channel = match a.str("channel_id") {
        Some(ch) => Some(w.channels[conversations::find(w, Some(ch))?].id.clone()),
        None => None,
    };
    let title = a.str("title").unwrap_or_else(|| "Untitled".into());
    let id = create_canvas(w, call, title, &markdown, channel, false);
    ok(json!({"canvas_id": id}))
}

pub fn conversations_create(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ci = conversations::find(w, a.str("channel_id"))?;
    conversations::check_writable(w, ci)?;
    let cid = w.channels[ci].id.clone();
    if w.canvases.iter().any(|c| c.is_channel_canvas && c.channel.as_deref() == Some(cid.as_str())) {
        return Err(fail("channel_canvas_already_exists"));
    }
    let markdown = document_markdown(a.0.get("document_content"))?.unwrap_or_default();
    let title = a.str("title").unwrap_or_else(|| w.channels[ci].name.clone());
    let id = create_canvas(w, call, title, &markdown, Some(cid), true);
    ok(json!({"canvas_id": id}))
}

pub fn delete(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let i = find(w, a.str("canvas_id"))?;
    if w.canvases[i].creator != w.agent {
        return Err(fail("canvas_deleting_failed"));
    }
    let c = w.canvases.remove(i);
    call.deleted("canvas", &c.id, &canvas_entity(&c));
    ok(json!({}))
}

/// One change of `canvases.edit`.
pub enum Change {
    InsertAfter(String, String),
    InsertBefore(String, String),
    InsertAtStart(String),
    InsertAtEnd(String),
    /// A section, or the whole document without one.
    Replace(Option<String>, String),
    Delete(String),
    Rename(String),
}

fn parse_change(v: &Value) -> Result<Change, SlackError> {
    let bad = |d: &str| fail("invalid_arguments").with("detail", json!(d));
    let op = v.get("operation").and_then(Value::as_str).ok_or_else(|| bad("each change needs an `operation`"))?;
    let section = v.get("section_id").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    let need_section = || section.clone().ok_or_else(|| bad("this operation needs a `section_id`"));
    let content = || document_markdown(v.get("document_content"))?.ok_or_else(|| bad("this operation needs `document_content`"));
    Ok(match op {
        "insert_after" => Change::InsertAfter(need_section()?, content()?),
        "insert_before" => Change::InsertBefore(need_section()?, content()?),
        "insert_at_start" => Change::InsertAtStart(content()?),
        "insert_at_end" => Change::InsertAtEnd(content()?),
        "replace" => Change::Replace(section.clone(), content()?),
        "delete" => Change::Delete(need_section()?),
        "rename" => Change::Rename(document_markdown(v.get("title_content"))?.ok_or_else(|| bad("rename needs `title_content`"))?),
        _ => return Err(bad("operation must be insert_after, insert_before, insert_at_start, insert_at_end, replace, delete or rename")),
    })
}

/// Apply `changes` to a copy of the canvas: all of them or, on the first that fails, none.
/// Section ids are resolved against the document as the earlier changes left it.
pub fn apply(w: &mut World, call: &mut Call, i: usize, changes: Vec<Change>) -> Result<(), SlackError> {
    let before = w.canvases[i].clone();
    let mut c = before.clone();
    for ch in changes {
        match ch {
            Change::InsertAfter(id, md) => {
                let at = if id == c.title_section { 0 } else { c.section(&id)? + 1 };
                let new = c.new_sections(&md);
                c.sections.splice(at..at, new);
            }
            Change::InsertBefore(id, md) => {
                let at = if id == c.title_section { 0 } else { c.section(&id)? };
                let new = c.new_sections(&md);
                c.sections.splice(at..at, new);
            }
            Change::InsertAtStart(md) => {
                let new = c.new_sections(&md);
                c.sections.splice(0..0, new);
            }
            Change::InsertAtEnd(md) => {
                let new = c.new_sections(&md);
                c.sections.extend(new);
            }
            Change::Replace(None, md) => c.sections = c.new_sections(&md),
            Change::Replace(Some(id), md) if id == c.title_section => c.title = single_line_title(&md)?,
            Change::Replace(Some(id), md) => {
                let at = c.section(&id)?;
                let new = c.new_sections(&md);
                c.sections.splice(at..=at, new);
            }
            Change::Delete(id) => {
                let at = c.section(&id)?;
                c.sections.remove(at);
            }
            Change::Rename(md) => c.title = single_line_title(&md)?,
        }
    }
    c.updated = now_secs();
    call.updated("canvas", &c.id, &canvas_entity(&before), &canvas_entity(&c));
    w.canvases[i] = c;
    Ok(())
}

/// A title is one line of at most 255 bytes; heading markers are not part of it.
fn single_line_title(md: &str) -> Result<String, SlackError> {
    let t = md.trim().trim_start_matches('#').trim();
    if t.is_empty() || t.contains('\n') || t.len() > 255 {
        return Err(fail("canvas_editing_failed").with("detail", json!("a title is one non-empty line of at most 255 bytes")));
    }
    Ok(t.to_string())
}

pub fn edit(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let i = find(w, a.str("canvas_id"))?;
    let changes = match a.json("changes") {
        Ok(Some(Value::Array(list))) if !list.is_empty() => list,
        _ => return Err(fail("invalid_arguments").with("detail", json!("`changes` must be a non-empty array"))),
    };
    let parsed = changes.iter().map(parse_change).collect::<Result<Vec<_>, _>>()?;
    apply(w, call, i, parsed)?;
    ok(json!({}))
}

pub fn sections_lookup(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let i = find(w, a.str("canvas_id"))?;
    let criteria = match a.json("criteria") {
        Ok(Some(v @ Value::Object(_))) => v,
        _ => return Err(fail("invalid_arguments").with("detail", json!("`criteria` must be an object"))),
    };
    let types: Vec<String> = criteria
        .get("section_types")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let text = criteria.get("contains_text").and_then(Value::as_str).map(str::to_lowercase);
    if types.is_empty() && text.is_none() {
        return Err(fail("invalid_arguments").with("detail", json!("criteria needs section_types or contains_text")));
    }
    let sections: Vec<Value> = w.canvases[i]
        .sections
        .iter()
        .filter(|s| {
            let h = heading_type(&s.markdown);
            let type_ok = types.is_empty()
                || types.iter().any(|t| if t == "any_header" { h.is_some() } else { h.as_deref() == Some(t.as_str()) });
            type_ok && text.as_ref().is_none_or(|t| s.markdown.to_lowercase().contains(t.as_str()))
        })
        .map(|s| json!({"id": s.id}))
        .collect();
    ok(json!({"sections": sections}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_paragraphs_lists_and_code_are_sections() {
        let md = "# Plan\nIntro line one\nline two\n\n- a\n- b\n  more b\n1. c\n\n```\nx\n\ny\n```\n| a | b |\n| - | - |\n> q";
        assert_eq!(
            split_sections(md),
            ["# Plan", "Intro line one\nline two", "- a\n- b\n  more b\n1. c", "```\nx\n\ny\n```", "| a | b |\n| - | - |", "> q"]
        );
    }
}
