"""A PEP 517 build backend in the standard library, for this one pure-Python package.

It builds the wheel (and an sdist) from `pyproject.toml` and `src/`: the package's files, its
METADATA, the `pytest11` entry point and a RECORD. Enough for `pip install` of the folder; it
needs nothing from an index, so it installs offline and anywhere pip runs.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib  # Python 3.11
except ImportError:  # pragma: no cover - older Pythons: the few lines this backend reads
    tomllib = None

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "agent_bridge_testing"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        text = f.read()
    if tomllib is not None:
        return tomllib.loads(text.decode())["project"]
    return _read_toml_subset(text.decode())


def _read_toml_subset(text):
    """name, version, description, requires-python and the pytest11 entry point, from simple TOML lines."""
    import ast

    project, section = {"entry-points": {"pytest11": {}}}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and not line.startswith("#"):
            key, value = (part.strip() for part in line.split("=", 1))
            if section == "project" and value.startswith('"'):
                project[key] = ast.literal_eval(value)
            elif section == "project.entry-points.pytest11":
                project["entry-points"]["pytest11"][key] = ast.literal_eval(value)
    return project


def _files():
    """(path in the wheel, bytes) of the package: its .py files, py.typed and control-plane.json."""
    root = os.path.join(HERE, "src", PACKAGE)
    for name in sorted(os.listdir(root)):
        if name.endswith((".py", ".json", ".typed")):
            with open(os.path.join(root, name), "rb") as f:
                yield f"{PACKAGE}/{name}", f.read()


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project.get('requires-python', '>=3.8')}",
        "License: MIT",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode()


def _dist_info(project):
    return f"{project['name'].replace('-', '_')}-{project['version']}"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(wheel_directory, editable=False):
    project = _project()
    info = _dist_info(project) + ".dist-info"
    name = f"{_dist_info(project)}-py3-none-any.whl"
    entries = []
    if editable:
        entries.append((f"{PACKAGE}.pth", (os.path.join(HERE, "src") + "\n").encode()))
    else:
        entries.extend(_files())
    points = project.get("entry-points", {}).get("pytest11", {})
    entry_points = "[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    entries.append((f"{info}/METADATA", _metadata(project)))
    entries.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: agent_bridge_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    entries.append((f"{info}/entry_points.txt", entry_points.encode()))
    record = "".join(_record_line(p, d) + "\n" for p, d in entries) + f"{info}/RECORD,,\n"
    entries.append((f"{info}/RECORD", record.encode()))
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in entries:
            # A fixed date: the same sources build the same wheel.
            wheel.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = _dist_info(project)
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as sdist:
        for folder, _, files in os.walk(HERE):
            if "__pycache__" in folder or ".pytest_cache" in folder:
                continue
            for file in sorted(files):
                full = os.path.join(folder, file)
                sdist.add(full, arcname=os.path.join(base, os.path.relpath(full, HERE)))
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata(project)
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
