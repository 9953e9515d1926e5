"""Learning from the oracle: `sample` (labelled Parquet shards on Dask) and `match`
(a policy against the perfect player). Every label of random rows equals the
oracle's probe and moves; the card's counts equal the rows; the same seed gives
the same shards byte for byte on 1 and 2 workers; an interrupted sample rerun
writes only the missing shards; the oracle as a policy keeps every value and
loses no game it should not, random does worse, an illegal pit is one sentence."""

import io
import json
import os

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURE_M40, ROOT, run_cli

from bestemshe_dist import Tablebase
from bestemshe_dist.errors import UsageError
from bestemshe_dist.learn.match import match
from bestemshe_dist.learn.sample import plan_sample, sample

VALUE = {"win": 1, "draw": 0, "loss": -1}


def read_shards(folder):
    names = sorted(p.name for p in folder.glob("train-*-of-*.parquet"))
    return names, pd.concat([pd.read_parquet(folder / n) for n in names], ignore_index=True)


def check_rows(tb, frame, count, seed=0):
    """`count` random rows of `frame` against the oracle: value, dtz, every pit."""
    v = tb.variant
    for _, row in frame.sample(count, random_state=seed).iterrows():
        pos = tb.position([int(row.k1), int(row.k2)] + [int(row[f"p{j}"]) for j in range(v.board)])
        found = tb.analyse(pos)
        assert row.value == VALUE[found.probe.value], pos
        if "dtz" in frame.columns:
            assert (None if pd.isna(row.dtz) else int(row.dtz)) == found.probe.dtz, pos
        moves = {m.pit: VALUE[m.value] for m in found.moves}
        for p in range(v.pits):
            assert bool(row[f"legal_{p}"]) == (p in moves)
            assert pd.isna(row[f"after_{p}"]) if p not in moves else row[f"after_{p}"] == moves[p]
            assert bool(row[f"keeps_{p}"]) == (moves.get(p) == VALUE[found.probe.value])
        assert row.legal_mask == sum(1 << p for p in moves)
        assert row.keeps_mask == sum(1 << p for p, x in moves.items() if x == VALUE[found.probe.value])
        assert moves, "positions with no move are left out by default"


def test_labels_equal_the_oracle_and_the_card_counts_the_rows(client, tb123, tmp_path):
    folder, _tables = tb123
    tb = Tablebase.open(str(folder))
    spec = plan_sample(
        tb,
        positions=30_000,
        seed=3,
        shard_positions=7_000,
        min_captured=0,
        weights="uniform",
        with_no_move=False,
    )
    assert spec.shards == 5 and spec.distances
    card = sample(
        client, str(folder), {}, str(tmp_path / "s"), {}, spec, command="test", log=lambda line: None
    )
    names, frame = read_shards(tmp_path / "s")
    assert names == [f"train-0000{i}-of-00005.parquet" for i in range(5)]
    assert len(frame) == 30_000 and [s["rows"] for s in card["shards"]] == [7000] * 4 + [2000]
    check_rows(tb, frame, 600)
    # the card: counts per value equal the rows, in total and per shard; the columns are the shards'
    on_disk = json.loads((tmp_path / "s" / "dataset.json").read_text())
    assert on_disk == json.loads(json.dumps(card)) and card["complete"]
    assert card["counts"] == {"rows": 30_000, **{k: int((frame.value == x).sum()) for k, x in VALUE.items()}}
    for s, name in zip(card["shards"], names):
        part = pd.read_parquet(tmp_path / "s" / name)
        assert (
            s["name"] == name
            and s["win"] == int((part.value == 1).sum())
            and s["loss"] == int((part.value == -1).sum())
        )
    assert list(card["columns"]) == list(frame.columns)
    table = pq.read_table(tmp_path / "s" / names[0])
    assert str(table.schema.field("value").type) == "int8" and str(table.schema.field("dtz").type) == "int16"
    readme = (tmp_path / "s" / "README.md").read_text()
    assert "30,000 positions" in readme and "| train-00004-of-00005.parquet | 2,000 |" in readme
    # uniform over positions (with a move): every layer appears about as often as its size says
    sizes = {l: spec.variant.layer_size(*l) for l in spec.layers}
    biggest = max(sizes, key=sizes.get)
    share = ((frame.k1 == biggest[0]) & (frame.k2 == biggest[1])).mean()
    assert abs(share - spec.weights_of_layers()[spec.layers.index(biggest)]) < 0.02


