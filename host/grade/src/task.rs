//! Task files (DESIGN §8): markdown with a prompt, success criteria, config and a seed.
//! Parsing only; binding criteria to checks and grading them is `grade`. Every error reads
//! `Invalid task: <file>: <what and where>`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, thiserror::Error)]
#[error("Invalid task: {file}: {what}")]
pub struct TaskError {
    pub file: String,
    pub what: String,
}

/// Whose criterion a line is and how it is judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CriterionKind {
    /// Decided by code: a declared check (or an `expr:`) of one twin.
    Code,
    /// Decided by a judge model.
    Model,
}

#[derive(Debug, Clone, Serialize)]
pub struct Criterion {
    /// 1-based position among the task's criteria.
    pub index: usize,
    pub kind: CriterionKind,
    /// The twin a `[code]` criterion is about (the primary twin when the line names none).
    pub twin: Option<String>,
    /// Scored even when it already holds on the seed.
    pub always_scored: bool,
    /// The sentence (or `expr: …`) after the tag.
    pub text: String,
    /// Line in the file, for messages.
    pub line: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskConfig {
    /// Primary first.
    pub twins: Vec<String>,
    /// Seconds the agent may run.
    pub timeout: u64,
    /// Trials per `pome run` unless `-n` says otherwise.
    pub runs: u32,
    /// Score (0–100) at or above which the verdict is `pass`.
    pub pass_threshold: u32,
    pub class: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Task {
    /// The file stem (or the id it was stored under).
    pub id: String,
    pub title: String,
    pub prompt: String,
    pub expected_behavior: Option<String>,
    pub criteria: Vec<Criterion>,
    pub config: TaskConfig,
    /// One seed per twin that has one; a twin absent here starts on its default world.
    pub seeds: BTreeMap<String, Value>,
}

impl Task {
    /// The seed as `POST /v1/sandboxes` takes it: flat for one twin, an envelope for several.
    pub fn seed_for_create(&self) -> Option<Value> {
        if self.seeds.is_empty() {
            return None;
        }
        if self.config.twins.len() == 1 {
            return self.seeds.get(&self.config.twins[0]).cloned();
        }
        Some(Value::Object(self.seeds.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
    }

    pub fn primary_twin(&self) -> &str {
        &self.config.twins[0]
    }
}

/// Load a task file, with its `<stem>.seed.json` sidecar when there is one.
pub fn load(path: &Path) -> Result<Task, TaskError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TaskError { file: file.clone(), what: format!("cannot read it: {e}") })?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("task").to_string();
    let sidecar_path = path.with_file_name(format!("{stem}.seed.json"));
    let sidecar = match std::fs::read_to_string(&sidecar_path) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(TaskError { file, what: format!("cannot read the seed sidecar {}: {e}", sidecar_path.display()) }),
    };
    parse(&file, &stem, &text, sidecar.as_deref())
}

/// Parse task markdown. `file` names it in errors, `id` becomes the task id, `sidecar` is
/// the text of a `<task>.seed.json` beside it.
pub fn parse(file: &str, id: &str, text: &str, sidecar: Option<&str>) -> Result<Task, TaskError> {
    let err = |what: String| TaskError { file: file.to_string(), what };
    let sections = split_sections(text);

    let title = sections
        .title
        .clone()
        .ok_or_else(|| err("no `# Title` line: the first heading must be the task's title".into()))?;
    let find = |names: &[&str]| sections.sections.iter().find(|s| names.iter().any(|n| s.name.eq_ignore_ascii_case(n)));

    let prompt = find(&["Prompt", "Task"]).ok_or_else(|| err("no `## Prompt` section (alias `## Task`): the agent needs a prompt".into()))?;
    let prompt_text = prompt.body.trim().to_string();
    if prompt_text.is_empty() {
        return Err(err(format!("the `## {}` section at line {} is empty", prompt.name, prompt.line)));
    }
    let expected_behavior = find(&["Expected Behavior", "Expected Behaviour"]).map(|s| s.body.trim().to_string());

    let config_section = find(&["Config", "Configuration"])
        .ok_or_else(|| err("no `## Config` section: it must name the task's `twins` (primary first)".into()))?;
    let config = parse_config(&config_section.body, config_section.line).map_err(err)?;

    let seeds = match find(&["Seed State", "Seed"]) {
        // The first ```json block, or the first bare block that holds an object; other
        // blocks (an issue body quoted in the prose) are prose.
        Some(s) => match fenced_blocks(&s.body)
            .into_iter()
            .find(|(lang, block, _)| lang.eq_ignore_ascii_case("json") || lang.is_empty() && block.trim_start().starts_with('{'))
        {
            Some((_, block, at)) => {
                let v: Value = serde_json::from_str(&block)
                    .map_err(|e| err(format!("the seed JSON in `## Seed State` (line {}) does not parse: {e}", s.line + at)))?;
                split_seed(v, &config.twins, &format!("the `## Seed State` block at line {}", s.line + at)).map_err(err)?
            }
            _ => None,
        },
        None => None,
    };
    let seeds = match (seeds, sidecar) {
        (Some(s), _) => s,
        (None, Some(text)) => {
            let v: Value = serde_json::from_str(text).map_err(|e| err(format!("the seed sidecar `{id}.seed.json` does not parse: {e}")))?;
            split_seed(v, &config.twins, &format!("the seed sidecar `{id}.seed.json`")).map_err(err)?.unwrap_or_default()
        }
        (None, None) => BTreeMap::new(),
    };

    let crit = find(&["Success Criteria", "Checks", "Criteria"])
        .ok_or_else(|| err("no `## Success Criteria` section (alias `## Checks`): a task needs at least one criterion".into()))?;
    let criteria = parse_criteria(&crit.body, crit.line, &config.twins).map_err(err)?;
    if criteria.is_empty() {
        return Err(err(format!("the `## {}` section at line {} has no criterion: list them as `- [code:<twin>] <sentence>` or `- [model] <sentence>`", crit.name, crit.line)));
    }

    Ok(Task { id: id.to_string(), title, prompt: prompt_text, expected_behavior, criteria, config, seeds })
}

struct Section {
    name: String,
    /// Line of the `##` heading (1-based).
    line: usize,
    body: String,
}

struct Sections {
    title: Option<String>,
    sections: Vec<Section>,
}

/// Split on `# ` / `## ` headings outside code fences. `###` and deeper stay in the body.
fn split_sections(text: &str) -> Sections {
    let mut out = Sections { title: None, sections: Vec::new() };
    let mut fence: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(f) = &fence {
            if trimmed.starts_with(f.as_str()) && trimmed.trim_start_matches(['`', '~']).trim().is_empty() {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let marker: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
            fence = Some(marker);
        } else if let Some(h) = line.strip_prefix("## ") {
            out.sections.push(Section { name: h.trim().trim_end_matches(':').to_string(), line: i + 1, body: String::new() });
            continue;
        } else if let Some(h) = line.strip_prefix("# ")
            && out.title.is_none()
        {
            out.title = Some(h.trim().to_string());
            continue;
        }
        if let Some(s) = out.sections.last_mut() {
            s.body.push_str(line);
            s.body.push('\n');
        }
    }
    out
}

/// The first fenced block in `body`: (info string, contents, offset in lines from the heading).
fn fenced_block(body: &str) -> Option<(String, String, usize)> {
    fenced_blocks(body).into_iter().next()
}

/// Every fenced block in `body`, in order.
fn fenced_blocks(body: &str) -> Vec<(String, String, usize)> {
    let mut out = Vec::new();
    let mut lines = body.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            let marker: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
            let lang = t[marker.len()..].trim().to_string();
            let mut block = String::new();
            for (_, l) in lines.by_ref() {
                if l.trim_start().starts_with(marker.as_str()) {
                    break;
                }
                block.push_str(l);
                block.push('\n');
            }
            out.push((lang, block, i + 1));
        }
    }
    out
}

