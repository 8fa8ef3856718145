//! `users.settings`: forwarding, IMAP, POP, language, vacation, filters, forwarding
//! addresses, send-as aliases and delegates.

use pome_twin_sdk::{Call, Response, Value, json};

use crate::api::{mbox, not_found};
use crate::model::World;
use crate::{gerr, ok, ok_empty};

fn body(call: &Call) -> Result<serde_json::Map<String, Value>, Response> {
    match call.req.json_value() {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(gerr(400, "badRequest", "Invalid JSON payload received.")),
    }
}

macro_rules! single {
    ($get:ident, $put:ident, $field:ident, $entity:literal, $allowed:expr) => {
        pub fn $get(w: &mut World, call: &mut Call) -> Response {
            let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
            ok(&w.mailboxes[b].settings.$field)
        }
        pub fn $put(w: &mut World, call: &mut Call) -> Response {
            let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
            let req = match body(call) { Ok(v) => v, Err(r) => return r };
            let allowed: &[&str] = $allowed;
            for k in req.keys() {
                if !allowed.contains(&k.as_str()) {
                    return gerr(400, "invalidArgument", &format!("Invalid JSON payload received. Unknown name \"{k}\""));
                }
            }
            if let Err(r) = validate_single($entity, &req, &w.mailboxes[b].settings.forwarding) {
                return r;
            }
            let s = &mut w.mailboxes[b].settings;
            let before = s.$field.clone();
            let mut after = before.clone();
            if let Some(o) = after.as_object_mut() {
                for (k, v) in req {
                    o.insert(k, v);
                }
            }
            s.$field = after.clone();
            let email = w.mailboxes[b].email.clone();
            call.updated($entity, &email, &before, &after);
            ok(&after)
        }
    };
}

fn validate_single(entity: &str, req: &serde_json::Map<String, Value>, forwarding: &[Value]) -> Result<(), Response> {
    let one_of = |k: &str, allowed: &[&str]| -> Result<(), Response> {
        match req.get(k).and_then(Value::as_str) {
            Some(v) if !allowed.contains(&v) => Err(gerr(400, "invalidArgument", &format!("Invalid value for {k}: {v}"))),
            _ => Ok(()),
        }
    };
    match entity {
        "autoForwarding" => {
            one_of("disposition", &["leaveInInbox", "archive", "trash", "markRead", "dispositionUnspecified"])?;
            if req.get("enabled").and_then(Value::as_bool) == Some(true) {
                let addr = req.get("emailAddress").and_then(Value::as_str).unwrap_or("");
                let verified = forwarding.iter().any(|f| {
                    f["forwardingEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(addr)) && f["verificationStatus"] == "accepted"
                });
                if !verified {
                    return Err(gerr(400, "failedPrecondition", "Unverified forwarding address"));
                }
            }
        }
        "imap" => one_of("expungeBehavior", &["archive", "trash", "deleteForever", "expungeBehaviorUnspecified"])?,
        "pop" => {
            one_of("accessWindow", &["disabled", "fromNowOn", "allMail", "accessWindowUnspecified"])?;
            one_of("disposition", &["leaveInInbox", "archive", "trash", "markRead", "dispositionUnspecified"])?;
        }
        _ => {}
    }
    Ok(())
}

single!(get_auto_forwarding, update_auto_forwarding, auto_forwarding, "autoForwarding", &["enabled", "emailAddress", "disposition"]);
single!(get_imap, update_imap, imap, "imap", &["enabled", "autoExpunge", "expungeBehavior", "maxFolderSize"]);
single!(get_pop, update_pop, pop, "pop", &["accessWindow", "disposition"]);
single!(get_language, update_language, language, "language", &["displayLanguage"]);
single!(
    get_vacation,
    update_vacation,
    vacation,
    "vacation",
    &["enableAutoReply", "responseSubject", "responseBodyPlainText", "responseBodyHtml", "restrictToContacts", "restrictToDomain", "startTime", "endTime"]
);

// Filters -------------------------------------------------------------------------------

pub fn filters_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let f = &w.mailboxes[b].settings.filters;
    if f.is_empty() { ok(&json!({})) } else { ok(&json!({"filter": f})) }
}

pub fn filters_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    match w.mailboxes[b].settings.filters.iter().find(|f| f["id"] == call.param("id")) {
        Some(f) => ok(f),
        None => not_found(),
    }
}

