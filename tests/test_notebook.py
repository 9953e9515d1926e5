"""notebooks/: each notebook runs from top to bottom without an error."""

import pytest
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# what each notebook's printed output must say (its figures are checked too)
EXPECT = {
    "solve-small-variant.ipynb": ["36 layers", "best: pit"],
    "learn-from-the-oracle.ipynb": [
        "28 layers solved",
        "train 200,000 rows",
        "held-out value accuracy",
        "match: model",
        "match: random",
    ],
}


def test_there_are_the_notebooks():
    assert [p.name for p in NOTEBOOKS] == sorted(EXPECT)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()  # raises on a failing cell
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the figures were drawn
    text = "".join(o.get("text", "") for o in outputs)
    assert all(needle in text for needle in EXPECT[path.name]), text[-2000:]
    if path.name == "learn-from-the-oracle.ipynb":
        # the model beats always guessing the commonest value, and random play
        line = next(l for l in text.splitlines() if l.startswith("held-out value accuracy"))
        accuracy, majority = (float(w.rstrip(")")) for w in (line.split()[3], line.split()[-1]))
        assert accuracy > majority + 0.1
        kept = {
            l.split()[1]: float(l.split()[6].rstrip("%")) for l in text.splitlines() if l.startswith("match:")
        }
        assert kept["model"] > kept["random"]
