//! The smaller method families: `api.test`, `auth.test`, `bots.info`, `team.info`,
//! `emoji.list`, `reminders.*`, `dnd.*`.

use pome_twin_sdk::{Call, json};
use serde_json::{Map, Value};

use crate::args::Args;
use crate::conversations::now_secs;
use crate::model::*;
use crate::{Res, SlackError, fail, ok};

pub fn api_test(_w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let mut args: Map<String, Value> = a.0.clone();
    args.remove("token");
    if let Some(e) = a.str("error") {
        return Err(fail(&e).with("args", Value::Object(args)));
    }
    if args.is_empty() { ok(json!({})) } else { ok(json!({"args": args})) }
}

pub fn auth_test(w: &mut World, call: &mut Call, _a: &Args) -> Res {
    let me = w.agent_user();
    let mut out = json!({
        "url": format!("{}/", call.req.base_url),
        "team": w.team.name,
        "user": me.name,
        "team_id": w.team.id,
        "user_id": me.id,
    });
    if let Some(b) = &me.bot_id {
        out["bot_id"] = json!(b);
    }
    out["is_enterprise_install"] = json!(false);
    ok(out)
}

pub fn bots_info(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let bot = a.str("bot").ok_or_else(|| fail("bot_not_found"))?;
    let u = w.users.iter().find(|u| u.bot_id.as_deref() == Some(bot.as_str())).ok_or_else(|| fail("bot_not_found"))?;
    ok(json!({"bot": {
        "id": bot,
        "deleted": u.deleted,
        "name": u.real_name,
        "updated": u.updated,
        "app_id": crate::render::app_id(&bot),
        "user_id": u.id,
        "icons": crate::render::bot_icons(&call.req.base_url, &bot),
    }}))
}

pub fn team_info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    if let Some(t) = a.str("team")
        && t != w.team.id {
            return Err(fail("team_not_found"));
        }
    let email_domain = w.team.email_domain.clone();
    ok(json!({"team": {
        "id": w.team.id,
        "name": w.team.name,
        "domain": w.team.domain,
        "email_domain": email_domain,
        "icon": {"image_default": true},
    }}))
}

pub fn emoji_list(w: &mut World, call: &mut Call, _a: &Args) -> Res {
    let emoji: Map<String, Value> =
        w.emoji.iter().map(|(k, v)| (k.clone(), json!(crate::render::emoji_url(&call.req.base_url, v)))).collect();
    ok(json!({"emoji": emoji, "cache_ts": "1767225600.000000"}))
}

/// A reminder's `time`: unix seconds, seconds from now (under a day), or `in N units`.
fn reminder_time(s: &str, now: i64) -> Option<i64> {
    if let Ok(n) = s.trim().parse::<i64>() {
        return Some(if n < 86_400 { now.saturating_add(n) } else { n });
    }
    let words: Vec<String> = s.split_whitespace().map(|x| x.to_ascii_lowercase()).collect();
    let rest = words.strip_prefix(&["in".to_string()]).unwrap_or(&words);
    let [n, unit] = rest else { return None };
    let n: i64 = match n.as_str() {
        "a" | "an" | "one" => 1,
        x => x.parse().ok()?,
    };
    let secs = match unit.trim_end_matches('s') {
        "second" | "sec" => 1,
        "minute" | "min" => 60,
        "hour" | "hr" => 3600,
        "day" => 86_400,
        "week" => 604_800,
        _ => return None,
    };
    Some(now.saturating_add(n.saturating_mul(secs)))
}

pub fn reminders_add(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let text = a.str("text").ok_or_else(|| fail("no_text"))?;
    let raw = a.str("time").ok_or_else(|| fail("invalid_time"))?;
    let now = now_secs();
    let time = reminder_time(&raw, now).ok_or_else(|| fail("cannot_parse"))?;
    if time < now {
        return Err(fail("time_in_past"));
    }
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    if w.user(&user).is_none() {
        return Err(fail("user_not_found"));
    }
    if user != w.agent {
        return Err(fail("cannot_add_others"));
    }
    let id = w.new_id("Rm");
    let r = Reminder { id: id.clone(), creator: w.agent.clone(), user, text, time, complete_ts: 0 };
    call.created("reminder", &id, &r);
    w.reminders.push(r);
    ok(json!({"reminder": crate::render::reminder(w.reminders.last().expect("pushed"))}))
}