pub fn filters_create(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let criteria = req.get("criteria").cloned().unwrap_or(json!({}));
    let action = req.get("action").cloned().unwrap_or(json!({}));
    if criteria.as_object().is_none_or(|o| o.is_empty()) {
        return gerr(400, "invalidArgument", "Filter doesn't have any criteria");
    }
    if action.as_object().is_none_or(|o| o.is_empty()) {
        return gerr(400, "invalidArgument", "Filter doesn't have any actions");
    }
    let mb = &w.mailboxes[b];
    for key in ["addLabelIds", "removeLabelIds"] {
        for l in action.get(key).and_then(Value::as_array).into_iter().flatten() {
            let l = l.as_str().unwrap_or("");
            if mb.label_by_id(l).is_none() {
                return gerr(400, "invalidArgument", &format!("Invalid label {l} in {key}"));
            }
        }
    }
    if let Some(fwd) = action.get("forward").and_then(Value::as_str) {
        let ok_fwd = mb.settings.forwarding.iter().any(|f| f["forwardingEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(fwd)));
        if !ok_fwd {
            return gerr(400, "failedPrecondition", "Unverified forwarding address");
        }
    }
    if mb.settings.filters.iter().any(|f| f["criteria"] == criteria && f["action"] == action) {
        return gerr(400, "failedPrecondition", "Filter already exists");
    }
    w.seq += 1;
    let id = format!("ANe1Bm{}", crate::mime::b64url(&w.seq.to_be_bytes()).trim_end_matches('='));
    let f = json!({"id": id, "criteria": criteria, "action": action});
    w.mailboxes[b].settings.filters.push(f.clone());
    call.created("filter", &id, &f);
    ok(&f)
}

pub fn filters_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param("id").to_string();
    let list = &mut w.mailboxes[b].settings.filters;
    match list.iter().position(|f| f["id"] == id.as_str()) {
        Some(p) => {
            let f = list.remove(p);
            call.deleted("filter", &id, &f);
            ok_empty()
        }
        None => not_found(),
    }
}

// Keyed lists: forwarding addresses, send-as aliases, delegates --------------------------

#[derive(Clone, Copy)]
enum Kind {
    Forwarding,
    SendAs,
    Delegates,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Forwarding => "forwardingEmail",
            Kind::SendAs => "sendAsEmail",
            Kind::Delegates => "delegateEmail",
        }
    }
    fn list_field(self) -> &'static str {
        match self {
            Kind::Forwarding => "forwardingAddresses",
            Kind::SendAs => "sendAs",
            Kind::Delegates => "delegates",
        }
    }
    fn param(self) -> &'static str {
        self.key()
    }
    fn list(self, w: &mut World, b: usize) -> &mut Vec<Value> {
        let s = &mut w.mailboxes[b].settings;
        match self {
            Kind::Forwarding => &mut s.forwarding,
            Kind::SendAs => &mut s.send_as,
            Kind::Delegates => &mut s.delegates,
        }
    }
}

fn k_list(w: &mut World, call: &mut Call, k: Kind) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let l = k.list(w, b).clone();
    ok(&json!({ k.list_field(): l }))
}

fn k_get(w: &mut World, call: &mut Call, k: Kind) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param(k.param()).to_string();
    match k.list(w, b).iter().find(|x| x[k.key()].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&id))) {
        Some(v) => ok(v),
        None => not_found(),
    }
}

fn k_create(w: &mut World, call: &mut Call, k: Kind) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let Some(email) = req.get(k.key()).and_then(Value::as_str).filter(|e| e.contains('@')).map(str::to_string) else {
        return gerr(400, "invalidArgument", &format!("Invalid {}", k.key()));
    };
    if k.list(w, b).iter().any(|x| x[k.key()].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&email))) {
        return gerr(409, "alreadyExists", "Already exists");
    }
    let v = match k {
        // Verification mail is not sent: addresses are accepted at once.
        Kind::Forwarding => json!({"forwardingEmail": email, "verificationStatus": "accepted"}),
        Kind::Delegates => json!({"delegateEmail": email, "verificationStatus": "accepted"}),
        Kind::SendAs => {
            let mut m = req.clone();
            m.insert("isPrimary".into(), json!(false));
            m.entry("displayName").or_insert(json!(""));
            m.entry("replyToAddress").or_insert(json!(""));
            m.entry("signature").or_insert(json!(""));
            m.entry("treatAsAlias").or_insert(json!(true));
            m.insert("verificationStatus".into(), json!("accepted"));
            Value::Object(m)
        }
    };
    k.list(w, b).push(v.clone());
    call.created(k.key(), &email, &v);
    ok(&v)
}

