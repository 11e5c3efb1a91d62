"""``paigow label-server``, the Label Studio ML backend (vision/labelling/ml_backend.py,
docs/labelling.md).

The fast tests drive the FastAPI app with a stand-in reader (no models). The slow one starts a
real Label Studio (from ``.venv-labelstudio``, which scripts/setup.sh installs; skipped only when
that venv is absent, failed instead under ``PAIGOW_REQUIRE_LABEL_STUDIO=1``, which .ci/run
sets) and a real ``paigow label-server`` with the shipped models, connects them through Label
Studio's REST API, imports three pictures of ../shared/scenes and checks the predictions Label
Studio stored against the scenes' truth, then creates and updates an annotation through Label
Studio and finds it in the backend's store.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoring.errors import InputError

from vision.exports.labelstudio import label_config
from vision.labelling.ml_backend import (BackendConfig, ImageFetcher, create_app,
                                         parse_label_config)

from helpers.children import free_port, wait_for

REPO = Path(__file__).resolve().parents[1]
SCENES = REPO.parent / "shared" / "scenes"
LS_VENV = REPO / ".venv-labelstudio"
LS_TEMPLATE = LS_VENV / "data-template"  # a migrated data folder (scripts/setup.sh)
VERSION = "tiles-test+pips-test"


def _png(path: Path, w: int = 200, h: int = 100) -> Path:
    import cv2
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((h, w, 3), 90, np.uint8))
    return path


class FakeReader:
    """identify() stand-in: every picture holds a read 6-6, an unread face-up tile and a
    face-down tile; records the paths it was given."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, paths):
        self.calls.append(list(paths))
        return [{"image": p, "width": 200, "height": 100, "tiles": [
            {"face": "6-6", "state": "face_up", "confidence": 0.9,
             "polygon": [[20, 10], [60, 10], [60, 90], [20, 90]]},
            {"face": None, "state": "unknown", "confidence": 0.4,
             "polygon": [[80, 10], [120, 10], [120, 90], [80, 90]]},
            {"face": None, "state": "face_down", "confidence": 0.8,
             "polygon": [[140, 10], [180, 10], [180, 90], [140, 90]]}]} for p in paths]


def _client(tmp_path, reader=None, **kw):
    from fastapi.testclient import TestClient

    cfg = BackendConfig(store=tmp_path / "store", document_root=str(tmp_path / "docs"), **kw)
    return TestClient(create_app(cfg, read=reader or FakeReader(), model_version=VERSION))


def test_predict_returns_every_tile_with_its_class_score_and_version(tmp_path):
    _png(tmp_path / "docs" / "a" / "one.png")
    _png(tmp_path / "docs" / "two.png")
    reader = FakeReader()
    c = _client(tmp_path, reader)
    config = ('<View><Image name="img" value="$picture"/>'
              '<PolygonLabels name="tiles" toName="img"><Label value="6-6"/></PolygonLabels></View>')
    r = c.post("/predict", json={"tasks": [
        {"id": 7, "data": {"picture": "/data/local-files/?d=a/one.png"}},
        {"id": 8, "data": {"picture": "/data/local-files/?d=two.png"}}],
        "project": "3.1700000000", "label_config": config, "params": {}})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 2
    # the local files were read where they lie, not copied
    assert reader.calls == [[str(tmp_path / "docs" / "a" / "one.png"),
                             str(tmp_path / "docs" / "two.png")]]
    for p in results:
        assert p["model_version"] == VERSION
        assert p["score"] == pytest.approx((0.9 + 0.4 + 0.8) / 3, abs=1e-6)
        labels = [(i["value"]["polygonlabels"], i["score"]) for i in p["result"]]
        assert labels == [(["6-6"], 0.9), (["unknown"], 0.4), (["tile_back"], 0.8)]
        first = p["result"][0]
        assert (first["from_name"], first["to_name"], first["type"]) == ("tiles", "img",
                                                                          "polygonlabels")
        assert first["value"]["points"] == [[10.0, 10.0], [30.0, 10.0], [30.0, 90.0],
                                            [10.0, 90.0]]  # percent of 200 x 100
        assert (first["original_width"], first["original_height"]) == (200, 100)


