"""Average two tile models of one lineage in weight space and export the average to ONNX.

Why. A fine-tune of the shipped tile model on flush hands settles more flush seats, and reads
the separated hands of third-party drawings a little worse (models/MODEL_CARD.md, "The CPU
campaign"). Interpolating the weights of a model and its own fine-tune often keeps most of what
each is good at (Wortsman et al., "Robust fine-tuning of zero-shot models", CVPR 2022, WiSE-FT;
"Model soups", ICML 2022). It costs no training: one average and one export, then the usual
comparison (``scripts/compare_models.sh``), which decides whether it ships.

Every floating-point tensor of the state dict (weights, biases, batch-norm statistics) becomes
``(1 - alpha) * A + alpha * B``, computed in float32 and stored in A's dtype; integer tensors
(``num_batches_tracked``) are A's. Both models must have the same architecture (the same keys
and shapes), which holds for any fine-tune of the other.

Usage::

    python scripts/soup_weights.py A.pt B.pt --alpha 0.5 --out runs/soup50 \
        [--config datasets/train_tiles_flush_cpu.yaml]

writes ``OUT/<name>.pt`` (name from the config), ``OUT/<name>.onnx`` (the config's export
settings, :func:`vision.synth.train.reexport`) and ``OUT/<name>.json`` (B's metadata when B has a
``.json`` beside it, with a ``soup`` entry naming A, B and alpha).

Exit code 2 with one line naming the value: a missing file, alpha outside [0, 1], or models whose
keys or shapes differ.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(REPO / ".yolo_config"))


def soup_state(sa: dict, sb: dict, alpha: float) -> dict:
    """The weight-space average of two state dicts.

    Args:
        sa, sb: ``state_dict()`` of two models of one architecture (name -> torch.Tensor).
        alpha: weight of ``sb`` in [0, 1] (0 gives ``sa``, 1 gives ``sb``).

    Returns:
        dict: name -> tensor; floating-point tensors ``(1 - alpha) * a + alpha * b`` in ``a``'s
        dtype, every other tensor ``a``'s.

    Raises:
        ValueError: alpha outside [0, 1], or the keys or a tensor's shape differ.
    """
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha {alpha} is not in [0, 1]")
    if sa.keys() != sb.keys():
        raise ValueError(f"the models' keys differ: {sorted(set(sa) ^ set(sb))[:3]}")
    out = {}
    for k, a in sa.items():
        b = sb[k]
        if a.shape != b.shape:
            raise ValueError(f"{k}: shape {tuple(a.shape)} against {tuple(b.shape)}")
        if a.is_floating_point():
            out[k] = ((1.0 - alpha) * a.float() + alpha * b.float()).to(a.dtype)
        else:
            out[k] = a.clone()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a", help="the first model (.pt), e.g. models/tiles.pt")
    ap.add_argument("b", help="the second model (.pt), a fine-tune of the first")
    ap.add_argument("--alpha", type=float, default=0.5, help="weight of B (default 0.5)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--config", default=str(REPO / "datasets" / "train_tiles_flush_cpu.yaml"),
                    help="training config whose name and export settings are used")
    a = ap.parse_args(argv)
    for p in (a.a, a.b, a.config):
        if not Path(p).is_file():
            print(f"soup_weights: no such file: {p!r}", file=sys.stderr)
            return 2
    import torch

    from vision.synth.train import load_config, reexport

    cfg = load_config(a.config, need_data=False)
    ca = torch.load(a.a, map_location="cpu", weights_only=False)
    cb = torch.load(a.b, map_location="cpu", weights_only=False)
    try:
        state = soup_state(ca["model"].state_dict(), cb["model"].state_dict(), a.alpha)
    except ValueError as e:
        print(f"soup_weights: {e}", file=sys.stderr)
        return 2
    ca["model"].load_state_dict(state)
    for key in ("ema", "optimizer", "updates"):
        ca[key] = None
    ca["soup"] = {"a": str(a.a), "b": str(a.b), "alpha": a.alpha}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = cfg["name"]
    torch.save(ca, out / f"{name}.pt")
    meta_b = Path(a.b).with_suffix(".json")
    meta = json.loads(meta_b.read_text()) if meta_b.is_file() else {"name": name, "task": cfg["task"]}
    meta["soup"] = ca["soup"]
    (out / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")
    reexport(cfg, out)
    print(f"soup_weights: alpha {a.alpha}: {out / (name + '.onnx')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
