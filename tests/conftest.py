"""Every behaviour test runs once per available backend (docs/ARCHITECTURE.md's two cores: both give identical
results and identical errors on every input; the test suite runs on both)."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import pytest
# processes the tests start inherit it).
_CACHE = tempfile.mkdtemp(prefix="llm-agent-session-test-cache-")
os.environ["LLM_AGENT_SESSION_CACHE"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

import llm_agent_session  # noqa: E402
from llm_agent_session import Session, _backend  # noqa: E402

BACKENDS = list(_backend.available())


# The inner loop (`pytest -m "not slow"`, under a minute on 2 cores) leaves these out; the
# test command runs them all. By directory or file, and single tests by name.
SLOW_PLACES = (
    "tests/reliability/",
    "tests/cli/test_hostile.py",
    "tests/cli/test_export_html.py",
    "tests/test_integration_",
    "tests/test_import_fuzz.py",
    "tests/test_properties.py",
    "tests/secrets/test_viewer.py",  # every answer of the data API for a seeded transcript; Chromium
    "tests/test_demo_and_stub.py",
    "tests/test_types.py",
    "tests/dataset/test_dataset_cli.py",
    "tests/dataset/test_dataset_big.py",
    "tests/secrets/test_adapters.py",
)
SLOW_TESTS = (
    "test_every_truncation_of_a_representative_transcript_agrees",
    "test_hypothesis_",
    "test_generated_transcripts_agree",
    "test_damaged_transcripts_agree",
    "test_a_transcript_big_enough_for_two_threads_agrees",
    "test_viewer_survives_writer_rollbacks",
    "test_peek_survives_a_file_shrinking_under_it",
    "test_fork_pool_child_never_holds_the_lock",
    "test_answering_a_call_killed_mid_tool",
    "test_racing_creates_exactly_one_wins",
    "test_tail_follow",
    "test_two_threads_on_non_ascii_and_escapes",
    "test_every_table_always_holds_a_file_with_its_schema_and_at_most_8_per_partition",
    # A second or more each, on both cores: out of the inner loop, which stays under a minute.
    "test_the_whole_read_taking_over_a_preview_is_never_answered_halfway",
    "test_a_long_line_with_many_brackets_reads_in_linear_memory",
    "test_close_while_threads_append",
    "test_iterating_a_two_thread_peek_gives_the_pure_events",
    "test_sigkill_during_repair_loses_nothing",
    "test_jobs_import_a_tree_in_processes_with_the_same_result",
    "test_progress_bar_only_on_a_tty",
    "test_check_of_a_file_8x_larger_than_tmpdir_copies_nothing",
    "test_sigkill_during_a_scrub_leaves_the_old_file_or_the_new_one",
    # Every export and the dataset of clean corpora of several seeds and sizes, either way
    # (one small one of each stays in the inner loop).
    "test_clean_corpora_come_out_as_no_redact_writes_them",
    "test_clean_corpora_give_the_same_rows_either_way",
    # Four exports and three fresh ones to compare with; the straddle itself is in the inner
    # loop too (test_dataset_grow.py's GROWTHS, "a line of a response counted before").
    "test_a_response_whose_lines_straddle_two_growths_is_counted_once",
    "test_every_prefix_of_a_representative_transcript_indexes_and_serves",
    # 1.5 s or more each on a busy 2-core machine (`pytest -m "not slow" --durations=40`):
    # whole exports run after run, processes, every truncation.
    "test_follow_a_live_writer_process",
    "test_growing_again_and_again_then_a_whole_export",
    "test_lines_agree_with_blank_lines_a_final_line_and_two_threads",
    "test_dataset_query_refuses_what_writes_or_reaches_beyond_out",
    "test_the_tables_of_a_seeded_transcript_hold_no_secret_unless_told",
    "test_an_operation_stays_open_from_run_to_run_until_its_settle",
    "test_a_rerun_reads_what_changed_and_nothing_else",
    "test_a_name_that_is_not_utf8_is_one_failed_file_run_after_run",
    "test_files_that_are_not_transcripts_are_skipped_and_counted_and_nothing_hangs",
    "test_scan_exit_codes_and_report",
    "test_a_grown_export_by_one_core_goes_on_with_the_other",
    "test_json_keys_are_snake_case_everywhere",
    "test_a_clean_transcript_comes_out_as_no_redact_writes_it",
    "test_a_file_that_is_not_the_one_exported_is_read_whole",
    "test_index_builds_refreshes_and_says_why_not",
    "test_damaged_and_forged_indexes_never_change_a_load",
    "test_a_claude_code_project_counts_each_response_once",
    "test_write_nesting_limit",
    "test_an_export_holds_no_seeded_secret_unless_told",
    "test_every_truncation_of_a_transcript",
    "test_check_exit_codes",
    "test_growth_beside_new_removed_and_rewritten_transcripts",
)


def pytest_configure(config):
    # Also where the suite runs without pyproject.toml beside it (CI's run against the wheel).
    config.addinivalue_line("markers", "slow: a test of more than about a second, or of whole processes")


def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath) + os.sep
    for item in items:
        where = str(item.fspath).replace(root, "").replace(os.sep, "/")
        if where.startswith(SLOW_PLACES) or getattr(item, "originalname", item.name).startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config):
    return f"llm_agent_session backends available: {BACKENDS}"


@pytest.fixture(autouse=True, params=BACKENDS, ids=BACKENDS)
def backend_name(request):
    """Switch the running process to the backend under test."""
    previous = llm_agent_session.backend()
    _backend.use(request.param)
    assert llm_agent_session.backend() == request.param
    yield request.param
    _backend.use(previous)


@pytest.fixture
def tpath(tmp_path):
    """A path for a transcript that does not exist yet."""
    return tmp_path / "run.jsonl"


@pytest.fixture
def session(tpath):
    """A freshly created session, closed afterwards."""
    s = Session.create(tpath, {"agent": "test"})
    yield s
    s.close()


@pytest.fixture
def other_backend(backend_name):
    """The name of another available backend, or skip."""
    others = [b for b in BACKENDS if b != backend_name]
    if not others:
        pytest.skip("only one backend available")
    return others[0]