def test_rectangle_labels_give_rotated_rectangles(tmp_path):
    _png(tmp_path / "docs" / "one.png")
    c = _client(tmp_path)
    r = c.post("/predict", json={"tasks": [{"id": 1, "data": {"image": "/data/local-files/?d=one.png"}}],
                                 "label_config": label_config("rectangle")})
    item = r.json()["results"][0]["result"][0]
    assert item["type"] == "rectanglelabels" and item["value"]["rectanglelabels"] == ["6-6"]
    v = item["value"]
    assert (v["x"], v["y"], v["width"], v["height"]) == pytest.approx((10, 10, 20, 80))
    assert v["rotation"] == pytest.approx(0.0, abs=1e-6) or v["rotation"] == pytest.approx(360)


def test_health_setup_and_versions(tmp_path):
    c = _client(tmp_path)
    assert c.get("/health").json() == {"status": "UP", "model_class": "PaigowTiles",
                                       "model_version": VERSION}
    r = c.post("/setup", json={"project": "4.17000", "schema": label_config(),
                               "hostname": "http://x", "access_token": "k"})
    assert r.json() == {"model_version": VERSION}
    assert c.get("/versions").json() == {"versions": [VERSION]}
    r = c.post("/setup", json={"project": "4.17000", "schema": "<View><Image name='i'/></View>"})
    assert r.status_code == 400 and "PolygonLabels" in r.json()["error"]


def test_images_outside_the_document_root_or_without_an_address_are_refused(tmp_path):
    (tmp_path / "secret.png").write_bytes(b"x")
    (tmp_path / "docs").mkdir()
    reader = FakeReader()
    c = _client(tmp_path, reader)
    r = c.post("/predict", json={"tasks": [{"id": 1, "data": {"image": "/data/local-files/?d=../secret.png"}}]})
    assert r.status_code == 502 and "outside the local-files document root" in r.json()["error"]
    r = c.post("/predict", json={"tasks": [{"id": 1, "data": {"image": "/data/upload/1/x.png"}}]})
    assert r.status_code == 502 and "/data/upload/1/x.png" in r.json()["error"]
    r = c.post("/predict", json={"tasks": [{"id": 1, "data": {}}]})
    assert r.status_code == 400 and "data.image" in r.json()["error"]
    assert reader.calls == []


def test_basic_auth_guards_every_route(tmp_path):
    c = _client(tmp_path, basic_auth=("ls", "s3cret"))
    assert c.get("/health").status_code == 401
    bad = base64.b64encode(b"ls:wrong").decode()
    assert c.get("/health", headers={"Authorization": f"Basic {bad}"}).status_code == 401
    assert c.post("/webhook", json={"action": "ANNOTATION_CREATED"}).status_code == 401
    good = base64.b64encode(b"ls:s3cret").decode()
    assert c.get("/health", headers={"Authorization": f"Basic {good}"}).status_code == 200


def _payload(action, ann_id=11, label="6-6", task_id=5, image="/data/local-files/?d=one.png"):
    return {"action": action, "project": {"id": 2, "label_config": label_config()},
            "task": {"id": task_id, "data": {"image": image}},
            "annotation": {"id": ann_id, "result": [{
                "id": "t0", "from_name": "label", "to_name": "image", "type": "polygonlabels",
                "original_width": 200, "original_height": 100,
                "value": {"points": [[10, 10], [30, 10], [30, 90], [10, 90]],
                          "polygonlabels": [label]}}]}}


def test_webhook_stores_replaces_and_deletes_annotations(tmp_path):
    src = _png(tmp_path / "docs" / "one.png")
    c = _client(tmp_path)
    f = tmp_path / "store" / "project-2" / "tasks.json"
    r = c.post("/webhook", json=_payload("ANNOTATION_CREATED"))
    assert r.status_code == 201 and r.json()["result"]["annotations"] == 1
    tasks = json.loads(f.read_text())
    assert [t["id"] for t in tasks] == [5]
    assert tasks[0]["data"]["image"] == "images/5-one.png"
    assert (f.parent / "images" / "5-one.png").read_bytes() == src.read_bytes()
    assert tasks[0]["meta"]["source_url"] == "/data/local-files/?d=one.png"
    assert (f.parent / "label_config.xml").read_text() == label_config()
    # an update replaces the annotation of the same id; a second annotation is kept beside it
    c.post("/webhook", json=_payload("ANNOTATION_UPDATED", label="1-1"))
    c.post("/webhook", json=_payload("ANNOTATION_CREATED", ann_id=12, label="2-2"))
    anns = json.loads(f.read_text())[0]["annotations"]
    assert [(a["id"], a["result"][0]["value"]["polygonlabels"]) for a in anns] == [
        (11, ["1-1"]), (12, ["2-2"])]
    c.post("/webhook", json=_payload("ANNOTATION_DELETED"))
    assert [a["id"] for a in json.loads(f.read_text())[0]["annotations"]] == [12]
    c.post("/webhook", json=_payload("ANNOTATION_DELETED", ann_id=12))
    assert json.loads(f.read_text()) == []
    # other actions are acknowledged and ignored; a payload without ids is refused
    r = c.post("/webhook", json={"action": "PROJECT_UPDATED", "project": {"id": 2}})
    assert r.status_code == 200 and r.json() == {"status": "Unknown event"}
    r = c.post("/webhook", json={"action": "ANNOTATION_CREATED", "project": {"id": 2}})
    assert r.status_code == 400 and "ids" in r.json()["error"]
    assert c.post("/webhook", json={"action": "START_TRAINING"}).json()["result"][
        "stored_tasks"] == 0


