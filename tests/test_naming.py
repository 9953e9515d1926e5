"""naming.py: every name it builds, it parses back (and nothing else parses as one)."""

from hypothesis import given
from hypothesis import strategies as st

from bestemshe_dist import naming

kazan = st.integers(0, 48).map(lambda k: 2 * (k // 2))
layer = st.tuples(kazan, kazan)
tag = st.text("0123456789abcdef", min_size=8, max_size=8)


@given(layer, st.sampled_from(naming.LAYER_KINDS))
def test_layer_names_and_files_round_trip(l, kind):
    assert naming.parse_layer_name(naming.layer_name(*l)) == l
    assert naming.parse_layer_file(naming.layer_file(*l, kind)) == (*l, kind)
    assert naming.parse_layer_file(naming.sums_file(*l)) is None
    assert naming.parse_layer_file(naming.layer_file(*l, kind) + ".part-00001") is None


@given(layer, st.integers(0, 200), st.integers(0, 10_000), st.sampled_from(["s", "h0123abcd"]))
def test_checkpoint_parts_round_trip(l, round_, chunk, part_tag):
    pair = naming.pair_key(min(l), max(l))
    name = naming.part_name(pair, round_, l, chunk, part_tag)
    assert name.startswith(naming.round_prefix(pair, round_) + "/")
    assert naming.round_prefix(pair, round_).startswith(naming.pair_prefix(pair) + "/")
    assert naming.pair_prefix(pair).startswith(naming.PRIVATE + "/")
    assert naming.parse_part(name) == (l, chunk)
    assert naming.parse_part(naming.round_marker(pair, round_)) is None
    assert naming.parse_pair_dir(pair) == (min(l), max(l))


@given(
    layer,
    st.integers(0, 200),
    st.integers(0, 10_000),
    st.none() | st.integers(0, 99),
    tag,
    st.sampled_from(["win", "draw", "bits", "dtz"]),
)
def test_task_keys_round_trip(l, round_, chunk, piece, run, table):
    a, b = min(l), max(l)
    pair = naming.pair_key(a, b)
    assert naming.parse_pair_key(pair) == (a, b)
    for key in (pair, naming.run_key(pair, run)):
        assert naming.parse_task_key(key) == naming.TaskName((a, b), None)
    chunk_key = naming.run_key(naming.chunk_key(pair, round_, chunk, piece), run)
    assert naming.parse_task_key(chunk_key) == naming.TaskName(
        (a, b), None, round_, str(chunk) if piece is None else f"{chunk}.{piece}"
    )
    publish = naming.run_key(naming.publish_part_key(pair, l, table, chunk), run)
    assert naming.parse_task_key(publish) == naming.TaskName((a, b), l)
    assert naming.parse_task_key(naming.run_key(naming.layer_key(*l), run)) == naming.TaskName(None, l)
    # the keys the dashboard does not follow parse as none of those
    for other in (
        naming.small_round_key(pair, round_),
        naming.flush_key(pair, round_, l, "h0123abcd", 1),
        naming.check_key(*l),
        naming.verify_key(*l, chunk, run),
        naming.verify_files_key(*l, run),
    ):
        assert naming.parse_task_key(naming.run_key(other, run)) is None


def test_names_that_are_no_layer_parse_as_none():
    for text in ("8-12", "8_12_3", "x_1", "", "_1"):
        assert naming.parse_layer_name(text) is None
    for text in ("layer_8_12_win.bin.tmp", "layer_8_12_bits.bin", "xlayer_8_12_win.bin", "layer_8_win.bin"):
        assert naming.parse_layer_file(text) is None
    assert naming.parse_pair_key("pair-1") is None and naming.parse_task_key("verify-1-2-chunk-0-abc") is None


@given(st.integers(1, 99_999).flatmap(lambda n: st.tuples(st.integers(0, n - 1), st.just(n))))
def test_shard_files_round_trip(shard):
    index, count = shard
    name = naming.shard_file(index, count)
    assert naming.parse_shard_file(name) == (index, count)
    import fnmatch

    assert fnmatch.fnmatch(name, naming.SHARD_GLOB)
    assert naming.parse_shard_file(name + ".tmp") is None and naming.parse_shard_file("x" + name) is None


def test_counted_agrees_with_its_number():
    from bestemshe_dist.naming import counted

    assert counted(1, "worker") == "1 worker"
    assert [counted(n, "layer") for n in (0, 2, 12345)] == ["0 layers", "2 layers", "12,345 layers"]
    assert counted(1, "worker process", "worker processes") == "1 worker process"
    assert counted(3, "worker process", "worker processes") == "3 worker processes"
