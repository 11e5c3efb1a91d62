"""A Label Studio ML backend: ``paigow label-server`` (docs/labelling.md).

Label Studio connects to an ML backend over HTTP (the protocol of HumanSignal's
label-studio-ml-backend, restated in docs/labelling.md):

* ``POST /predict`` ``{"tasks": [{"id", "data": {"image": URL}, ...}], "project":
  "<id>.<created>", "label_config": XML, "params": {...}}`` -> ``{"results": [prediction per
  task, in task order]}``; a prediction is ``{"result": [region, ...], "score": mean tile
  confidence, "model_version": "tiles-<sha8>+pips-<sha8>..."}`` and each region is one tile:
  a polygon (``polygonlabels``) or a rotated rectangle (``rectanglelabels``) in percent of the
  image, the class as its label (the 21 faces, ``tile_back``, ``unknown`` for a face-up tile
  whose face was not read: :data:`vision.exports.CLASS_NAMES`) and the tile's confidence as its
  ``score`` -- the same regions as ``paigow export --format labelstudio``
  (:mod:`vision.exports.labelstudio`).
* ``POST /setup`` ``{"project", "schema", "hostname", "access_token", ...}`` ->
  ``{"model_version"}``; the hostname and token are kept per project to download task images
  when the server was not given a Label Studio URL and key.
* ``POST /webhook`` ``{"action": "ANNOTATION_CREATED" | "ANNOTATION_UPDATED" |
  "ANNOTATION_DELETED" | "START_TRAINING" | ..., "annotation", "task", "project"}``: the
  annotation is stored as training data (:class:`AnnotationStore`); other actions get
  ``{"status": "Unknown event"}``.
* ``GET /health`` (and ``GET /``) -> ``{"status": "UP", "model_class", "model_version"}``;
  ``GET /metrics`` -> ``{}``; ``GET /versions`` -> ``{"versions": [model_version]}``.

Optional HTTP basic auth on every route (Label Studio's "basic auth" connection setting).
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import os
import re
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fastapi import Request  # at module level: the routes' annotations name it

from scoring.errors import InputError

__all__ = ["BackendConfig", "LabelConfig", "parse_label_config", "ImageFetcher", "FetchError",
           "AnnotationStore", "predictions", "create_app", "MODEL_CLASS", "TRAIN_EVENTS"]

logger = logging.getLogger(__name__)

MODEL_CLASS = "PaigowTiles"
"""The ``model_class`` reported by ``/health``."""
TRAIN_EVENTS = ("ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATION_DELETED",
                "START_TRAINING")
"""The webhook actions the backend acts on (label-studio-ml-backend's list)."""
MAX_IMAGE_BYTES = 64 * 1024 * 1024


class FetchError(Exception):
    """A task's image could not be read (the message names its URL)."""


@dataclass(frozen=True)
class LabelConfig:
    """What the backend needs of a project's labelling config: the region tag's ``name``
    (``from_name``), its ``toName`` (``to_name``), the task data key of that image
    (``value_key``: ``$image`` -> ``image``), the shape (``"polygon"`` for PolygonLabels,
    ``"rectangle"`` for RectangleLabels) and the label values it offers."""

    from_name: str = "label"
    to_name: str = "image"
    value_key: str = "image"
    shape: str = "polygon"
    labels: tuple[str, ...] = ()


def parse_label_config(xml: str | None) -> LabelConfig:
    """The :class:`LabelConfig` of a Label Studio ``<View>`` config: its first
    ``PolygonLabels`` or ``RectangleLabels`` tag and the ``Image`` tag it points to. An empty
    or missing config gives the defaults (those of :func:`vision.exports.labelstudio.label_config`).

    Raises:
        InputError: a config that is not XML, or has no PolygonLabels / RectangleLabels tag.
    """
    if not xml or not str(xml).strip():
        return LabelConfig()
    try:
        root = ET.fromstring(str(xml))
    except ET.ParseError as exc:
        raise InputError(f"label config is not XML: {exc}") from None
    tag = next((el for el in root.iter() if el.tag in ("PolygonLabels", "RectangleLabels")), None)
    if tag is None:
        raise InputError("label config has no PolygonLabels or RectangleLabels tag")
    to_name = tag.get("toName", "image")
    image = next((el for el in root.iter() if el.tag == "Image" and el.get("name") == to_name),
                 None)
    value = (image.get("value") if image is not None else None) or "$image"
    return LabelConfig(from_name=tag.get("name", "label"), to_name=to_name,
                       value_key=value.lstrip("$"),
                       shape="polygon" if tag.tag == "PolygonLabels" else "rectangle",
                       labels=tuple(el.get("value", "") for el in tag if el.tag == "Label"))


@dataclass
class BackendConfig:
    """Settings of one ML backend server.

    Attributes:
        store: folder the annotations are stored under (:class:`AnnotationStore`).
        models, backend, min_confidence, scales: the still reading's settings (as
            ``paigow identify``; :func:`vision.recognition.identify.identify`).
        shape: ``"polygon"`` | ``"rectangle"`` | None (None: the project's label config says).
        label_studio_url: Label Studio's address, to download task images (``/data/upload/...``);
            None: the ``hostname`` Label Studio sent to ``/setup``.
        api_key: a Label Studio access token (legacy token or personal access token) for those
            downloads; None: the token Label Studio sent to ``/setup``.
        document_root: Label Studio's ``LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT`` when this
            server sees the same files: ``/data/local-files/?d=NAME`` is read from there.
        basic_auth: ``(user, password)`` every request must carry, or None.
        max_image_bytes: largest image downloaded, bytes.
        recognition: the whole :class:`vision.config.RecognitionConfig` (the command line's,
            :func:`vision.config.recognition_config`), used instead of ``models``,
            ``backend``, ``min_confidence`` and ``scales`` where given.
    """

    store: Path
    models: str | None = None
    backend: str | None = None
    min_confidence: float = 0.5
    scales: tuple[int, ...] | None = None
    shape: str | None = None
    label_studio_url: str | None = None
    api_key: str | None = None
    document_root: str | None = None
    basic_auth: tuple[str, str] | None = None
    max_image_bytes: int = MAX_IMAGE_BYTES
    recognition: Any = None


class ImageFetcher:
    """Reads the image a Label Studio task names (the job of label-studio-ml-backend's
    ``get_local_path``).

    * ``/data/local-files/?d=NAME`` with a ``document_root``: the file ``document_root/NAME``
      (never outside the root);
    * a URL relative to Label Studio (``/data/upload/...``, ``/data/local-files/...``) or an
      absolute URL on Label Studio's host: downloaded with the access token (a legacy token is
      sent as ``Authorization: Token KEY``; a personal access token, a JWT, is exchanged at
      ``/api/token/refresh`` for an access token sent as ``Bearer``);
    * any other ``http(s)://`` URL: downloaded without credentials.
    """

    def __init__(self, label_studio_url: str | None = None, api_key: str | None = None,
                 document_root: str | None = None, max_bytes: int = MAX_IMAGE_BYTES,
                 timeout: float = 30.0):
        self.url = label_studio_url.rstrip("/") if label_studio_url else None
        self.api_key = api_key or None
        self.document_root = os.path.realpath(document_root) if document_root else None
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._bearer: tuple[str, float] | None = None
        self._lock = threading.Lock()

    def local_path(self, url: str) -> str | None:
        """The file under ``document_root`` a local-files URL names, or None."""
        if not self.document_root or not url.startswith("/data/local-files"):
            return None
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("d")
        if not q:
            return None
        p = os.path.realpath(os.path.join(self.document_root, q[0]))
        if os.path.commonpath([p, self.document_root]) != self.document_root:
            raise FetchError(f"image {url!r} lies outside the local-files document root")
        return p if os.path.isfile(p) else None

    def _auth_header(self) -> dict[str, str]:
        key = self.api_key
        if not key:
            return {}
        if key.count(".") != 2:  # a legacy token
            return {"Authorization": f"Token {key}"}
        with self._lock:  # a personal access token: a refresh token for short access tokens
            if self._bearer is None or time.monotonic() - self._bearer[1] > 60:
                req = urllib.request.Request(
                    f"{self.url}/api/token/refresh", data=json.dumps({"refresh": key}).encode(),
                    headers={"Content-Type": "application/json"}, method="POST")
                try:
                    with urllib.request.urlopen(req, timeout=self.timeout) as r:
                        self._bearer = (json.loads(r.read())["access"], time.monotonic())
                except (OSError, ValueError, KeyError) as exc:
                    raise FetchError(f"Label Studio {self.url} refused the access token: "
                                     f"{exc}") from None
            return {"Authorization": f"Bearer {self._bearer[0]}"}

    def fetch(self, url: str) -> bytes:
        """The bytes of the image ``url`` names.

        Raises:
            FetchError: naming the URL: no Label Studio address for a relative URL, an HTTP
                error, a file over ``max_bytes``, a local path outside the document root.
        """
        local = self.local_path(url)
        if local is not None:
            with open(local, "rb") as f:
                return f.read(self.max_bytes + 1)[: self.max_bytes]
        parts = urllib.parse.urlsplit(url)
        headers = {}
        if parts.scheme in ("http", "https"):
            full = url
            if self.url and url.startswith(self.url + "/"):
                headers = self._auth_header()
        elif parts.scheme == "" and url.startswith("/"):
            if not self.url:
                raise FetchError(f"image {url!r} is on Label Studio, whose address is unknown "
                                 f"(give --label-studio-url or connect the backend so that "
                                 f"/setup tells it)")
            full = self.url + url
            headers = self._auth_header()
        else:
            raise FetchError(f"image {url!r} is not an http(s) URL or a Label Studio path")
        req = urllib.request.Request(full, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                data = r.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            raise FetchError(f"image {url!r}: HTTP {exc.code} from {full}") from None
        except OSError as exc:
            raise FetchError(f"image {url!r}: cannot download {full}: {exc}") from None
        if len(data) > self.max_bytes:
            raise FetchError(f"image {url!r} is larger than {self.max_bytes} bytes")
        return data


def _image_name(url: str) -> str:
    """A safe file name for the image ``url`` names (its last path part, or the ``d`` query)."""
    parts = urllib.parse.urlsplit(url)
    d = urllib.parse.parse_qs(parts.query).get("d")
    name = os.path.basename(d[0] if d else urllib.parse.unquote(parts.path)) or "image"
    name = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".") or "image"
    return name[-120:]


def predictions(results: Sequence[Mapping], model_version: str, config: LabelConfig,
                shape: str | None = None) -> list[dict]:
    """One Label Studio prediction per identify result (same order).

    Args:
        results: :func:`vision.recognition.identify.identify` results (width/height read from
            the image when missing).
        model_version: written into every prediction.
        config: the project's :class:`LabelConfig` (region names; its shape unless ``shape``).
        shape: ``"polygon"`` | ``"rectangle"`` | None.

    Returns:
        ``[{"result": [region, ...], "score": float, "model_version": str}]`` (module docstring).
    """
    from vision.exports.common import normalise_results
    from vision.exports.labelstudio import tasks

    res = normalise_results(results)
    for r in res:
        r["name"] = str(r["image"])
    out = []
    for t in tasks(res, model_version, shape or config.shape, image_url_prefix=""):
        p = t["predictions"][0]
        for item in p["result"]:
            item["from_name"], item["to_name"] = config.from_name, config.to_name
        out.append(p)
    return out


class AnnotationStore:
    """Annotations Label Studio sends, kept as training data in Label Studio's JSON export
    format (docs/labelling.md)::

        STORE/project-<id>/tasks.json                # the annotated tasks: a Label Studio JSON export
        STORE/project-<id>/label_config.xml
        STORE/project-<id>/images/<task id>-<name>   # each task's image, downloaded

    ``tasks.json`` is a list of tasks ``{"id", "data": {..., KEY: "images/<file>"},
    "annotations": [...], "predictions": [], "meta": {"source_url": original URL},
    "project"}``: ``data[KEY]`` names the image relative to the project folder (KEY: the
    project's image key, ``image``), so ``paigow import STORE/project-<id>`` reads it as it
    reads a Label Studio export. An image that cannot be downloaded keeps its URL
    (``meta.image_error`` says why). A task whose last annotation is deleted leaves the file.
    Every change rewrites the file atomically (a reader never sees half a file).
    """

    def __init__(self, root: str | os.PathLike, fetcher_for: Callable[[str], ImageFetcher]):
        self.root = Path(root)
        self._fetcher_for = fetcher_for
        self._lock = threading.Lock()

    def project_dir(self, project_id: int) -> Path:
        """``STORE/project-<id>``."""
        return self.root / f"project-{int(project_id)}"

    def tasks_file(self, project_id: int) -> Path:
        """``STORE/project-<id>/tasks.json``."""
        return self.project_dir(project_id) / "tasks.json"

    def tasks(self, project_id: int) -> list[dict]:
        """The annotated tasks stored for a project ([] when none)."""
        f = self.tasks_file(project_id)
        return json.loads(f.read_text(encoding="utf-8")) if f.is_file() else []

    @staticmethod
    def _write(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)

    def handle(self, action: str, payload: Mapping[str, Any]) -> dict:
        """Store, replace (``ANNOTATION_CREATED`` / ``ANNOTATION_UPDATED``, matched by the
        annotation id) or remove (``ANNOTATION_DELETED``) the annotation of a webhook payload.

        Returns:
            ``{"tasks_file", "task", "annotations"}`` (annotations now stored for that task).

        Raises:
            InputError: a payload without the project, task or annotation ids.
        """
        try:
            project = payload["project"]
            pid = int(project["id"])
            task = payload["task"]
            tid = int(task["id"])
            ann = dict(payload["annotation"])
            aid = int(ann["id"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"webhook {action} payload lacks project, task or annotation "
                             f"ids") from None
        cfg = parse_label_config(project.get("label_config"))
        path = self.tasks_file(pid)
        with self._lock:
            if project.get("label_config"):
                self._write(self.project_dir(pid) / "label_config.xml",
                            str(project["label_config"]))
            tasks = self.tasks(pid)
            stored = next((t for t in tasks if t.get("id") == tid), None)
            if action == "ANNOTATION_DELETED":
                if stored is None:
                    return {"tasks_file": str(path), "task": tid, "annotations": 0}
                stored["annotations"] = [a for a in stored["annotations"] if a.get("id") != aid]
                if not stored["annotations"]:
                    tasks.remove(stored)
            else:
                if stored is None:
                    stored = self._new_task(pid, tid, task, cfg.value_key)
                    tasks.append(stored)
                anns = [a for a in stored["annotations"] if a.get("id") != aid]
                stored["annotations"] = anns + [ann]
            self._write(path, json.dumps(tasks, indent=1))
            return {"tasks_file": str(path), "task": tid,
                    "annotations": len(stored["annotations"])}

    def _new_task(self, pid: int, tid: int, task: Mapping, key: str) -> dict:
        data = dict(task.get("data") or {})
        meta = {}
        url = data.get(key)
        if isinstance(url, str) and url:
            meta["source_url"] = url
            name = f"{tid}-{_image_name(url)}"
            target = self.project_dir(pid) / "images" / name
            try:
                blob = self._fetcher_for(str(pid)).fetch(url)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(blob)
                data[key] = f"images/{name}"
            except FetchError as exc:
                meta["image_error"] = str(exc)
                logger.warning("annotation stored without its image: %s", exc)
        return {"id": tid, "data": data, "annotations": [], "predictions": [], "meta": meta,
                "project": pid}

    def count(self) -> int:
        """Annotated tasks stored (every project)."""
        return sum(len(json.loads(f.read_text(encoding="utf-8")))
                   for f in self.root.glob("project-*/tasks.json"))


def _identify_reader(cfg: BackendConfig) -> Callable[[list[str]], list[dict]]:
    def read(paths: list[str]) -> list[dict]:
        from vision.recognition.identify import identify

        return identify(paths, models_dir=cfg.models, backend=cfg.backend,
                        min_confidence=cfg.min_confidence, scales=cfg.scales,
                        recognition=cfg.recognition)

    return read


def create_app(cfg: BackendConfig, read: Callable[[list[str]], list[dict]] | None = None,
               model_version: str | None = None):
    """The FastAPI app of the ML backend (module docstring).

    Args:
        cfg: the server's settings.
        read: image paths -> identify results, one per path in order (None: ``paigow
            identify``'s reading, :func:`vision.recognition.identify.identify`, with ``cfg``'s
            models).
        model_version: reported and written into predictions (None: the models' version,
            :func:`vision.recognition.models.model_version`).
    """
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, Response

    if model_version is None:
        from vision.recognition.models import model_version as models_version

        model_version = models_version(cfg.models, cfg.backend)
    read = read or _identify_reader(cfg)
    read_lock = threading.Lock()  # one reading at a time: it uses every core
    setups: dict[str, tuple[str | None, str | None]] = {}

    def fetcher_for(project_id: str | None) -> ImageFetcher:
        host, token = setups.get(str(project_id), (None, None))
        return ImageFetcher(cfg.label_studio_url or host, cfg.api_key or token,
                            cfg.document_root, cfg.max_image_bytes)

    store = AnnotationStore(cfg.store, fetcher_for)
    app = FastAPI(title="paigow label-server", docs_url=None, redoc_url=None)
    app.state.store = store
    app.state.model_version = model_version

    if cfg.basic_auth is not None:
        want = "Basic " + base64.b64encode(
            f"{cfg.basic_auth[0]}:{cfg.basic_auth[1]}".encode()).decode()

        @app.middleware("http")
        async def basic_auth(request: Request, call_next):
            got = request.headers.get("authorization", "")
            if not hmac.compare_digest(got.encode(), want.encode()):
                return Response("Unauthorized", 401,
                                {"WWW-Authenticate": 'Basic realm="Login required"'})
            return await call_next(request)

    async def body(request: Request) -> dict:
        try:
            data = await request.json()
        except ValueError:
            raise InputError("request body is not JSON") from None
        if not isinstance(data, dict):
            raise InputError("request body is not a JSON object")
        return data

    @app.exception_handler(InputError)
    async def bad_input(request: Request, exc: InputError):
        return JSONResponse({"error": str(exc)}, 400)

    @app.exception_handler(FetchError)
    async def bad_image(request: Request, exc: FetchError):
        return JSONResponse({"error": str(exc)}, 502)

    @app.get("/")
    @app.get("/health")
    def health():
        return {"status": "UP", "model_class": MODEL_CLASS, "model_version": model_version}

    @app.get("/metrics")
    def metrics():
        return {}

    @app.get("/versions")
    def versions():
        return {"versions": [model_version]}

    @app.post("/setup")
    async def setup(request: Request):
        data = await body(request)
        project = str(data.get("project") or "").split(".", 1)[0]
        parse_label_config(data.get("schema"))  # a config without tile regions is refused
        setups[project] = (data.get("hostname") or None, data.get("access_token") or None)
        return {"model_version": model_version}

    def _predict(data: dict) -> dict:
        tasks = data.get("tasks")
        if not isinstance(tasks, list):
            raise InputError("predict request has no 'tasks' list")
        lc = parse_label_config(data.get("label_config"))
        project = str(data.get("project") or "").split(".", 1)[0]
        fetcher = fetcher_for(project)
        if not tasks:
            return {"results": []}
        with tempfile.TemporaryDirectory(prefix="paigow-ls-") as tmp:
            paths = []
            for i, t in enumerate(tasks):
                data = t.get("data") if isinstance(t, dict) else None
                url = data.get(lc.value_key) if isinstance(data, dict) else None
                if not isinstance(url, str) or not url:
                    raise InputError(f"task {t.get('id') if isinstance(t, dict) else t!r} has "
                                     f"no data.{lc.value_key} image URL")
                local = fetcher.local_path(url)
                if local is None:
                    local = os.path.join(tmp, f"{i}-{_image_name(url)}")
                    with open(local, "wb") as f:
                        f.write(fetcher.fetch(url))
                paths.append(local)
            with read_lock:
                results = read(paths)
            if len(results) != len(paths):
                raise FetchError(f"{len(paths)} task image(s) gave {len(results)} reading(s): "
                                 f"an image could not be decoded")
            return {"results": predictions(results, model_version, lc, cfg.shape)}

    @app.post("/predict")
    async def predict(request: Request):
        from fastapi.concurrency import run_in_threadpool

        return await run_in_threadpool(_predict, await body(request))

    @app.post("/webhook")
    async def webhook(request: Request):
        from fastapi.concurrency import run_in_threadpool

        data = await body(request)
        action = data.get("action")
        if action not in TRAIN_EVENTS:
            return JSONResponse({"status": "Unknown event"}, 200)
        if action == "START_TRAINING":
            return JSONResponse({"status": "ok", "result": {
                "stored_tasks": store.count(),
                "note": "annotations are stored for `paigow train`; training is not run here"}},
                201)
        result = await run_in_threadpool(store.handle, action, data)
        return JSONResponse({"status": "ok", "result": result}, 201)

    return app
