//! What a side index needs of each envelope beyond what the fold keeps, noted as the
//! fold commits it: its kind, where it does not follow the line before it, its id's
//! fingerprint, its time (the largest of a block's), the messages each rewind cut and
//! the operations settled as failed. Only a fold that will write an index
//! carries a [`Track`] (`Fold::track`).

use crate::index::format::{Gap, IndexData, Kind, MAX_KINDS, MAX_KIND_TEXT, OTHER_KIND};
use crate::index::hash::fingerprint;
use crate::index::times::TIME_BLOCK;
use crate::replay::records::{Body, Record};

#[derive(Debug, Default)]
pub struct Track {
    pub kind_table: Vec<Kind>,
    /// From the first envelope noted on (see `first`).
    pub kinds: Vec<u8>,
    pub gaps: Vec<Gap>,
    pub fingerprints: Vec<u32>,
    pub rewound: Vec<(u64, u64)>,
    /// The largest time key of each block of envelopes (`index::times`) from the one
    /// the first envelope noted is in (only its envelopes noted here count).
    pub times: Vec<i64>,
    /// The `tool-dispatched` envelopes whose operation a settle noted here said failed.
    pub failed: Vec<u64>,
    /// The index of the first envelope noted (0, or the count of a resumed index).
    pub first: u64,
    /// Where the next line would start, and its number, if it follows the last one.
    next_offset: u64,
    next_line: u64,
    /// The number the first envelope's line has if it follows the one before.
    first_line: u64,
}

impl Track {
    /// For a fold from the first line.
    pub fn new() -> Self {
        Track {
            next_line: 1,
            first_line: 1,
            ..Default::default()
        }
    }

    /// For a fold resumed after the envelopes of `index`.
    pub fn after(index: &IndexData) -> Self {
        let next_offset = index
            .events
            .last()
            .map_or(0, |l| l.offset.saturating_add(l.len).saturating_add(1));
        Track {
            kind_table: index.kind_table.clone(),
            first: index.events.len() as u64,
            next_offset,
            next_line: index.last_line() + 1,
            first_line: index.last_line() + 1,
            ..Default::default()
        }
    }

    /// The line number of the noted envelope `event`.
    pub fn line_of(&self, event: usize) -> u64 {
        let event = event as u64;
        let extra: u64 = self
            .gaps
            .iter()
            .take_while(|g| g.event <= event)
            .map(|g| g.lines)
            .sum();
        self.first_line + event.saturating_sub(self.first) + extra
    }

    /// Note the next envelope (index `first + kinds.len()`); its line number is
    /// counted from the start of the file.
    pub fn note(&mut self, rec: &Record) {
        let event = self.first + self.kinds.len() as u64;
        let role = match &rec.body {
            Body::Message(Ok(m)) => Some(m.role.as_str()),
            _ => None,
        };
        let code = self.code(&rec.type_, role);
        self.kinds.push(code);
        if rec.offset != self.next_offset || rec.line != self.next_line {
            self.gaps.push(Gap {
                event,
                bytes: rec.offset.saturating_sub(self.next_offset),
                lines: rec.line.saturating_sub(self.next_line),
            });
        }
        self.next_offset = rec.offset.saturating_add(rec.len).saturating_add(1);
        self.next_line = rec.line.saturating_add(1);
        self.fingerprints.push(fingerprint(rec.id_hash));
        let block = (event / TIME_BLOCK - self.first / TIME_BLOCK) as usize;
        match self.times.get_mut(block) {
            Some(max) => *max = (*max).max(rec.time),
            None => self.times.push(rec.time),
        }
    }

    /// Note the messages (by envelope) the rewind at `rewind` cut.
    pub fn rewound(&mut self, cut: impl Iterator<Item = usize>, rewind: usize) {
        self.rewound.extend(cut.map(|m| (m as u64, rewind as u64)));
    }

    /// The kind's code, added to the table if it fits.
    fn code(&mut self, type_: &str, role: Option<&str>) -> u8 {
        let found = self
            .kind_table
            .iter()
            .position(|k| k.type_ == type_ && k.role.as_deref() == role);
        if let Some(at) = found {
            return at as u8;
        }
        let fits = type_.len() <= MAX_KIND_TEXT && role.map_or(0, str::len) <= MAX_KIND_TEXT;
        if self.kind_table.len() >= MAX_KINDS || !fits {
            return OTHER_KIND;
        }
        self.kind_table.push(Kind {
            type_: type_.to_owned(),
            role: role.map(str::to_owned),
        });
        (self.kind_table.len() - 1) as u8
    }
}