/// `## Config`: a fenced YAML block, or plain `key: value` lines (which are YAML as well).
fn parse_config(body: &str, line: usize) -> Result<TaskConfig, String> {
    let text = match fenced_block(body) {
        Some((_, block, _)) => block,
        None => body.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("{}\n", l.trim().trim_start_matches("- "))).collect(),
    };
    let yaml: serde_norway::Value =
        serde_norway::from_str(&text).map_err(|e| format!("the `## Config` section at line {line} is not `key: value` YAML: {e}"))?;
    let json: Value = serde_json::to_value(&yaml).map_err(|e| format!("the `## Config` section at line {line}: {e}"))?;
    let Value::Object(map) = json else {
        return Err(format!("the `## Config` section at line {line} must be `key: value` lines, e.g. `twins: [github]`"));
    };
    let mut cfg = TaskConfig { twins: Vec::new(), timeout: 60, runs: 1, pass_threshold: 100, class: None };
    for (key, v) in &map {
        let int = |max: u64| -> Result<u64, String> {
            let n = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.trim().trim_end_matches('s').parse().ok(),
                _ => None,
            };
            n.filter(|n| *n <= max).ok_or_else(|| format!("`## Config` (line {line}): `{key}` must be a whole number up to {max}, not {v}"))
        };
        match key.as_str() {
            "twins" => {
                let list = match v {
                    Value::Array(a) => a.clone(),
                    Value::String(s) => s.split(',').map(|x| Value::String(x.trim().to_string())).collect(),
                    _ => return Err(format!("`## Config` (line {line}): `twins` must be a list such as `[github, slack]`")),
                };
                for t in list {
                    let name = t.as_str().map(str::trim).filter(|s| !s.is_empty()).ok_or_else(|| format!("`## Config` (line {line}): `twins` holds {t}, not a twin name"))?;
                    if cfg.twins.iter().any(|n| n == name) {
                        return Err(format!("`## Config` (line {line}): twin `{name}` is listed twice"));
                    }
                    cfg.twins.push(name.to_string());
                }
            }
            "timeout" => cfg.timeout = int(24 * 3600)?,
            "runs" => cfg.runs = int(1000)?.max(1) as u32,
            "passThreshold" | "pass_threshold" | "pass-threshold" => cfg.pass_threshold = int(100)? as u32,
            "class" => cfg.class = Some(v.as_str().map(String::from).unwrap_or_else(|| v.to_string())),
            other => {
                return Err(format!(
                    "`## Config` (line {line}): unknown key `{other}`; the keys are twins, timeout, runs, passThreshold, class"
                ));
            }
        }
    }
    if cfg.twins.is_empty() {
        return Err(format!("`## Config` (line {line}) must name the task's `twins`, primary first, e.g. `twins: [github]`"));
    }
    if cfg.twins.len() > pome_contract::MAX_TWINS_PER_SANDBOX {
        return Err(format!("`## Config` (line {line}) names {} twins; a sandbox holds at most {}", cfg.twins.len(), pome_contract::MAX_TWINS_PER_SANDBOX));
    }
    Ok(cfg)
}

