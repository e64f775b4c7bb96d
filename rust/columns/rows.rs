//! The dataset's second pass: the rows of a run of kept lines, read again from the file
//! (one read for the run) and walked by span (`json::view`, no second validation: the
//! first pass validated these bytes), every value copied once, into its column.

use crate::error::{CoreError, CoreResult};
use crate::file_io::{read_full, Source};
use crate::json::strings::decode_str;
use crate::json::view::{self as json_view, Entry};
use crate::message_rules::{is_sticky, MESSAGE_KEYS};

use super::buffers::{Bools, Column, Numbers, Strings};
use super::fold::Op;
use super::lines::{Line, LineType};
use super::usage::Stated;
use super::values::{boolean, flatten_text, int64, json_value, string};
use super::Pass;

/// Rows of every table, column by column (in `dataset/schema.py`'s order).
pub struct Tables {
    pub messages: Vec<(&'static str, Column)>,
    pub tool_calls: Vec<(&'static str, Column)>,
    pub compactions: Vec<(&'static str, Column)>,
    pub rewinds: Vec<(&'static str, Column)>,
    pub grants: Vec<(&'static str, Column)>,
}

struct Messages {
    id: Strings,
    ordinal: Numbers,
    line: Numbers,
    ts: Numbers,
    role: Strings,
    text: Strings,
    content: Strings,
    tool_calls: Strings,
    tool_call_id: Strings,
    name: Strings,
    sticky: Bools,
    live: Bools,
    removed_by: Strings,
    removed_kind: Strings,
    elided_by: Strings,
    extras: Strings,
    bytes: Numbers,
    response_id: Strings,
    /// input, output, cache read, cache write.
    tokens: [Numbers; 4],
    usage_counted: Bools,
}

impl Messages {
    /// Columns for the messages of `bytes` bytes of lines: the long ones get that much
    /// room at once (a value is never longer than its line), so they are never copied
    /// to grow; room never written is address space only.
    fn with_room(bytes: usize) -> Self {
        Messages {
            id: Strings::default(),
            ordinal: n("int64"),
            line: n("int64"),
            ts: n("timestamp"),
            role: Strings::default(),
            text: Strings::with_capacity(bytes),
            content: Strings::with_capacity(bytes),
            tool_calls: Strings::default(),
            tool_call_id: Strings::default(),
            name: Strings::default(),
            sticky: Bools::default(),
            live: Bools::default(),
            removed_by: Strings::default(),
            removed_kind: Strings::default(),
            elided_by: Strings::default(),
            extras: Strings::default(),
            bytes: n("int64"),
            response_id: Strings::default(),
            tokens: [n("int64"), n("int64"), n("int64"), n("int64")],
            usage_counted: Bools::default(),
        }
    }

    /// The line's token usage as stated, and whether its response is counted at it.
    fn push_usage(&mut self, stated: Option<&Stated>) {
        self.response_id
            .push_str(stated.and_then(|s| s.response_id.as_deref()));
        for (column, i) in self.tokens.iter_mut().zip(0..) {
            column.push_i64(stated.and_then(|s| s.figures.get(i).copied().flatten()));
        }
        self.usage_counted.push(stated.map(|s| s.counted));
    }
}

fn n(kind: &'static str) -> Numbers {
    Numbers::new(kind)
}

/// Where the pass is between runs: the next message's ordinal, the next operation, and
/// the buffer the runs are read into.
#[derive(Debug, Default)]
pub struct Cursor {
    pub ordinal: i64,
    pub op: usize,
    buf: Vec<u8>,
}

/// The rows of the kept lines `pass.lines[range]` (a run of the file read at once into
/// `cursor`'s buffer, kept for the next run).
pub fn rows<S: Source + ?Sized>(
    src: &S,
    pass: &Pass,
    range: std::ops::Range<usize>,
    extras: bool,
    cursor: &mut Cursor,
) -> CoreResult<Tables> {
    let (lines, fold, grants_index) = (&pass.lines, &pass.fold, &pass.grants_index);
    let run = lines.get(range.clone()).unwrap_or_default();
    let base = run.first().map_or(0, |l| l.offset);
    let end = run.last().map_or(0, |l| l.offset + l.len);
    let size = usize::try_from(end - base).unwrap_or(0);
    let buf = &mut cursor.buf;
    // Grown, never shrunk or zeroed again: the bytes are read over what is there.
    if buf.len() < size {
        buf.resize(size, 0);
    }
    let buf = buf.get_mut(..size).unwrap_or_default();
    let got = read_full(src, buf, base)?;
    if got < buf.len() {
        return Err(changed());
    }
    let buf: &[u8] = buf;
    let id_of = |at: usize| lines.get(at).map(|l| l.id.as_str());
    let mut m = Messages::with_room(
        run.iter()
            .filter(|l| l.kind == LineType::Message)
            .map(|l| l.len as usize)
            .sum(),
    );
    let mut c = Compactions::default();
    let mut r = Rewinds::default();
    let mut g = Grants::default();
    let mut t = ToolCalls::default();
    for i in range {
        let Some(line) = lines.get(i) else { break };
        let start = usize::try_from(line.offset - base).unwrap_or(usize::MAX);
        let raw = buf
            .get(start..start.saturating_add(line.len as usize))
            .ok_or_else(changed)?;
        let (at, n) = line.fields;
        let fields = pass
            .fields
            .get(at as usize..(at as usize).saturating_add(n as usize))
            .unwrap_or_default();
        let get = |key: &str| json_view::get(raw, fields, key);
        let removal = fold.removed.get(i).copied().flatten();
        let removed_by = removal.and_then(|r| id_of(r.by));
        let removed_kind = removal.map(|r| if r.rewind { "rewind" } else { "compaction" });
        let elided_by = fold.elided.get(i).copied().flatten().and_then(id_of);
        let live = fold.live.get(i).copied().unwrap_or(false);
        match line.kind {
            LineType::Message => {
                m.id.push_str(Some(line.id.as_str()));
                m.ordinal.push_i64(Some(cursor.ordinal));
                cursor.ordinal += 1;
                m.line.push_i64(Some(line.line as i64));
                m.ts.push_i64(line.ts);
                m.role.push_str(string(raw, get("role")).as_deref());
                let content = get("content");
                let present = flatten_text(raw, content, m.text.data());
                m.text.end(present);
                m.content.push(json_value(raw, content));
                m.tool_calls.push(json_value(raw, get("tool_calls")));
                m.tool_call_id
                    .push_str(string(raw, get("tool_call_id")).as_deref());
                m.name.push_str(string(raw, get("name")).as_deref());
                m.sticky.push(Some(is_sticky(raw, fields)));
                m.live.push(Some(live));
                m.removed_by.push_str(removed_by);
                m.removed_kind.push_str(removed_kind);
                m.elided_by.push_str(elided_by);
                let present = extras && extras_of(raw, fields, m.extras.data());
                m.extras.end(present);
                m.bytes.push_i64(Some(line.len as i64));
                m.push_usage(line.usage.as_deref());
            }
            LineType::Compaction => {
                c.id.push_str(Some(line.id.as_str()));
                c.line.push_i64(Some(line.line as i64));
                c.ts.push_i64(line.ts);
                c.summary.push_str(string(raw, get("summary")).as_deref());
                c.through
                    .push_str(string(raw, get("replaces-through-id")).as_deref());
                c.before.push_i64(int64(raw, get("tokens-before")));
                c.after.push_i64(int64(raw, get("tokens-after")));
                c.fallback.push(boolean(raw, get("fallback")));
                c.live.push(Some(live));
                c.removed_by.push_str(removed_by);
                c.removed_kind.push_str(removed_kind);
                c.elided_by.push_str(elided_by);
            }
            LineType::Rewind => {
                r.id.push_str(Some(line.id.as_str()));
                r.line.push_i64(Some(line.line as i64));
                r.ts.push_i64(line.ts);
                r.to_id.push_str(string(raw, get("to-id")).as_deref());
                r.rewound
                    .push_i64(Some(fold.rewound.get(i).copied().unwrap_or(0) as i64));
            }
            LineType::Grants => {
                g.id.push_str(Some(line.id.as_str()));
                g.line.push_i64(Some(line.line as i64));
                g.ts.push_i64(line.ts);
                g.grants.push(json_value(raw, get("grants")));
                g.in_force.push(Some(fold.in_force == Some(i)));
            }
            LineType::Dispatched => {
                if let Some(op) = fold.ops.get(cursor.op).filter(|op| op.dispatch == i) {
                    cursor.op += 1;
                    t.push(raw, fields, line, op, lines, grants_index);
                }
            }
            _ => {}
        }
    }
    let [input, output, cache_read, cache_write] = m.tokens;
    Ok(Tables {
        messages: vec![
            ("id", m.id.finish()),
            ("ordinal", m.ordinal.finish()),
            ("line", m.line.finish()),
            ("ts", m.ts.finish()),
            ("role", m.role.finish()),
            ("text", m.text.finish()),
            ("content", m.content.finish()),
            ("tool_calls", m.tool_calls.finish()),
            ("tool_call_id", m.tool_call_id.finish()),
            ("name", m.name.finish()),
            ("sticky", m.sticky.finish()),
            ("live", m.live.finish()),
            ("removed_by", m.removed_by.finish()),
            ("removed_kind", m.removed_kind.finish()),
            ("elided_by", m.elided_by.finish()),
            ("extras", m.extras.finish()),
            ("bytes", m.bytes.finish()),
            ("response_id", m.response_id.finish()),
            ("input_tokens", input.finish()),
            ("output_tokens", output.finish()),
            ("cache_read_tokens", cache_read.finish()),
            ("cache_write_tokens", cache_write.finish()),
            ("usage_counted", m.usage_counted.finish()),
        ],
        tool_calls: t.finish(),
        compactions: vec![
            ("id", c.id.finish()),
            ("line", c.line.finish()),
            ("ts", c.ts.finish()),
            ("summary", c.summary.finish()),
            ("replaces_through_id", c.through.finish()),
            ("tokens_before", c.before.finish()),
            ("tokens_after", c.after.finish()),
            ("fallback", c.fallback.finish()),
            ("live", c.live.finish()),
            ("removed_by", c.removed_by.finish()),
            ("removed_kind", c.removed_kind.finish()),
            ("elided_by", c.elided_by.finish()),
        ],
        rewinds: vec![
            ("id", r.id.finish()),
            ("line", r.line.finish()),
            ("ts", r.ts.finish()),
            ("to_id", r.to_id.finish()),
            ("rewound", r.rewound.finish()),
        ],
        grants: vec![
            ("id", g.id.finish()),
            ("line", g.line.finish()),
            ("ts", g.ts.finish()),
            ("grants", g.grants.finish()),
            ("in_force", g.in_force.finish()),
        ],
    })
}

fn changed() -> CoreError {
    CoreError::Io(std::io::Error::other(
        "the file changed while it was read (its lines are not where the first pass found them)",
    ))
}

/// The payload's members besides the message keys, as they stand, in an object; false
/// (nothing written) when there are none.
fn extras_of(raw: &[u8], fields: &[Entry], out: &mut Vec<u8>) -> bool {
    let mut any = false;
    for e in fields {
        let key = decode_str(raw, e.key);
        if MESSAGE_KEYS.contains(&key.as_ref()) {
            continue;
        }
        out.push(if any { b',' } else { b'{' });
        any = true;
        // From the key's opening quote to the value's end.
        out.extend_from_slice(
            raw.get(e.key.0.saturating_sub(1)..e.value.span.1)
                .unwrap_or_default(),
        );
    }
    if any {
        out.push(b'}');
    }
    any
}

struct Compactions {
    id: Strings,
    line: Numbers,
    ts: Numbers,
    summary: Strings,
    through: Strings,
    before: Numbers,
    after: Numbers,
    fallback: Bools,
    live: Bools,
    removed_by: Strings,
    removed_kind: Strings,
    elided_by: Strings,
}

impl Default for Compactions {
    fn default() -> Self {
        Compactions {
            id: Strings::default(),
            line: n("int64"),
            ts: n("timestamp"),
            summary: Strings::default(),
            through: Strings::default(),
            before: n("int64"),
            after: n("int64"),
            fallback: Bools::default(),
            live: Bools::default(),
            removed_by: Strings::default(),
            removed_kind: Strings::default(),
            elided_by: Strings::default(),
        }
    }
}

struct Rewinds {
    id: Strings,
    line: Numbers,
    ts: Numbers,
    to_id: Strings,
    rewound: Numbers,
}

impl Default for Rewinds {
    fn default() -> Self {
        Rewinds {
            id: Strings::default(),
            line: n("int64"),
            ts: n("timestamp"),
            to_id: Strings::default(),
            rewound: n("int64"),
        }
    }
}

struct Grants {
    id: Strings,
    line: Numbers,
    ts: Numbers,
    grants: Strings,
    in_force: Bools,
}

impl Default for Grants {
    fn default() -> Self {
        Grants {
            id: Strings::default(),
            line: n("int64"),
            ts: n("timestamp"),
            grants: Strings::default(),
            in_force: Bools::default(),
        }
    }
}

struct ToolCalls {
    op_id: Strings,
    line: Numbers,
    call_id: Strings,
    tool: Strings,
    arguments: Strings,
    arguments_digest: Strings,
    idempotency: Strings,
    run_id: Strings,
    round: Numbers,
    dispatched_at: Numbers,
    outcome: Strings,
    settled_id: Strings,
    settled_at: Numbers,
    duration: Numbers,
    error: Strings,
    reason: Strings,
    answered: Bools,
    answered_by: Strings,
    grants_id: Strings,
    grants: Numbers,
}

impl Default for ToolCalls {
    fn default() -> Self {
        ToolCalls {
            op_id: Strings::default(),
            line: n("int64"),
            call_id: Strings::default(),
            tool: Strings::default(),
            arguments: Strings::default(),
            arguments_digest: Strings::default(),
            idempotency: Strings::default(),
            run_id: Strings::default(),
            round: n("int64"),
            dispatched_at: n("timestamp"),
            outcome: Strings::default(),
            settled_id: Strings::default(),
            settled_at: n("timestamp"),
            duration: n("float64"),
            error: Strings::default(),
            reason: Strings::default(),
            answered: Bools::default(),
            answered_by: Strings::default(),
            grants_id: Strings::default(),
            grants: n("int32"),
        }
    }
}

impl ToolCalls {
    fn push(
        &mut self,
        raw: &[u8],
        fields: &[Entry],
        line: &Line,
        op: &Op,
        lines: &[Line],
        grants_index: &[Option<i64>],
    ) {
        let get = |key: &str| json_view::get(raw, fields, key);
        let settle = op.settle.and_then(|s| lines.get(s));
        let facts = settle.and_then(|s| s.settle.as_deref());
        self.op_id.push_str(Some(line.id.as_str()));
        self.line.push_i64(Some(line.line as i64));
        self.call_id
            .push_str(string(raw, get("call-id")).as_deref());
        self.tool.push_str(string(raw, get("tool")).as_deref());
        self.arguments.push(json_value(raw, get("arguments")));
        self.arguments_digest
            .push_str(string(raw, get("arguments-digest")).as_deref());
        self.idempotency
            .push_str(string(raw, get("idempotency")).as_deref());
        self.run_id.push_str(string(raw, get("run-id")).as_deref());
        self.round.push_i64(int64(raw, get("round")));
        self.dispatched_at.push_i64(line.ts);
        self.outcome.push_str(Some(op.state));
        self.settled_id.push_str(settle.map(|s| s.id.as_str()));
        self.settled_at.push_i64(settle.and_then(|s| s.ts));
        self.duration.push_f64(facts.and_then(|f| f.duration));
        self.error.push_str(facts.and_then(|f| f.error.as_deref()));
        self.reason
            .push_str(facts.and_then(|f| f.reason.as_deref()));
        self.answered.push(Some(op.answered_by.is_some()));
        self.answered_by.push_str(
            op.answered_by
                .and_then(|a| lines.get(a))
                .map(|l| l.id.as_str()),
        );
        self.grants_id
            .push_str(op.grants.and_then(|g| lines.get(g)).map(|l| l.id.as_str()));
        self.grants.push_i64(
            op.grants
                .and_then(|g| grants_index.get(g).copied().flatten()),
        );
    }

    fn finish(self) -> Vec<(&'static str, Column)> {
        vec![
            ("op_id", self.op_id.finish()),
            ("line", self.line.finish()),
            ("call_id", self.call_id.finish()),
            ("tool", self.tool.finish()),
            ("arguments", self.arguments.finish()),
            ("arguments_digest", self.arguments_digest.finish()),
            ("idempotency", self.idempotency.finish()),
            ("run_id", self.run_id.finish()),
            ("round", self.round.finish()),
            ("dispatched_at", self.dispatched_at.finish()),
            ("outcome", self.outcome.finish()),
            ("settled_id", self.settled_id.finish()),
            ("settled_at", self.settled_at.finish()),
            ("duration", self.duration.finish()),
            ("error", self.error.finish()),
            ("reason", self.reason.finish()),
            ("answered", self.answered.finish()),
            ("answered_by", self.answered_by.finish()),
            ("grants_id", self.grants_id.finish()),
            ("grants", self.grants.finish()),
        ]
    }
}
