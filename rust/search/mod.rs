//! The viewer's search over a whole transcript (`llm_agent_session.search`; the
//! reference is `_pure/search.py`, and the two answer the same on every input).
//!
//! * `lines`: the byte scan, the lines of a file that hold the text as the line
//!   format writes it (no line parsed), and for each line found, with a [`Text`],
//!   where in its envelope the text is;
//! * `groups`: that "where": the envelope's fields read as content, tool arguments,
//!   tool results or extras, walked as the validating parser reports them;
//! * `leaves`: whether one string or number holds the text;
//! * `first_part`: what a search across transcripts reads of each first (its first
//!   bytes, a look at its first line, the hits of its first part);
//! * `files`: a batch of transcripts read whole that way, in one call.

pub mod files;
pub mod first_part;
pub mod groups;
pub mod leaves;
pub mod lines;

pub use files::{search_files, Ask, Searched};
pub use first_part::{first_line_is_meta, first_part, FirstPart};
pub use leaves::Text;
pub use lines::{find_hits, find_lines, find_lines_in_blocks, Found, BLOCK};
