"""Full scale: one code path for synthetic and real dependency layers, memory that
fits the pair (not the pair times the threads or processes), distances rebuilt
at publication equal to what the solver wrote before, and the memory check that
refuses a pair before it runs."""

import hashlib
import json
import logging
import tracemalloc

import numpy as np
import pytest
from conftest import ROOT, run_cli
from distributed import Client, LocalCluster
from oracle_support import solver_tables

from bestemshe_dist.data import format as fmt
from bestemshe_dist.game.dag import make_plan, pair_plan, single_pair_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.run import hostmem
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.hostpair import fill_synthetic, row_slots, synthetic_shares
from bestemshe_dist.run.memory import pair_memory
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.solve import code_arrays
from bestemshe_dist.solve.pair import COUNTING
from bestemshe_dist.watch.progress import Progress

SMALL = Variant(8, 2)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _seed_making(variant, layer, codes, tries=200_000):
    """A seed whose synthetic layer equals `codes` (found by trying seeds)."""
    npos = variant.layer_size(*layer)
    out = code_arrays.new_codes(npos)
    for seed in range(tries):
        fill_synthetic(variant, seed, layer, out)
        if np.array_equal(out, codes):
            return seed
    raise AssertionError(f"no seed in {tries} makes layer {layer}")


def test_synthetic_dependencies_take_the_real_path(client, tmp_path):
    """A seed whose synthetic layers equal the real ones gives the real files."""
    real = tmp_path / "real"
    solve(client, Job(str(real), SMALL), make_plan(SMALL))
    pair = pair_plan(SMALL, 2, 2)
    assert pair.deps == ((2, 4),)
    tables = solver_tables(real, SMALL)
    seed = _seed_making(SMALL, (2, 4), tables[(2, 4)][0])

    synthetic = tmp_path / "synthetic"
    lines = []
    solve(
        client,
        Job(str(synthetic), SMALL, synthetic=seed),
        single_pair_plan(SMALL, 2, 2),
        lines.append,
        chunk_size=7,
    )
    assert any("pair-2-2 round 2 (" in line for line in lines)  # the chunked path, several chunks
    for kind in ("win", "draw"):
        name = f"layer_2_2_{kind}.bin"
        assert (synthetic / name).read_bytes() == (real / name).read_bytes()
    manifest = json.loads((synthetic / "manifest.json").read_text())
    assert manifest["synthetic"] == {"seed": seed, "pairs": ["pair-2-2"]}
    assert sorted(manifest["layers"]) == ["2_2"]


