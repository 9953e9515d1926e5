"""The cluster edge: configs/*.yaml load and build their cluster objects, the
command line wins over a config, bad configs are one sentence (exit 2) that
never repeats a credential."""

import json
import os
import sys

import pytest
from conftest import ROOT, run_cli

from bestemshe_dist import cluster
from bestemshe_dist.errors import UsageError

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def test_there_is_a_config_per_backend():
    names = {p.stem for p in CONFIGS}
    assert {"local", "slurm", "kubernetes", "scheduler"} <= names
    for path in CONFIGS:
        text = path.read_text()
        assert text.startswith("#") and "storage:" in text, path  # commented, with storage


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_loads_and_builds_its_cluster(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # SLURMCluster makes its log-directory at once
    config = cluster.load_config(path)
    backend, address = cluster.choose_backend(None, None, config)
    url, options = cluster.storage_from_config(config)
    assert url
    if backend == "local":
        from distributed import LocalCluster

        kwargs = cluster.local_cluster_kwargs(config, in_process=True)
        assert kwargs["n_workers"] == 2 and kwargs["memory_limit"] == "4GiB"
        assert kwargs["dashboard_address"] == "127.0.0.1:8787"
        kwargs = cluster.local_cluster_kwargs(config, in_process=True, dashboard_address="none")
        with LocalCluster(**dict(kwargs, n_workers=1)) as made:
            assert len(made.workers) == 1
    elif backend == "slurm":
        made, scaling, wait = cluster.slurm_cluster(config, dashboard_address=None)
        with made:
            script = made.job_script()
        assert (tmp_path / "slurm-logs").is_dir()
        assert scaling == ("jobs", 4) and wait == 1800
        for line in (
            "#SBATCH -p compute",
            "#SBATCH -A my-project",
            "#SBATCH --exclusive",
            "#SBATCH --cpus-per-task=8",
            "#SBATCH -t 24:00:00",
            "export OMP_NUM_THREADS=1",
            "--lifetime 23h --lifetime-stagger 20m",
            f"{sys.executable} -m distributed.cli.dask_worker",
        ):
            assert line in script, (line, script)
        assert options == {"client_kwargs": {"endpoint_url": "https://s3.example.org"}}
    elif backend == "kubernetes":
        spec, kwargs, scaling, wait = cluster.kubernetes_settings(config)
        assert spec["kind"] == "DaskCluster" and spec["metadata"]["name"] == "bestemshe"
        assert scaling == ("workers", 4) and wait == 900  # (the spec validates in test_deploy)
    else:
        assert backend == "scheduler" and address == "tcp://127.0.0.1:8786"
        assert url == "s3://tablebase/demo" and options["client_kwargs"]["endpoint_url"]


def _config(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_command_line_wins(tmp_path):
    config = cluster.load_config(
        _config(
            tmp_path,
            """
cluster: slurm
local: {workers: 3, threads-per-worker: 2, dashboard-address: "127.0.0.1:9999"}
slurm: {cores: 2, memory: 3GB, adapt: {minimum: 1, maximum: 5}}
""",
        )
    )
    assert cluster.choose_backend(None, None, config) == ("slurm", None)
    assert cluster.choose_backend("local", None, config) == ("local", None)
    assert cluster.choose_backend(None, "tcp://h:1", config) == ("scheduler", "tcp://h:1")
    kwargs = cluster.local_cluster_kwargs(config)
    assert (kwargs["n_workers"], kwargs["threads_per_worker"], kwargs["dashboard_address"]) == (
        3,
        2,
        "127.0.0.1:9999",
    )
    kwargs = cluster.local_cluster_kwargs(config, workers=1, threads_per_worker=1, dashboard_address="none")
    assert (kwargs["n_workers"], kwargs["threads_per_worker"], kwargs["dashboard_address"]) == (1, 1, None)
    # No config: one process with a thread per core (private host memory); --workers W
    # alone gives W single-threaded processes.
    kwargs = cluster.local_cluster_kwargs(None, dashboard_address="none")
    assert (kwargs["n_workers"], kwargs["threads_per_worker"]) == (1, os.cpu_count())
    kwargs = cluster.local_cluster_kwargs(None, workers=3, dashboard_address="none")
    assert (kwargs["n_workers"], kwargs["threads_per_worker"]) == (3, 1)
    kwargs, scaling, _ = cluster.slurm_settings(config)
    assert scaling == ("adapt", {"minimum": 1, "maximum": 5}) and kwargs["cores"] == 2
    assert kwargs["python"] == sys.executable
    assert cluster.slurm_settings(config, workers=2)[1] == ("jobs", 2)


def test_storage_section_and_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "key-value-1")
    monkeypatch.setenv("MY_SECRET", "secret-value-2")
    config = cluster.load_config(
        _config(
            tmp_path,
            """
storage:
  url: s3://bucket/prefix
  endpoint: http://127.0.0.1:9000
  key-env: MY_KEY
  secret-env: MY_SECRET
  options: {client_kwargs: {region_name: eu-1}, use_ssl: false}
""",
        )
    )
    url, options = cluster.storage_from_config(config)
    assert url == "s3://bucket/prefix"
    assert options == {
        "client_kwargs": {"region_name": "eu-1", "endpoint_url": "http://127.0.0.1:9000"},
        "use_ssl": False,
        "key": "key-value-1",
        "secret": "secret-value-2",
    }
    merged = cluster.merge_options(options, {"client_kwargs": {"endpoint_url": "http://other:1"}})
    assert merged["client_kwargs"] == {"region_name": "eu-1", "endpoint_url": "http://other:1"}
    assert options["client_kwargs"]["endpoint_url"] == "http://127.0.0.1:9000"  # not modified


@pytest.mark.parametrize(
    "text, words",
    [
        ("clusters: local\n", "unknown section 'clusters'"),
        ("cluster: lsf\n", "cluster in the config"),
        ("slurm: {cores: 1, memroy: 2GB}\n", "unknown key 'memroy'"),
        ("slurm: [1, 2]\n", "must be a mapping"),
        ("local: {workers: 2\n", "not valid YAML"),
        ("- a\n- b\n", "must be a YAML mapping"),
        (
            "storage: {url: s3://b/p, options: {secret: hunter2-do-not-print}}\n",
            "holds a credential (secret)",
        ),
        (
            "storage: {url: s3://b/p, key-env: BESTEMSHE_NO_SUCH_VARIABLE}\n",
            "BESTEMSHE_NO_SUCH_VARIABLE named by storage.key-env",
        ),
        (
            "kubernetes: {image: x, env: {AWS_SECRET_ACCESS_KEY: hunter2-do-not-print}}\ncluster: kubernetes\n",
            "put it in a Secret",
        ),
        ("slurm: {scale: {jobs: 2}, adapt: {maximum: 3}}\ncluster: slurm\n", "both scale and adapt"),
        ("slurm: {scale: {jobs: 0}}\ncluster: slurm\n", "at least 1"),
    ],
)
def test_bad_config_is_one_sentence_exit_2(tmp_path, capsys, text, words):
    from bestemshe_dist.cli import main

    path = _config(tmp_path, text)
    code = main(
        [
            "solve",
            "--stones",
            "6",
            "--pits",
            "1",
            "--out",
            str(tmp_path / "out"),
            "--config",
            str(path),
            "--quiet",
        ]
    )
    captured = capsys.readouterr()
    assert code == 2, captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], captured.err
    assert "hunter2" not in captured.err + captured.out
    assert not (tmp_path / "out").exists()


