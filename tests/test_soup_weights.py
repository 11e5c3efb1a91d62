"""scripts/soup_weights.py: the weight-space average of two tile models of one lineage
(WiSE-FT, Wortsman et al. 2022), checked on small tensors, and the script's exit code for a
missing file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from soup_weights import soup_state  # noqa: E402


def test_the_average_weighs_b_by_alpha_and_keeps_a_dtype_and_counters():
    a = {"w": torch.tensor([0.0, 2.0], dtype=torch.float16), "n": torch.tensor(7)}
    b = {"w": torch.tensor([4.0, 6.0], dtype=torch.float16), "n": torch.tensor(100)}
    assert soup_state(a, b, 0.0)["w"].tolist() == [0.0, 2.0]
    assert soup_state(a, b, 1.0)["w"].tolist() == [4.0, 6.0]
    half = soup_state(a, b, 0.5)
    assert half["w"].tolist() == [2.0, 4.0] and half["w"].dtype == torch.float16
    assert soup_state(a, b, 0.25)["w"].tolist() == [1.0, 3.0]
    assert int(half["n"]) == 7                      # integer tensors are A's


def test_models_that_do_not_match_are_refused():
    a = {"w": torch.zeros(2)}
    with pytest.raises(ValueError, match="keys differ"):
        soup_state(a, {"v": torch.zeros(2)}, 0.5)
    with pytest.raises(ValueError, match="shape"):
        soup_state(a, {"w": torch.zeros(3)}, 0.5)
    with pytest.raises(ValueError, match="alpha"):
        soup_state(a, a, 1.5)


def test_the_script_names_a_missing_file_with_exit_code_2(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "soup_weights.py"),
                        str(tmp_path / "nope.pt"), str(tmp_path / "nope.pt"), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "nope.pt" in r.stderr