@pytest.mark.parametrize("chunk", [None, 7], ids=["small-pair", "chunked"])
def test_one_pair_solves_on_its_published_dependencies(tmp_path, chunk):
    """solve --pair A B on a folder that holds the pair's dependency layers (and
    nothing of the pair) gives the files of the whole solve; without them it stops
    with one sentence before anything is written."""
    full = tmp_path / "full"
    assert run_cli("solve", "--stones", 8, "--pits", 2, "--out", full, "--workers", 1).returncode == 0
    out = tmp_path / "out"
    out.mkdir()
    manifest = json.loads((full / "manifest.json").read_text())
    manifest["layers"] = {"2_4": manifest["layers"]["2_4"]}
    (out / "manifest.json").write_text(json.dumps(manifest))
    for path in full.glob("layer_2_4[._]*"):
        (out / path.name).write_bytes(path.read_bytes())
    extra = ["--chunk-size", chunk] if chunk else []
    done = run_cli(
        "solve",
        "--stones",
        8,
        "--pits",
        2,
        "--pair",
        2,
        2,
        "--out",
        out,
        "--workers",
        1,
        "--dashboard-address",
        "none",
        *extra,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    for kind in ("win", "draw"):
        assert (out / f"layer_2_2_{kind}.bin").read_bytes() == (full / f"layer_2_2_{kind}.bin").read_bytes()
    assert sorted(json.loads((out / "manifest.json").read_text())["layers"]) == ["2_2", "2_4"]

    empty = tmp_path / "empty"
    empty.mkdir()
    failed = run_cli(
        "solve",
        "--stones",
        8,
        "--pits",
        2,
        "--pair",
        2,
        2,
        "--out",
        empty,
        "--workers",
        1,
        "--dashboard-address",
        "none",
        *extra,
        timeout=180,
    )
    errors = [l for l in failed.stderr.splitlines() if not l.startswith("[")]
    assert failed.returncode == 1 and errors == [
        f"bestemshe-dist solve: layer 2_4, a dependency of pair-2-2, is not published intact in {empty}: "
        "solve it first (solve --min-captured 6), or use --synthetic-deps."
    ], failed.stderr
    assert not list(empty.glob("*.json")) and not list(empty.glob("*.bin"))


def test_pair_bench_runs_one_pair_both_ways(tmp_path):
    """benchmarks/pair_bench.py on a small variant: one process and the CLI reach the
    same counts, and the CLI's breakdown adds up to its wall time."""
    import subprocess
    import sys

    deps = tmp_path / "deps"
    assert (
        run_cli(
            "solve", "--stones", 8, "--pits", 2, "--min-captured", 6, "--out", deps, "--workers", 1
        ).returncode
        == 0
    )
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "pair_bench.py"),
            "--stones",
            "8",
            "--pits",
            "2",
            "--pair",
            "2",
            "2",
            "--deps",
            str(deps),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # by default, the CLI's own local cluster
    from bestemshe_dist.cluster import local_cluster_kwargs

    default = local_cluster_kwargs(None, None, None, dashboard_address="none")
    assert (report["workers"], report["threads_per_worker"]) == (
        default["n_workers"],
        default["threads_per_worker"],
    )
    assert report["identical_counts"] and report["one_process"]["counts"] == report["cli"]["counts"]
    assert report["positions"] == SMALL.layer_size(2, 2) and report["cli"]["rounds"] >= 1
    cli = report["cli"]
    parts = cli["start_seconds"] + cli["rounds_seconds"] + cli["publish_seconds"] + cli["exit_seconds"]
    assert parts <= cli["wall_seconds"] + 0.05 and min(cli["peak_rss_per_worker"]) > 0
    # rounds by kind: a pair this small is solved whole in one task (no round lines)
    assert sum(report["one_process"]["mode_seconds"].values()) <= report["one_process"]["seconds"] + 0.05
    assert (
        len(cli["round_seconds"]) in (0, cli["rounds"]) and sum(cli["round_seconds"]) <= cli["rounds_seconds"]
    )
    assert cli["task_phases"] == {}  # nor phases: those come from a large pair's rounds


def test_floor_bench_does_the_kernels_arithmetic(tmp_path):
    """benchmarks/floor_bench.py: its arithmetic loop ranks every continuing move's
    child as rules.move_rank does, and its un-move loop every predecessor as
    rules.unmoves and rules.rank do (so their times are the kernels' arithmetic,
    not less); its sweep evaluates every position; and the floors, of a pair and
    of a solved folder's manifest, add up."""
    import subprocess
    import sys

    manifest = {
        "layers": {
            "2_0": {"k1": 2, "k2": 0, "positions": 10, "evaluations": 20, "unmoves": 70},
            "0_2": {"k1": 0, "k2": 2, "positions": 30, "evaluations": 20, "unmoves": 70},
            "4_0": {"k1": 4, "k2": 0, "positions": 5, "evaluations": 5, "unmoves": 9},
        }
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "floor_bench.py"),
            "--stones",
            "12",
            "--pits",
            "3",
            "--layer",
            "2",
            "0",
            "--check",
            "100000",
            "--publish-core-seconds",
            "1.5",
            "--solved",
            str(tmp_path),
            "--solved-publish-core-seconds",
            "4",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    variant = Variant(12, 3)
    size = variant.layer_size(2, 0)
    assert report["positions"] == report["evaluated"] == report["check"]["ranks"] == size
    assert report["check"]["kernel"] == report["check"]["reference"] == report["checksum"] > 0
    assert report["check"]["unmove_kernel"] == report["check"]["unmove_reference"]
    assert report["check"]["unmove_kernel"] == [report["unmove_checksum"], report["unmoves"]]
    assert report["unmoves"] > size  # every position of a layer has 1.6 un-moves on average here
    ns = report["first_round_ns"], report["unmove_ns"]
    floor = report["floor"]
    assert floor["positions"] == size + variant.layer_size(0, 2)
    assert floor["wall_seconds"] == pytest.approx(
        (floor["positions"] * ns[0] * 1e-9 + 3.06 * floor["positions"] * ns[1] * 1e-9 + 1.5) / 2
    )
    # The solved folder: each layer's positions, each pair's evaluations and un-moves once.
    solved = report["solved_floor"]
    assert (solved["positions"], solved["evaluations"], solved["unmoves"]) == (45, 25, 79)
    assert solved["wall_seconds"] == pytest.approx((25 * ns[0] * 1e-9 + 79 * ns[1] * 1e-9 + 4) / 2)
    assert min(report["walk_ns"], report["arithmetic_ns"], report["sweep_ns"], *ns) > 0


