"""Issue 22, formats: Arrow IPC shards (stream and file format) and a Hugging Face ``save_to_disk``
folder, written by pyarrow's own writers in the layout ``datasets`` uses (``datasets`` itself is not
installed here). Training and ``stats`` from them equal training from the same text as ``.txt``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")

from hostile.hostile_helpers import run_inproc  # noqa: E402

from workbench.corpus import expand_paths, iter_text, open_source  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402
from workbench.store import ProjectStore  # noqa: E402
from workbench.tasks.corpus_fields import option_candidates  # noqa: E402


def sample_lines(corpora: Path, per_file: int = 200) -> list[str]:
    out: list[str] = []
    for path in sorted(corpora.glob("*.txt")):
        out.extend([ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()][:per_file])
    return out


def table(lines: list[str]):
    return pa.table({"id": list(range(len(lines))), "title": [t[:12] for t in lines], "text": lines})


def write_arrow(path: Path, tbl, *, stream: bool = True, chunk: int = 97) -> Path:
    """An Arrow IPC shard: the stream format (what save_to_disk writes) or the file format."""
    with pa.OSFile(str(path), "wb") as sink:
        make = ipc.new_stream if stream else ipc.new_file
        with make(sink, tbl.schema) as writer:
            writer.write_table(tbl, max_chunksize=chunk)
    return path


def save_to_disk(folder: Path, tbl, shards: int = 2) -> Path:
    """The folder ``datasets.Dataset.save_to_disk`` writes: dataset_info.json, state.json listing
    ``data-0000N-of-0000M.arrow`` shards in order."""
    folder.mkdir(parents=True)
    names = [f"data-{i:05d}-of-{shards:05d}.arrow" for i in range(shards)]
    step = -(-tbl.num_rows // shards)
    for i, name in enumerate(names):
        write_arrow(folder / name, tbl.slice(i * step, step))
    features = {n: {"dtype": "string" if str(tbl.schema.field(n).type) == "string" else "int64", "_type": "Value"}
                for n in tbl.schema.names}
    (folder / "dataset_info.json").write_text(json.dumps({"citation": "", "description": "", "features": features},
                                                         indent=2), encoding="utf-8")
    (folder / "state.json").write_text(json.dumps({
        "_data_files": [{"filename": n} for n in names], "_fingerprint": "0123456789abcdef",
        "_format_columns": None, "_format_kwargs": {}, "_format_type": None, "_output_all_columns": False,
        "_split": "train"}, indent=2), encoding="utf-8")
    return folder


def stored_merges(project: Path):
    with ProjectStore.open(project, readonly=True) as store:
        (run,) = store.runs()
        return [(m.left, m.right, m.piece) for m in store.merges(run.id, 0, run.merge_count)], \
            [c.reader_options for c in store.corpora()]


@pytest.mark.parametrize("stream", [True, False])
def test_arrow_shards_read_back_in_batches_with_the_text_column_chosen(corpora, tmp_path, stream):
    lines = sample_lines(corpora)
    path = write_arrow(tmp_path / "shard.arrow", table(lines), stream=stream)
    src = open_source(path)
    assert (src.kind, src.column) == ("arrow", "text")
    assert "".join(iter_text(src)) == "".join(line + "\n" for line in lines)
    assert "".join(iter_text(open_source(path, column="title"))) == "".join(t[:12] + "\n" for t in lines)
    assert option_candidates(path) == ("column", ["id", "title", "text"], "text")


def test_train_and_stats_from_a_save_to_disk_folder_equal_the_txt(corpora, tmp_path):
    lines = sample_lines(corpora)
    (tmp_path / "c.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    folder = save_to_disk(tmp_path / "ds", table(lines))
    sources, rejected = expand_paths([folder])
    assert rejected == [] and [s.path.name for s in sources] == ["data-00000-of-00002.arrow",
                                                                  "data-00001-of-00002.arrow"]
    results = {}
    for name in ("c.txt", "ds"):
        project = tmp_path / f"{name}.tokproj"
        code, _out, err = run_inproc(["train", str(tmp_path / name), "--project", str(project), "--merges", "60",
                                      "--progress", "none"], timeout_s=60)
        assert code == 0, err
        code, out, err = run_inproc(["stats", str(tmp_path / name), "--json", "--no-cache"], timeout_s=60)
        assert code == 0, err
        files = json.loads(out)["files"]
        totals = tuple(sum(f[k] for f in files) for k in ("chars", "lines"))
        results[name] = (stored_merges(project)[0], totals)
    assert results["ds"] == results["c.txt"] and len(results["c.txt"][0]) == 60
    # the column flag, as for Parquet
    project = tmp_path / "title.tokproj"
    code, _out, err = run_inproc(["train", str(folder / "data-00000-of-00002.arrow"), "--column", "title",
                                  "--project", str(project), "--merges", "5", "--progress", "none"], timeout_s=60)
    assert code == 0, err
    assert stored_merges(project)[1][0]["column"] == "title"


def test_a_dataset_dict_folder_reads_every_split(corpora, tmp_path):
    lines = sample_lines(corpora, 20)
    root = tmp_path / "dd"
    save_to_disk(root / "train", table(lines[:50]), shards=1)
    save_to_disk(root / "test", table(lines[50:]), shards=1)
    root.joinpath("dataset_dict.json").write_text('{"splits": ["train", "test"]}', encoding="utf-8")
    sources, rejected = expand_paths([root])
    assert rejected == [] and [s.path.parent.name for s in sources] == ["test", "train"]
    assert sum(len("".join(iter_text(s))) for s in sources) == sum(len(t) + 1 for t in lines)


def test_a_state_file_pointing_outside_its_folder_is_one_line(tmp_path):
    folder = save_to_disk(tmp_path / "ds", table(["a", "b"]), shards=1)
    (folder / "state.json").write_text('{"_data_files": [{"filename": "../../etc/passwd"}]}', encoding="utf-8")
    _sources, rejected = expand_paths([folder])
    (message,) = rejected
    assert "state.json: lists '../../etc/passwd', which is not a file of this folder" in message


def test_a_table_without_an_obvious_text_column_asks_which(tmp_path):
    path = write_arrow(tmp_path / "t.arrow", pa.table({"a": ["x"], "b": ["y"]}))
    with pytest.raises(WorkbenchError, match=r"t\.arrow: which column holds the text\? \(columns: a, b\)"):
        open_source(path)
    assert option_candidates(path) == ("column", ["a", "b"], None)