def test_bad_config_from_the_command_line(tmp_path):
    """The same through the installed command: one line, no traceback, no secret."""
    path = _config(
        tmp_path, "storage: {url: s3://b/p, options: {client_kwargs: {aws_secret_access_key: hunter2}}}\n"
    )
    done = run_cli("solve", "--stones", 6, "--pits", 1, "--config", path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "holds a credential (client_kwargs.aws_secret_access_key)" in done.stderr
    assert "hunter2" not in done.stderr and "Traceback" not in done.stderr


def test_missing_config_and_missing_out(tmp_path, capsys):
    from bestemshe_dist.cli import main

    assert main(["solve", "--stones", "6", "--pits", "1", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read the config" in capsys.readouterr().err
    assert main(["solve", "--stones", "6", "--pits", "1"]) == 2
    assert "give --out URL (or a storage url in the --config file)" in capsys.readouterr().err
    assert main(["verify", "--config", str(_config(tmp_path, "local: {workers: 1}\n"))]) == 2
    assert "give the tablebase URL" in capsys.readouterr().err


def test_solve_and_verify_from_a_config(tmp_path, capsys):
    """The storage url of the config is the output (memory://: workers in this
    process); verify reads the same."""
    import fsspec

    from bestemshe_dist.cli import main

    config = _config(
        tmp_path,
        """
cluster: local
local: {workers: 1, dashboard-address: none}
storage: {url: "memory://from-config/tb"}
""",
    )
    assert main(["solve", "--stones", "8", "--pits", "2", "--config", str(config)]) == 0
    err = capsys.readouterr().err
    assert "] local cluster\n" in err, err  # no dashboard
    manifest = json.loads(fsspec.filesystem("memory").cat_file("/from-config/tb/manifest.json"))
    assert manifest["variant"] == {"pits": 2, "stones": 8} and len(manifest["layers"]) == 9
    assert main(["verify", "--config", str(config), "--quiet"]) == 0


def test_out_and_storage_options_win_over_the_config(tmp_path):
    from bestemshe_dist.cli import build_parser
    from bestemshe_dist.cli.args import config_and_output

    config = _config(
        tmp_path, "storage: {url: s3://b/from-config, endpoint: 'http://e:1', options: {use_ssl: false}}\n"
    )
    args = build_parser().parse_args(["solve", "--config", str(config)])
    assert config_and_output(args, args.out)[1:] == (
        "s3://b/from-config",
        {"use_ssl": False, "client_kwargs": {"endpoint_url": "http://e:1"}},
    )
    args = build_parser().parse_args(
        [
            "solve",
            "--config",
            str(config),
            "--out",
            "s3://b/cli",
            "--storage-options",
            '{"client_kwargs": {"endpoint_url": "http://f:2"}}',
        ]
    )
    assert config_and_output(args, args.out)[1:] == (
        "s3://b/cli",
        {"use_ssl": False, "client_kwargs": {"endpoint_url": "http://f:2"}},
    )


def test_option_conflicts_are_usage_errors():
    with pytest.raises(UsageError, match="either --scheduler or --cluster"):
        cluster.choose_backend("slurm", "tcp://h:1", None)
    with pytest.raises(UsageError, match="memory:// store"):
        with cluster.connect(in_process=True, cluster="slurm"):
            pass
    with pytest.raises(UsageError, match="--cluster must be one of"):
        cluster.choose_backend("lsf", None, None)


def test_connect_dashboard_address():
    import urllib.request

    lines = []
    for address in (None, "none"):
        with cluster.connect(
            workers=1, in_process=True, dashboard_address=address, log=lines.append
        ) as client:
            port = client.scheduler_info()["services"]["dashboard"]  # only /health, on loopback
            with pytest.raises(urllib.error.HTTPError):
                urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10)
        assert lines.pop() == "local cluster"
    with cluster.connect(
        workers=1, in_process=True, dashboard_address="127.0.0.1:0", log=lines.append
    ) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10).status == 200
    assert lines == [f"local cluster, dashboard http://127.0.0.1:{port}/status"]


def test_kubernetes_existing_cluster_keeps_its_size():
    spec, kwargs, scaling, _ = cluster.kubernetes_settings(
        {"kubernetes": {"existing": "dc", "namespace": "ns"}}
    )
    assert spec is None and kwargs == {"namespace": "ns", "name": "dc"} and scaling == ("keep", 1)
    assert cluster.kubernetes_settings({"kubernetes": {"existing": "dc"}}, workers=3)[2] == ("workers", 3)


def test_slurm_without_sbatch_is_one_sentence(tmp_path, monkeypatch):
    from bestemshe_dist.errors import BestemsheError

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BestemsheError, match="sbatch is not on the PATH"):
        with cluster.connect(cluster="slurm"):
            pass


def test_kubernetes_without_a_cluster_is_one_sentence(tmp_path):
    """No kubeconfig: one sentence, exit 1, and no traceback from dask-kubernetes'
    exit hook."""
    import os

    env = dict(os.environ, KUBECONFIG=str(tmp_path / "none"), HOME=str(tmp_path))
    env.pop("KUBERNETES_SERVICE_HOST", None)
    done = run_cli(
        "solve",
        "--stones",
        6,
        "--pits",
        1,
        "--out",
        tmp_path / "out",
        "--quiet",
        "--config",
        ROOT / "configs" / "kubernetes.yaml",
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(
        "bestemshe-dist solve: cannot start the Kubernetes Dask cluster bestemshe in namespace default:"
    )
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr


def test_dashboard_port_taken_moves_quietly():
    import socket
    import warnings

    lines = []
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with cluster.connect(
                workers=1, in_process=True, dashboard_address=f"127.0.0.1:{taken}", log=lines.append
            ) as client:
                port = client.scheduler_info()["services"]["dashboard"]
    assert port != taken and lines == [f"local cluster, dashboard http://127.0.0.1:{port}/status"]
    assert not [w for w in caught if "already in use" in str(w.message)]