def test_synthetic_output_never_mixes_with_a_real_tablebase(tmp_path):
    out = tmp_path / "syn"
    done = run_cli(
        "solve",
        "--stones",
        8,
        "--pits",
        2,
        "--pair",
        2,
        2,
        "--synthetic-deps",
        5,
        "--out",
        out,
        "--workers",
        1,
        "--chunk-size",
        7,
        "--dashboard-address",
        "none",
    )
    assert done.returncode == 0, done.stderr
    for args, needle in (
        (
            ["solve", "--stones", 8, "--pits", 2, "--out", out, "--workers", 1],
            "holds synthetic output (solve --synthetic-deps), which can never be part of a real tablebase",
        ),
        (
            [
                "solve",
                "--stones",
                8,
                "--pits",
                2,
                "--pair",
                2,
                2,
                "--synthetic-deps",
                6,
                "--out",
                out,
                "--workers",
                1,
            ],
            "holds synthetic output of another run (seed 5, pair-2-2)",
        ),
        (
            ["probe", out, "2", "2", "1", "1", "1", "1"],
            "holds synthetic output (solve --synthetic-deps, seed 5)",
        ),
        (["verify", out, "--workers", 1], "holds synthetic output"),
        (["checksums", out], "holds synthetic output"),
    ):
        failed = run_cli(*args)
        errors = [l for l in failed.stderr.splitlines() if not l.startswith("[")]
        assert failed.returncode == 1 and len(errors) == 1 and needle in errors[0], failed.stderr
    real = tmp_path / "real"
    assert run_cli("solve", "--stones", 8, "--pits", 2, "--out", real, "--workers", 1).returncode == 0
    done = run_cli(
        "solve",
        "--stones",
        8,
        "--pits",
        2,
        "--pair",
        2,
        2,
        "--synthetic-deps",
        5,
        "--out",
        real,
        "--workers",
        1,
    )
    assert (
        done.returncode == 1
        and "synthetic output (solve --synthetic-deps) may never be mixed into" in done.stderr
    )
    for args, needle in (
        (["--synthetic-deps", 3], "--synthetic-deps needs --pair A B"),
        (["--pair", 2, 3], "3 is not a kazan of the 8-stone game"),
        (["--pair", 2, 2, "--min-captured", 4], "give one of them"),
    ):
        done = run_cli("solve", "--stones", 8, "--pits", 2, "--out", tmp_path / "x", *args)
        assert done.returncode == 2 and needle in done.stderr and not (tmp_path / "x").exists()


def test_synthetic_shares_are_realistic():
    v = Variant(50, 5)
    for layer in ((24, 4), (12, 12), (4, 24), (0, 2)):
        codes = code_arrays.new_codes(4096 * 32)  # the layer's first 131,072 positions
        fill_synthetic(v, 7, layer, codes)
        wins, losses, draws = code_arrays.count_codes(codes, 4096 * 32)
        win, loss = synthetic_shares(v, *layer)
        n = 4096 * 32
        assert abs(wins / n - win) < 0.01 and abs(losses / n - loss) < 0.01 and 0.02 < draws / n < 0.04
    assert synthetic_shares(v, 24, 4)[0] > 0.9 and synthetic_shares(v, 4, 24)[1] > 0.9


class _RoundPeaks(Progress):
    """The traced memory each round added at its peak, above what was held when it
    started (tracemalloc: Python objects and numpy arrays; host arrays are mapped
    files, not traced)."""

    def __init__(self):
        self.peaks = []
        self._start = 0

    def _mark(self):
        tracemalloc.reset_peak()
        self._start = tracemalloc.get_traced_memory()[0]

    def started(self, *args):
        self._mark()

    def round_done(self, *args):
        self.peaks.append(tracemalloc.get_traced_memory()[1] - self._start)
        self._mark()


