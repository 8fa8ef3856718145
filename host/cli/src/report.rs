//! `pome run --report junit=FILE|json=FILE`: a suite's outcome for CI. JUnit XML because every
//! CI system renders it (GitHub Actions through a reporter action, GitLab, Jenkins, Buildkite):
//! each task is a test case, each failed trial a `<failure>` carrying the grader's reasons and
//! evidence pointers. JSON is the summary table as data, for dashboards and scripts.

use std::path::PathBuf;

use crate::client::{Failure, exit, fail};
use crate::suite::Summary;

/// One `--report KIND=FILE`.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: Kind,
    pub path: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Junit,
    Json,
}

impl Spec {
    pub fn parse(s: &str) -> Result<Spec, String> {
        let (kind, path) = s.split_once('=').ok_or_else(|| format!("`{s}` is not KIND=FILE: write junit=report.xml or json=report.json"))?;
        let kind = match kind {
            "junit" => Kind::Junit,
            "json" => Kind::Json,
            other => return Err(format!("no report kind `{other}`: the kinds are junit and json")),
        };
        if path.is_empty() {
            return Err(format!("--report {s}: name the file after `=`"));
        }
        Ok(Spec { kind, path: PathBuf::from(path) })
    }
}

/// Writes every requested report. A report that cannot be written is an orchestration
/// failure: a CI job must not read last week's file and call it this run's.
pub fn write_all(specs: &[Spec], summary: &Summary) -> Result<(), Failure> {
    for s in specs {
        let text = match s.kind {
            Kind::Junit => junit(summary),
            Kind::Json => serde_json::to_string_pretty(summary).expect("a summary is plain data") + "\n",
        };
        if let Some(dir) = s.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| fail(exit::ORCHESTRATION, format!("creating {}: {e}", dir.display())))?;
        }
        std::fs::write(&s.path, text).map_err(|e| fail(exit::ORCHESTRATION, format!("writing the report {}: {e}", s.path.display())))?;
    }
    Ok(())
}

/// The suite as JUnit XML: one `<testsuite>`, a `<testcase>` per task (its time the sum of its
/// trials'), a `<failure>` per trial that ran and did not pass, an `<error>` per trial that
/// could not run, and the task's pass rate and runs in `<system-out>`.
pub fn junit(s: &Summary) -> String {
    let secs = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let failures = s.tasks.iter().map(|t| t.failed).sum::<u64>();
    x.push_str(&format!(
        "<testsuites name=\"pome run\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" time=\"{}\">\n",
        s.tasks.len(),
        s.errored,
        secs(s.duration_ms)
    ));
    x.push_str(&format!(
        "  <testsuite name=\"pome\" tests=\"{}\" failures=\"{failures}\" errors=\"{}\" skipped=\"0\" time=\"{}\">\n",
        s.tasks.len(),
        s.errored,
        secs(s.duration_ms)
    ));
    if let Some(v) = &s.agent_version {
        x.push_str(&format!("    <properties>\n      <property name=\"agent_version\" value=\"{}\"/>\n    </properties>\n", esc(v)));
    }
    for t in &s.tasks {
        let time: u64 = t.runs.iter().filter_map(|r| r.duration_ms).sum();
        x.push_str(&format!("    <testcase classname=\"pome.{}\" name=\"{}\" file=\"{}\" time=\"{}\">\n", esc(&t.task), esc(&t.task), esc(&t.file), secs(time)));
        for r in &t.runs {
            if let Some(err) = &r.error {
                x.push_str(&format!(
                    "      <error type=\"error\" message=\"trial {} of {} could not run: {}\">{}</error>\n",
                    r.trial,
                    t.trials,
                    esc(err),
                    esc(err)
                ));
                continue;
            }
            if r.verdict == "pass" {
                continue;
            }
            let score = r.score.map_or("–".to_string(), |s| s.to_string());
            let mut body = String::new();
            if r.timed_out {
                body.push_str("the agent timed out and was stopped\n");
            }
            for c in &r.failed_criteria {
                let status = c.status.as_str();
                let tag = match &c.twin {
                    Some(tw) => format!("{}:{tw}", c.kind),
                    None => c.kind.clone(),
                };
                body.push_str(&format!("{status} #{} [{tag}] {}\n    {}\n", c.index, c.text, c.reason));
                if let Some(e) = &c.evidence {
                    body.push_str(&format!("    evidence: {e}\n"));
                }
            }
            body.push_str(&format!("run {}  {}\n", r.run_id.as_deref().unwrap_or(""), r.dir.as_deref().unwrap_or("")));
            x.push_str(&format!(
                "      <failure type=\"{}\" message=\"trial {} of {}: {}, score {score} (threshold {})\">{}</failure>\n",
                esc(&r.verdict),
                r.trial,
                t.trials,
                esc(&r.verdict),
                t.pass_threshold,
                esc(&body)
            ));
        }
        let mut out = format!(
            "pass rate {}/{} ({:.0}%, 95% interval {:.0}–{:.0}%), pass^{} {:.3}, group {}\n",
            t.passed,
            t.trials,
            100.0 * t.pass_rate.rate,
            100.0 * t.pass_rate.low,
            100.0 * t.pass_rate.high,
            t.pass_k.k,
            t.pass_k.value,
            t.group_id
        );
        for r in &t.runs {
            out.push_str(&format!("trial {}: {} {}\n", r.trial, r.verdict, r.dir.as_deref().or(r.error.as_deref()).unwrap_or("")));
        }
        x.push_str(&format!("      <system-out>{}</system-out>\n", esc(&out)));
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Text for an XML attribute or element: the five escapes, and the characters XML 1.0 cannot
/// hold at all (most C0 controls, which an agent's error message may carry) dropped.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_named_by_kind_and_file() {
        let s = Spec::parse("junit=out/r.xml").unwrap();
        assert_eq!((s.kind, s.path), (Kind::Junit, PathBuf::from("out/r.xml")));
        assert_eq!(Spec::parse("json=r.json").unwrap().kind, Kind::Json);
        assert!(Spec::parse("xml=r.xml").unwrap_err().contains("the kinds are junit and json"));
        assert!(Spec::parse("r.xml").unwrap_err().contains("KIND=FILE"));
        assert!(Spec::parse("json=").is_err());
    }

    #[test]
    fn text_in_xml_is_escaped_and_characters_xml_cannot_hold_are_dropped() {
        assert_eq!(esc("a<b & \"c\" 'd'>\u{1}\u{7}\n"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;\n");
    }
}
