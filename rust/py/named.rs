//! The Python names this extension builds or calls, in one list: each is imported
//! once (on first use) and called with keywords (`call_kw!`), so the order of a
//! result's fields is kept by its Python class alone (`llm_agent_session._core`).

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

/// A class or function of a Python module, imported on first use.
pub struct PyName {
    module: &'static str,
    name: &'static str,
    cell: GILOnceCell<Py<PyAny>>,
}

impl PyName {
    const fn new(module: &'static str, name: &'static str) -> Self {
        PyName {
            module,
            name,
            cell: GILOnceCell::new(),
        }
    }

    pub fn get<'py>(&self, py: Python<'py>) -> PyResult<&Bound<'py, PyAny>> {
        self.cell.import(py, self.module, self.name)
    }
}

/// `callee(field=value, ...)`: every field passed by its name.
macro_rules! call_kw {
    ($py:expr, $callee:expr, $($field:ident = $value:expr),+ $(,)?) => {{
        let kwargs = pyo3::types::PyDict::new($py);
        $(kwargs.set_item(pyo3::intern!($py, stringify!($field)), $value)?;)+
        $callee.call((), Some(&kwargs))
    }};
}
pub(crate) use call_kw;

// The core's results (the `Core` protocol's named types).
pub static TAIL_VERDICT: PyName = PyName::new("llm_agent_session._core", "TailVerdict");
pub static SCANNED: PyName = PyName::new("llm_agent_session._core", "Scanned");
pub static SURVEY_COUNTS: PyName = PyName::new("llm_agent_session._core", "SurveyCounts");
pub static REPLAYED: PyName = PyName::new("llm_agent_session._core", "Replayed");
pub static INDEXED_REPLAY: PyName = PyName::new("llm_agent_session._core", "IndexedReplay");
pub static INDEX_TABLE: PyName = PyName::new("llm_agent_session._core", "IndexTable");
pub static HISTORY_READ: PyName = PyName::new("llm_agent_session._core", "HistoryRead");
pub static DATASET_SUMMARY: PyName = PyName::new("llm_agent_session._core", "DatasetSummary");
pub static COLUMN: PyName = PyName::new("llm_agent_session._core", "Column");
pub static USAGE_TOTALS: PyName = PyName::new("llm_agent_session._token_usage", "UsageTotals");
pub static FOLD_STATE: PyName = PyName::new("llm_agent_session._fold", "FoldState");
/// Payload -> `PendingToolOperation`, the constructor the pure fold uses too.
pub static DISPATCHED_OPERATION: PyName =
    PyName::new("llm_agent_session._fold", "dispatched_operation");
// What the results hold.
pub static EVENT: PyName = PyName::new("llm_agent_session.messages", "Event");
pub static MESSAGE: PyName = PyName::new("llm_agent_session.messages", "Message");
pub static MESSAGE_DEFAULTS: PyName = PyName::new("llm_agent_session.messages", "MESSAGE_DEFAULTS");
pub static LAZY_LIST: PyName = PyName::new("llm_agent_session._events", "LazyList");
pub static LAZY_TEXTS: PyName = PyName::new("llm_agent_session._events", "LazyTexts");
// What a history read holds.
pub static REMOVAL: PyName = PyName::new("llm_agent_session._history_fold", "Removal");
pub static PROBLEM: PyName = PyName::new("llm_agent_session._history_fold", "Problem");
pub static OPERATION: PyName = PyName::new("llm_agent_session._history_fold", "Operation");
pub static IDS_SINCE_READ: PyName = PyName::new("llm_agent_session._history_fold", "IdsSinceRead");
pub static READ_MAPPING: PyName = PyName::new("llm_agent_session._history_fold", "ReadMapping");
// Refusals, and integers longer than an i64.
pub static CORE_FAILURE: PyName = PyName::new("llm_agent_session.errors", "CoreFailure");
pub static STR_TO_INT: PyName = PyName::new("llm_agent_session.canonical", "str_to_int");
pub static OBJECT: PyName = PyName::new("builtins", "object");