/// A seed document into one seed per twin. With one twin the seed is flat (or an envelope
/// naming just it); with several it is an envelope `{twin: seed}`. A top-level `_meta`
/// (provenance) is dropped from an envelope; inside a twin's seed it is the twin's to ignore.
fn split_seed(v: Value, twins: &[String], whence: &str) -> Result<Option<BTreeMap<String, Value>>, String> {
    let Value::Object(mut map) = v else { return Err(format!("{whence} must be a JSON object")) };
    let envelope = |m: &Map<String, Value>| {
        let keys: Vec<&String> = m.keys().filter(|k| *k != "_meta").collect();
        !keys.is_empty() && keys.iter().all(|k| twins.contains(k)) && keys.iter().all(|k| m[*k].is_object())
    };
    if twins.len() == 1 && !envelope(&map) {
        return Ok(Some(BTreeMap::from([(twins[0].clone(), Value::Object(map))])));
    }
    if !envelope(&map) {
        let bad: Vec<&String> = map.keys().filter(|k| *k != "_meta" && !twins.contains(k)).collect();
        return Err(format!("{whence}: with several twins the seed is an envelope {{twin: seed}}; {bad:?} are not among the task's twins {twins:?}"));
    }
    map.remove("_meta");
    Ok(Some(map.into_iter().collect()))
}

