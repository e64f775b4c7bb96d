//! Peek's survey (`Session.peek(path, survey=True)`): lines and bytes by type,
//! messages by role, how many messages replay would give, and the tool operations
//! left open with their state, without building the envelopes. The reference is
//! `survey` in `_pure/survey.py`; the differential tests hold the two together.
//!
//! The scan notes the few facts the survey reads while each line is still in hand
//! ([`Facts::note`]); the fold runs once over those facts, in file order, after the
//! scan's threads have joined ([`Facts::fold`]): a compaction refers to messages
//! anywhere before it, so the fold cannot be split like the scan.

use std::collections::HashMap;

use crate::envelope::EnvelopeRef;
use crate::json::grammar::Kind;
use crate::json::view::{self as json_view, Entry};
use crate::message_rules;

/// What one envelope tells the survey fold (envelopes of other types only count).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fact {
    /// A message with a string role: its id, whether it is sticky (docs/FORMAT.md, `message`) and its
    /// `tool_call_id` when that is a string.
    Message {
        id: String,
        sticky: bool,
        call_id: Option<String>,
    },
    /// Its `call-id` when that is a string.
    Dispatched { id: String, call_id: Option<String> },
    /// Its `op-id` when that is a string.
    Settled { op_id: Option<String> },
    /// Its `replaces-through-id` when that is a string.
    Compaction { id: String, through: Option<String> },
    /// Its `to-id`: `Ok(None)` for null, `Err` when missing or neither string nor null.
    Rewind { to: Result<Option<String>, ()> },
}

/// One envelope type's share of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeCount {
    pub type_: String,
    pub lines: u64,
    /// Bytes of those lines, each with its newline.
    pub bytes: u64,
}

/// The survey facts of a stretch of lines, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// In the order each type first appears.
    types: Vec<TypeCount>,
    /// Messages with a string role, per role, in the order each role first appears.
    roles: Vec<(String, u64)>,
    /// (index of the envelope among those the scan found, what it says).
    facts: Vec<(usize, Fact)>,
}

/// What the survey found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Survey {
    /// In the order each type first appears.
    pub types: Vec<TypeCount>,
    /// Messages with a string role, per role, in the order each role first appears.
    pub roles: Vec<(String, u64)>,
    /// How many messages replay would give; meaningless when `problem` is set.
    pub live: u64,
    /// The index of the first compaction whose `replaces-through-id`, or rewind whose
    /// `to-id`, names nothing in the live conversation (replay would fail there).
    pub problem: Option<usize>,
    /// (envelope index, a tool message answered it) of every `tool-dispatched`
    /// without a `tool-settled`, in the order they were first dispatched.
    pub open: Vec<(usize, bool)>,
    /// (index of a message or compaction summary, index of the rewind that cut it),
    /// in the order the rewinds cut them (the README's rewind section), up to `problem`.
    pub rewound: Vec<(usize, usize)>,
}

fn string_of(raw: &[u8], fields: &[Entry], key: &str) -> Option<String> {
    json_view::get(raw, fields, key)
        .and_then(|item| json_view::text(raw, item))
        .map(|s| s.into_owned())
}

fn count(tally: &mut Vec<(String, u64)>, key: &str, n: u64) {
    match tally.iter_mut().find(|(k, _)| k == key) {
        Some((_, m)) => *m += n,
        None => tally.push((key.to_owned(), n)),
    }
}

fn count_type(types: &mut Vec<TypeCount>, type_: &str, lines: u64, bytes: u64) {
    match types.iter_mut().find(|t| t.type_ == type_) {
        Some(t) => {
            t.lines += lines;
            t.bytes += bytes;
        }
        None => types.push(TypeCount {
            type_: type_.to_owned(),
            lines,
            bytes,
        }),
    }
}

impl Facts {
    /// Note envelope number `index`: `env`, read from the line `raw` of `line_len`
    /// bytes (without its newline), whose payload members are `fields`.
    pub fn note(
        &mut self,
        index: usize,
        env: &EnvelopeRef<'_>,
        line_len: u64,
        raw: &[u8],
        fields: &[Entry],
    ) {
        let (type_, id) = (&*env.type_, &*env.id);
        count_type(&mut self.types, type_, 1, line_len + 1);
        let role = if type_ == "message" {
            string_of(raw, fields, "role")
        } else {
            None
        };
        if let Some(role) = &role {
            count(&mut self.roles, role, 1);
        }
        let fact = match type_ {
            "message" if role.is_some() => Fact::Message {
                id: id.to_owned(),
                sticky: message_rules::is_sticky(raw, fields),
                // Only a `tool` message answers a call (docs/FORMAT.md, `tool-dispatched`).
                call_id: if role.as_deref() == Some("tool") {
                    string_of(raw, fields, "tool_call_id")
                } else {
                    None
                },
            },
            "tool-dispatched" => Fact::Dispatched {
                id: id.to_owned(),
                call_id: string_of(raw, fields, "call-id"),
            },
            "tool-settled" => Fact::Settled {
                op_id: string_of(raw, fields, "op-id"),
            },
            "compaction" => Fact::Compaction {
                id: id.to_owned(),
                through: string_of(raw, fields, "replaces-through-id"),
            },
            "rewind" => Fact::Rewind {
                to: match json_view::get(raw, fields, "to-id") {
                    Some(item) if item.kind == Kind::Null => Ok(None),
                    Some(item) => json_view::text(raw, item)
                        .map(|t| Some(t.into_owned()))
                        .ok_or(()),
                    None => Err(()),
                },
            },
            _ => return,
        };
        self.facts.push((index, fact));
    }