def test_layer_weights_no_move_positions_and_the_published_files(client, tmp_path):
    tb = Tablebase.open(str(FIXTURE_M40))
    spec = plan_sample(
        tb,
        positions=15_000,
        seed=1,
        shard_positions=15_000,
        min_captured=44,
        weights="layer",
        with_no_move=True,
    )
    assert spec.layers == tuple(sorted(l for l in tb.layers() if sum(l) >= 44)) and not spec.distances
    sample(client, str(FIXTURE_M40), {}, str(tmp_path / "s"), {}, spec, command="test", log=lambda line: None)
    _names, frame = read_shards(tmp_path / "s")
    assert "dtz" not in frame.columns
    per_layer = frame.groupby(["k1", "k2"]).size()
    assert len(per_layer) == len(spec.layers) and per_layer.min() > 15_000 / len(spec.layers) * 0.85
    stuck = frame[frame.legal_mask == 0]
    assert len(stuck) > 0 and (stuck.value == -1).all()  # asked for: lost, nothing to play
    check_rows(tb, frame[frame.legal_mask > 0], 300)
    with pytest.raises(UsageError, match="holds no layer with k1 \\+ k2 >= 50"):
        plan_sample(
            tb,
            positions=10,
            seed=1,
            shard_positions=10,
            min_captured=50,
            weights="uniform",
            with_no_move=False,
        )


def test_same_seed_same_bytes_on_one_and_two_workers_and_a_rerun_writes_only_what_is_missing(tb123, tmp_path):
    folder, _ = tb123
    args = ["sample", folder, "--positions", 20_000, "--shard-positions", 6_000, "--seed", 11]
    one = run_cli(*args, "--out", tmp_path / "one", "--workers", 1)
    two = run_cli(*args, "--out", tmp_path / "two", "--workers", 2)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    names = sorted(p.name for p in (tmp_path / "one").glob("train-*"))
    assert len(names) == 4
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert "positions per core-second" in one.stdout
    card = json.loads((tmp_path / "one" / "dataset.json").read_text())
    assert card["command"].startswith("bestemshe-dist sample ") and "--seed 11" in card["command"]
    # another seed: other shards
    other = run_cli(
        "sample",
        folder,
        "--positions",
        20_000,
        "--shard-positions",
        6_000,
        "--seed",
        12,
        "--out",
        tmp_path / "other",
        "--workers",
        1,
    )
    assert (
        other.returncode == 0
        and (tmp_path / "other" / names[0]).read_bytes() != (tmp_path / "one" / names[0]).read_bytes()
    )
    # interrupted: a shard is missing, the others stay as they were
    kept = {n: (tmp_path / "one" / n).stat().st_mtime_ns for n in names if n != names[2]}
    original = (tmp_path / "one" / names[2]).read_bytes()
    (tmp_path / "one" / names[2]).unlink()
    again = run_cli(*args, "--out", tmp_path / "one", "--workers", 1)
    assert again.returncode == 0 and "3 already written, 1 to write" in again.stdout, again.stdout
    assert (tmp_path / "one" / names[2]).read_bytes() == original
    assert {n: (tmp_path / "one" / n).stat().st_mtime_ns for n in kept} == kept
    assert json.loads((tmp_path / "one" / "dataset.json").read_text())["counts"] == card["counts"]
    # other settings into the same folder: one sentence, nothing written
    clash = run_cli(
        "sample",
        folder,
        "--positions",
        20_000,
        "--shard-positions",
        6_000,
        "--seed",
        13,
        "--out",
        tmp_path / "one",
        "--workers",
        1,
    )
    assert clash.returncode == 2 and clash.stderr.count("\n") == 1 and "other settings (seed)" in clash.stderr
    assert {n: (tmp_path / "one" / n).stat().st_mtime_ns for n in kept} == kept
    # shards read back with pyarrow alone, too
    assert pq.read_table(io.BytesIO((tmp_path / "one" / names[0]).read_bytes())).num_rows == 6_000


def test_bad_sample_settings_are_one_sentence(tb123, tmp_path):
    folder, _ = tb123
    for extra, needle in [
        (["--positions", "0"], "--positions: must be at least 1"),
        (["--positions", "10", "--weights", "odd"], "invalid choice: 'odd'"),
        (["--positions", "10", "--min-captured", "40"], "holds no layer with k1 + k2 >= 40"),
    ]:
        done = run_cli("sample", folder, "--out", tmp_path / "x", *extra)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and needle in done.stderr, done.stderr
    assert not (tmp_path / "x").exists()