fn find_reminder(w: &World, a: &Args) -> Result<usize, SlackError> {
    let id = a.str("reminder").ok_or_else(|| fail("not_found"))?;
    w.reminders
        .iter()
        .position(|r| r.id == id && (r.user == w.agent || r.creator == w.agent))
        .ok_or_else(|| fail("not_found"))
}

pub fn reminders_list(w: &mut World, _call: &mut Call, _a: &Args) -> Res {
    let list: Vec<Value> = w
        .reminders
        .iter()
        .filter(|r| r.user == w.agent || r.creator == w.agent)
        .map(crate::render::reminder)
        .collect();
    ok(json!({"reminders": list}))
}

pub fn reminders_info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let ri = find_reminder(w, a)?;
    ok(json!({"reminder": crate::render::reminder(&w.reminders[ri])}))
}

pub fn reminders_complete(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ri = find_reminder(w, a)?;
    if w.reminders[ri].complete_ts == 0 {
        let r = &mut w.reminders[ri];
        call.update("reminder", r.id.clone(), r, |r| r.complete_ts = now_secs());
    }
    ok(json!({}))
}

pub fn reminders_delete(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let ri = find_reminder(w, a)?;
    let r = w.reminders.remove(ri);
    call.deleted("reminder", r.id.clone(), &r);
    ok(json!({}))
}

fn dnd_of(u: &User, now: i64, detailed: bool) -> Value {
    let mut v = json!({"dnd_enabled": false, "next_dnd_start_ts": 1, "next_dnd_end_ts": 1});
    if detailed {
        let on = u.snooze_until > now;
        v["snooze_enabled"] = json!(on);
        if on {
            v["snooze_endtime"] = json!(u.snooze_until);
            v["snooze_remaining"] = json!(u.snooze_until - now);
        }
    }
    v
}

pub fn dnd_info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let user = a.str("user").unwrap_or_else(|| w.agent.clone());
    let u = w.user(&user).ok_or_else(|| fail("user_not_found"))?;
    ok(dnd_of(u, now_secs(), user == w.agent))
}

fn set_snooze(w: &mut World, call: &mut Call, until: i64) {
    let ui = w.user_idx(&w.agent.clone()).expect("agent exists");
    let u = &mut w.users[ui];
    call.update("user", u.id.clone(), u, |u| u.snooze_until = until);
}

pub fn dnd_set_snooze(w: &mut World, call: &mut Call, a: &Args) -> Res {
    let mins = a.int("num_minutes").ok_or_else(|| fail("missing_duration"))?;
    if mins <= 0 {
        return Err(fail("invalid_duration"));
    }
    let now = now_secs();
    let until = now.saturating_add(mins.saturating_mul(60));
    set_snooze(w, call, until);
    ok(json!({"snooze_enabled": true, "snooze_endtime": until, "snooze_remaining": until - now}))
}

pub fn dnd_end_snooze(w: &mut World, call: &mut Call, _a: &Args) -> Res {
    let now = now_secs();
    if w.agent_user().snooze_until <= now {
        return Err(fail("snooze_not_active"));
    }
    set_snooze(w, call, 0);
    ok(dnd_of(w.agent_user(), now, true))
}

pub fn dnd_end_dnd(w: &mut World, call: &mut Call, _a: &Args) -> Res {
    if w.agent_user().snooze_until > now_secs() {
        set_snooze(w, call, 0);
    }
    ok(json!({}))
}

pub fn dnd_team_info(w: &mut World, _call: &mut Call, a: &Args) -> Res {
    let wanted = a.list("users");
    let now = now_secs();
    let mut users = Map::new();
    for u in w.users.iter().filter(|u| wanted.is_empty() || wanted.contains(&u.id)) {
        users.insert(u.id.clone(), dnd_of(u, now, false));
    }
    ok(json!({"users": users}))
}

/// The workspace's custom profile fields: none are defined in a seeded workspace.
pub fn team_profile_get(_w: &mut World, _call: &mut Call, _a: &Args) -> Res {
    ok(json!({"profile": {"fields": []}}))
}
