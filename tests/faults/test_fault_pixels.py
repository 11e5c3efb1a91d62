"""Fault: a small file with a huge picture (issue 23, item 9). A 118 KB PNG of 10000 x 10000
took 5.5 GB: the 100 MP cap allowed it. The pixel budget (:data:`vision.io.images.
MAX_IMAGE_PIXELS`, 36 MP: 8K UHD fits) refuses it from its header, before any pixel is
decoded: exit 2, one line, and the process stays small."""

from __future__ import annotations


import pytest

from scoring.errors import InputError
from vision.io.images import MAX_IMAGE_PIXELS, check_image_size, read_image
from helpers.pictures import ROOT, black_png, run_with_peak_rss



@pytest.mark.faults
def test_a_10000_square_png_is_refused_and_costs_no_memory(tmp_path):
    png = black_png(tmp_path / "big.png", 10000)
    assert png.stat().st_size < 200_000
    assert 10000 * 10000 > MAX_IMAGE_PIXELS >= 7680 * 4320  # 8K UHD fits the budget
    with pytest.raises(InputError, match="too large"):
        read_image(png)
    check_image_size(7680, 4320, "an 8K frame")  # no error
    p, rss_mb = run_with_peak_rss(png, ROOT, timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "too large (10000 x 10000" in lines[0] and str(png) in lines[0]
    assert rss_mb < 1024, rss_mb  # the decoded picture alone would be 300 MB, reading it GBs