fn k_delete(w: &mut World, call: &mut Call, k: Kind) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let id = call.param(k.param()).to_string();
    let list = k.list(w, b);
    match list.iter().position(|x| x[k.key()].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&id))) {
        Some(p) if list[p]["isPrimary"] == true => gerr(400, "invalidArgument", "Cannot delete the primary send-as alias"),
        Some(p) => {
            let v = list.remove(p);
            call.deleted(k.key(), &id, &v);
            ok_empty()
        }
        None => not_found(),
    }
}

fn send_as_write(w: &mut World, call: &mut Call, replace: bool) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let id = call.param("sendAsEmail").to_string();
    let list = &mut w.mailboxes[b].settings.send_as;
    let Some(p) = list.iter().position(|x| x["sendAsEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&id))) else {
        return not_found();
    };
    let before = list[p].clone();
    let mut after = before.clone();
    if let Some(o) = after.as_object_mut() {
        if replace {
            for f in ["displayName", "replyToAddress", "signature"] {
                o.insert(f.into(), json!(""));
            }
        }
        for (k, v) in req {
            if matches!(k.as_str(), "sendAsEmail" | "isPrimary" | "verificationStatus") {
                continue;
            }
            o.insert(k, v);
        }
    }
    if after["isDefault"] == true {
        for x in list.iter_mut() {
            if let Some(o) = x.as_object_mut() {
                o.insert("isDefault".into(), json!(false));
            }
        }
    }
    list[p] = after.clone();
    call.updated("sendAs", &id, &before, &after);
    ok(&after)
}

pub fn forwarding_list(w: &mut World, c: &mut Call) -> Response { k_list(w, c, Kind::Forwarding) }
pub fn forwarding_get(w: &mut World, c: &mut Call) -> Response { k_get(w, c, Kind::Forwarding) }
pub fn forwarding_create(w: &mut World, c: &mut Call) -> Response { k_create(w, c, Kind::Forwarding) }
pub fn forwarding_delete(w: &mut World, c: &mut Call) -> Response { k_delete(w, c, Kind::Forwarding) }
pub fn send_as_list(w: &mut World, c: &mut Call) -> Response { k_list(w, c, Kind::SendAs) }
pub fn send_as_get(w: &mut World, c: &mut Call) -> Response { k_get(w, c, Kind::SendAs) }
pub fn send_as_create(w: &mut World, c: &mut Call) -> Response { k_create(w, c, Kind::SendAs) }
pub fn send_as_delete(w: &mut World, c: &mut Call) -> Response { k_delete(w, c, Kind::SendAs) }
pub fn send_as_update(w: &mut World, c: &mut Call) -> Response { send_as_write(w, c, true) }
pub fn send_as_patch(w: &mut World, c: &mut Call) -> Response { send_as_write(w, c, false) }
pub fn send_as_verify(w: &mut World, c: &mut Call) -> Response {
    let b = match mbox(w, c) { Ok(b) => b, Err(r) => return r };
    let id = c.param("sendAsEmail").to_string();
    if w.mailboxes[b].settings.send_as.iter().any(|x| x["sendAsEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(&id))) {
        ok_empty()
    } else {
        not_found()
    }
}
pub fn delegates_list(w: &mut World, c: &mut Call) -> Response { k_list(w, c, Kind::Delegates) }
pub fn delegates_get(w: &mut World, c: &mut Call) -> Response { k_get(w, c, Kind::Delegates) }
pub fn delegates_create(w: &mut World, c: &mut Call) -> Response { k_create(w, c, Kind::Delegates) }
pub fn delegates_delete(w: &mut World, c: &mut Call) -> Response { k_delete(w, c, Kind::Delegates) }

// S/MIME configs and client-side encryption -------------------------------------------------
// Certificates and keys are not verified cryptographically: a config is accepted as given
// and answered with the fields Gmail returns (fidelity: shape).

fn alias_exists(w: &World, b: usize, email: &str) -> bool {
    w.mailboxes[b].settings.send_as.iter().any(|x| x["sendAsEmail"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email)))
}

fn next_token(w: &mut World, prefix: &str) -> String {
    w.seq += 1;
    format!("{prefix}{:016x}", crate::mime::fnv(&format!("{prefix}:{}", w.seq)))
}