def test_an_image_that_cannot_be_downloaded_keeps_its_url(tmp_path):
    c = _client(tmp_path)
    r = c.post("/webhook", json=_payload("ANNOTATION_CREATED", image="/data/upload/2/gone.jpg"))
    assert r.status_code == 201
    t = json.loads((tmp_path / "store" / "project-2" / "tasks.json").read_text())[0]
    assert t["data"]["image"] == "/data/upload/2/gone.jpg"
    assert "/data/upload/2/gone.jpg" in t["meta"]["image_error"]


class _StubLabelStudio(BaseHTTPRequestHandler):
    """/api/token/refresh swaps a refresh token for an access token; /data/upload/ serves a
    picture to the Bearer access token or the legacy token only."""

    seen: list[str] = []

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        ok = self.path == "/api/token/refresh" and body == {"refresh": "aaa.bbb.ccc"}
        out = json.dumps({"access": "ACCESS"}).encode()
        self.send_response(200 if ok else 401)
        self.end_headers()
        self.wfile.write(out if ok else b"{}")

    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        self.seen.append(auth)
        ok = auth in ("Bearer ACCESS", "Token legacy123")
        self.send_response(200 if ok else 401)
        self.end_headers()
        self.wfile.write(b"PICTURE" if ok else b"no")


def test_fetcher_sends_legacy_and_personal_access_tokens():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _StubLabelStudio)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        assert ImageFetcher(url, "legacy123").fetch("/data/upload/1/a.jpg") == b"PICTURE"
        assert ImageFetcher(url, "aaa.bbb.ccc").fetch(url + "/data/upload/1/a.jpg") == b"PICTURE"
        with pytest.raises(Exception, match="HTTP 401"):
            ImageFetcher(url, "wrong").fetch("/data/upload/1/a.jpg")
        # a URL on another host never gets the token
        _StubLabelStudio.seen.clear()
        with pytest.raises(Exception, match="HTTP 401"):
            ImageFetcher("http://elsewhere.invalid", "legacy123").fetch(url + "/x.jpg")
        assert _StubLabelStudio.seen == [""]
    finally:
        srv.shutdown()


def test_label_config_parsing():
    lc = parse_label_config(label_config())
    assert (lc.from_name, lc.to_name, lc.value_key, lc.shape) == ("label", "image", "image",
                                                                  "polygon")
    assert len(lc.labels) == 23 and lc.labels[-2:] == ("tile_back", "unknown")
    with pytest.raises(InputError, match="not XML"):
        parse_label_config("<View>")


