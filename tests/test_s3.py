"""Straight to a real S3 server (SeaweedFS on loopback) through s3fs."""

import json

import pytest
import s3fs
from conftest import S3_BUCKET, S3_KEY, S3_SECRET, run_cli


def _fs(endpoint, secret=S3_SECRET):
    return s3fs.S3FileSystem(
        key=S3_KEY, secret=secret, skip_instance_cache=True, client_kwargs={"endpoint_url": endpoint}
    )


def test_solve_to_s3_equals_local_solve(seaweed, tmp_path):
    endpoint, env = seaweed
    local = tmp_path / "local"
    args = ["solve", "--stones", 10, "--pits", 3, "--workers", 2, "--chunk-size", 500]
    assert run_cli(*args, "--out", local).returncode == 0
    done = run_cli(*args, "--out", f"s3://{S3_BUCKET}/runs/t1", env=env)
    assert done.returncode == 0, done.stderr
    assert S3_SECRET not in done.stderr and S3_SECRET not in done.stdout
    fs = _fs(endpoint)
    names = sorted(p.name for p in local.glob("layer_*.bin"))
    assert sorted(p.rsplit("/", 1)[1] for p in fs.glob(f"{S3_BUCKET}/runs/t1/layer_*.bin")) == names
    for name in names:
        assert fs.cat_file(f"{S3_BUCKET}/runs/t1/{name}") == (local / name).read_bytes(), name
    manifest = json.loads(fs.cat_file(f"{S3_BUCKET}/runs/t1/manifest.json"))
    assert manifest == json.loads((local / "manifest.json").read_text()) | {"layers": manifest["layers"]}
    assert S3_SECRET not in json.dumps(manifest)
    # Run again: everything is published, so nothing is solved.
    again = run_cli(*args, "--out", f"s3://{S3_BUCKET}/runs/t1", env=env)
    assert again.returncode == 0 and "done: 0 layers solved, 9 skipped" in again.stderr


def _one_line_failure(done):
    assert done.returncode == 1, done.stderr
    lines = [l for l in done.stderr.strip().splitlines() if not l.startswith("[")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert S3_SECRET not in done.stderr
    return lines[0]


def test_wrong_credentials_one_sentence(seaweed):
    endpoint, env = seaweed
    bad = dict(env, AWS_SECRET_ACCESS_KEY="not-the-secret")
    line = _one_line_failure(
        run_cli(
            "solve",
            "--stones",
            6,
            "--pits",
            1,
            "--workers",
            1,
            "--out",
            f"s3://{S3_BUCKET}/runs/bad-creds",
            env=bad,
        )
    )
    assert "access denied" in line and "check the credentials" in line
    assert not _fs(endpoint).exists(f"{S3_BUCKET}/runs/bad-creds/manifest.json")


def test_missing_bucket_one_sentence(seaweed):
    _, env = seaweed
    line = _one_line_failure(
        run_cli(
            "solve", "--stones", 6, "--pits", 1, "--workers", 1, "--out", "s3://no-such-bucket/x", env=env
        )
    )
    assert "s3://no-such-bucket/x" in line and "bucket does not exist" in line


def test_unreachable_endpoint_one_sentence(seaweed):
    _, env = seaweed
    line = _one_line_failure(
        run_cli(
            "solve",
            "--stones",
            6,
            "--pits",
            1,
            "--workers",
            1,
            "--out",
            f"s3://{S3_BUCKET}/x",
            "--storage-options",
            json.dumps({"client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}),
            env=env,
        )
    )
    assert "Could not connect to the endpoint URL" in line
    assert "did not answer for" not in line, line  # a store never reached is not waited for


def test_sample_shards_to_s3_equal_a_local_sample(seaweed, tb123, tmp_path):
    """`sample --out s3://...`: the same shards, byte for byte, as into a folder;
    the card names no credential; the shards read back with pyarrow through s3fs."""
    import io

    import pyarrow.parquet as pq

    endpoint, env = seaweed
    folder, _ = tb123
    args = ["sample", folder, "--positions", 9_000, "--shard-positions", 4_000, "--seed", 4, "--workers", 1]
    local = run_cli(*args, "--out", tmp_path / "local")
    remote = run_cli(*args, "--out", f"s3://{S3_BUCKET}/samples/s1", env=env)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    fs = _fs(endpoint)
    names = sorted(p.name for p in (tmp_path / "local").glob("train-*.parquet"))
    assert len(names) == 3
    assert sorted(p.rsplit("/", 1)[1] for p in fs.glob(f"{S3_BUCKET}/samples/s1/train-*")) == names
    for name in names:
        assert fs.cat_file(f"{S3_BUCKET}/samples/s1/{name}") == (tmp_path / "local" / name).read_bytes()
    card = fs.cat_file(f"{S3_BUCKET}/samples/s1/dataset.json").decode()
    assert S3_SECRET not in card and S3_SECRET not in remote.stdout + remote.stderr
    assert json.loads(card)["counts"]["rows"] == 9_000
    table = pq.read_table(io.BytesIO(fs.cat_file(f"{S3_BUCKET}/samples/s1/{names[-1]}")))
    assert table.num_rows == 1_000 and "keeps_mask" in table.column_names


def test_a_refused_publication_says_what_a_refused_write_says(monkeypatch):
    """On an object store, publishing a layer file is a copy, and it takes room as
    a write does: SeaweedFS with no writable volume left answers both with
    InternalError. Tried for the tool's patience, a refused publication ends with
    the sentence of a refused write: the file, its bytes, free space or add volumes."""
    import errno

    from bestemshe_dist.data.store import Store, StoreError

    store = Store("memory://refused-publication", patient=True, patience=1.0)
    store.write_bytes("staged/layer_20_24_win.bin", b"x" * 4096)

    def refused(src, dst):
        raise OSError(errno.EREMOTEIO, "We encountered an internal error, please try again.")

    monkeypatch.setattr(store.fs, "mv", refused)
    for size in (None, 4096):  # asked of the store, or given by the caller
        with pytest.raises(StoreError) as refusal:
            store.move("staged/layer_20_24_win.bin", "layer_20_24_win.bin", size)
        said = str(refusal.value)
        assert said.startswith("cannot publish memory://refused-publication/layer_20_24_win.bin: "), said
        assert "(4,096 bytes to write)" in said and "add volumes" in said, said
        assert "run the same command again" in said, said