    /// Append the facts of the lines after these; their indexes count from `shift`.
    pub fn extend(&mut self, later: Facts, shift: usize) {
        for t in later.types {
            count_type(&mut self.types, &t.type_, t.lines, t.bytes);
        }
        for (role, n) in later.roles {
            count(&mut self.roles, &role, n);
        }
        self.facts
            .extend(later.facts.into_iter().map(|(i, f)| (i + shift, f)));
    }

    /// Fold the facts in file order (the reference's loop, step for step).
    pub fn fold(self) -> Survey {
        // (id, sticky, envelope index) of each live message.
        let mut live: Vec<(&str, bool, usize)> = Vec::new();
        let mut rewound: Vec<(usize, usize)> = Vec::new();
        let mut position: HashMap<&str, usize> = HashMap::new();
        let mut problem = None;
        // Open operations in first-dispatch order, as a Python dict keeps them: a
        // slot per op id, emptied when settled (a later dispatch of it gets a new one).
        let mut slots: Vec<Option<Open<'_>>> = Vec::new();
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut waiting: HashMap<&str, Vec<&str>> = HashMap::new(); // call id -> op ids
        for (index, fact) in &self.facts {
            match fact {
                Fact::Message {
                    id,
                    sticky,
                    call_id,
                } => {
                    position.insert(id, live.len());
                    live.push((id, *sticky, *index));
                    let Some(call) = call_id.as_deref() else {
                        continue;
                    };
                    for op_id in waiting.remove(call).unwrap_or_default() {
                        let open = slot_of
                            .get(op_id)
                            .and_then(|&s| slots.get_mut(s))
                            .and_then(Option::as_mut);
                        if let Some(op) = open {
                            if op.call_id == Some(call) {
                                op.recorded = true;
                            }
                        }
                    }
                }
                Fact::Dispatched { id, call_id } => {
                    let op = Open {
                        index: *index,
                        call_id: call_id.as_deref(),
                        recorded: false,
                    };
                    match slot_of.get(id.as_str()).and_then(|&s| slots.get_mut(s)) {
                        Some(slot) => *slot = Some(op),
                        None => {
                            slot_of.insert(id, slots.len());
                            slots.push(Some(op));
                        }
                    }
                    if let Some(call) = call_id {
                        waiting.entry(call).or_default().push(id);
                    }
                }
                Fact::Settled { op_id } => {
                    let slot = op_id.as_deref().and_then(|op| slot_of.remove(op));
                    if let Some(s) = slot.and_then(|s| slots.get_mut(s)) {
                        *s = None;
                    }
                }
                Fact::Compaction { id, through } => {
                    if problem.is_some() {
                        continue;
                    }
                    let Some(&cut) = through.as_deref().and_then(|t| position.get(t)) else {
                        problem = Some(*index);
                        continue;
                    };
                    message_rules::compact(&mut live, cut, (id, false, *index), |m| m.1);
                    position = positions(&live);
                }
                Fact::Rewind { to } => {
                    if problem.is_some() {
                        continue;
                    }
                    let keep = match to {
                        Ok(None) => 0,
                        Ok(Some(to)) => match position.get(to.as_str()) {
                            Some(&cut) => cut + 1,
                            None => {
                                problem = Some(*index);
                                continue;
                            }
                        },
                        Err(()) => {
                            problem = Some(*index);
                            continue;
                        }
                    };
                    rewound.extend(live.drain(keep..).map(|(_, _, at)| (at, *index)));
                    position = positions(&live);
                }
            }
        }
        Survey {
            live: live.len() as u64,
            rewound,
            problem,
            open: slots
                .into_iter()
                .flatten()
                .map(|op| (op.index, op.recorded))
                .collect(),
            types: self.types,
            roles: self.roles,
        }
    }
}

/// id -> place in the live list (the last place, for an id seen twice: a peek is lenient).
fn positions<'a>(live: &[(&'a str, bool, usize)]) -> HashMap<&'a str, usize> {
    live.iter()
        .enumerate()
        .map(|(k, &(id, _, _))| (id, k))
        .collect()
}

