"""`bestemshe-dist results DIR --out FOLDER` on a small game solved whole here:
the manifest and SHA256SUMS match the files, every fact matches what the
project's own commands say of DIR, the card names a command for each, and
`stats` answers from the manifest afterwards."""

import hashlib
import json
import shutil

import pytest
from conftest import run_cli

from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.position import Position
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.oracle.tablebase import FLIP, Tablebase
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job
from bestemshe_dist.verify.driver import verify

VARIANT = Variant(12, 3)


@pytest.fixture(scope="module")
def solved(client, tmp_path_factory):
    """The whole 12-stone, 3-pit game with distances, verified, and its results folder."""
    folder = tmp_path_factory.mktemp("game")
    solve(client, Job(str(folder), VARIANT, dtz=True), make_plan(VARIANT))
    report = verify(client, str(folder), chunk_size=5000)
    assert report["passed"] and report["proof"]
    before = Tablebase.open(str(folder)).stats()  # read from the blocks
    out = tmp_path_factory.mktemp("results") / "bestemshe-12"
    done = run_cli("results", folder, "--out", out, "--name", "DIR")
    assert done.returncode == 0, done.stderr
    return folder, out, before, done.stdout


def test_the_manifest_and_sha256sums_are_the_files(solved):
    folder, out, _, _ = solved
    assert (out / "manifest.json").read_bytes() == (folder / "manifest.json").read_bytes()
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["layers"]) == len(VARIANT.layers)
    lines = (out / "SHA256SUMS").read_text().splitlines()
    named = dict(reversed(line.split("  ", 1)) for line in lines)
    on_disk = sorted(p.name for p in folder.glob("layer_*"))
    assert sorted(named) == on_disk  # win, draw, dtz and checksum file of every layer
    assert len(on_disk) == 4 * len(VARIANT.layers)
    for name, digest in named.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


def test_the_facts_are_what_the_commands_say(solved):
    folder, out, before, stdout = solved
    facts = json.loads((out / "facts.json").read_text())
    tb = Tablebase.open(str(folder))
    start = Position.start(VARIANT)
    probe = tb.probe(start)
    assert facts["start"]["position"] == str(start)
    assert (facts["start"]["value"], facts["start"]["dtz"]) == (probe.value, probe.dtz)
    assert f"the start {start} is a {probe.value}" in stdout
    moves = tb.moves(start)
    assert [m["pit"] for m in facts["start"]["moves"]] == [m.pit + 1 for m in moves]
    for fact, move in zip(facts["start"]["moves"], moves):
        assert fact["value"] == FLIP[move.value]
        assert fact["value"] == tb.probe(move.child).value  # the second player's value, probed
    # counts and distances: the stats command's, over every position
    total = before["total"]
    assert facts["counts"]["positions"] == sum(VARIANT.layer_size(*l) for l in VARIANT.layers)
    assert [facts["counts"][v] for v in ("win", "draw", "loss")] == [
        total[v] for v in ("win", "draw", "loss")
    ]
    assert facts["longest_win"]["plies"] == total["longest"]["win"]["distance"]
    assert tb.probe(facts["longest_win"]["position"]).dtz == facts["longest_win"]["plies"]
    per_total = facts["distances"]["per_total"]
    assert (
        max(t["longest_win"]["plies"] for t in per_total.values() if t["longest_win"])
        == (facts["longest_win"]["plies"])
    )
    for t in per_total.values():
        if t["longest_win"]:
            p = Position.parse(t["longest_win"]["position"], VARIANT)
            assert tb.probe(p) == tb.probe(p) and tb.probe(p).value == "win"
            assert tb.probe(p).dtz == t["longest_win"]["plies"]
    wins = sum(facts["distances"]["histogram"]["win"])
    assert wins == total["win"]
    # the perfect game: the mainline command's, with kazans after each ply
    line = json.loads(run_cli("mainline", folder, *str(start).split(), "--json", "--max-plies", 2000).stdout)
    assert [m["pit"] for m in facts["mainline"]["moves"]] == [m["pit"] for m in line["moves"]]
    assert facts["mainline"]["result"] == line["result"]
    kazans = [0, 0]
    for m in facts["mainline"]["moves"]:
        kazans[(m["ply"] - 1) % 2] += m["captured"]
        assert m["kazans"] == kazans, m
    # the proof and the solve's own figures
    assert facts["verify"] == facts["verify"] | {"ran": True, "passed": True, "with_distances": True}
    assert facts["verify"]["positions_checked"] == facts["counts"]["positions"]
    assert facts["verify"]["proof"] and facts["verify"]["whole"]
    assert len(facts["runs"]) == 1 and facts["runs"][0]["how"] == "finished"
    assert facts["solve"]["runs"] == 1 and facts["solve"]["core_seconds"] > 0
    assert facts["solve"]["positions_per_core_second"] > 0
    assert sum(p["positions"] for p in facts["solve"]["pairs"].values()) == facts["counts"]["positions"]


def test_the_card_holds_every_fact_with_its_command(solved):
    _, out, _, _ = solved
    card = (out / "README.md").read_text()
    facts = json.loads((out / "facts.json").read_text())
    for heading in (
        "## The starting position",
        "## Wins, draws and losses",
        "## The longest wins",
        "## Distances",
        "## A perfect game",
        "## The proof",
        "## The solve",
    ):
        assert heading in card
    section = card.split("\n## ")
    assert all("Recompute: `bestemshe-dist " in s for s in section[1:-1]), "a section without its command"
    assert facts["start"]["position"] in card and f"{facts['counts']['win']:,} wins" in card
    assert f"| {len(facts['mainline']['moves'])} | " in card  # every ply has its row
    assert "a proof given the rules" in card and "passed" in card
    for layer in facts["counts"]["per_layer"]:
        assert f"| {layer} | " in card
    for picture in ("win-share.png", "distances.png", "pair-seconds.png"):
        data = (out / picture).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
        assert f"({picture})" in card


def test_stats_answers_from_the_manifest_afterwards(solved):
    folder, _, before, _ = solved
    tb = Tablebase.open(str(folder))
    after = tb.stats()
    assert tb.reads()["requests"] == 0  # no block read: the manifest held every layer's statistics
    assert after["total"] == before["total"]
    assert after["layers"] == before["layers"]
    done = run_cli("stats", folder, "--json")
    assert json.loads(done.stdout)["total"] == before["total"]


def test_results_of_a_part_of_the_game_is_one_sentence(client, tmp_path):
    folder = tmp_path / "part"
    solve(client, Job(str(folder), VARIANT, dtz=True), make_plan(VARIANT, 8))
    done = run_cli("results", folder, "--out", tmp_path / "out")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "results describe a whole game; solve it first" in line and "is missing" in line
    shutil.rmtree(folder)