pub fn smime_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let alias = call.param("sendAsEmail").to_string();
    if !alias_exists(w, b, &alias) {
        return not_found();
    }
    let list: Vec<Value> = w.mailboxes[b].settings.smime.iter().filter(|x| x["_alias"].as_str().is_some_and(|a| a.eq_ignore_ascii_case(&alias))).map(public_smime).collect();
    ok(&json!({"smimeInfo": list}))
}

fn public_smime(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("_alias");
    }
    v
}

fn find_smime(w: &World, b: usize, alias: &str, id: &str) -> Option<usize> {
    w.mailboxes[b].settings.smime.iter().position(|x| x["id"] == id && x["_alias"].as_str().is_some_and(|a| a.eq_ignore_ascii_case(alias)))
}

pub fn smime_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    match find_smime(w, b, call.param("sendAsEmail"), call.param("id")) {
        Some(i) => ok(&public_smime(&w.mailboxes[b].settings.smime[i])),
        None => not_found(),
    }
}

pub fn smime_insert(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let alias = call.param("sendAsEmail").to_string();
    if !alias_exists(w, b, &alias) {
        return not_found();
    }
    let has_cert = ["pkcs12", "pem"].iter().any(|k| req.get(*k).and_then(Value::as_str).is_some_and(|s| !s.is_empty()));
    if !has_cert {
        return gerr(400, "invalidArgument", "Missing pkcs12 or pem certificate");
    }
    let id = next_token(w, "smime_");
    let first = !w.mailboxes[b].settings.smime.iter().any(|x| x["_alias"].as_str().is_some_and(|a| a.eq_ignore_ascii_case(&alias)));
    let expiration = (pome_twin_sdk::time::now().timestamp_millis() + 365 * 24 * 3600 * 1000).to_string();
    let v = json!({"id": id, "issuerCn": "Pome Twin CA", "isDefault": first, "expiration": expiration,
        "pem": req.get("pem").cloned().unwrap_or(json!("")), "_alias": alias});
    w.mailboxes[b].settings.smime.push(v.clone());
    let out = public_smime(&v);
    call.created("smimeInfo", &id, &out);
    ok(&out)
}

pub fn smime_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let Some(i) = find_smime(w, b, call.param("sendAsEmail"), call.param("id")) else { return not_found() };
    let v = w.mailboxes[b].settings.smime.remove(i);
    call.deleted("smimeInfo", v["id"].as_str().unwrap_or(""), &public_smime(&v));
    ok_empty()
}

pub fn smime_set_default(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let alias = call.param("sendAsEmail").to_string();
    let Some(i) = find_smime(w, b, &alias, call.param("id")) else { return not_found() };
    for (j, x) in w.mailboxes[b].settings.smime.iter_mut().enumerate() {
        if x["_alias"].as_str().is_some_and(|a| a.eq_ignore_ascii_case(&alias)) {
            x["isDefault"] = json!(i == j);
        }
    }
    ok_empty()
}

pub fn cse_keypairs_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let l = w.mailboxes[b].settings.cse_keypairs.clone();
    if l.is_empty() { ok(&json!({})) } else { ok(&json!({"cseKeyPairs": l})) }
}

pub fn cse_keypairs_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    match w.mailboxes[b].settings.cse_keypairs.iter().find(|k| k["keyPairId"] == call.param("keyPairId")) {
        Some(k) => ok(k),
        None => not_found(),
    }
}

pub fn cse_keypairs_create(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let Some(pkcs7) = req.get("pkcs7").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string) else {
        return gerr(400, "invalidArgument", "Missing pkcs7 certificate chain");
    };
    let id = next_token(w, "kp_");
    let email = w.mailboxes[b].email.clone();
    let subjects = req.get("subjectEmailAddresses").cloned().unwrap_or(json!([email]));
    let v = json!({"keyPairId": id, "pkcs7": pkcs7, "pem": pkcs7, "enablementState": "enabled", "subjectEmailAddresses": subjects,
        "privateKeyMetadata": req.get("privateKeyMetadata").cloned().unwrap_or(json!([]))});
    w.mailboxes[b].settings.cse_keypairs.push(v.clone());
    call.created("cseKeyPair", &id, &v);
    ok(&v)
}