struct Open<'a> {
    index: usize,
    call_id: Option<&'a str>,
    recorded: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::parse_envelope_fields;

    fn survey(lines: &[&str]) -> Survey {
        let mut facts = Facts::default();
        let mut fields = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            let env = parse_envelope_fields(line.as_bytes(), 0, &mut fields).unwrap();
            facts.note(i, &env, line.len() as u64, line.as_bytes(), &fields);
        }
        facts.fold()
    }

    fn env(id: &str, type_: &str, payload: &str) -> String {
        format!(r#"{{"id":"{id}","payload":{payload},"ts":"t","type":"{type_}","v":1}}"#)
    }

    #[test]
    fn folds_compactions_and_tool_operations() {
        let lines = [
            env("m", "session-meta", "{}"),
            env("s", "message", r#"{"role":"system","sysprompt":true}"#),
            env("u", "message", r#"{"role":"user","depth":null}"#),
            env("d1", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
            env("d2", "tool-dispatched", r#"{"call-id":"c2","tool":"t"}"#),
            env("d3", "tool-dispatched", r#"{"call-id":["c3"],"tool":"t"}"#),
            env(
                "r",
                "message",
                r#"{"role":"tool","tool_call_id":"c\u0031"}"#,
            ),
            env("x", "message", r#"{"role":7}"#),
            env("k", "compaction", r#"{"replaces-through-id":"u"}"#),
            env("z", "tool-settled", r#"{"op-id":"d2"}"#),
            env("q", "tool-settled", r#"{"op-id":{}}"#),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let s = survey(&refs);
        let of = |t: &str| {
            s.types
                .iter()
                .find(|c| c.type_ == t)
                .map(|c| (c.lines, c.bytes))
        };
        let bytes = |from: usize, to: usize| -> u64 {
            lines[from..to].iter().map(|l| l.len() as u64 + 1).sum()
        };
        assert_eq!(of("message"), Some((4, bytes(1, 3) + bytes(6, 8))));
        assert_eq!(s.types[0].type_, "session-meta");
        let roles: Vec<(&str, u64)> = s.roles.iter().map(|(r, n)| (r.as_str(), *n)).collect();
        assert_eq!(roles, [("system", 1), ("user", 1), ("tool", 1)]);
        // s (sticky) + k's summary + r; u was not sticky (depth null), x has no role.
        assert_eq!((s.live, s.problem), (3, None));
        assert_eq!(s.open, vec![(3, true), (5, false)]);
    }

    #[test]
    fn a_compaction_naming_nothing_live_is_the_problem() {
        let lines = [
            env("m", "session-meta", "{}"),
            env("a", "message", r#"{"role":"user"}"#),
            env("k1", "compaction", r#"{"replaces-through-id":"a"}"#),
            env("k2", "compaction", r#"{"replaces-through-id":"a"}"#),
            env("k3", "compaction", r#"{"replaces-through-id":1}"#),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(survey(&refs).problem, Some(3));
    }

    #[test]
    fn a_redispatched_op_keeps_its_place_and_forgets_its_answer() {
        let lines = [
            env("m", "session-meta", "{}"),
            env("d", "tool-dispatched", r#"{"call-id":"c"}"#),
            env("e", "tool-dispatched", r#"{"call-id":"c"}"#),
            env("r", "message", r#"{"role":"tool","tool_call_id":"c"}"#),
            env("d", "tool-dispatched", r#"{"call-id":"c2"}"#),
            env("e", "tool-settled", r#"{"op-id":"e"}"#),
            env("e", "tool-dispatched", r#"{"call-id":"c"}"#),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(survey(&refs).open, vec![(4, false), (6, false)]);
    }

    #[test]
    fn facts_of_two_stretches_join_into_those_of_one() {
        let lines = [
            env("m", "session-meta", "{}"),
            env("a", "message", r#"{"role":"user"}"#),
            env("d", "tool-dispatched", r#"{"call-id":"c"}"#),
            env("x", "other", "{}"),
            env("r", "message", r#"{"role":"tool","tool_call_id":"c"}"#),
            env("k", "compaction", r#"{"replaces-through-id":"a"}"#),
        ];
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let whole = survey(&refs);
        for cut in 0..=refs.len() {
            let mut first = Facts::default();
            let mut second = Facts::default();
            let mut fields = Vec::new();
            for (i, line) in refs.iter().enumerate() {
                let env = parse_envelope_fields(line.as_bytes(), 0, &mut fields).unwrap();
                let (facts, index) = if i < cut {
                    (&mut first, i)
                } else {
                    (&mut second, i - cut)
                };
                facts.note(index, &env, line.len() as u64, line.as_bytes(), &fields);
            }
            first.extend(second, cut);
            assert_eq!(first.fold(), whole, "cut at {cut}");
        }
    }
}
