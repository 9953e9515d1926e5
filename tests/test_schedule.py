"""The order of a solve's work: pairs ranked by the longest chain of pairs still
to run from them (the DAG's critical path), and Dask priorities that run a
round's barrier tasks first, then solving work, and publication last."""

import contextlib

from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from bestemshe_dist.cluster.local import local_cluster_kwargs
from bestemshe_dist.game.dag import make_plan
from bestemshe_dist.game.variant import Variant
from bestemshe_dist.naming import SLOTS
from bestemshe_dist.run import driver as run
from bestemshe_dist.run.driver import solve
from bestemshe_dist.run.tasks import Job


def test_a_solves_local_workers_keep_a_thread_beside_their_slots():
    """solve's local cluster: each worker has its threads as SLOTS and one thread
    more; other commands' workers have just their threads."""
    kwargs = local_cluster_kwargs(None, 2, 3, dashboard_address="none", barrier_slot=True)
    assert kwargs["threads_per_worker"] == 4 and kwargs["resources"] == {SLOTS: 3}
    plain = local_cluster_kwargs(None, 2, 3, dashboard_address="none")
    assert plain["threads_per_worker"] == 3 and "resources" not in plain


def test_remaining_paths_follow_the_dag():
    """A pair's remaining path is its cost plus its longest dependent's: never less
    than any dependent's plus its own, equal to one of them, and the pairs that
    nothing reads end the plan with just their own cost."""
    plan = make_plan(Variant(50, 5), 30)
    cost = {p.key: p.positions + 7 for p in plan.pairs}
    paths = plan.remaining_paths(lambda p: cost[p.key])
    dependents = plan.dependents()
    assert set(paths) == {p.key for p in plan.pairs}
    for p in plan.pairs:
        after = [paths[q.key] for q in dependents[p.key]]
        assert all(q.captured < p.captured for q in dependents[p.key])
        assert paths[p.key] == cost[p.key] + max(after, default=0)
    ends = [p for p in plan.pairs if not dependents[p.key]]
    assert ends and all(p.captured == plan.min_captured for p in ends)
    # The longest chain starts at the top of the DAG: the most captured stones.
    top = max(paths, key=paths.get)
    assert plan.pair_by_key(top).captured >= max(p.captured for p in plan.pairs) - 2


class _Priorities(SchedulerPlugin):
    """Each task's user priority as the scheduler first sees it."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.seen = {}
        self.resources = {}

    def transition(self, key, start, finish, *args, **kwargs):
        ts = self.scheduler.tasks.get(key)
        if ts is not None and key not in self.seen and ts.priority is not None:
            self.seen[key] = -ts.priority[0]  # Dask keeps -priority first
            self.resources[key] = dict(ts.resource_restrictions or {})


@contextlib.contextmanager
def _watched_cluster(workers, threads):
    """A solve's local cluster in this process (slots and a barrier thread), its
    scheduler recording each task's priority and resources."""
    with (
        LocalCluster(
            **local_cluster_kwargs(
                None, workers, threads, in_process=True, dashboard_address="none", barrier_slot=True
            )
        ) as cluster,
        Client(cluster) as client,
    ):
        plugin = _Priorities(cluster.scheduler)
        cluster.scheduler.add_plugin(plugin, name="priorities")
        yield client, plugin