def _task_peak(threads, pair, rounds=3, chunks=32):
    """The largest traced memory a round of a synthetic chunked solve of `pair`
    added, its tasks on `threads` threads of this process, each layer cut in
    `chunks` chunks (so that Dask's own bookkeeping, which grows with the number
    of tasks, is the same for every pair)."""
    variant = Variant(50, 5)
    size = variant.layer_size(*pair)
    chunk_size = -(-size // chunks // 32) * 32
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=threads,
            processes=False,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        Client(cluster) as client,
    ):
        import tempfile

        with tempfile.TemporaryDirectory() as out:
            job = Job(out, variant, synthetic=3)
            rounds_seen = _RoundPeaks()
            tracemalloc.start()
            try:
                solve(
                    client,
                    job,
                    single_pair_plan(variant, *pair),
                    chunk_size=chunk_size,
                    stop_after_rounds=rounds,
                    progress=rounds_seen,
                )
            finally:
                tracemalloc.stop()
            assert len(rounds_seen.peaks) == rounds
            return max(rounds_seen.peaks)


def test_task_memory_does_not_grow_with_the_layer_or_the_threads():
    """A chunk task holds its chunk, never a layer: what a round adds to the traced
    memory grows by much less than a layer's codes from a layer of 2.0M positions
    (0.5 MiB of codes, chunks of 64K positions) to one of 20.2M (4.8 MiB, chunks
    of 630K), and with 4 threads by much less than a layer, not by four. (A task
    that copied its layer, as frontier tasks did before, adds a layer per task:
    about 5 MiB here with one thread, 20 MiB with four. Dask's own allocations
    make the growth vary between runs of the same code: -0.1 to 1.6 MB measured,
    so the bound is half a layer.)"""
    small_layer = _task_peak(1, (10, 24))  # 2,042,975 positions a layer
    large_layer = _task_peak(1, (4, 24))  # 20,160,075
    four_threads = _task_peak(4, (4, 24))
    layer_codes = code_arrays.code_words(20_160_075) * 8
    assert large_layer - small_layer < layer_codes / 2, (small_layer, large_layer)
    assert four_threads - large_layer < layer_codes / 2, (large_layer, four_threads)


def test_host_memory_is_held_once_for_all_worker_processes(tmp_path):
    """Two worker processes on one host share the pair's arrays and dependency
    layers: the host memory held equals what one process holds, shared (files) or
    private (one process with two threads: its own memory, in 2 MiB pages)."""
    held = {}
    for workers, threads in ((1, 1), (2, 1), (1, 2)):
        out = tmp_path / f"w{workers}t{threads}"
        done = run_cli(
            "solve",
            "--pair",
            10,
            24,
            "--synthetic-deps",
            3,
            "--stop-after-rounds",
            2,
            "--workers",
            workers,
            "--threads-per-worker",
            threads,
            "--chunk-size",
            1 << 18,
            "--out",
            out,
            "--dashboard-address",
            "none",
        )
        assert done.returncode == 0, done.stderr
        line = next(l for l in done.stderr.splitlines() if "host memory held at most:" in l)
        held[workers, threads] = int(line.split("at most:")[1].split()[0].replace(",", ""))
    variant = Variant(50, 5)
    pair = pair_plan(variant, 10, 24)
    expected = pair_memory(variant, pair, 1 << 18, 1, 1, method=COUNTING)  # solve's default
    page = hostmem.PAGE_WORDS * 8
    # What memory.py predicts, to a page per array (the last page of each); a
    # private array's pages are 2 MiB where it is large enough for them.
    low, high = expected.pair + expected.deps - 10 * page, expected.pair + expected.deps + 3 * page
    assert low <= held[2, 1] <= high, held
    for alone in ((1, 1), (1, 2)):
        assert low <= held[alone] <= high + 8 * (2 << 20), held