def test_match_oracle_scores_everything_random_less_and_bad_policies_are_one_sentence(tb123):
    folder, _ = tb123
    tb = Tablebase.open(str(folder))
    perfect = match(None, tb, str(folder), {}, "oracle", starts=30, seed=2)
    assert perfect["kept_rate"] == 1.0 and perfect["value_losing"] == 0 and perfect["games_below_theory"] == 0
    assert perfect["games"] == 60 and perfect["policy_moves"] > 60
    assert perfect["games_won_or_drawn_at_start"] > 0
    assert sum(r["games"] for r in perfect["by_layer"]) == 60
    assert all(r["layer"].split("_")[0] == r["layer"].split("_")[1] for r in perfect["by_layer"])
    worse = match(None, tb, str(folder), {}, "random", starts=30, seed=2)
    assert worse["kept_rate"] < 1.0 and worse["value_losing"] > 0 and worse["games_below_theory"] > 0
    again = match(None, tb, str(folder), {}, "random", starts=30, seed=2)
    assert again["kept"] == worse["kept"] and again["results"] == worse["results"]  # seeded
    for spec in ("greedy", "minimax:2", "policies:lowest_pit"):
        report = match(None, tb, str(folder), {}, spec, starts=10, seed=1)
        assert 0 < report["kept_rate"] <= 1.0 and report["games"] == 20
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    done = run_cli(
        "match", folder, "--policy", "policies:always_first", "--starts", 20, "--workers", 1, env=env
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert (
        "policy policies:always_first chose pit index 0 for position" in done.stderr
        and "empty" in done.stderr
    )
    done = run_cli(
        "match", folder, "--policy", "policies:wrong_length", "--starts", 5, "--workers", 1, env=env
    )
    assert (
        done.returncode == 1
        and done.stderr.count("\n") == 1
        and "policy policies:wrong_length must return" in done.stderr
        and "whole numbers" in done.stderr
    ), done.stderr
    for spec, needle in [
        ("nope", "--policy must be random, greedy, minimax:D, oracle or module:function"),
        ("minimax:0", "--policy minimax:D takes a depth D from 1 to 8"),
        ("policies:missing", "--policy policies:missing: policies has no missing."),
        ("no_such_module:f", "--policy no_such_module:f: cannot import no_such_module"),
    ]:
        done = run_cli("match", folder, "--policy", spec, "--starts", 3, env=env)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and needle in done.stderr, (
            spec,
            done.stderr,
        )


def test_match_command_on_dask_prints_the_report(tb123):
    folder, _ = tb123
    done = run_cli(
        "match", folder, "--policy", "oracle", "--starts", 30, "--seed", 2, "--workers", 2, "--json"
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    here = match(None, Tablebase.open(str(folder)), str(folder), {}, "oracle", starts=30, seed=2)
    assert {k: v for k, v in report.items() if k != "wall_seconds"} == {
        k: v for k, v in json.loads(json.dumps(here)).items() if k != "wall_seconds"
    }
    text = run_cli("match", folder, "--policy", "random", "--starts", 10, "--workers", 1)
    assert (
        text.returncode == 0
        and "value-preserving moves" in text.stdout
        and "games below theory" in text.stdout
    )


def test_waves_of_shards_write_the_same_bytes(client, tb123, tmp_path, monkeypatch):
    """A sample larger than a wave is labelled a few shards at a time (bounded
    memory): the shards are the same bytes as in one wave."""
    from bestemshe_dist.learn import sample as sampling

    folder, _ = tb123
    tb = Tablebase.open(str(folder))
    spec = plan_sample(
        tb,
        positions=10_000,
        seed=8,
        shard_positions=3_000,
        min_captured=0,
        weights="uniform",
        with_no_move=False,
    )
    lines = []
    sample(client, str(folder), {}, str(tmp_path / "one"), {}, spec, command="test", log=lines.append)
    monkeypatch.setattr(sampling, "WAVE_POSITIONS", 3_000)  # one shard a wave
    sample(client, str(folder), {}, str(tmp_path / "waves"), {}, spec, command="test", log=lines.append)
    names = sorted(p.name for p in (tmp_path / "one").glob("train-*"))
    assert len(names) == 4
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "waves" / name).read_bytes()