def test_tasks_carry_priorities_by_kind_then_by_critical_path(tmp_path):
    """Every task of a solve: a round's barrier tasks above every solving task,
    solving tasks above every publication task; within a kind, a pair with a
    longer chain of pairs after it goes first. On workers with a thread beyond
    their SLOTS (a solve's local cluster), every task but the barriers takes a
    slot. The files are the published ones."""
    from conftest import FIXTURE_M40

    variant = Variant(50, 5)
    plan = make_plan(variant, 40)
    with _watched_cluster(workers=2, threads=1) as (client, plugin):
        job = Job(str(tmp_path), variant, method="frontier")  # flushes, chunk tasks and publication parts
        driver = run.Driver(client, job, plan, print, 20_000)
        solve(client, job, plan, chunk_size=20_000)
    kinds = {"barrier": [], "solve": [], "publish": []}
    for key, priority in plugin.seen.items():
        name = str(key)
        if "/flush-" in name or "/small-" in name:
            kinds["barrier"].append(priority)
        elif "/round-" in name or (name.startswith("pair-") and "/" not in name):
            kinds["solve"].append(priority)
        elif "/publish-" in name or name.startswith("layer-"):
            kinds["publish"].append(priority)
    assert all(kinds.values()), kinds
    for key, resources in plugin.resources.items():
        name = str(key)
        barrier = "/flush-" in name or "/small-" in name
        if not name.startswith("check-"):
            assert resources == ({} if barrier else {SLOTS: 1}), (name, resources)
    assert min(kinds["barrier"]) > max(kinds["solve"]) and min(kinds["solve"]) > max(kinds["publish"])
    # Within solving tasks, each pair's priority is its rank on the critical path.
    by_pair = {}
    for key, priority in plugin.seen.items():
        name = str(key)
        solving = ("/round-" in name or "/" not in name) and "/flush-" not in name and "/small-" not in name
        if name.startswith("pair-") and solving:
            by_pair[name.split("/")[0] if "/" in name else name.rsplit("-", 1)[0]] = priority
    paths = plan.remaining_paths(lambda p: p.positions + run.PAIR_LATENCY_POSITIONS)
    ranked = sorted(by_pair, key=by_pair.get)
    assert [paths[k] for k in ranked] == sorted(paths[k] for k in ranked)
    assert driver.urgency == {k: n for n, k in enumerate(sorted(paths, key=lambda k: (paths[k], k)), 1)}
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_a_counting_round_of_few_sources_is_a_barrier_and_a_large_one_takes_a_slot(tmp_path):
    """A counting round is one task on its pair's host. One whose sources (the last
    round's decisions) are few takes the thread kept beside the slots, so that no
    other pair's large round holds it up; a large one (round 0, or many sources)
    takes a slot. The files are the published ones."""
    import re

    from conftest import FIXTURE_M40

    variant = Variant(50, 5)
    plan = make_plan(variant, 40)
    chunk = 20_000
    lines = []
    with _watched_cluster(workers=1, threads=2) as (client, plugin):
        solve(client, Job(str(tmp_path), variant), plan, log=lines.append, chunk_size=chunk)
    decided = {}
    for line in lines:
        m = re.match(r"(pair-\d+-\d+) round (\d+) \(counting.*\): ([\d,]+) decided", line)
        if m:
            decided[(m.group(1), int(m.group(2)))] = int(m.group(3).replace(",", ""))
    kinds = {"barrier": 0, "slot": 0}
    for key, resources in plugin.resources.items():
        m = re.match(r"(pair-\d+-\d+)/round-(\d+)/chunk-0-", str(key))
        if not m:
            continue
        pair, round_ = m.group(1), int(m.group(2))
        small = round_ > 0 and run.is_small_round(decided[(pair, round_ - 1)], chunk)
        assert resources == ({} if small else {SLOTS: 1}), (str(key), resources)
        kinds["barrier" if small else "slot"] += 1
    assert kinds["barrier"] > 10 and kinds["slot"] > 10, kinds
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_the_driver_asks_the_scheduler_for_its_workers_not_the_clients_cache(client, tmp_path, monkeypatch):
    """Client.scheduler_info() is a cache that the client's periodic refresh
    replaces with one without workers: a driver reading it could find no host
    for a round in the middle of a solve. With that cache always empty, the
    solve still runs on its workers and ends with the published files."""
    from conftest import FIXTURE_M40

    empty = {"workers": {}, "services": {}, "type": "Scheduler", "id": "x"}
    monkeypatch.setattr(type(client), "scheduler_info", lambda self, *a, **k: empty)
    variant = Variant(50, 5)
    lines = []
    solve(client, Job(str(tmp_path), variant), make_plan(variant, 40), lines.append, chunk_size=20_000)
    assert any("round 3 (counting" in line for line in lines), lines
    for path in FIXTURE_M40.glob("*.bin"):
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name