def test_a_private_space_is_one_processes_memory(tmp_path, monkeypatch):
    """A private host space (every host runs one worker process): an array is made
    and filled once however many threads ask for it, a freed range reads as zeros
    and gives its pages back, marks belong to the process, and nothing is left in
    the folder once it is removed."""
    import os
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv(hostmem.ROOT_ENV, str(tmp_path))
    name = hostmem.private_name("solve-test")
    space = hostmem.space(name)
    assert space.private and hostmem.is_private(name) and not hostmem.is_private("solve-test")
    fills = []
    words = 4 << 20  # 32 MiB

    def make(_):
        return space.array("codes", words, fill=lambda a: (fills.append(1), a.fill(7)), identity="v1")

    with ThreadPoolExecutor(8) as pool:
        arrays = list(pool.map(make, range(8)))
    assert len(fills) == 1 and all(a is arrays[0] for a in arrays) and int(arrays[0][-1]) == 7
    assert words * 8 <= space.bytes_held() <= words * 8 + (2 << 20)
    space.free("codes", 0, words // 2)
    assert int(arrays[0][0]) == 0 and int(arrays[0][words // 2]) == 7
    assert space.bytes_held() <= words * 4 + (2 << 20)
    space.mark("row-4-20", "sha256:x")
    assert space.has("row-4-20", "sha256:x")
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from bestemshe_dist.run import hostmem; print(hostmem.space({name!r}).has('row-4-20'))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
    )
    assert other.stdout.strip() == "False", other.stderr  # another process holds none of it
    assert space.array("codes", words, identity="v2")[-1] == 0  # a new identity: made anew
    space.remove()
    with hostmem._SPACES_LOCK:
        hostmem._SPACES.pop(name, None)
    assert not list(tmp_path.rglob("*solve-test*"))


def test_the_50_stone_endgame_with_distances_equals_the_earlier_solver(client, tmp_path):
    reference = json.loads((ROOT / "tests" / "fixtures" / "m36-dtz-sha256.json").read_text())
    lines = []
    solve(
        client,
        Job(str(tmp_path), Variant(50, 5), dtz=True),
        make_plan(Variant(50, 5), 36),
        lines.append,
        chunk_size=200_000,
    )
    assert any("pair-12-24 round 3 (" in line for line in lines)  # 817,190 positions: chunked
    assert {name: _sha(tmp_path / name) for name in reference["files"]} == reference["files"]
    # The distance files are this project's own, at its own level: their tables are compared.
    assert {name: _table_sha(tmp_path / name) for name in reference["distances"]} == reference["distances"]


def _table_sha(path):
    """sha256 of a block file's blocks decompressed, one after another."""
    import zstandard

    data = path.read_bytes()
    offsets = fmt.parse_header(data, len(data), path.name)
    d = zstandard.ZstdDecompressor()
    h = hashlib.sha256()
    for b in range(len(offsets) - 1):
        h.update(d.decompress(data[offsets[b] : offsets[b + 1]]))
    return h.hexdigest()


def test_the_memory_check_refuses_a_pair_that_cannot_fit(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text("local:\n  workers: 1\n  memory-limit: 250MiB\n")
    out = tmp_path / "tb"
    done = run_cli(
        "solve",
        "--min-captured",
        28,
        "--config",
        config,
        "--out",
        out,
        "--chunk-size",
        1 << 20,
        "--dashboard-address",
        "none",
    )
    errors = [l for l in done.stderr.splitlines() if not l.startswith("[")]
    assert done.returncode == 1 and len(errors) == 1, done.stderr
    assert (
        "pair-" in errors[0]
        and "needs about" in errors[0]
        and "give each host's workers more memory" in errors[0]
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["layers"] == {}  # nothing of any pair ran
    assert not list((out / ".bestemshe").glob("pairs/pair-*"))


def test_plan_shows_what_each_pair_needs():
    done = run_cli("plan", "--threads", 32, "--processes", 1)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert "memory per host for 32 running tasks in 1 worker process, chunks of" in lines[1]
    row = next(l for l in lines if "pair-0-2 " in l)
    assert "38,952,142,372" in row and " GiB " in row


def test_row_slots_are_pages_and_start_with_the_largest_kazan():
    v = Variant(50, 5)
    slots = row_slots(v, 0)
    assert list(slots) == sorted(slots, reverse=True) and 0 not in slots
    assert all(
        first % hostmem.PAGE_WORDS == 0 and words % hostmem.PAGE_WORDS == 0 for first, words in slots.values()
    )


def test_a_host_memory_folder_too_small_is_refused_before_the_pair_runs(client, tmp_path, monkeypatch):
    """A container's /dev/shm can be far smaller than its memory (Docker's is 64 MiB):
    arrays larger than the folder's room would crash the workers mid-round."""
    from bestemshe_dist.errors import BestemsheError
    from bestemshe_dist.run import driver as run_module

    monkeypatch.setattr(run_module, "host_memory_room", lambda space: (1 << 20, "/dev/shm/tiny"))
    variant = Variant(50, 5)
    with pytest.raises(
        BestemsheError,
        match=r"pair-10-24 needs .* of shared arrays on each host but "
        r"/dev/shm/tiny on host .* has room for 1 MiB",
    ):
        solve(
            client,
            Job(str(tmp_path), variant, synthetic=1),
            single_pair_plan(variant, 10, 24),
            chunk_size=1 << 18,
        )
    assert json.loads((tmp_path / "manifest.json").read_text())["layers"] == {}


@pytest.mark.parametrize("method", ["frontier", "counting"])
def test_a_flush_that_outlasts_the_drivers_look_at_its_host_is_waited_for(
    client, tmp_path, monkeypatch, method
):
    """The driver looks every HOST_POLL_SECONDS whether a flush's host (or a
    counting round's) still has workers; a task longer than that (the largest
    layers take seconds) is waited for, not taken for a failure."""
    from bestemshe_dist.run import driver as run_module

    monkeypatch.setattr(run_module, "HOST_POLL_SECONDS", 0.0005)
    variant = Variant(50, 5)
    lines = []
    solve(
        client,
        Job(str(tmp_path), variant, method=method, synthetic=2),
        single_pair_plan(variant, 10, 24),
        lines.append,
        chunk_size=1 << 16,
        stop_after_rounds=4,
    )
    assert any(f"round 3 ({method}" in line for line in lines), lines
    assert not any("running it again" in line for line in lines), lines


def test_the_scale_projection_gives_each_level_at_least_its_rounds():
    """However many cores, a level of the plan costs its pairs' tail of rounds."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    measured = [{"positions": 10**8, "positions_per_core_second": {"sweep": 10**7, "frontier": 10**6}}]
    huge = bench.project(Variant(50, 5), measured, 2, 10**6, 10**3, 1 << 24)
    floor = bench.ROUNDS_PER_PAIR * bench.ROUND_FLOOR_SECONDS
    assert huge["cluster"]["levels"] == 25
    assert huge["cluster"]["hours"] * 3600 == pytest.approx(25 * floor, abs=2)
    assert huge["this_machine"]["hours"] == pytest.approx(huge["core_seconds"] / 2 / 3600, abs=0.01)
    small = bench.project(Variant(50, 5), measured, 2, 1, 2, 1 << 24)
    assert small["cluster"]["hours"] >= small["this_machine"]["hours"] - 0.01


def test_a_result_waited_for_a_while_at_a_time_leaves_the_client_whole():
    """The driver polls a flush's result every HOST_POLL_SECONDS. With
    Future.result(timeout=...) a poll that ran out cancelled the client's shared
    gather, and every later gather of the client failed; ResultFetch never cancels
    its fetch. A cancelled future is its error, and the client stays whole."""
    import time
    from concurrent.futures import CancelledError

    from bestemshe_dist.run.driver import ResultFetch

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        timeouts = 0
        for i in range(100):
            fetch = ResultFetch(client, client.submit(lambda x: x + 1, i, pure=False))
            while True:
                try:
                    assert fetch.wait(0.0002) == i + 1
                    break
                except TimeoutError:
                    timeouts += 1
        assert timeouts > 0  # the polls did run out, as a busy flush's do
        assert client.gather([client.submit(lambda x: 2 * x, 21, pure=False)]) == [42]

        future = client.submit(time.sleep, 2, pure=False)
        fetch = ResultFetch(client, future)
        with pytest.raises(TimeoutError):
            fetch.wait(0.05)
        future.cancel()
        with pytest.raises(CancelledError):  # an Exception, as a failed task's error is
            fetch.wait(5)
        assert client.submit(lambda: 7, pure=False).result() == 7