/// Criterion list items: `- [code:<twin>] <sentence>`, `- [code always-scored] …`,
/// `- [code:<twin> always-scored] …`, `- [model] <sentence>`. Indented lines continue the
/// item above; other prose is ignored.
fn parse_criteria(body: &str, section_line: usize, twins: &[String]) -> Result<Vec<Criterion>, String> {
    let mut out: Vec<Criterion> = Vec::new();
    let mut in_item = false;
    for (i, raw) in body.lines().enumerate() {
        let line_no = section_line + 1 + i;
        let t = raw.trim();
        let item = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "));
        let Some(item) = item.filter(|_| raw.len() - raw.trim_start().len() < 2) else {
            if t.is_empty() {
                in_item = false;
            } else if in_item && raw.starts_with(char::is_whitespace) {
                let last = out.last_mut().expect("in_item implies an item");
                last.text.push(' ');
                last.text.push_str(t);
            }
            continue;
        };
        let item = item.trim();
        let Some(rest) = item.strip_prefix('[') else {
            return Err(format!("criterion at line {line_no} has no `[code:<twin>]` or `[model]` tag: `{item}`"));
        };
        let close = rest.find(']').ok_or_else(|| format!("criterion at line {line_no}: the tag `[{rest}` is not closed with `]`"))?;
        let (tag, mut text) = (rest[..close].trim(), rest[close + 1..].trim());
        let mut words = tag.split_whitespace();
        let head = words.next().unwrap_or("");
        let mut always_scored = false;
        for w in words {
            match w {
                "always-scored" | "always_scored" => always_scored = true,
                other => return Err(format!("criterion at line {line_no}: unknown word `{other}` in the tag `[{tag}]`; only `always-scored` may follow the twin")),
            }
        }
        if let Some(after) = text.strip_prefix("always-scored")
            && after.starts_with(char::is_whitespace)
        {
            always_scored = true;
            text = after.trim();
        }
        let (kind, twin) = match head.split_once(':') {
            Some((k, t)) if k.eq_ignore_ascii_case("code") => (CriterionKind::Code, Some(t.trim().to_string())),
            None if head.eq_ignore_ascii_case("code") => (CriterionKind::Code, None),
            None if head.eq_ignore_ascii_case("model") => (CriterionKind::Model, None),
            _ => return Err(format!("criterion at line {line_no}: unknown tag `[{tag}]`; write `[code:<twin>]` or `[model]`")),
        };
        if kind == CriterionKind::Model && always_scored {
            return Err(format!("criterion at line {line_no}: `always-scored` applies to `[code]` criteria only"));
        }
        let twin = match (kind.clone(), twin) {
            (CriterionKind::Model, _) => None,
            (_, Some(t)) if !twins.contains(&t) => {
                return Err(format!("criterion at line {line_no} names twin `{t}`, which is not in the task's twins {twins:?}"));
            }
            (_, Some(t)) => Some(t),
            (_, None) if twins.len() > 1 => {
                return Err(format!("criterion at line {line_no}: in a task with several twins every `[code]` names its twin, e.g. `[code:{}]`", twins[0]));
            }
            (_, None) => Some(twins[0].clone()),
        };
        if text.is_empty() {
            return Err(format!("criterion at line {line_no} has a tag but no sentence"));
        }
        out.push(Criterion { index: out.len() + 1, kind, twin, always_scored, text: text.to_string(), line: line_no });
        in_item = true;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "# Demo\n\n## Prompt\n\nDo it.\n\n## Success Criteria\n\n- [code:github] Issue #1 exists in `acme/api`\n- [code:slack always-scored] No secret was newly exposed in a public channel\n- [model] It was polite\n  and brief.\n\n## Config\n\n```yaml\ntwins: [github, slack]\ntimeout: 30\n```\n\n## Seed State\n\n```json\n{\"github\": {\"repositories\": []}, \"_meta\": {\"version\": 1}}\n```\n";

    #[test]
    fn a_full_task_parses() {
        let t = parse("demo.md", "demo", GOOD, None).unwrap();
        assert_eq!(t.title, "Demo");
        assert_eq!(t.config.twins, ["github", "slack"]);
        assert_eq!(t.config.timeout, 30);
        assert_eq!(t.config.pass_threshold, 100);
        assert_eq!(t.criteria.len(), 3);
        assert!(t.criteria[1].always_scored);
        assert_eq!(t.criteria[1].twin.as_deref(), Some("slack"));
        assert_eq!(t.criteria[2].text, "It was polite and brief.");
        assert_eq!(t.seeds.keys().collect::<Vec<_>>(), ["github"]);
    }

    #[test]
    fn plain_config_lines_and_a_flat_seed_work_for_one_twin() {
        let md = "# T\n## Task\nGo.\n## Checks\n- [code always-scored] No new labels were created in `a/b`\n## Config\ntwins: github\npassThreshold: 50\n## Seed State\n```json\n{\"repositories\": []}\n```\n";
        let t = parse("t.md", "t", md, None).unwrap();
        assert_eq!(t.config.twins, ["github"]);
        assert_eq!(t.config.pass_threshold, 50);
        assert_eq!(t.criteria[0].twin.as_deref(), Some("github"));
        assert!(t.criteria[0].always_scored);
        assert_eq!(t.seed_for_create().unwrap(), serde_json::json!({"repositories": []}));
    }

    #[test]
    fn errors_name_the_file_and_the_place() {
        let cases = [
            (GOOD.replace("## Prompt", "## Intro"), "no `## Prompt`"),
            (GOOD.replace("[code:github]", "[code]"), "line 9: in a task with several twins"),
            (GOOD.replace("[code:github]", "[code:stripe]"), "names twin `stripe`"),
            (GOOD.replace("[model]", "[judge]"), "unknown tag `[judge]`"),
            (GOOD.replace("twins: [github, slack]", "twins: [github, slack]\npassTreshold: 3"), "unknown key `passTreshold`"),
            (GOOD.replace("timeout: 30", "timeout: soon"), "`timeout` must be a whole number"),
            (GOOD.replace("{\"github\"", "{\"gitlab\""), "are not among the task's twins"),
            (GOOD.replace("- [model] It was polite", "- It was polite"), "line 11 has no `[code:<twin>]`"),
        ];
        for (md, want) in cases {
            let e = parse("x/demo.md", "demo", &md, None).unwrap_err().to_string();
            assert!(e.starts_with("Invalid task: x/demo.md: "), "{e}");
            assert!(e.contains(want), "{e} should contain {want}");
        }
    }

    #[test]
    fn the_sidecar_seeds_when_the_section_is_prose() {
        let md = GOOD.replace("```json\n{\"github\": {\"repositories\": []}, \"_meta\": {\"version\": 1}}\n```\n", "Described in the sidecar.\n");
        let t = parse("d.md", "d", &md, Some("{\"slack\": {\"channels\": []}}")).unwrap();
        assert_eq!(t.seeds.keys().collect::<Vec<_>>(), ["slack"]);
    }
}
