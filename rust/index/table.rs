//! What a reader that does not fold (a peek, a viewer) takes from a side index that still
//! describes the file: where every indexed envelope is and what kind it is, which are
//! messages, and, when asked, peek's survey of them (lines and bytes by type, messages
//! by role, and from the checkpoint the live count, the open operations and what each
//! rewind cut). An envelope whose kind the index does not hold is read from its line.

use crate::envelope::parse_envelope_fields;
use crate::error::CoreResult;
use crate::file_io::Source;
use crate::index::check::{content_problem, identity_problem};
use crate::index::format::{Identity, IndexData, Kind};
use crate::index::resume::read_line;
use crate::json::view as json_view;

/// Peek's survey of the indexed envelopes (`_core.SurveyCounts`), by envelope index.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Survey {
    /// (type, lines, bytes with newlines), in first-appearance order.
    pub types: Vec<(String, u64, u64)>,
    /// (role, messages), in first-appearance order.
    pub roles: Vec<(String, u64)>,
    pub live: usize,
    pub open: Vec<(u64, bool)>,
    pub rewound: Vec<(u64, u64)>,
}

pub struct Table {
    pub index: IndexData,
    /// The envelopes that are messages with a string role, in order.
    pub messages: Vec<u32>,
    pub survey: Option<Survey>,
}

/// The kind of the envelope at `e` read from its line: (type, a message's string role).
fn kind_of_line<S: Source + ?Sized>(
    src: &S,
    index: &IndexData,
    e: usize,
) -> CoreResult<Option<Kind>> {
    let Some(at) = index.events.get(e) else {
        return Ok(None);
    };
    let raw = read_line(src, at)?;
    let mut fields = Vec::new();
    let Ok(env) = parse_envelope_fields(&raw, at.offset, &mut fields) else {
        return Ok(None);
    };
    let role = if env.type_ == "message" {
        json_view::get(&raw, &fields, "role")
            .filter(|r| r.kind == crate::json::grammar::Kind::String)
            .and_then(|r| json_view::text(&raw, r))
            .map(|r| r.into_owned())
    } else {
        None
    };
    Ok(Some(Kind {
        type_: env.type_.into_owned(),
        role,
    }))
}

/// The table of `index`, if it still describes the first `size` bytes of
/// `src` (`then`: the file as `fstat` saw it); else why not.
pub fn table<S: Source + ?Sized>(
    src: &S,
    size: u64,
    index: IndexData,
    then: Identity,
    want_survey: bool,
) -> CoreResult<Result<Table, String>> {
    if let Some(why) = identity_problem(&index, then) {
        return Ok(Err(why.to_owned()));
    }
    if let Some(why) = content_problem(&index, src, size)? {
        return Ok(Err(why.to_owned()));
    }
    let kinds = index.kinds.bytes();
    let table = &index.kind_table;
    let mut messages = Vec::new();
    let mut types: Vec<(String, u64, u64)> = Vec::new();
    let mut roles: Vec<(String, u64)> = Vec::new();
    // Per kind code: where its type and role are counted.
    let mut slot_of: Vec<Option<(usize, Option<usize>)>> = vec![None; table.len()];
    let count = |kind: &Kind,
                 bytes: u64,
                 types: &mut Vec<(String, u64, u64)>,
                 roles: &mut Vec<(String, u64)>| {
        let t = match types.iter().position(|t| t.0 == kind.type_) {
            Some(t) => t,
            None => {
                types.push((kind.type_.clone(), 0, 0));
                types.len() - 1
            }
        };
        let r = kind
            .role
            .as_ref()
            .map(|role| match roles.iter().position(|r| &r.0 == role) {
                Some(r) => r,
                None => {
                    roles.push((role.clone(), 0));
                    roles.len() - 1
                }
            });
        if let Some(t) = types.get_mut(t) {
            t.1 += 1;
            t.2 += bytes;
        }
        if let Some(r) = r.and_then(|r| roles.get_mut(r)) {
            r.1 += 1;
        }
        (t, r)
    };
    let lens: Box<dyn Iterator<Item = u64>> = if want_survey {
        Box::new(index.events.iter().map(|l| l.len + 1))
    } else {
        Box::new(std::iter::repeat(0))
    };
    for (e, (&code, bytes)) in kinds.iter().zip(lens).enumerate() {
        let kind = match table.get(usize::from(code)) {
            Some(kind) => {
                if want_survey {
                    match slot_of.get(usize::from(code)).copied().flatten() {
                        Some((t, r)) => {
                            if let Some(t) = types.get_mut(t) {
                                t.1 += 1;
                                t.2 += bytes;
                            }
                            if let Some(r) = r.and_then(|r| roles.get_mut(r)) {
                                r.1 += 1;
                            }
                        }
                        None => {
                            let slots = count(kind, bytes, &mut types, &mut roles);
                            if let Some(s) = slot_of.get_mut(usize::from(code)) {
                                *s = Some(slots);
                            }
                        }
                    }
                }
                kind.role.is_some()
            }
            None => {
                let Some(kind) = kind_of_line(src, &index, e)? else {
                    return Ok(Err("an indexed line is no longer an envelope".into()));
                };
                if want_survey {
                    count(&kind, bytes, &mut types, &mut roles);
                }
                kind.role.is_some()
            }
        };
        if kind {
            messages.push(e as u32);
        }
    }
    let survey = want_survey.then(|| Survey {
        types,
        roles,
        live: index.fold.live.len(),
        open: index.fold.pending.clone(),
        rewound: index.fold.rewound.clone(),
    });
    Ok(Ok(Table {
        index,
        messages,
        survey,
    }))
}