def test_bad_command_line_is_one_line_naming_the_value(tmp_path, capsys):
    from vision.cli import main

    f = tmp_path / "afile"
    f.write_text("x")
    assert main(["label-server", "--store", str(f)]) == 2
    assert "afile" in capsys.readouterr().err
    assert main(["label-server", "--store", str(tmp_path / "s"),
                 "--label-studio-url", "ftp://x", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert "ftp://x" in doc["error"] and doc["command"] == "label-server"


# --------------------------------------------------------------------------------------------
# A real Label Studio and a real paigow label-server

SCENE_NAMES = ("scene_00.jpg", "scene_25.jpg", "scene_34.jpg")  # one per tile art
TOKEN = "0123456789abcdef0123456789abcdef01234567"


def _iou(a, b) -> float:
    from shapely.geometry import Polygon

    pa, pb = Polygon(a).buffer(0), Polygon(b).buffer(0)
    return pa.intersection(pb).area / max(pa.union(pb).area, 1e-9)


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(20)


def _ls_data(ls_bin: Path, env: dict, tmp_path: Path) -> Path:
    """Label Studio's data folder for one test, ``env["LABEL_STUDIO_BASE_DATA_DIR"]``, holding a
    migrated database: a copy of the one scripts/setup.sh migrates into ``LS_TEMPLATE`` (its
    first start would otherwise spend about 40 s of CPU on some hundred migrations while the
    test polls it), or, where that is absent (a venv set up before it), migrated here by
    ``label-studio version``, which migrates and exits. AssertionError with its output if that
    fails."""
    data = Path(env["LABEL_STUDIO_BASE_DATA_DIR"])
    if (LS_TEMPLATE / "label_studio.sqlite3").is_file():
        shutil.copytree(LS_TEMPLATE, data)
        return data
    r = subprocess.run([str(ls_bin), "version"], env=env, cwd=tmp_path, capture_output=True,
                       timeout=800)
    out = (r.stdout + r.stderr).decode("utf-8", "replace").splitlines()
    assert r.returncode == 0 and (data / "label_studio.sqlite3").is_file(), \
        "Label Studio's migrations failed:\n" + "\n".join(out[-40:])
    return data


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_label_studio_gets_predictions_and_sends_annotations(tmp_path):
    ls_bin = LS_VENV / "bin" / "label-studio"
    if not ls_bin.is_file():
        msg = f"{LS_VENV} is absent (scripts/setup.sh installs Label Studio there)"
        if os.environ.get("PAIGOW_REQUIRE_LABEL_STUDIO") == "1":  # CI: .ci/run sets it
            pytest.fail(msg)
        pytest.skip(msg)
    if not all((SCENES / n).is_file() for n in SCENE_NAMES):
        pytest.skip(f"{SCENES} is absent")
    import httpx

    truth = {}
    for line in (SCENES / "truth.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["image"] in SCENE_NAMES:
            truth[rec["image"]] = rec
    ls_port, be_port = free_port(), free_port()
    ls_url, be_url = f"http://127.0.0.1:{ls_port}", f"http://127.0.0.1:{be_port}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    ls_env = {**env, "LABEL_STUDIO_BASE_DATA_DIR": str(tmp_path / "ls"),
              "LABEL_STUDIO_USERNAME": "labeller@example.com", "LABEL_STUDIO_PASSWORD": "pw-123456",
              "LABEL_STUDIO_USER_TOKEN": TOKEN, "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
              "LABEL_STUDIO_HOST": ls_url,
              # the backend listens on 127.0.0.1, a network Label Studio refuses by default
              "USE_DEFAULT_BANNED_SUBNETS": "false",
              # no asking pypi.org for a newer release (a table's network may have no way out)
              "LATEST_VERSION_CHECK": "false"}
    be_env = {**os.environ, "LABEL_STUDIO_API_KEY": TOKEN}
    _ls_data(ls_bin, ls_env, tmp_path)
    ls_log, be_log = open(tmp_path / "ls.log", "wb"), open(tmp_path / "backend.log", "wb")
    ls = subprocess.Popen([str(ls_bin), "start", "--port", str(ls_port), "--host", "127.0.0.1",
                           "--internal-host", "127.0.0.1", "--no-browser"], env=ls_env,
                          stdout=ls_log, stderr=subprocess.STDOUT, start_new_session=True,
                          cwd=tmp_path)
    store = tmp_path / "store"
    be = subprocess.Popen([sys.executable, "-m", "vision.cli", "label-server", "--port",
                           str(be_port), "--store", str(store), "--label-studio-url", ls_url],
                          env=be_env, stdout=be_log, stderr=subprocess.STDOUT,
                          start_new_session=True, cwd=REPO)
    try:
        def up(url):
            def ok():
                try:
                    return httpx.get(url + "/health", timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False
            return ok

        wait_for(up(be_url), "paigow label-server /health", 120, be, tmp_path / "backend.log")
        wait_for(up(ls_url), "Label Studio /health", 600, ls, tmp_path / "ls.log")
        c = httpx.Client(base_url=ls_url, headers={"Authorization": f"Token {TOKEN}"},
                         timeout=300)
        r = c.post("/api/projects/", json={"title": "pai gow tiles", "label_config": label_config()})
        assert r.status_code == 201, r.text
        pid = r.json()["id"]
        r = c.post(f"/api/projects/{pid}/import", files=[
            (f"file{i}", (n, (SCENES / n).read_bytes(), "image/jpeg"))
            for i, n in enumerate(SCENE_NAMES)])
        assert r.status_code == 201 and r.json()["task_count"] == 3, r.text
        r = c.post("/api/ml", json={"project": pid, "url": be_url, "title": "paigow"})
        assert r.status_code == 201, r.text  # Label Studio called /health and /setup
        version = r.json()["model_version"]
        assert version == httpx.get(be_url + "/health").json()["model_version"]
        tasks = c.get("/api/tasks", params={"project": pid}).json()["tasks"]
        r = c.post("/api/dm/actions", params={"id": "retrieve_tasks_predictions",
                                              "project": pid},
                   json={"selectedItems": {"all": False, "included": [t["id"] for t in tasks]}})
        assert r.status_code == 200, r.text
        summary = {}
        for t in tasks:
            task = c.get(f"/api/tasks/{t['id']}").json()
            scene = next(n for n in SCENE_NAMES if task["data"]["image"].endswith(n))
            rec = truth[scene]
            w, h = rec["width"], rec["height"]
            assert len(task["predictions"]) == 1, task
            pred = task["predictions"][0]
            assert pred["model_version"] == version
            regions = []
            for item in pred["result"]:
                assert item["type"] == "polygonlabels" and 0.0 < item["score"] <= 1.0
                assert (item["original_width"], item["original_height"]) == (w, h)
                pts = [[x * w / 100, y * h / 100] for x, y in item["value"]["points"]]
                regions.append((item["value"]["polygonlabels"][0], item["score"], pts))
            tiles = [tile for seat in rec["seats"] for tile in seat["tiles"]]
            named = unknown = 0
            for tile in tiles:
                best = max(regions, key=lambda g: _iou(g[2], tile["polygon"]))
                assert _iou(best[2], tile["polygon"]) >= 0.5, (scene, tile["face"], "not found")
                assert best[0] in (tile["face"], "unknown"), (scene, tile["face"], best[0])
                named += best[0] == tile["face"]
                unknown += best[0] == "unknown"
            # no wrong face anywhere: every region labelled with a face lies on that face
            for label, _, pts in regions:
                if label in ("unknown", "tile_back"):
                    continue
                best = max(tiles, key=lambda tile: _iou(pts, tile["polygon"]))
                assert _iou(pts, best["polygon"]) >= 0.5 and best["face"] == label, (scene, label)
            summary[scene] = (len(tiles), named, unknown)
        assert sum(n for _, n, _ in summary.values()) >= 1, summary
        print("tiles, named, unknown per scene:", summary)

        # an annotation made in Label Studio reaches the backend through the webhook
        task = c.get(f"/api/tasks/{tasks[0]['id']}").json()
        result = task["predictions"][0]["result"]
        r = c.post(f"/api/tasks/{task['id']}/annotations/", json={"result": result,
                                                                "project": pid})
        assert r.status_code == 201, r.text
        ann_id = r.json()["id"]
        f = store / f"project-{pid}" / "tasks.json"

        def stored(label=None):
            if not f.is_file():
                return None
            for t in json.loads(f.read_text()):
                for a in t["annotations"] if t["id"] == task["id"] else []:
                    first = a["result"][0]["value"]["polygonlabels"][0]
                    if a["id"] == ann_id and (label is None or first == label):
                        return t
            return None

        t = wait_for(stored, "the annotation in the backend's store", 60)
        assert [a["result"] for a in t["annotations"]] == [result]
        image = store / f"project-{pid}" / t["data"]["image"]
        scene = next(n for n in SCENE_NAMES if task["data"]["image"].endswith(n))
        assert image.read_bytes() == (SCENES / scene).read_bytes()
        # a correction made in Label Studio replaces the stored annotation
        fixed = json.loads(json.dumps(result))
        fixed[0]["value"]["polygonlabels"] = ["unknown"]
        r = c.patch(f"/api/annotations/{ann_id}/", json={"result": fixed})
        assert r.status_code == 200, r.text
        t = wait_for(lambda: stored("unknown"), "the updated annotation in the store", 60)
        assert len(t["annotations"]) == 1
    finally:
        _stop(be)
        _stop(ls)
        ls_log.close()
        be_log.close()
