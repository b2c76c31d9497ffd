"""Tests of the batch's sources (directory, glob, JSONL, single file) and sinks (Parquet, CSV)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from smartflow_engine.batch import (
    FileSource,
    JsonlSource,
    SourceError,
    open_source,
    parse_range,
    read_table,
    run_batch,
    write_table,
)
from tests.helpers.batch_windows import TIME_LIMIT, tiny_cohort


@pytest.fixture
def window_dir(tmp_path):
    """Three state files and one unrelated file in a directory."""
    folder = tmp_path / "windows"
    folder.mkdir()
    for i, state in enumerate(tiny_cohort(3)):
        (folder / f"w{i}.json").write_text(state.to_json(), encoding="utf-8")
    (folder / "notes.txt").write_text("not a window", encoding="utf-8")
    return folder


def test_directory_source_reads_its_json_files_in_name_order(window_dir):
    """Tests that a directory yields its *.json files sorted, named by file name."""
    src = open_source(window_dir)
    assert isinstance(src, FileSource) and len(src) == 3
    assert [it.window_id for it in src] == ["w0.json", "w1.json", "w2.json"]
    df = run_batch(window_dir, jobs=("feasibility",), time_limit_s=TIME_LIMIT, engine="loop")
    assert list(df["window_id"]) == ["w0.json", "w1.json", "w2.json"]
    assert df["error"].isna().all()


def test_glob_source_and_single_file(window_dir):
    """Tests that a glob picks the matching files (named relative to its fixed prefix) and a
    single file is a one-window source."""
    src = open_source(str(window_dir / "w[12].json"))
    assert [it.window_id for it in src] == ["w1.json", "w2.json"]
    single = open_source(window_dir / "w0.json")
    assert [it.window_id for it in single] == ["w0.json"]


def test_jsonl_source_bare_wrapped_blank_and_bad_lines(tmp_path):
    """Tests that a JSONL file gives one item per non-blank line: bare states named by line,
    wrapper lines by their window_id and user_id, and a bad line an error row in place."""
    a, b = tiny_cohort(2)
    path = tmp_path / "cohort.jsonl"
    lines = [
        a.to_json(indent=None),
        "",
        json.dumps({"window_id": "alice", "user_id": 7, "state": b.to_dict()}, ensure_ascii=False),
        "{broken",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    src = open_source(path)
    assert isinstance(src, JsonlSource) and len(src) == 3
    df = run_batch(path, jobs=("feasibility",), time_limit_s=TIME_LIMIT, engine="loop")
    assert list(df["window_id"]) == ["cohort.jsonl:1", "alice", "cohort.jsonl:4"]
    assert df["user_id"].iloc[1] == 7
    assert df["error"].iloc[:2].isna().all()
    assert df["error"].iloc[2].startswith("invalid_state: invalid JSON")


def test_missing_sources_are_refused(tmp_path):
    """Tests that an empty directory, a glob matching nothing and a missing path raise
    SourceError naming the path."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match=r"no \*\.json files"):
        open_source(empty)
    with pytest.raises(SourceError, match="no file matches"):
        open_source(str(tmp_path / "*.json"))
    with pytest.raises(SourceError, match="no such file"):
        open_source(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_sinks_round_trip_the_table(tmp_path, suffix):
    """Tests that a table written to Parquet or CSV reads back equal, with the batch's dtypes."""
    df = run_batch([*tiny_cohort(3), "{bad"], time_limit_s=TIME_LIMIT, engine="loop")
    path = write_table(df, tmp_path / "out" / f"results{suffix}")
    back = read_table(path)
    pd.testing.assert_frame_equal(df, back, check_exact=False, rtol=1e-9)


def test_sink_suffix_is_checked(tmp_path):
    """Tests that a file that is neither .parquet nor .csv is refused before writing."""
    df = run_batch(tiny_cohort(1), jobs=("feasibility",), time_limit_s=TIME_LIMIT, engine="loop")
    with pytest.raises(ValueError, match=r"\.parquet or \.csv"):
        write_table(df, tmp_path / "results.xlsx")
    assert not (tmp_path / "results.xlsx").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1-5000", (1, 5000)),  # a range
        (" 7 ", (7, 7)),  # a single id
        ("3 - 4", (3, 4)),  # spaces
    ],
)
def test_parse_range(text, expected):
    """Tests that user and week ranges parse as inclusive pairs."""
    assert parse_range(text) == expected


@pytest.mark.parametrize("text", ["5-1", "a-b", "1-", ""])
def test_parse_range_refuses_bad_text(text):
    """Tests that an empty or malformed range raises SourceError."""
    with pytest.raises(SourceError):
        parse_range(text, "--users")