/// `POST keypairs/{id}:enable|:disable|:obliterate`: the verb rides in the last segment.
pub fn cse_keypairs_verb(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let seg = crate::transport::decode(call.param("keyPairIdVerb"));
    let Some((id, verb)) = seg.rsplit_once(':') else { return World::unsupported_route(call) };
    let (id, verb) = (id.to_string(), verb.to_string());
    call.action = Some(format!("settings.cse.keypairs.{verb}"));
    let list = &mut w.mailboxes[b].settings.cse_keypairs;
    let Some(i) = list.iter().position(|k| k["keyPairId"] == id.as_str()) else { return not_found() };
    let before = list[i].clone();
    match verb.as_str() {
        "enable" => list[i]["enablementState"] = json!("enabled"),
        "disable" => {
            list[i]["enablementState"] = json!("disabled");
            list[i]["disableTime"] = json!(pome_twin_sdk::time::now_iso());
        }
        "obliterate" => {
            if list[i]["enablementState"] != "disabled" {
                return gerr(400, "failedPrecondition", "Key pair must be disabled before it can be obliterated");
            }
            let v = list.remove(i);
            call.deleted("cseKeyPair", &id, &v);
            return ok_empty();
        }
        _ => return World::unsupported_route(call),
    }
    let after = list[i].clone();
    call.updated("cseKeyPair", &id, &before, &after);
    ok(&after)
}

pub fn cse_identities_list(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let l = w.mailboxes[b].settings.cse_identities.clone();
    if l.is_empty() { ok(&json!({})) } else { ok(&json!({"cseIdentities": l})) }
}

fn identity_pos(w: &World, b: usize, email: &str) -> Option<usize> {
    w.mailboxes[b].settings.cse_identities.iter().position(|x| x["emailAddress"].as_str().is_some_and(|e| e.eq_ignore_ascii_case(email)))
}

pub fn cse_identities_get(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    match identity_pos(w, b, call.param("cseEmailAddress")) {
        Some(i) => ok(&w.mailboxes[b].settings.cse_identities[i]),
        None => not_found(),
    }
}

fn check_identity(w: &World, b: usize, req: &serde_json::Map<String, Value>) -> Result<(), Response> {
    let keys = &w.mailboxes[b].settings.cse_keypairs;
    let mut named = Vec::new();
    if let Some(k) = req.get("primaryKeyPairId").and_then(Value::as_str) {
        named.push(k.to_string());
    }
    if let Some(p) = req.get("signAndEncryptKeyPairs") {
        for f in ["signingKeyPairId", "encryptionKeyPairId"] {
            if let Some(k) = p.get(f).and_then(Value::as_str) {
                named.push(k.to_string());
            }
        }
    }
    if named.is_empty() {
        return Err(gerr(400, "invalidArgument", "An identity needs primaryKeyPairId or signAndEncryptKeyPairs"));
    }
    for k in named {
        if !keys.iter().any(|x| x["keyPairId"] == k.as_str()) {
            return Err(gerr(400, "invalidArgument", &format!("Unknown key pair {k}")));
        }
    }
    Ok(())
}

pub fn cse_identities_create(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let mut req = match body(call) { Ok(v) => v, Err(r) => return r };
    if let Err(r) = check_identity(w, b, &req) {
        return r;
    }
    let email = req.get("emailAddress").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| w.mailboxes[b].email.clone());
    if identity_pos(w, b, &email).is_some() {
        return gerr(409, "alreadyExists", "Identity already exists");
    }
    req.insert("emailAddress".into(), json!(email));
    let v = Value::Object(req);
    w.mailboxes[b].settings.cse_identities.push(v.clone());
    call.created("cseIdentity", &email, &v);
    ok(&v)
}

pub fn cse_identities_patch(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let req = match body(call) { Ok(v) => v, Err(r) => return r };
    let email = call.param("emailAddress").to_string();
    let Some(i) = identity_pos(w, b, &email) else { return not_found() };
    if let Err(r) = check_identity(w, b, &req) {
        return r;
    }
    let before = w.mailboxes[b].settings.cse_identities[i].clone();
    let mut after = json!({"emailAddress": before["emailAddress"]});
    for (k, v) in req {
        if k != "emailAddress" {
            after[k] = v;
        }
    }
    w.mailboxes[b].settings.cse_identities[i] = after.clone();
    call.updated("cseIdentity", &email, &before, &after);
    ok(&after)
}

pub fn cse_identities_delete(w: &mut World, call: &mut Call) -> Response {
    let b = match mbox(w, call) { Ok(b) => b, Err(r) => return r };
    let email = call.param("cseEmailAddress").to_string();
    let Some(i) = identity_pos(w, b, &email) else { return not_found() };
    let v = w.mailboxes[b].settings.cse_identities.remove(i);
    call.deleted("cseIdentity", &email, &v);
    ok_empty()
}
