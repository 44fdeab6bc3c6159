"""The analysis' rows as the report reads them (benchmarks/analysis/rows.py)."""

from benchmarks.analysis import metrics, trials
from benchmarks.analysis.rows import RUN_ROW_COLUMNS, TRIALS_ROW_COLUMNS, RunRow


def test_the_typed_rows_have_every_column_the_analysis_computes_in_its_order():
    assert RUN_ROW_COLUMNS == metrics.RUN_COLUMNS
    assert TRIALS_ROW_COLUMNS == trials.TRIALS_COLUMNS


def test_a_collected_row_becomes_a_typed_one_with_lists_the_analysis_left_null_empty():
    collected = dict.fromkeys(RUN_ROW_COLUMNS) | {"run_id": "r1", "scenario": "s", "acks": "1", "lost": None,
                                                   "unseen": 3, "fault_schedule": None, "invalid_reasons": None}
    row = RunRow.of(collected)
    assert (row.run_id, row.acks, row.fault_schedule, row.invalid_reasons) == ("r1", "1", [], [])
    assert row.gone == 3  # lost unknown (None) counts as none: the row says it was not checked
    assert list(row.to_dict()) == list(RUN_ROW_COLUMNS)
